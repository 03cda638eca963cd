//! The `command` stage: runs an external program as one stage of a trial (exec -> stage).
//!
//! The argv is rendered with minijinja from the resolved config (`{{ batch_size }}` reads
//! `vars.batch_size`, plus `variant`, `config`, `repetition`, `trial`, `seed`, `run_id`,
//! `stage`). No shell is involved unless `shell = true`. Lines the program prints on stdout as
//! `{"metric": "name", "value": 1.0, "unit": "s", "step": 3}` become metrics.
//!
//! The parameters, their check and the rendering of the templates are `crate::kinds`'s
//! (`CommandParams`); this file runs the program.

mod output;
mod process;
mod repeat;
mod supervise;

use output::BadLines;
use process::{stage_token, GuardedStage, Killed, PidWindow, TOKEN_VAR};
use supervise::{supervise, Watch, Watched};

pub use output::{each_line, parse_metric_line, MetricLine, MAX_LINE};

use super::runnable::{Inputs, Stage, StageCtx, StageError};
use crate::artifact::Artifact;
use crate::kinds::{shown_dir, shown_working_dir, CommandParams, Rendered};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many ignored stdout lines a warning names.
const BAD_LINES_SHOWN: usize = 3;

/// Characters of the reason given for one ignored stdout line (serde's messages quote the
/// offending value, which may be a whole line).
const BAD_LINE_REASON_CHARS: usize = 200;

/// How many stderr lines a failure message carries.
const STDERR_TAIL_LINES: usize = 20;

#[derive(Debug)]
struct CommandStage {
    params: CommandParams,
}

pub(super) fn build(params: &CommandParams) -> Arc<dyn Stage> {
    Arc::new(CommandStage { params: params.clone() })
}

/// The folder a program runs in: `cwd` as rendered, relative to the manifest's folder (an
/// absolute `cwd` stays as it is). Relative to the manifest so that a run does not depend on the
/// directory measured was started from.
fn working_dir(manifest_dir: &Path, cwd: &str) -> PathBuf {
    manifest_dir.join(cwd)
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

impl Stage for CommandStage {
    fn gpu_monitor(&self) -> Option<f64> {
        self.params
            .gpu_monitor
            .then(|| self.params.gpu_sample_hz.unwrap_or(crate::measure::gpu::DEFAULT_HZ))
    }

    fn runs_per_trial(&self) -> u32 {
        self.params.repeat.unwrap_or(1)
    }

    fn run(&self, ctx: &mut StageCtx<'_>, _inputs: &Inputs) -> Result<Artifact, StageError> {
        let (_, rendered) = self.params.render_all(ctx.trial, ctx.seed, ctx.stage);
        let r = rendered.map_err(StageError::Command)?;
        let dir = match &r.cwd {
            Some(cwd) => {
                let dir = working_dir(ctx.manifest_dir, cwd);
                if let Some(why) = unusable_working_dir(&dir, cwd, ctx.manifest_dir) {
                    return Err(StageError::Command(why));
                }
                dir
            }
            // Without `cwd`, the manifest's folder (in a revision's checkout, the manifest's
            // folder there): the run does not depend on where measured was started.
            None => ctx.manifest_dir.to_path_buf(),
        };
        let repeat = self.runs_per_trial();
        let mut means = repeat::MeanMetrics::default();
        let mut peak: Option<u64> = None;
        for _ in 0..repeat {
            let lines = self.run_once(ctx, &r, &dir)?;
            peak = peak.max(ctx.peak_rss_child.take());
            if repeat == 1 {
                for m in lines {
                    match m.step {
                        Some(step) => ctx.rec.record_step(m.metric, step, m.value, &m.unit),
                        None => ctx.rec.record(m.metric, m.value, &m.unit),
                    }
                }
            } else {
                means.add_run(lines);
            }
        }
        ctx.peak_rss_child = peak;
        if repeat > 1 {
            means.record(&mut ctx.rec);
            ctx.rec.note(format!(
                "the program ran {repeat} times per trial (`repeat = {repeat}`): the stage's seconds and every metric \
                 it printed are the mean per run"
            ));
        }
        Ok(Artifact::None)
    }
}

impl CommandStage {
    // Long because: spawning, watching, reading output and reaping share the child and its guard,
    // which must be released in this order on every path.
    /// One run of the program in `dir`: the metric lines it printed, or why it failed.
    fn run_once(&self, ctx: &mut StageCtx<'_>, r: &Rendered, dir: &Path) -> Result<Vec<MetricLine>, StageError> {
        // The folder as a failure names it (canonical), worked out only on failure.
        let folder = || shown_dir(dir).display().to_string();
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
        cmd.current_dir(dir);
        let mut child = cmd
            .spawn()
            .map_err(|e| StageError::Command(format!("cannot start `{}` in {}: {e}", r.argv[0], folder())))?;
        let pid = child.id() as libc::pid_t;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");

        let deadline = self.params.timeout.map(|t| Instant::now() + Duration::from_secs_f64(t));
        let parse_metrics = self.params.metrics;
        let mut lines: Vec<MetricLine> = Vec::new();
        let printed = &mut lines;
        let mut bad_lines = BadLines::default();
        let watch = Watch {
            pid,
            token: &token,
            window: &window,
            deadline,
            cancel: ctx.cancel,
        };
        let watched = supervise(&watch, stdout, stderr, STDERR_TAIL_LINES, |i, line| {
            if !parse_metrics {
                return;
            }
            match parse_metric_line(line) {
                None => {}
                // As many as a stage keeps; the recorder counts no more than it holds.
                Some(Ok(m)) if printed.len() < crate::metrics::MAX_METRICS => printed.push(m),
                Some(Ok(_)) => bad_lines.push(i + 1, "beyond the metrics one stage run keeps".to_owned()),
                Some(Err(why)) => bad_lines.push(i + 1, why),
            }
        });
        let Watched {
            status,
            maxrss_kib,
            killed: killed_for,
            stderr_tail: tail,
        } = watched;
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
            Ok(0) => Ok(lines),
            Ok(code) => Err(StageError::Command(format!(
                "`{}` exited with code {code} (in {}){}",
                r.argv[0],
                folder(),
                stderr_suffix(&tail)
            ))),
            Err(sig) => Err(StageError::Command(format!(
                "`{}` was killed by signal {sig} (in {}){}",
                r.argv[0],
                folder(),
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
