//! Reporters (exec -> events -> **reporters**): console progress, the results store, and a
//! JSON-lines event log. Each consumes the same event stream.

use super::{ExecError, Reporter, RunEvent};
use crate::measure::Fingerprint;
use crate::store::{self, Db};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;

/// Progress on the terminal; failures are printed as they happen (also when not a TTY).
pub struct ConsoleReporter {
    bar: ProgressBar,
    quiet: bool,
}

impl ConsoleReporter {
    pub fn new(quiet: bool) -> Self {
        Self {
            bar: ProgressBar::hidden(),
            quiet,
        }
    }
}

impl Reporter for ConsoleReporter {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError> {
        match event {
            RunEvent::RunStarted {
                to_run,
                planned,
                run_id,
                ..
            } => {
                if !self.quiet {
                    self.bar = ProgressBar::new(*to_run as u64);
                    self.bar.set_style(
                        ProgressStyle::with_template(
                            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials  {msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    if to_run < planned {
                        self.bar.suspend(|| {
                            eprintln!(
                                "run {run_id}: {} of {planned} trials already stored, running the remaining {to_run}",
                                planned - to_run
                            )
                        });
                    }
                }
            }
            RunEvent::TrialStarted { trial, config, .. } => {
                let what = if trial.warmup {
                    "warm-up".to_owned()
                } else {
                    format!("rep {}", trial.repetition)
                };
                self.bar.set_message(format!("{config} ({what})"));
            }
            RunEvent::StageFinished { .. } => {}
            RunEvent::TrialFinished { trial, .. } => {
                self.bar.inc(1);
                if let Some(err) = &trial.error {
                    let first = err.lines().next().unwrap_or_default();
                    self.bar
                        .suspend(|| eprintln!("trial {} ({}) failed: {first}", trial.index, trial.config));
                }
            }
            RunEvent::RunFinished { .. } => self.bar.finish_and_clear(),
        }
        Ok(())
    }
}

/// Writes every finished trial to the database, one transaction per trial, as it happens.
pub struct StoreReporter<'a> {
    db: &'a Db,
    rt: tokio::runtime::Handle,
    env: &'a Fingerprint,
}

impl<'a> StoreReporter<'a> {
    pub fn new(db: &'a Db, rt: tokio::runtime::Handle, env: &'a Fingerprint) -> Self {
        Self { db, rt, env }
    }
}

impl Reporter for StoreReporter<'_> {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError> {
        match event {
            RunEvent::RunStarted { .. } => {
                self.rt.block_on(store::upsert_environment(self.db, self.env))?;
            }
            RunEvent::TrialFinished { run_id, trial } => {
                self.rt.block_on(store::insert_trial(self.db, run_id, trial))?;
            }
            RunEvent::RunFinished { run_id, status, .. } => {
                let finished = (*status == "finished").then(chrono::Utc::now);
                self.rt
                    .block_on(store::set_run_status(self.db, run_id, status, finished))?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Appends every event as one JSON line, flushed as it happens.
pub struct JsonReporter {
    out: std::io::BufWriter<std::fs::File>,
}

impl JsonReporter {
    pub fn create(path: &std::path::Path) -> std::io::Result<Self> {
        Ok(Self {
            out: std::io::BufWriter::new(std::fs::File::create(path)?),
        })
    }
}

impl Reporter for JsonReporter {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError> {
        serde_json::to_writer(&mut self.out, event).map_err(std::io::Error::other)?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(())
    }
}
