//! The `command` stage: runs an external program as one stage of a trial (exec -> stage).
//!
//! The argv is rendered with minijinja from the resolved config (`{{ batch_size }}` reads
//! `vars.batch_size`, plus `variant`, `config`, `repetition`, `trial`, `seed`, `run_id`,
//! `stage`). No shell is involved unless `shell = true`. Lines the program prints on stdout as
//! `{"metric": "name", "value": 1.0, "unit": "s", "step": 3}` become metrics.

mod output;
mod process;

use output::{tail_lines, BadLines};
use process::{kill_tree, stage_token, wait_with_rusage, watch, GuardedStage, Killed, PidWindow, TOKEN_VAR};

pub use output::{each_line, parse_metric_line, MetricLine, MAX_LINE};

use super::params::params_from_table;
use super::runnable::{Inputs, Stage, StageCtx, StageError};
use crate::artifact::Artifact;
use crate::params::ParamError;
use indexmap::IndexMap;
use minijinja::{Environment, UndefinedBehavior};
use serde::Deserialize;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Parameters of a `command` stage: runs a program (without a shell unless `shell = true`);
/// lines it prints on stdout such as `{"metric": "loss", "value": 0.31, "unit": "loss"}` become
/// metrics.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
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
    #[serde(default)]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
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
}

fn yes() -> bool {
    true
}

/// How many ignored stdout lines a warning names.
const BAD_LINES_SHOWN: usize = 3;

/// Characters of the reason given for one ignored stdout line (serde's messages quote the
/// offending value, which may be a whole line).
const BAD_LINE_REASON_CHARS: usize = 200;

/// How many stderr lines a failure message carries.
const STDERR_TAIL_LINES: usize = 20;

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

#[derive(Debug)]
struct CommandStage {
    params: CommandParams,
}

pub(super) fn build(table: &toml::Table) -> Result<Arc<dyn Stage>, ParamError> {
    let params: CommandParams = params_from_table(table)?;
    if params.argv.is_empty() || params.argv[0].trim().is_empty() {
        return Err(ParamError {
            field: "argv".into(),
            message: "`argv` must name a program".into(),
            hint: Some("e.g. argv = [\"python3\", \"bench.py\", \"--batch\", \"{{ batch_size }}\"]".into()),
        });
    }
    if params.shell && params.argv.len() != 1 {
        return Err(ParamError {
            field: "argv".into(),
            message: format!(
                "with `shell = true`, `argv` must hold exactly one command line, got {}",
                params.argv.len()
            ),
            hint: Some("write the whole command as one string: argv = [\"make bench && ./bench\"]".into()),
        });
    }
    if let Some((name, _)) = params.env.iter().find(|(k, _)| !is_env_name(k)) {
        return Err(ParamError {
            field: "env".into(),
            message: format!("{name:?} is not an environment variable name"),
            hint: Some("names are letters, digits and `_`, not starting with a digit, e.g. OMP_NUM_THREADS".into()),
        });
    }
    if let Some(t) = params.timeout {
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
    if let Some(hz) = params.gpu_sample_hz {
        let max = crate::measure::gpu::MAX_HZ;
        if !(hz.is_finite() && hz > 0.0 && hz <= max) {
            return Err(ParamError {
                field: "gpu_sample_hz".into(),
                message: format!("`gpu_sample_hz` must be above 0 and at most {max}, got {hz}"),
                hint: Some("e.g. gpu_sample_hz = 20.0 (the default)".into()),
            });
        }
        if !params.gpu_monitor {
            return Err(ParamError {
                field: "gpu_sample_hz".into(),
                message: "`gpu_sample_hz` sets the rate of GPU telemetry, which is off".into(),
                hint: Some("add `gpu_monitor = true`, or leave `gpu_sample_hz` out".into()),
            });
        }
    }
    // Render every template once with a sample trial, so a typo or an undefined variable is a
    // manifest error now rather than a failed trial later.
    let sample = crate::stage::TrialInfo {
        run_id: "RUN".into(),
        trial_index: 0,
        config: "CONFIG".into(),
        variant: "VARIANT".into(),
        repetition: 0,
        warmup: false,
    };
    let stage = CommandStage { params };
    let (field, result) = stage.render_all(&sample, 0, "STAGE");
    if let Err(message) = result {
        return Err(ParamError {
            field: field.to_owned(),
            message,
            hint: Some(format!(
                "templates can use {} and the keys of `vars`",
                "`variant`, `config`, `repetition`, `trial`, `seed`, `run_id`, `stage`"
            )),
        });
    }
    Ok(Arc::new(stage))
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

struct Rendered {
    argv: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<String>,
}

impl CommandStage {
    /// Renders argv, env and cwd; on failure names the parameter that failed.
    fn render_all(
        &self,
        trial: &super::runnable::TrialInfo,
        seed: u64,
        stage: &str,
    ) -> (&'static str, Result<Rendered, String>) {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        let mut ctx = serde_json::Map::new();
        for (k, v) in &self.params.vars {
            ctx.insert(k.clone(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null));
        }
        // `{{ vars.batch_size }}` reads the same value as `{{ batch_size }}`.
        ctx.insert(
            "vars".into(),
            serde_json::to_value(&self.params.vars).unwrap_or(serde_json::Value::Null),
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
        let mut argv = Vec::with_capacity(self.params.argv.len());
        for a in &self.params.argv {
            match render(a) {
                Ok(r) => argv.push(r),
                Err(e) => return ("argv", Err(e)),
            }
        }
        let mut envs = Vec::with_capacity(self.params.env.len());
        for (k, v) in &self.params.env {
            match render(v) {
                Ok(r) => envs.push((k.clone(), r)),
                Err(e) => return ("env", Err(e)),
            }
        }
        let cwd = match self.params.cwd.as_deref().map(render).transpose() {
            Ok(c) => c,
            Err(e) => return ("cwd", Err(e)),
        };
        ("argv", Ok(Rendered { argv, env: envs, cwd }))
    }
}

/// The folder a program runs in: `cwd` as rendered, relative to the manifest's folder (an
/// absolute `cwd` stays as it is). Relative to the manifest so that a run does not depend on the
/// directory measured was started from.
fn working_dir(manifest_dir: &Path, cwd: &str) -> PathBuf {
    manifest_dir.join(cwd)
}

/// Where the program of a stage with `cwd` runs, written for people: the manifest's folder
/// canonical (no `..` from how the manifest was named) joined with `cwd` as written.
fn shown_working_dir(manifest_dir: &Path, cwd: &str) -> String {
    working_dir(&shown_dir(manifest_dir), cwd).display().to_string()
}

/// An existing folder, canonical when possible, else absolute.
fn shown_dir(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
}

/// Why the program cannot run in `dir`, or `None` when it is a folder. Checked before starting
/// the program: the operating system would report a missing folder as a missing program.
fn unusable_working_dir(dir: &Path, cwd: &str, manifest_dir: &Path) -> Option<String> {
    let what = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => return None,
        Ok(_) => "is not a directory",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist",
        Err(_) => "cannot be read",
    };
    let origin = if Path::new(cwd).is_absolute() {
        format!("cwd = {cwd:?}")
    } else {
        format!(
            "cwd = {cwd:?}, relative to the manifest's directory {}",
            shown_dir(manifest_dir).display()
        )
    };
    Some(format!(
        "working directory `{}` {what} ({origin}); hint: create it, or correct the stage's `cwd`",
        shown_working_dir(manifest_dir, cwd)
    ))
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
                    " (not defined: {}; add it to the stage's `vars`)",
                    missing.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    msg
}

impl Stage for CommandStage {
    fn gpu_monitor(&self) -> Option<f64> {
        self.params
            .gpu_monitor
            .then(|| self.params.gpu_sample_hz.unwrap_or(crate::measure::gpu::DEFAULT_HZ))
    }

    fn preview(&self, config: &str, variant: &str, manifest_dir: &Path) -> Option<String> {
        let sample = crate::stage::TrialInfo {
            run_id: "RUN".into(),
            trial_index: 0,
            config: config.into(),
            variant: variant.into(),
            repetition: 0,
            warmup: false,
        };
        let (_, rendered) = self.render_all(&sample, 0, "STAGE");
        let r = rendered.ok()?;
        let quote = |a: &str| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c)) {
                a.to_owned()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        };
        let mut out = String::new();
        if let Some(cwd) = &r.cwd {
            out.push_str(&format!("(in {}) ", quote(&shown_working_dir(manifest_dir, cwd))));
        }
        for (k, v) in &r.env {
            out.push_str(&format!("{k}={} ", quote(v)));
        }
        if self.params.shell {
            out.push_str(&format!("sh -c {}", quote(&r.argv[0])));
        } else {
            out.push_str(&r.argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "));
        }
        Some(out)
    }

    // Long because: spawning, watching, reading output and reaping share the child and its guard,
    // which must be released in this order on every path.
    fn run(&self, ctx: &mut StageCtx<'_>, _inputs: &Inputs) -> Result<Artifact, StageError> {
        let (_, rendered) = self.render_all(ctx.trial, ctx.seed, ctx.stage);
        let r = rendered.map_err(StageError::Command)?;
        let dir = match &r.cwd {
            Some(cwd) => {
                let dir = working_dir(ctx.manifest_dir, cwd);
                if let Some(why) = unusable_working_dir(&dir, cwd, ctx.manifest_dir) {
                    return Err(StageError::Command(why));
                }
                Some(dir)
            }
            None => ctx.checkout_dir.map(Path::to_path_buf),
        };
        let mut cmd = if self.params.shell {
            let mut c = Command::new("sh");
            c.arg("-c").arg(&r.argv[0]);
            c
        } else {
            let mut c = Command::new(&r.argv[0]);
            c.args(&r.argv[1..]);
            c
        };
        let token = stage_token();
        let window = PidWindow::open();
        cmd.envs(r.env.iter().map(|(k, v)| (k, v)))
            .env("MEASURED_SEED", ctx.seed.to_string())
            // Marks every process the stage starts, including those that leave its process
            // group (`setsid`): what `kill_tree` finds and ends.
            .env(TOKEN_VAR, &token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a timeout or Ctrl-C kills the program and its children.
            .process_group(0);
        // The program dies with measured, even on `kill -9`: the guard ends it, and the spawn
        // stays a `posix_spawn` (no copy of measured's page tables). Without a guard, the
        // child asks the kernel for `SIGKILL` when its parent dies.
        let guarded = GuardedStage::begin();
        if guarded.is_none() {
            // SAFETY: the closure runs in the forked child before exec and only makes one
            // async-signal-safe syscall. The signal fires when the thread that spawned the
            // child exits, and this thread waits for the child before it returns.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        if let Some(dir) = &dir {
            cmd.current_dir(dir);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| StageError::Command(format!("cannot start `{}`: {e}", r.argv[0])))?;
        let pid = child.id() as libc::pid_t;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");

        let deadline = self.params.timeout.map(|t| Instant::now() + Duration::from_secs_f64(t));
        let cancel = ctx.cancel;
        let parse_metrics = self.params.metrics;
        let rec = &mut ctx.rec;
        // Scoped threads: the watchdog borrows the run's cancel flag and is joined before return.
        let (status, maxrss_kib, killed_for, tail, bad_lines) = std::thread::scope(|s| {
            let stderr_reader = s.spawn(move || tail_lines(stderr, STDERR_TAIL_LINES));
            let (done_tx, done_rx) = mpsc::channel::<()>();
            let token_ref = token.as_str();
            let window = &window;
            let watchdog = s.spawn(move || watch(pid, token_ref, deadline, cancel, done_rx, window));
            // Once the program exits, whatever it left running is ended too, so that its
            // output pipes close and nothing of it outlives the stage.
            let waiter = s.spawn(move || {
                let exit = wait_with_rusage(pid);
                let _ = done_tx.send(());
                kill_tree(None, token_ref, window.floor());
                exit
            });
            let mut bad_lines = BadLines::default();
            each_line(stdout, |i, line| {
                if !parse_metrics {
                    return;
                }
                match parse_metric_line(line) {
                    None => {}
                    Some(Ok(m)) => match m.step {
                        Some(step) => rec.record_step(m.metric, step, m.value, &m.unit),
                        None => rec.record(m.metric, m.value, &m.unit),
                    },
                    Some(Err(why)) => bad_lines.push(i + 1, why),
                }
            });
            let (status, maxrss_kib) = waiter.join().unwrap_or((Err(0), None));
            let killed_for = watchdog.join().unwrap_or(None);
            let tail = stderr_reader.join().unwrap_or_default();
            (status, maxrss_kib, killed_for, tail, bad_lines)
        });
        drop(child);
        ctx.peak_rss_child = maxrss_kib.map(|k| k * 1024);
        if bad_lines.total > 0 {
            let shown: Vec<String> = bad_lines
                .shown
                .iter()
                .map(|(n, why)| format!("line {n}: {why}"))
                .collect();
            let more = bad_lines.total - bad_lines.shown.len();
            tracing::warn!(
                "stage `{}`: ignored {} stdout line(s) that look like JSON but are no metric line \
                 (expected {{\"metric\": NAME, \"value\": NUMBER, \"unit\": ..., \"step\": ...}}): {}{}",
                ctx.stage,
                bad_lines.total,
                shown.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            );
        }
        match killed_for {
            Some(Killed::Cancelled) => return Err(StageError::Cancelled),
            Some(Killed::Timeout) => {
                return Err(StageError::Command(format!(
                    "timed out after {}s{}",
                    self.params.timeout.unwrap_or_default(),
                    stderr_suffix(&tail)
                )))
            }
            None => {}
        }
        match status {
            Ok(0) => Ok(Artifact::None),
            Ok(code) => Err(StageError::Command(format!(
                "`{}` exited with code {code}{}",
                r.argv[0],
                stderr_suffix(&tail)
            ))),
            Err(sig) => Err(StageError::Command(format!(
                "`{}` was killed by signal {sig}{}",
                r.argv[0],
                stderr_suffix(&tail)
            ))),
        }
    }
}

fn stderr_suffix(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; stderr tail:\n{}", tail.trim_end())
    }
}

#[cfg(test)]
mod tests;
