//! Reporters (exec -> events -> **reporters**): console progress, the results store, and a
//! JSON-lines event log. Each consumes the same event stream.

use super::{ExecError, Reporter, RunEvent, TrialRecord};
use crate::db;
use crate::db::Db;
use crate::journal::{self, Journal};
use crate::measure::Fingerprint;
use crate::store;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

    fn print_notes(&mut self, stage: &super::StageRecord) {
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

/// How long one attempt to write to the database may take before it counts as a failure
/// (a database that went away can otherwise hold a write for the pool's whole timeout).
const ATTEMPT: Duration = Duration::from_secs(10);
/// While the database is down, a retry first asks it this long for `SELECT 1`, so a retry
/// holds the run up for no longer than that.
const PROBE: Duration = Duration::from_secs(1);
/// Retries back off from `FIRST_BACKOFF`, doubling up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(15);

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

/// Keeps every finished trial: appends it to the run's journal (on disk before anything
/// else), then writes it to the database, one transaction per trial. When the database is
/// unreachable the run goes on; the trials wait in the journal and are written, in order,
/// when it answers again. A SQLite results file that is deleted or replaced mid-run is
/// noticed before each write, and everything the journal holds is written again.
pub struct StoreReporter {
    url: String,
    db: Arc<Mutex<Db>>,
    rt: tokio::runtime::Handle,
    env: Fingerprint,
    run_id: String,
    journal: Journal,
    /// Finished trials not yet acknowledged by the database, oldest first.
    pending: VecDeque<TrialRecord>,
    env_stored: bool,
    outage: Option<Outage>,
    /// The SQLite file's identity when it was opened.
    sqlite_id: Option<(u64, u64)>,
    /// The whole journal must be written again (the results file was replaced).
    replay: bool,
    heartbeat: Option<tokio::task::JoinHandle<()>>,
    quiet: bool,
}

/// The database stopped answering.
struct Outage {
    backoff: Duration,
    next_try: Instant,
    error: String,
}

/// Trials a run finished but could not write to its database before it ended. They are
/// safe in the journal; `measured run --resume RUN` writes them.
#[derive(Debug)]
pub struct Unstored {
    pub run_id: String,
    pub url: String,
    pub journal: PathBuf,
    pub trials: usize,
    pub error: String,
}

impl StoreReporter {
    /// `lease`: beat a heartbeat every quarter of it while the run lives.
    pub fn new(
        db: Db,
        url: &str,
        rt: tokio::runtime::Handle,
        env: &Fingerprint,
        run_id: &str,
        journal: Journal,
        lease: Option<Duration>,
        quiet: bool,
    ) -> Self {
        let shared = Arc::new(Mutex::new(db));
        let heartbeat = lease.map(|lease| {
            let (db, id) = (shared.clone(), run_id.to_owned());
            rt.spawn(async move {
                let mut tick = tokio::time::interval(lease / 4);
                loop {
                    tick.tick().await;
                    let current: Option<Db> = db.lock().ok().map(|d| d.clone());
                    if let Some(d) = current {
                        // A missed beat is harmless: the lease is four beats long.
                        let _ = tokio::time::timeout(lease / 4, store::beat(&d, &id, chrono::Utc::now(), None)).await;
                    }
                }
            })
        });
        Self {
            sqlite_id: db::sqlite_file_id(url),
            url: url.to_owned(),
            db: shared,
            rt,
            env: env.clone(),
            run_id: run_id.to_owned(),
            journal,
            pending: VecDeque::new(),
            env_stored: false,
            outage: None,
            replay: false,
            heartbeat,
            quiet,
        }
    }

    fn current_db(&self) -> Db {
        match self.db.lock() {
            Ok(d) => d.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn say(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }

    /// Notices a SQLite results file that was deleted or replaced since it was opened, and
    /// opens the file now at that path (a new one if it is gone).
    fn check_replaced(&mut self) -> Result<(), String> {
        let Some(before) = self.sqlite_id else {
            return Ok(());
        };
        let now = db::sqlite_file_id(&self.url);
        if now == Some(before) {
            return Ok(());
        }
        let what = if now.is_none() { "was deleted" } else { "was replaced" };
        self.say(&format!(
            "run {}: the results file {} {what} during the run; writing the run and every trial of its journal {} into the file now at that path",
            self.run_id,
            db::redact_url(&self.url),
            self.journal.path().display()
        ));
        let old = self.current_db();
        // Closing the last connection checkpoints into the old file and removes its WAL, so
        // the new file does not pick up the old one's log.
        self.rt.block_on(old.close());
        let db = self.rt.block_on(Db::connect(&self.url)).map_err(|e| e.to_string())?;
        self.sqlite_id = db::sqlite_file_id(&self.url);
        if let Ok(mut d) = self.db.lock() {
            *d = db;
        }
        self.env_stored = false;
        self.replay = true;
        Ok(())
    }

    /// Writes what is pending, unless the database is down and the next retry is not due.
    fn try_store(&mut self, force: bool) {
        if let Some(o) = &self.outage {
            if !force && Instant::now() < o.next_try {
                return;
            }
        }
        let result = self
            .check_replaced()
            .and_then(|()| if self.outage.is_some() { self.probe() } else { Ok(()) })
            .and_then(|()| self.write_pending());
        match result {
            Ok(()) => {
                if let Some(o) = self.outage.take() {
                    self.say(&format!(
                        "run {}: the results database answers again; the held trials are stored (it was: {})",
                        self.run_id, o.error
                    ));
                }
            }
            Err(error) => {
                let backoff = self
                    .outage
                    .as_ref()
                    .map_or(FIRST_BACKOFF, |o| (o.backoff * 2).min(MAX_BACKOFF));
                if self.outage.is_none() {
                    self.say(&format!(
                        "run {}: cannot write to the results database {}: {error}\n  the run goes on; finished trials are kept in {} and stored when it answers (retrying)",
                        self.run_id,
                        db::redact_url(&self.url),
                        self.journal.path().display()
                    ));
                }
                self.outage = Some(Outage {
                    backoff,
                    next_try: Instant::now() + backoff,
                    error,
                });
            }
        }
    }

    /// Whether the database answers at all, within [`PROBE`].
    fn probe(&self) -> Result<(), String> {
        let db = self.current_db();
        let ping = async { crate::on_pool!(&db, |pool| sqlx::query("SELECT 1").execute(pool).await.map(|_| ())) };
        answer(&self.rt, &self.url, PROBE, ping)
    }

    /// One attempt: the environment, then the pending trials oldest first (or the whole
    /// journal after a replaced file). Each trial is popped once the database holds it.
    fn write_pending(&mut self) -> Result<(), String> {
        let db = self.current_db();
        let contents = if self.replay {
            Some(journal::read(self.journal.path()).map_err(|e| e.to_string())?)
        } else {
            None
        };
        let (run_id, env) = (self.run_id.as_str(), &self.env);
        let (pending, env_stored) = (&mut self.pending, &mut self.env_stored);
        let attempt = async {
            if let Some(c) = &contents {
                journal::flush(&db, c).await?;
                pending.clear();
                *env_stored = true;
                return Ok(());
            }
            if !*env_stored {
                store::upsert_environment(&db, env).await?;
                *env_stored = true;
            }
            while let Some(t) = pending.front() {
                store::insert_trial_once(&db, run_id, t).await?;
                pending.pop_front();
            }
            Ok::<(), journal::JournalError>(())
        };
        let answered = answer(&self.rt, &self.url, ATTEMPT, attempt);
        if answered.is_ok() {
            self.replay = false;
        }
        answered
    }

    /// Ends the run's storage: records `status`, waits up to `wait` for an unreachable
    /// database, then checks the database against the journal and writes again whatever it
    /// lost. The journal is deleted only once the database holds all of it. Returns the
    /// connection in use at the end (a new one if the results file was replaced).
    /// `planned`: the trial count a sequential run that ended early settled on.
    pub fn finish(mut self, status: &str, planned: Option<u32>, wait: Duration) -> Result<Db, Unstored> {
        let finished_at = matches!(status, "finished" | crate::record::STOPPED).then(chrono::Utc::now);
        if let Some(h) = self.heartbeat.take() {
            h.abort();
        }
        let deadline = Instant::now() + wait;
        let unstored = |s: &Self, error: String| Unstored {
            run_id: s.run_id.clone(),
            url: db::redact_url(&s.url),
            journal: s.journal.path().to_owned(),
            trials: journal::read(s.journal.path()).map_or(s.pending.len(), |c| c.trials.len()),
            error,
        };
        if let Err(e) = self.journal.append_status(status, finished_at, planned) {
            return Err(unstored(&self, e.to_string()));
        }
        loop {
            self.try_store(true);
            let Some(o) = &self.outage else { break };
            let now = Instant::now();
            if now >= deadline {
                return Err(unstored(&self, o.error.clone()));
            }
            std::thread::sleep(o.backoff.min(deadline - now));
        }
        self.check_replaced().map_err(|e| unstored(&self, e))?;
        let db = self.current_db();
        let contents = journal::read(self.journal.path()).map_err(|e| unstored(&self, e.to_string()))?;
        let restored = match answer(&self.rt, &self.url, ATTEMPT, journal::flush(&db, &contents)) {
            Ok(flushed) => flushed.inserted,
            Err(e) => return Err(unstored(&self, e)),
        };
        if restored > 0 {
            self.say(&format!(
                "run {}: the results database had lost {restored} trials it had acknowledged; they were written again from the journal",
                self.run_id
            ));
        }
        // Everything is in the database: the journal has done its work.
        self.journal.remove();
        Ok(db)
    }
}

/// Runs database work for at most `limit`; an error (its password redacted) or no answer
/// becomes a message.
fn answer<T, E: std::fmt::Display>(
    rt: &tokio::runtime::Handle,
    url: &str,
    limit: Duration,
    work: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match rt.block_on(async { tokio::time::timeout(limit, work).await }) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(db::redact_text(&e.to_string(), url)),
        Err(_) => Err(format!("no answer within {} s", limit.as_secs())),
    }
}

impl Drop for StoreReporter {
    fn drop(&mut self) {
        if let Some(h) = self.heartbeat.take() {
            h.abort();
        }
    }
}

impl Reporter for StoreReporter {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError> {
        if let RunEvent::TrialFinished { trial, .. } = event {
            // On disk before the database is asked: from here on the trial cannot be lost.
            self.journal.append_trial(trial)?;
            self.pending.push_back((*trial).clone());
            self.try_store(false);
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
