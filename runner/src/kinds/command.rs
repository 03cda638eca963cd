//! What a `command` stage accepts (manifest stage table -> **`CommandParams`** -> `check`
//! at validation time -> `stage::command` at run time): its parameters, the templates of argv,
//! env and cwd and how they render for a trial, and the variables they read.

use crate::params::ParamError;
use indexmap::IndexMap;
use minijinja::{Environment, UndefinedBehavior};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Parameters of a `command` stage: runs a program (without a shell unless `shell = true`);
/// lines it prints on stdout such as `{"metric": "loss", "value": 0.31, "unit": "loss"}` become
/// metrics.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandParams {
    /// Program and arguments, each a minijinja template (`"{{ batch_size }}"` reads
    /// `vars.batch_size`; also `variant`, `config`, `repetition`, `trial`, `seed`, `run_id`,
    /// `stage`).
    #[schemars(length(min = 1))]
    pub argv: Vec<String>,
    /// Run `argv[0]` with `sh -c` (then argv must hold exactly one string).
    #[serde(default)]
    pub shell: bool,
    /// Extra environment variables (values are templates).
    #[serde(default)]
    pub env: IndexMap<String, String>,
    /// Working directory (a template), relative to the folder holding the manifest.
    pub cwd: Option<String>,
    /// Seconds after which the program is killed and the stage fails.
    #[schemars(range(min = 0.0))]
    pub timeout: Option<f64>,
    /// Values available to the templates; variants and sweeps override them
    /// (`"stages.bench.vars.batch_size" = [64, 256]`).
    #[serde(default, serialize_with = "vars_as_toml")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(skip_serializing_if = "super::params::no_schema_default", extend("default" = {}))]
    pub vars: toml::Table,
    /// Read metrics from JSON lines on stdout.
    #[serde(default = "yes")]
    pub metrics: bool,
    /// Sample GPU 0's utilization, memory, SM clock, power and temperature through NVML while
    /// the program runs (`gpu_*` metrics; a note instead where there is no NVIDIA driver).
    #[serde(default)]
    pub gpu_monitor: bool,
    /// Samples per second with `gpu_monitor` (default 20).
    #[schemars(range(min = 0.0, max = 1000.0))]
    pub gpu_sample_hz: Option<f64>,
    /// Runs of the program per trial, back to back (default 1). The stage's time and each
    /// metric it prints are the mean per run, as criterion and asv batch their iterations: a
    /// program of a millisecond or less is then timed over many runs, not one.
    #[schemars(range(min = 1, max = 100000))]
    pub repeat: Option<u32>,
}

/// Most runs of a command per trial (`repeat`).
pub const MAX_REPEAT: u32 = 100_000;

fn yes() -> bool {
    true
}

/// `vars` written out as one inline TOML table (a string within the parameters' JSON): TOML
/// writes every value the table can hold as itself, where JSON would write `nan` and `inf`
/// alike as `null` and a date as a one-key object, so two different tables never give one text.
fn vars_as_toml<S: serde::Serializer>(vars: &toml::Table, serializer: S) -> Result<S::Ok, S::Error> {
    let mut text = String::new();
    vars.serialize(toml::ser::ValueSerializer::new(&mut text))
        .map_err(serde::ser::Error::custom)?;
    serializer.serialize_str(&text)
}

/// Longest stage timeout: a week.
const MAX_TIMEOUT_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// A portable environment variable name (POSIX): letters, digits and `_`, not starting with a
/// digit, at most 256 bytes.
fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The variables every template reads without `vars`: where the trial is in the plan.
pub const TEMPLATE_BUILTINS: [&str; 8] = [
    "variant",
    "config",
    "repetition",
    "trial",
    "warmup",
    "seed",
    "run_id",
    "stage",
];

/// Where a trial is in the plan, for stages that template on it (command) or seed from it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TrialInfo {
    pub run_id: String,
    pub trial_index: u32,
    pub config: String,
    pub variant: String,
    pub repetition: u32,
    pub warmup: bool,
}

/// A command's templates rendered for one trial.
pub struct Rendered {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
}

impl CommandParams {
    /// Rejects what would only fail at run time: no program, a `shell` command line in
    /// pieces, a bad environment name, an out-of-range `timeout` or `gpu_sample_hz`, and a
    /// template that does not render for a sample trial.
    pub fn check(&self) -> Result<(), ParamError> {
        if self.argv.is_empty() || self.argv[0].trim().is_empty() {
            return Err(ParamError {
                field: "argv".into(),
                message: "`argv` must name a program".into(),
                hint: Some("e.g. argv = [\"python3\", \"bench.py\", \"--batch\", \"{{ batch_size }}\"]".into()),
            });
        }
        if self.shell && self.argv.len() != 1 {
            return Err(ParamError {
                field: "argv".into(),
                message: format!(
                    "with `shell = true`, `argv` must hold exactly one command line, got {}",
                    self.argv.len()
                ),
                hint: Some("write the whole command as one string: argv = [\"make bench && ./bench\"]".into()),
            });
        }
        if let Some((name, _)) = self.env.iter().find(|(k, _)| !is_env_name(k)) {
            return Err(ParamError {
                field: "env".into(),
                message: format!("{name:?} is not an environment variable name"),
                hint: Some("names are letters, digits and `_`, not starting with a digit, e.g. OMP_NUM_THREADS".into()),
            });
        }
        if let Some(t) = self.timeout {
            if t.is_finite() && t > MAX_TIMEOUT_SECONDS {
                return Err(ParamError {
                    field: "timeout".into(),
                    message: format!(
                        "`timeout` = {} s is above the limit of {MAX_TIMEOUT_SECONDS} s (7 days)",
                        if t < 1e9 { t.to_string() } else { format!("{t:e}") }
                    ),
                    hint: Some("leave `timeout` out for no limit".into()),
                });
            }
            if !(t.is_finite() && t > 0.0) {
                return Err(ParamError {
                    field: "timeout".into(),
                    message: format!("`timeout` must be a positive number of seconds, got {t}"),
                    hint: Some("e.g. timeout = 600.0, or leave it out for no limit".into()),
                });
            }
        }
        if let Some(n) = self.repeat.filter(|n| !(1..=MAX_REPEAT).contains(n)) {
            return Err(ParamError {
                field: "repeat".into(),
                message: format!("`repeat` must be 1 to {MAX_REPEAT}, got {n}"),
                hint: Some("e.g. repeat = 20: 20 runs per trial, each trial recording their mean".into()),
            });
        }
        if let Some(hz) = self.gpu_sample_hz {
            let max = crate::measure::gpu::MAX_HZ;
            if !(hz.is_finite() && hz > 0.0 && hz <= max) {
                return Err(ParamError {
                    field: "gpu_sample_hz".into(),
                    message: format!("`gpu_sample_hz` must be above 0 and at most {max}, got {hz}"),
                    hint: Some("e.g. gpu_sample_hz = 20.0 (the default)".into()),
                });
            }
            if !self.gpu_monitor {
                return Err(ParamError {
                    field: "gpu_sample_hz".into(),
                    message: "`gpu_sample_hz` sets the rate of GPU telemetry, which is off".into(),
                    hint: Some("add `gpu_monitor = true`, or leave `gpu_sample_hz` out".into()),
                });
            }
        }
        // Render every template once with a sample trial, so a typo or an undefined variable is a
        // manifest error now rather than a failed trial later.
        let sample = sample_trial("CONFIG", "VARIANT");
        let (field, result) = self.render_all(&sample, 0, "STAGE");
        if let Err(message) = result {
            let builtins = TEMPLATE_BUILTINS.map(|b| format!("`{b}`")).join(", ");
            let hint = match message.contains("(not defined: ") {
                true => self.undefined_hint(field).unwrap_or_else(|| {
                    format!("define it in the stage's `vars`; templates can use the keys of `vars` and {builtins}")
                }),
                false => format!("templates can use {builtins} and the keys of `vars`"),
            };
            return Err(ParamError {
                field: field.to_owned(),
                message,
                hint: Some(hint),
            });
        }
        Ok(())
    }

    /// "did you mean `level`?" for a template of `field` that reads a variable nothing
    /// defines, when a key of `vars` or a trial variable is close to it.
    fn undefined_hint(&self, field: &str) -> Option<String> {
        let templates: Vec<&str> = match field {
            "argv" => self.argv.iter().map(String::as_str).collect(),
            "env" => self.env.values().map(String::as_str).collect(),
            _ => self.cwd.as_deref().into_iter().collect(),
        };
        let known: Vec<&str> = self.vars.keys().map(String::as_str).chain(TEMPLATE_BUILTINS).collect();
        let env = Environment::new();
        templates
            .iter()
            .filter_map(|t| env.template_from_str(t).ok())
            .flat_map(|t| t.undeclared_variables(false))
            .filter(|v| v != "vars" && !known.contains(&v.as_str()))
            .find_map(|v| {
                let best = crate::hint::closest(&v, known.iter().copied())?;
                Some(format!(
                    "did you mean `{best}`? write {{{{ {best} }}}}{}",
                    if self.vars.contains_key(best) {
                        " (a key of the stage's `vars`)"
                    } else {
                        ""
                    }
                ))
            })
    }

    /// Renders argv, env and cwd; on failure names the parameter that failed.
    pub fn render_all(&self, trial: &TrialInfo, seed: u64, stage: &str) -> (&'static str, Result<Rendered, String>) {
        // Text without a template in it is itself: no template engine for every trial.
        let plain = |s: &str| !s.contains('{') && !s.ends_with('\n');
        if self
            .argv
            .iter()
            .chain(self.env.values())
            .chain(&self.cwd)
            .all(|s| plain(s))
        {
            let rendered = Rendered {
                argv: self.argv.clone(),
                env: self.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                cwd: self.cwd.clone(),
            };
            return ("argv", Ok(rendered));
        }
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        let mut ctx = serde_json::Map::new();
        for (k, v) in &self.vars {
            ctx.insert(k.clone(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null));
        }
        // `{{ vars.batch_size }}` reads the same value as `{{ batch_size }}`.
        ctx.insert(
            "vars".into(),
            serde_json::to_value(&self.vars).unwrap_or(serde_json::Value::Null),
        );
        ctx.insert("variant".into(), trial.variant.clone().into());
        ctx.insert("config".into(), trial.config.clone().into());
        ctx.insert("repetition".into(), trial.repetition.into());
        ctx.insert("trial".into(), trial.trial_index.into());
        ctx.insert("warmup".into(), trial.warmup.into());
        ctx.insert("seed".into(), seed.into());
        ctx.insert("run_id".into(), trial.run_id.clone().into());
        ctx.insert("stage".into(), stage.into());
        let ctx = serde_json::Value::Object(ctx);
        let render = |s: &str| {
            env.render_str(s, &ctx)
                .map_err(|e| describe_template_error(s, &e, &ctx))
        };
        let mut argv = Vec::with_capacity(self.argv.len());
        for a in &self.argv {
            match render(a) {
                Ok(r) => argv.push(r),
                Err(e) => return ("argv", Err(e)),
            }
        }
        let mut envs = Vec::with_capacity(self.env.len());
        for (k, v) in &self.env {
            match render(v) {
                Ok(r) => envs.push((k.clone(), r)),
                Err(e) => return ("env", Err(e)),
            }
        }
        let cwd = match self.cwd.as_deref().map(render).transpose() {
            Ok(c) => c,
            Err(e) => return ("cwd", Err(e)),
        };
        ("argv", Ok(Rendered { argv, env: envs, cwd }))
    }
}

/// Why a command stage's program cannot be started: what is wrong, and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnresolvedProgram {
    pub message: String,
    pub hint: String,
}

impl CommandParams {
    /// The folder the program runs in: `cwd` rendered for `trial`, relative to `manifest_dir`
    /// (an absolute `cwd` stays as it is), or `manifest_dir` itself without a `cwd`. `None`
    /// when `cwd` does not render (the check reports that).
    pub fn working_dir(&self, manifest_dir: &Path, trial: &TrialInfo) -> Option<PathBuf> {
        let (_, rendered) = self.render_all(trial, 0, "STAGE");
        Some(match rendered.ok()?.cwd {
            Some(cwd) => manifest_dir.join(cwd),
            None => manifest_dir.to_path_buf(),
        })
    }

    /// Why `argv[0]` does not name a program that can start from the stage's folder under
    /// `manifest_dir`: a bare name is looked up on `PATH` (the stage's own `env` PATH when it
    /// sets one), a path is taken relative to the folder. `None` when it resolves, when the
    /// command line goes through `sh -c` (the shell finds the program), or when a template does
    /// not render (reported by the check).
    pub fn unresolved_program(&self, manifest_dir: &Path) -> Option<UnresolvedProgram> {
        if self.shell {
            return None;
        }
        let sample = sample_trial("CONFIG", "VARIANT");
        let (_, rendered) = self.render_all(&sample, 0, "STAGE");
        let rendered = rendered.ok()?;
        let program = rendered.argv.first()?.clone();
        let dir = self.working_dir(manifest_dir, &sample)?;
        if program.contains('/') {
            let path = dir.join(&program);
            if is_executable(&path) {
                return None;
            }
            let what = if path.exists() {
                "is not an executable file"
            } else {
                "does not exist"
            };
            let name = Path::new(&program).file_name()?.to_string_lossy().into_owned();
            let folder = path.parent().unwrap_or(&dir);
            let siblings = executables_in(folder);
            let hint = match crate::hint::closest(&name, siblings.iter().map(String::as_str)) {
                Some(best) => format!("did you mean `{}`?", Path::new(&program).with_file_name(best).display()),
                None => format!(
                    "build it first, or correct the path: it is relative to the folder the stage runs in ({})",
                    dir.display()
                ),
            };
            return Some(UnresolvedProgram {
                message: format!("program `{program}` {what} (in {})", dir.display()),
                hint,
            });
        }
        let path_var = rendered
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| std::ffi::OsString::from(v))
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        let dirs: Vec<PathBuf> = std::env::split_paths(&path_var)
            .map(|d| {
                if d.as_os_str().is_empty() {
                    dir.clone()
                } else {
                    dir.join(d)
                }
            })
            .collect();
        if dirs.iter().any(|d| is_executable(&d.join(&program))) {
            return None;
        }
        let names: Vec<String> = dirs.iter().flat_map(|d| executables_in(d)).collect();
        let hint = match crate::hint::closest(&program, names.iter().map(String::as_str)) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("install `{program}`, or write its path (relative to the folder the stage runs in)"),
        };
        Some(UnresolvedProgram {
            message: format!("program `{program}` is not found on PATH"),
            hint,
        })
    }
}

/// A sample trial for rendering templates outside a run (checks, previews).
pub fn sample_trial(config: &str, variant: &str) -> TrialInfo {
    TrialInfo {
        run_id: "RUN".into(),
        trial_index: 0,
        config: config.into(),
        variant: variant.into(),
        repetition: 0,
        warmup: false,
    }
}

/// A regular file someone may execute.
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The names of the executable files in `dir` (at most a few thousand are read).
fn executables_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .take(10_000)
        .flatten()
        .filter(|e| is_executable(&e.path()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

/// The variables the templates (argv, env values, cwd) of a command stage's parameter table
/// read, `vars.x` counted as `x`; `None` when that cannot be told (a template does not parse,
/// or reads `vars` as a whole).
pub fn template_variables(table: &toml::Table) -> Option<std::collections::BTreeSet<String>> {
    let strings = |v: Option<&toml::Value>| -> Vec<String> {
        match v {
            Some(toml::Value::String(s)) => vec![s.clone()],
            Some(toml::Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect(),
            Some(toml::Value::Table(t)) => t.values().filter_map(|x| x.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        }
    };
    let env = Environment::new();
    let mut used = std::collections::BTreeSet::new();
    for t in ["argv", "env", "cwd"].iter().flat_map(|k| strings(table.get(*k))) {
        let tmpl = env.template_from_str(&t).ok()?;
        for v in tmpl.undeclared_variables(true) {
            match v.strip_prefix("vars.") {
                Some(name) => used.insert(name.split('.').next().unwrap_or(name).to_owned()),
                None if v == "vars" => return None,
                None => used.insert(v.split('.').next().unwrap_or(&v).to_owned()),
            };
        }
    }
    Some(used)
}

fn describe_template_error(template: &str, e: &minijinja::Error, known: &serde_json::Value) -> String {
    let detail = e.detail().map(|d| format!(": {d}")).unwrap_or_default();
    let mut msg = format!("template `{template}` cannot be rendered: {}{detail}", e.kind());
    if e.kind() == minijinja::ErrorKind::UndefinedError {
        // Name what is undefined: the variables the template reads that the context lacks.
        let env = Environment::new();
        if let Ok(t) = env.template_from_str(template) {
            let mut missing: Vec<String> = t
                .undeclared_variables(false)
                .into_iter()
                .filter(|v| known.get(v).is_none())
                .collect();
            missing.sort();
            if !missing.is_empty() {
                msg.push_str(&format!(
                    " (not defined: {})",
                    missing.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    msg
}
