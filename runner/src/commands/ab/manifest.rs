//! The manifest `measured ab` runs (cli -> ab -> **manifest** -> run): each command is a variant
//! of one `command` stage, `bench`, whose wall time is the primary metric; `--prepare` is a
//! stage before it; each parameter list is a `[sweep]` axis over the stage's `vars`; the
//! options are `[schedule]`. The text is what `--save` writes and what the run stores, so
//! `measured run` of it is the same comparison.

use crate::cli::AbArgs;
use toml_edit::{value, Array, DocumentMut, InlineTable, Item, Table};

/// The stage that runs the commands.
pub(super) const STAGE: &str = "bench";

/// The stage that runs `--prepare`.
const PREPARE: &str = "prepare";

/// Time budget of the measured blocks when none is given.
const DEFAULT_MAX_TIME: &str = "2m";

/// Longest name made from a command's words.
const NAME_CHARS: usize = 32;

/// Significance level of the comparisons: the manifests' default, which the first look must
/// be able to reach.
const ALPHA: f64 = 0.01;

/// Names a parameter cannot take: the variables a command template reads besides its `vars`
/// (`kinds::TEMPLATE_BUILTINS`), and `vars` itself.
fn reserved(name: &str) -> bool {
    name == "vars" || crate::kinds::TEMPLATE_BUILTINS.contains(&name)
}

/// The manifest of an `ab` invocation, and each command's name (its variant) in order.
pub(super) struct AbManifest {
    pub text: String,
    pub names: Vec<String>,
}

/// How a stage starts a command: its `shell` flag and its `argv` templates.
type Launch = (bool, Vec<String>);

/// How a command is started.
enum Runner {
    /// `sh -c` (the stage's `shell = true`).
    Sh,
    /// Another shell, with its options, then `-c COMMAND`.
    Shell(Vec<String>),
    /// No shell: the command's own words.
    Direct,
}

/// The manifest of `a`; `cwd`: the folder the commands run in, relative to the manifest's
/// folder. An error says which option is wrong and how to fix it.
pub(super) fn ab_manifest(a: &AbArgs, cwd: &str) -> Result<AbManifest, String> {
    if !crate::paths::is_valid_name(&a.name) {
        return Err(format!(
            "--name `{}` is not a valid experiment name\nhint: use 1-64 letters, digits, `_` or `-`",
            a.name
        ));
    }
    let params = parameters(a)?;
    let param_names: Vec<String> = params.iter().map(|(n, _)| n.clone()).collect();
    let runner = runner(a)?;
    let commands: Vec<&str> = a.commands.iter().map(|c| c.trim_end_matches(['\n', '\r'])).collect();
    let mut argvs = Vec::with_capacity(commands.len());
    for c in &commands {
        argvs.push(argv(&runner, c, &param_names)?);
    }
    for (name, _) in &params {
        if !commands.iter().any(|c| c.contains(&format!("{{{name}}}"))) {
            return Err(format!(
                "--parameter-list {name}: no command has `{{{name}}}` in it\nhint: write `{{{name}}}` where each value goes, e.g. 'sort --parallel={{{name}}} big.txt'"
            ));
        }
    }
    let names = names(a, &commands)?;
    let prepare = prepare(a, &runner, &param_names)?;
    let mut doc = DocumentMut::new();
    doc.decor_mut().set_prefix(
        "# Made by `measured ab`: one variant per command, each run by the stage `bench`, whose\n\
         # wall time is compared. `measured run` of this file runs the comparison again.\n",
    );
    let mut experiment = Table::new();
    experiment["name"] = value(a.name.as_str());
    experiment["description"] = value(format!("which is faster: {}", names.join(", ")));
    doc["experiment"] = Item::Table(experiment);
    doc["schedule"] = Item::Table(schedule(a)?);
    doc["stages"] = Item::Table(stages(&argvs[0], prepare.as_ref(), cwd, &params));
    doc["variants"] = Item::Table(variants(&names, &argvs, prepare.as_ref()));
    if !params.is_empty() {
        let mut sweep = Table::new();
        for (name, values) in &params {
            let mut array = Array::new();
            values.iter().for_each(|v| array.push(v.clone()));
            sweep.insert(&format!("stages.{STAGE}.vars.{name}"), value(array));
        }
        doc["sweep"] = Item::Table(sweep);
    }
    let mut compare = Table::new();
    compare["primary"] = value(format!("{STAGE}.seconds"));
    // The same command twice is an A/A comparison: it measures the noise, on purpose.
    if (1..argvs.len()).any(|i| argvs[..i].contains(&argvs[i])) {
        compare["allow_identical"] = value(true);
    }
    doc["compare"] = Item::Table(compare);
    Ok(AbManifest {
        text: doc.to_string(),
        names,
    })
}

/// `[schedule]`: warm-up, then blocks until decided (or `--runs` of them).
fn schedule(a: &AbArgs) -> Result<Table, String> {
    let mut t = Table::new();
    t["warmup"] = value(i64::from(a.warmup));
    let first_look = match a.runs {
        Some(n) => {
            t["repetitions"] = value(i64::from(n));
            ("--runs", n)
        }
        None => {
            if a.min == 0 || a.min > a.max {
                return Err(format!(
                    "--min {} --max {} is not a range of blocks\nhint: give --min at least 1 and at most --max",
                    a.min, a.max
                ));
            }
            let mut reps = InlineTable::new();
            reps.insert("min", i64::from(a.min).into());
            reps.insert("max", i64::from(a.max).into());
            t["repetitions"] = value(reps);
            let budget = a.max_time.as_deref().unwrap_or(DEFAULT_MAX_TIME);
            match humantime::parse_duration(budget) {
                Ok(d) if !d.is_zero() => t["max_time"] = value(budget),
                _ => {
                    return Err(format!(
                        "--max-time `{budget}` is not a duration\nhint: write e.g. 90s, 5m or 1h"
                    ))
                }
            }
            ("--min", a.min)
        }
    };
    // The smallest p-value the signed-rank test gives over n blocks is 2 / 2^n.
    let (flag, n) = first_look;
    if crate::stats::min_attainable_p(n as usize, true) >= ALPHA {
        let needed = (1..=64)
            .find(|&k| crate::stats::min_attainable_p(k, true) < ALPHA)
            .unwrap_or(64);
        return Err(format!(
            "{flag} {n}: the comparison first looks after {n} blocks, where the signed-rank test can never \
             reach alpha {ALPHA}, so every verdict would be inconclusive\nhint: give {flag} {needed} or more"
        ));
    }
    Ok(t)
}

/// `[stages]`: `bench` runs the first command (each variant sets its own), after `prepare`.
fn stages(first: &Launch, prepare: Option<&Vec<Launch>>, cwd: &str, params: &[Param]) -> Table {
    let mut stages = Table::new();
    stages.set_implicit(true);
    if let Some(p) = prepare {
        stages[PREPARE] = Item::Table(command_stage(&p[0], cwd, &[], None));
    }
    let needs = prepare.map(|_| PREPARE);
    stages[STAGE] = Item::Table(command_stage(first, cwd, params, needs));
    stages
}

/// A `command` stage running `argv` in `cwd` after the stage `needs`, its output not read for
/// metrics; `params` are its `vars`, at their first values.
fn command_stage((shell, argv): &Launch, cwd: &str, params: &[Param], needs: Option<&str>) -> Table {
    let mut t = Table::new();
    t["kind"] = value("command");
    if let Some(n) = needs {
        t["needs"] = value(Array::from_iter([n]));
    }
    if *shell {
        t["shell"] = value(true);
    }
    t["argv"] = value(argv.iter().map(String::as_str).collect::<Array>());
    t["cwd"] = value(cwd);
    t["metrics"] = value(false);
    if !params.is_empty() {
        let mut vars = InlineTable::new();
        for (name, values) in params {
            vars.insert(name, values[0].clone());
        }
        t["vars"] = value(vars);
    }
    t
}

/// `[variants]`: one per command, each setting the stage's argv (and its own `--prepare`).
fn variants(names: &[String], argvs: &[Launch], prepare: Option<&Vec<Launch>>) -> Table {
    let mut variants = Table::new();
    variants.set_implicit(true);
    for (i, (name, (_, argv))) in names.iter().zip(argvs).enumerate() {
        let mut v = Table::new();
        v.insert(
            &format!("stages.{STAGE}.argv"),
            value(argv.iter().map(String::as_str).collect::<Array>()),
        );
        if let Some(p) = prepare.filter(|p| p.len() > 1) {
            v.insert(
                &format!("stages.{PREPARE}.argv"),
                value(p[i].1.iter().map(String::as_str).collect::<Array>()),
            );
        }
        variants[name.as_str()] = Item::Table(v);
    }
    variants
}

/// A parameter: its name and its values (whole numbers as numbers, the rest as text).
type Param = (String, Vec<toml_edit::Value>);

/// `--parameter-list` checked: names a template can read, values given once each.
fn parameters(a: &AbArgs) -> Result<Vec<Param>, String> {
    let mut out: Vec<Param> = Vec::new();
    for (name, values) in a.parameters() {
        let named = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !named || reserved(name) {
            return Err(format!(
                "--parameter-list `{name}` cannot name a parameter\nhint: use letters, digits and `_`, not starting with a digit, and none of {}",
                crate::kinds::TEMPLATE_BUILTINS.join(", ") + ", vars"
            ));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(format!(
                "--parameter-list {name} is given twice\nhint: give all its values in one list: -L {name} 1,2,3"
            ));
        }
        let list: Vec<&str> = values.split(',').collect();
        if let Some(twice) = list.iter().enumerate().find(|(i, v)| list[..*i].contains(v)) {
            return Err(format!(
                "--parameter-list {name}: the value `{}` is given twice\nhint: give each value once",
                twice.1
            ));
        }
        let typed = list
            .iter()
            .map(|v| match v.parse::<i64>() {
                Ok(n) if n.to_string() == *v => toml_edit::Value::from(n),
                _ => toml_edit::Value::from(*v),
            })
            .collect();
        out.push((name.to_owned(), typed));
    }
    Ok(out)
}

/// How the commands are started: `--shell`, or `-N` / `--shell none`.
fn runner(a: &AbArgs) -> Result<Runner, String> {
    let Some(shell) = a.shell() else {
        return Ok(Runner::Direct);
    };
    match shlex::split(shell) {
        Some(words) if words == ["sh"] => Ok(Runner::Sh),
        Some(words) if !words.is_empty() && words.iter().all(|w| !w.is_empty()) => Ok(Runner::Shell(words)),
        _ => Err(format!(
            "--shell `{shell}` does not name a shell\nhint: give a shell with its options, e.g. --shell \"bash --norc\", or -N for none"
        )),
    }
}

/// The stage's `shell` flag and `argv` templates that run `command`.
fn argv(runner: &Runner, command: &str, params: &[String]) -> Result<Launch, String> {
    if command.trim().is_empty() {
        return Err("a command is empty\nhint: give each command as one quoted argument, e.g. 'sleep 0.1'".into());
    }
    Ok(match runner {
        Runner::Sh => (true, vec![template(command, params)]),
        Runner::Shell(words) => {
            let mut argv: Vec<String> = words.iter().map(|w| template(w, &[])).collect();
            argv.extend(["-c".to_owned(), template(command, params)]);
            (false, argv)
        }
        Runner::Direct => {
            let words = shlex::split(command).filter(|w| !w.is_empty()).ok_or_else(|| {
                format!(
                    "without a shell, `{command}` cannot be split into words (an open quote?)\nhint: close its quotes, or run it with a shell (leave out -N)"
                )
            })?;
            (false, words.iter().map(|w| template(w, params)).collect())
        }
    })
}

/// `--prepare`: none, one for every command, or one per command.
fn prepare(a: &AbArgs, runner: &Runner, params: &[String]) -> Result<Option<Vec<Launch>>, String> {
    if a.prepare.is_empty() {
        return Ok(None);
    }
    if a.prepare.len() != 1 && a.prepare.len() != a.commands.len() {
        return Err(format!(
            "{} --prepare commands for {} commands\nhint: give --prepare once for all commands, or once per command",
            a.prepare.len(),
            a.commands.len()
        ));
    }
    let mut out = Vec::new();
    for p in &a.prepare {
        if let Some(name) = params.iter().find(|n| p.contains(&format!("{{{n}}}"))) {
            return Err(format!(
                "--prepare `{p}` uses the parameter {{{name}}}\nhint: parameters go into the commands only; prepare what every value needs"
            ));
        }
        out.push(argv(runner, p.trim_end_matches(['\n', '\r']), &[])?);
    }
    Ok(Some(out))
}

/// The commands' names: `-n` as given (checked), else made from each command's words,
/// numbered where two would be the same.
fn names(a: &AbArgs, commands: &[&str]) -> Result<Vec<String>, String> {
    if !a.names.is_empty() {
        if a.names.len() != commands.len() {
            return Err(format!(
                "{} names (-n) for {} commands\nhint: give -n once per command, in order, or leave it out",
                a.names.len(),
                commands.len()
            ));
        }
        for (i, n) in a.names.iter().enumerate() {
            if !crate::paths::is_valid_name(n) {
                return Err(format!(
                    "-n `{n}` is not a valid name\nhint: use 1-64 letters, digits, `_` or `-`"
                ));
            }
            if a.names[..i].contains(n) {
                return Err(format!("-n `{n}` is given twice\nhint: give each command its own name"));
            }
        }
        return Ok(a.names.clone());
    }
    let mut names: Vec<String> = Vec::new();
    for c in commands {
        let base: String = crate::manifest::variant_name(c).chars().take(NAME_CHARS).collect();
        let base = base.trim_end_matches('-');
        names.push(crate::manifest::unused_name(
            if base.is_empty() { "command" } else { base },
            &names,
        ));
    }
    Ok(names)
}

/// `command` as a template that renders as itself, except that `{NAME}` of each parameter in
/// `params` becomes its value: a `{` that would open a template tag is written as one.
pub(super) fn template(command: &str, params: &[String]) -> String {
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let param = params
            .iter()
            .find(|p| after.strip_prefix(p.as_str()).is_some_and(|r| r.starts_with('}')));
        if let Some(p) = param {
            out.push_str(&format!("{{{{ {p} }}}}"));
            rest = &after[p.len() + 1..];
        } else {
            out.push_str(if after.starts_with(['{', '%', '#']) {
                "{{ '{' }}"
            } else {
                "{"
            });
            rest = after;
        }
    }
    out.push_str(rest);
    out
}
