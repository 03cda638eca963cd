//! Reporters (exec -> events -> **reporters**): console progress and a JSON-lines event log.
//! The trial sink that stores finished trials (`store::TrialSink`) listens to the same events
//! through the command that runs them.

use super::events::{ExecError, Reporter, RunEvent};
use crate::record::StageRecord;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::HashSet;
use std::io::Write;

/// Distinct stage notes the console prints in one run; `measured show` and the report list
/// the rest.
const CONSOLE_NOTES: usize = 20;

/// Progress on the terminal; failures are printed as they happen (also when not a TTY), and
/// each distinct stage note once per run (a note every trial repeats is printed once).
pub struct ConsoleReporter {
    bar: ProgressBar,
    quiet: bool,
    /// `(stage, note)` pairs already printed.
    noted: HashSet<(String, String)>,
    /// Hashes of the distinct notes past [`CONSOLE_NOTES`], not printed.
    held_back: HashSet<u64>,
    run_id: String,
}

impl ConsoleReporter {
    pub fn new(quiet: bool) -> Self {
        Self {
            bar: ProgressBar::hidden(),
            quiet,
            noted: HashSet::new(),
            held_back: HashSet::new(),
            run_id: String::new(),
        }
    }

    fn print_notes(&mut self, stage: &StageRecord) {
        for note in &stage.notes {
            let key = (stage.name.clone(), note.clone());
            if self.noted.contains(&key) {
                continue;
            }
            if self.noted.len() >= CONSOLE_NOTES {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                key.hash(&mut h);
                self.held_back.insert(h.finish());
                continue;
            }
            self.noted.insert(key);
            if !self.quiet {
                self.bar.suspend(|| eprintln!("note: stage {}: {note}", stage.name));
            }
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
                self.run_id = (*run_id).to_owned();
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
            RunEvent::StageFinished { stage, .. } => self.print_notes(stage),
            RunEvent::TrialFinished { trial, .. } => {
                self.bar.inc(1);
                if let Some(err) = &trial.error {
                    let text = failure_text(err);
                    self.bar
                        .suspend(|| eprintln!("trial {} ({}) failed: {text}", trial.index, trial.config));
                }
            }
            RunEvent::Look { blocks, summary, .. } if !self.quiet => {
                self.bar.suspend(|| eprintln!("look after {blocks} blocks: {summary}"));
            }
            RunEvent::EndedEarly { blocks, reason, .. } if !self.quiet => {
                self.bar
                    .suspend(|| eprintln!("run ends after {blocks} blocks: {reason}"));
            }
            RunEvent::Look { .. } | RunEvent::EndedEarly { .. } => {}
            RunEvent::RunFinished { .. } => {
                self.bar.finish_and_clear();
                if !self.held_back.is_empty() && !self.quiet {
                    eprintln!(
                        "note: stages recorded {} more distinct notes; `measured show {}` lists them",
                        self.held_back.len(),
                        self.run_id
                    );
                }
            }
        }
        Ok(())
    }
}

/// Lines of a trial's error shown on the console: its first line, then the last
/// [`CONSOLE_TAIL_LINES`] of the rest (a command's stderr tail), indented.
const CONSOLE_TAIL_LINES: usize = 5;

pub fn failure_text(err: &str) -> String {
    let mut lines = err.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or_default().to_owned();
    let rest: Vec<&str> = lines.collect();
    let skip = rest.len().saturating_sub(CONSOLE_TAIL_LINES);
    let mut out = first;
    if skip > 0 {
        out.push_str(&format!("\n    ... ({skip} earlier lines in `measured show`)"));
    }
    for l in &rest[skip..] {
        out.push_str("\n    ");
        out.push_str(l);
    }
    out
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

#[cfg(test)]
mod tests {
    use super::failure_text;

    #[test]
    fn failure_text_keeps_the_first_line_and_the_last_five() {
        let err = "stage `x` failed: `x` exited with code 2; stderr tail:\na\nb\nc\nd\ne\nf\ng";
        assert_eq!(
            failure_text(err),
            "stage `x` failed: `x` exited with code 2; stderr tail:\n    ... (2 earlier lines in `measured show`)\n    c\n    d\n    e\n    f\n    g"
        );
        assert_eq!(failure_text("one line"), "one line");
    }
}
