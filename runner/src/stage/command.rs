//! The `command` stage: runs an external program as one stage of a trial (exec -> stage).
//!
//! The argv is rendered with minijinja from the resolved config (`{{ batch_size }}` reads
//! `vars.batch_size`, plus `variant`, `config`, `repetition`, `trial`, `seed`, `run_id`,
//! `stage`). No shell is involved unless `shell = true`. Lines the program prints on stdout as
//! `{"metric": "name", "value": 1.0, "unit": "s", "step": 3}` become metrics.

use super::{BuildError, Inputs, Stage, StageCtx, StageError};
use crate::artifact::Artifact;
use indexmap::IndexMap;
use minijinja::{Environment, UndefinedBehavior};
use serde::Deserialize;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
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

pub(super) fn build(table: &toml::Table) -> Result<Arc<dyn Stage>, BuildError> {
    let params: CommandParams = super::params_from_table(table)?;
    if params.argv.is_empty() || params.argv[0].trim().is_empty() {
        return Err(BuildError {
            field: Some("argv".into()),
            message: "`argv` must name a program".into(),
            hint: Some("e.g. argv = [\"python3\", \"bench.py\", \"--batch\", \"{{ batch_size }}\"]".into()),
        });
    }
    if params.shell && params.argv.len() != 1 {
        return Err(BuildError {
            field: Some("argv".into()),
            message: format!(
                "with `shell = true`, `argv` must hold exactly one command line, got {}",
                params.argv.len()
            ),
            hint: Some("write the whole command as one string: argv = [\"make bench && ./bench\"]".into()),
        });
    }
    if let Some((name, _)) = params.env.iter().find(|(k, _)| !is_env_name(k)) {
        return Err(BuildError {
            field: Some("env".into()),
            message: format!("{name:?} is not an environment variable name"),
            hint: Some("names are letters, digits and `_`, not starting with a digit, e.g. OMP_NUM_THREADS".into()),
        });
    }
    if let Some(t) = params.timeout {
        if t.is_finite() && t > MAX_TIMEOUT_SECONDS {
            return Err(BuildError {
                field: Some("timeout".into()),
                message: format!(
                    "`timeout` = {} s is above the limit of {MAX_TIMEOUT_SECONDS} s (7 days)",
                    if t < 1e9 { t.to_string() } else { format!("{t:e}") }
                ),
                hint: Some("leave `timeout` out for no limit".into()),
            });
        }
        if !(t.is_finite() && t > 0.0) {
            return Err(BuildError {
                field: Some("timeout".into()),
                message: format!("`timeout` must be a positive number of seconds, got {t}"),
                hint: Some("e.g. timeout = 600.0, or leave it out for no limit".into()),
            });
        }
    }
    if let Some(hz) = params.gpu_sample_hz {
        let max = crate::measure::gpu::MAX_HZ;
        if !(hz.is_finite() && hz > 0.0 && hz <= max) {
            return Err(BuildError {
                field: Some("gpu_sample_hz".into()),
                message: format!("`gpu_sample_hz` must be above 0 and at most {max}, got {hz}"),
                hint: Some("e.g. gpu_sample_hz = 20.0 (the default)".into()),
            });
        }
        if !params.gpu_monitor {
            return Err(BuildError {
                field: Some("gpu_sample_hz".into()),
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
        return Err(BuildError {
            field: Some(field.to_owned()),
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
    fn render_all(&self, trial: &super::TrialInfo, seed: u64, stage: &str) -> (&'static str, Result<Rendered, String>) {
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

/// Longest metric name a program may print, in bytes.
pub const MAX_METRIC_NAME: usize = 128;
/// Longest unit a program may print, in bytes.
pub const MAX_METRIC_UNIT: usize = 64;

/// A metric line printed by the program:
/// `{"metric": "loss", "value": 0.31, "unit": "loss", "step": 3}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MetricLine {
    /// Stage-local name: 1 to [`MAX_METRIC_NAME`] of `A-Z a-z 0-9 _ - .`, so that
    /// `<stage>.<metric>` names it in a manifest.
    pub metric: String,
    pub value: f64,
    /// At most [`MAX_METRIC_UNIT`] bytes, without control characters.
    #[serde(default)]
    pub unit: String,
    pub step: Option<i64>,
}

/// What one stdout line of a command stage says: `None` for a line that is no metric line
/// (it does not start with `{`, so plain output is not an error), `Some(Ok)` for a metric,
/// `Some(Err(why))` for a line that looks like JSON but is no valid metric line.
pub fn parse_metric_line(line: &str) -> Option<Result<MetricLine, String>> {
    if !line.trim_start().starts_with('{') {
        return None;
    }
    let m = match serde_json::from_str::<MetricLine>(line) {
        Ok(m) => m,
        Err(e) => return Some(Err(e.to_string())),
    };
    let name_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    Some(if m.metric.is_empty() {
        Err("the metric name is empty".to_owned())
    } else if m.metric.len() > MAX_METRIC_NAME {
        Err(format!(
            "the metric name is {} bytes long (at most {MAX_METRIC_NAME})",
            m.metric.len()
        ))
    } else if !m.metric.chars().all(name_ok) {
        Err(format!(
            "metric name `{}` has characters other than A-Z a-z 0-9 _ - .",
            m.metric.escape_debug()
        ))
    } else if m.unit.len() > MAX_METRIC_UNIT {
        Err(format!(
            "the unit is {} bytes long (at most {MAX_METRIC_UNIT})",
            m.unit.len()
        ))
    } else if m.unit.chars().any(char::is_control) {
        Err(format!("unit `{}` has control characters", m.unit.escape_debug()))
    } else {
        Ok(m)
    })
}

/// Stdout lines of one stage run that look like JSON but are no metric line: the first
/// [`BAD_LINES_SHOWN`] with their reason, the rest only counted.
#[derive(Debug, Default, PartialEq)]
struct BadLines {
    /// (1-based line number, why)
    shown: Vec<(usize, String)>,
    total: usize,
}

impl BadLines {
    fn push(&mut self, line: usize, why: String) {
        if self.shown.len() < BAD_LINES_SHOWN {
            self.shown
                .push((line, crate::metrics::cut(&why, BAD_LINE_REASON_CHARS)));
        }
        self.total += 1;
    }
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

    fn run(&self, ctx: &mut StageCtx<'_>, _inputs: &Inputs) -> Result<Artifact, StageError> {
        let (_, rendered) = self.render_all(ctx.trial, ctx.seed, ctx.stage);
        let r = rendered.map_err(StageError::new)?;
        let dir = match &r.cwd {
            Some(cwd) => {
                let dir = working_dir(ctx.manifest_dir, cwd);
                if let Some(why) = unusable_working_dir(&dir, cwd, ctx.manifest_dir) {
                    return Err(StageError::new(why));
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
            .map_err(|e| StageError::new(format!("cannot start `{}`: {e}", r.argv[0])))?;
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
            Some(Killed::Cancelled) => return Err(StageError::cancelled()),
            Some(Killed::Timeout) => {
                return Err(StageError::new(format!(
                    "timed out after {}s{}",
                    self.params.timeout.unwrap_or_default(),
                    stderr_suffix(&tail)
                )))
            }
            None => {}
        }
        match status {
            Ok(0) => Ok(Artifact::None),
            Ok(code) => Err(StageError::new(format!(
                "`{}` exited with code {code}{}",
                r.argv[0],
                stderr_suffix(&tail)
            ))),
            Err(sig) => Err(StageError::new(format!(
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

enum Killed {
    Timeout,
    Cancelled,
}

fn watch(
    pid: libc::pid_t,
    token: &str,
    deadline: Option<Instant>,
    cancel: &std::sync::atomic::AtomicBool,
    done: mpsc::Receiver<()>,
    window: &PidWindow,
) -> Option<Killed> {
    loop {
        match done.recv_timeout(Duration::from_millis(20)) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        window.observe();
        let reason = if cancel.load(Ordering::SeqCst) {
            Some(Killed::Cancelled)
        } else if deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Killed::Timeout)
        } else {
            None
        };
        if let Some(reason) = reason {
            // The program is not reaped yet (the waiter is blocked on it), so its process group
            // id cannot have been reused.
            kill_tree(Some(pid), token, None);
            return Some(reason);
        }
    }
}

/// What ends this process's stages when it dies, even by `kill -9`: a shell started once per
/// process, in its own process group, that reads a pipe from it. Before each spawn measured
/// writes `+`, after the stage's processes are gone `-`. When the pipe closes (measured
/// exited or was killed) with stages still counted, the guard kills every process marked
/// with this process's stage tokens (`MEASURED_STAGE_TOKEN=<pid>-...`), for up to a second.
/// It lets stages be spawned with `posix_spawn`: `PR_SET_PDEATHSIG` has to be set in the child
/// before `exec`, which makes the spawn a `fork` (0.35 ms per `true` trial).
struct Guard {
    pipe: std::sync::Mutex<std::process::ChildStdin>,
}

const GUARD_SCRIPT: &str = r#"n=0
while IFS= read -r line; do
  case $line in
    +) n=$((n + 1)) ;;
    -) n=$((n - 1)) ;;
  esac
done
[ "$n" -gt 0 ] || exit 0
for round in 1 2 3 4 5 6 7 8 9 10; do
  found=
  for d in /proc/[0-9]*; do
    if tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -q "^MEASURED_STAGE_TOKEN=$1-"; then
      kill -9 "${d#/proc/}" 2>/dev/null && found=1
    fi
  done
  [ -n "$found" ] || exit 0
  sleep 0.1
done
"#;

impl Guard {
    /// The guard of this process, started on first use; `None` when it cannot start or has
    /// died (then each stage gets `PR_SET_PDEATHSIG` instead).
    fn get() -> Option<&'static Guard> {
        static GUARD: std::sync::OnceLock<Option<Guard>> = std::sync::OnceLock::new();
        GUARD
            .get_or_init(|| {
                let mut child = Command::new("sh")
                    .arg("-c")
                    .arg(GUARD_SCRIPT)
                    .arg("measured-guard")
                    .arg(std::process::id().to_string())
                    .env_remove(TOKEN_VAR)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    // Out of the terminal's process group: Ctrl-C is for measured, which then
                    // ends its stages itself.
                    .process_group(0)
                    .spawn()
                    .ok()?;
                let pipe = child.stdin.take()?;
                Some(Guard {
                    pipe: std::sync::Mutex::new(pipe),
                })
            })
            .as_ref()
    }

    fn say(&self, line: &[u8]) -> bool {
        use std::io::Write;
        self.pipe.lock().is_ok_and(|mut p| p.write_all(line).is_ok())
    }
}

/// One stage counted by the guard, from before its spawn until it is dropped, after its
/// processes are gone (or its spawn failed).
struct GuardedStage(&'static Guard);

impl GuardedStage {
    fn begin() -> Option<GuardedStage> {
        let guard = Guard::get()?;
        guard.say(b"+\n").then_some(GuardedStage(guard))
    }
}

impl Drop for GuardedStage {
    fn drop(&mut self) {
        self.0.say(b"-\n");
    }
}

/// The pids a stage's processes can have, from the namespace's pid counter
/// (`/proc/sys/kernel/ns_last_pid`), so that the check after the program exits reads the
/// environment of the processes started since, not of every process on the machine (0.26 ms
/// per trial with 65 processes; a workstation has hundreds).
///
/// Linux hands out pids in increasing order until it wraps at `pid_max`: while the counter
/// has not wrapped, every process the stage started has a pid above the counter's value just
/// before the spawn. The watchdog reads the counter every tick (20 ms), and a wrap shows as a
/// value lower than the one before (a whole cycle in 20 ms would take at least 32,768 forks).
/// After a wrap, or where the counter cannot be read, every process is read.
struct PidWindow {
    first: Option<i64>,
    last: std::sync::atomic::AtomicI64,
    wrapped: std::sync::atomic::AtomicBool,
}

impl PidWindow {
    fn open() -> Self {
        Self::starting_at(last_pid())
    }

    fn starting_at(first: Option<i64>) -> Self {
        Self {
            first,
            last: std::sync::atomic::AtomicI64::new(first.unwrap_or(0)),
            wrapped: std::sync::atomic::AtomicBool::new(first.is_none()),
        }
    }

    fn observe(&self) {
        self.saw(last_pid());
    }

    fn saw(&self, value: Option<i64>) {
        match value {
            Some(v) if v >= self.last.swap(v, Ordering::SeqCst) => {}
            _ => self.wrapped.store(true, Ordering::SeqCst),
        }
    }

    /// The lowest pid a process of the stage can have; `None`: any.
    fn floor(&self) -> Option<libc::pid_t> {
        self.floor_now(last_pid())
    }

    /// [`PidWindow::floor`] with the counter reading `now`.
    fn floor_now(&self, now: Option<i64>) -> Option<libc::pid_t> {
        self.saw(now);
        if self.wrapped.load(Ordering::SeqCst) {
            return None;
        }
        self.first.and_then(|f| libc::pid_t::try_from(f + 1).ok())
    }
}

/// The last pid handed out in this pid namespace.
fn last_pid() -> Option<i64> {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The environment variable that marks a stage's processes.
const TOKEN_VAR: &str = "MEASURED_STAGE_TOKEN";

/// A mark unique to one stage run of this process.
fn stage_token() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Processes of this user whose environment carries `TOKEN_VAR=token`: a stage's program and
/// everything it started, whichever process group or session they moved to.
fn marked(token: &str, floor: Option<libc::pid_t>) -> Vec<libc::pid_t> {
    let needle = format!("{TOKEN_VAR}={token}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&pid| floor.is_none_or(|f| pid >= f))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}

/// Ends a stage's whole tree: its process group (when `group` is given and not yet reaped),
/// then every process marked with its token, until none is left (at most about 2 s). Only
/// processes from pid `floor` up are read (`None`: all of them; see [`PidWindow`]).
fn kill_tree(group: Option<libc::pid_t>, token: &str, floor: Option<libc::pid_t>) {
    if let Some(pid) = group {
        // SAFETY: plain syscall; a negative pid signals the whole process group.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    for _ in 0..100 {
        let left = marked(token, floor);
        if left.is_empty() {
            return;
        }
        for p in left {
            // SAFETY: plain syscall on a process of ours, found by its mark.
            unsafe {
                libc::kill(p, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `pid`, returning its exit code (or the signal that ended it) and peak RSS in KiB.
fn wait_with_rusage(pid: libc::pid_t) -> (Result<i32, i32>, Option<u64>) {
    let mut status: libc::c_int = 0;
    // SAFETY: zeroed rusage is a valid value to be filled by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our own child, status and usage point to valid memory.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        if r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return (Err(0), None);
    }
    let code = if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Err(libc::WTERMSIG(status))
    };
    (code, Some(usage.ru_maxrss.max(0) as u64))
}

/// Longest output line kept, in bytes; the rest of a longer line is dropped.
pub const MAX_LINE: usize = 1 << 20;

/// Calls `f` with each line of `r` (0-based number, text), reading until the end: output is
/// bytes, so invalid UTF-8 is replaced rather than fatal, and a line longer than `MAX_LINE`
/// is cut rather than held. The pipe is drained even when a line is unreadable, so the
/// program never dies of a closed pipe.
pub fn each_line(r: impl Read, mut f: impl FnMut(usize, &str)) {
    let mut reader = BufReader::new(r);
    let mut line = Vec::new();
    let mut n = 0;
    let mut emit = |line: &mut Vec<u8>| {
        f(n, String::from_utf8_lossy(line).trim_end_matches('\r'));
        n += 1;
        line.clear();
    };
    loop {
        let buf = match reader.fill_buf() {
            Ok([]) => break,
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let newline = buf.iter().position(|&b| b == b'\n');
        let end = newline.unwrap_or(buf.len());
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(&buf[..end.min(room)]);
        let used = if newline.is_some() { end + 1 } else { end };
        reader.consume(used);
        if newline.is_some() {
            emit(&mut line);
        }
    }
    if !line.is_empty() {
        emit(&mut line);
    }
}

fn tail_lines(r: impl Read, n: usize) -> String {
    let mut lines = VecDeque::with_capacity(n + 1);
    each_line(r, |_, line| {
        lines.push_back(line.to_owned());
        if lines.len() > n {
            lines.pop_front();
        }
    });
    lines.into_iter().collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pid_window_starts_above_the_counter_and_reads_everything_after_a_wrap() {
        let w = PidWindow::starting_at(Some(1000));
        w.saw(Some(1200));
        assert_eq!(w.floor_now(Some(1300)), Some(1001));
        // The counter went down: it wrapped, and pids below 1001 may be the stage's now.
        let wrapped = PidWindow::starting_at(Some(1000));
        wrapped.saw(Some(32_000));
        wrapped.saw(Some(400));
        assert_eq!(wrapped.floor_now(Some(900)), None);
        // A wrap between the last tick and the exit counts too.
        let late = PidWindow::starting_at(Some(1000));
        assert_eq!(late.floor_now(Some(301)), None);
        // No counter to read: every process is read.
        assert_eq!(PidWindow::starting_at(None).floor_now(Some(5)), None);
        assert_eq!(PidWindow::starting_at(Some(1000)).floor_now(None), None);
    }

    #[test]
    fn output_lines_are_bytes_cut_at_a_bound_and_read_to_the_end() {
        let mut input = b"ok\n\xff\xfe bad utf-8\r\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        input.extend(b"\nlast");
        let mut seen = Vec::new();
        each_line(&input[..], |i, l| {
            seen.push((i, l.len(), l.chars().take(3).collect::<String>()))
        });
        assert_eq!(
            seen,
            [
                (0, 2, "ok".to_owned()),
                (1, "\u{fffd}\u{fffd} bad utf-8".len(), "\u{fffd}\u{fffd} ".to_owned()),
                (2, MAX_LINE, "xxx".to_owned()),
                (3, 4, "las".to_owned())
            ]
        );
    }

    #[test]
    fn metric_lines_parse_and_bad_ones_say_why() {
        assert_eq!(parse_metric_line("plain text"), None);
        assert_eq!(parse_metric_line(""), None);
        assert_eq!(
            parse_metric_line(r#" {"metric": "epoch.loss-2_x", "value": 0.5, "unit": "loss", "step": 3}"#),
            Some(Ok(MetricLine {
                metric: "epoch.loss-2_x".into(),
                value: 0.5,
                unit: "loss".into(),
                step: Some(3)
            }))
        );
        let bad = |line: &str| match parse_metric_line(line) {
            Some(Err(why)) => why,
            other => panic!("{line}: {other:?}"),
        };
        assert!(bad(r#"{"metrc": "a", "value": 1}"#).contains("missing field `metric`"));
        assert_eq!(bad(r#"{"metric": "", "value": 1}"#), "the metric name is empty");
        let long = "x".repeat(MAX_METRIC_NAME + 1);
        assert_eq!(
            bad(&format!(r#"{{"metric": "{long}", "value": 1}}"#)),
            "the metric name is 129 bytes long (at most 128)"
        );
        let longest = "x".repeat(MAX_METRIC_NAME);
        assert!(matches!(
            parse_metric_line(&format!(r#"{{"metric": "{longest}", "value": 1}}"#)),
            Some(Ok(_))
        ));
        for name in ["a b", "a/b", "ä", r"a\nb", "a`b", r"a\u0000"] {
            assert!(
                bad(&format!(r#"{{"metric": "{name}", "value": 1}}"#)).contains("has characters other than"),
                "{name}"
            );
        }
        let unit = "u".repeat(MAX_METRIC_UNIT + 1);
        assert!(bad(&format!(r#"{{"metric": "a", "value": 1, "unit": "{unit}"}}"#)).contains("unit is 65 bytes"));
        assert!(bad(r#"{"metric": "a", "value": 1, "unit": "s\n"}"#).contains("control characters"));
    }

    #[test]
    fn bad_lines_keep_the_first_few_with_short_reasons_and_count_the_rest() {
        let mut bad = BadLines::default();
        for i in 0..1000 {
            bad.push(i + 1, "y".repeat(10_000));
        }
        assert_eq!(bad.total, 1000);
        assert_eq!(bad.shown.len(), BAD_LINES_SHOWN);
        assert!(bad
            .shown
            .iter()
            .all(|(_, why)| why.chars().count() == BAD_LINE_REASON_CHARS));
        assert_eq!(bad.shown.last().unwrap().0, BAD_LINES_SHOWN);
    }

    #[test]
    fn a_relative_cwd_is_relative_to_the_manifest_and_a_missing_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let manifest_dir = dir.path().canonicalize().unwrap().join("experiments");
        std::fs::create_dir_all(manifest_dir.join("data")).unwrap();
        assert_eq!(working_dir(&manifest_dir, "data"), manifest_dir.join("data"));
        assert_eq!(working_dir(&manifest_dir, "/abs"), PathBuf::from("/abs"));
        assert_eq!(
            unusable_working_dir(&manifest_dir.join("data"), "data", &manifest_dir),
            None
        );

        let missing = unusable_working_dir(&manifest_dir.join("nope"), "nope", &manifest_dir).unwrap();
        assert!(
            missing.starts_with(&format!(
                "working directory `{}` does not exist (cwd = \"nope\", relative to the manifest's directory {})",
                manifest_dir.join("nope").display(),
                manifest_dir.display()
            )),
            "{missing}"
        );
        std::fs::write(manifest_dir.join("file"), "").unwrap();
        let file = manifest_dir.join("file");
        let not_dir = unusable_working_dir(&file, file.to_str().unwrap(), &manifest_dir).unwrap();
        assert!(not_dir.contains("is not a directory"), "{not_dir}");
        assert!(
            !not_dir.contains("relative to"),
            "an absolute cwd is not relative: {not_dir}"
        );
    }
}
