//! Where every finished trial goes (exec -> **sink** -> journal, then database): a local run
//! and a queue worker keep their trials through the same [`TrialSink`], with the one retry
//! policy of [`super::retry`].
//!
//! A trial is appended to the run's journal (on disk before anything else), then written to
//! the database, one transaction per trial. When the database is unreachable the trials wait
//! in the journal and are written, in order, when it answers again: a local run goes on
//! meanwhile ([`TrialSink::keep`]), a worker waits for its trial ([`TrialSink::keep_now`]). A
//! SQLite results file that is deleted or replaced mid-run is noticed before each write, and
//! everything the journal holds is written again.

use super::journal::{self, Journal, JournalError, JournalWriter};
use super::retry::{self, Backoff, Unanswered};
use super::RunStatus;
use crate::db::{self, Db};
use crate::measure::Fingerprint;
use crate::record::TrialRecord;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Keeps a run's finished trials: journal first, then the results database.
pub struct TrialSink {
    url: String,
    db: Arc<Mutex<Db>>,
    run_id: String,
    journal: Journal,
    /// Finished trials not yet acknowledged by the database, oldest first.
    pending: VecDeque<TrialRecord>,
    /// The environment to store before the first trial; `None` once stored (or never asked).
    env: Option<Fingerprint>,
    outage: Option<Outage>,
    /// The SQLite file's identity when it was opened.
    sqlite_id: Option<(u64, u64)>,
    /// The whole journal must be written again (the results file was replaced).
    replay: bool,
    heartbeat: Option<tokio::task::JoinHandle<()>>,
    /// Trials the database already held when this sink wrote them (another worker's).
    already_held: u32,
    quiet: bool,
}

/// The database stopped answering.
struct Outage {
    backoff: Backoff,
    next_try: Instant,
    error: Unanswered,
}

/// Trials a run finished but could not write to its database before it ended. They are
/// safe in the journal; `measured run --resume RUN` writes them.
#[derive(Debug, Clone)]
pub struct Unstored {
    pub run_id: String,
    pub url: String,
    pub journal: PathBuf,
    pub trials: usize,
    pub error: String,
}

/// What became of a trial [`TrialSink::keep_now`] was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    Stored,
    /// The database held it already: another worker, after this one lost its lease, ran and
    /// stored it first. Its result stands.
    AlreadyHeld,
}

impl TrialSink {
    /// A sink for run `run_id` in the database `db` (reached at `url`), journaling to `journal`.
    pub fn new(db: Db, url: &str, run_id: &str, journal: Journal, quiet: bool) -> Self {
        Self {
            sqlite_id: db::sqlite_file_id(url),
            url: url.to_owned(),
            db: Arc::new(Mutex::new(db)),
            run_id: run_id.to_owned(),
            journal,
            pending: VecDeque::new(),
            env: None,
            outage: None,
            replay: false,
            heartbeat: None,
            already_held: 0,
            quiet,
        }
    }

    /// Stores `env` before the first trial (again after a replaced results file).
    pub fn storing_environment(mut self, env: &Fingerprint) -> Self {
        self.env = Some(env.clone());
        self
    }

    /// Beats the run's heartbeat every quarter of `lease` while the sink lives.
    pub fn beating(mut self, lease: Duration) -> Self {
        let (db, id) = (self.db.clone(), self.run_id.clone());
        self.heartbeat = Some(db::spawn(async move {
            let mut tick = tokio::time::interval(lease / 4);
            loop {
                tick.tick().await;
                let current: Option<Db> = db.lock().ok().map(|d| d.clone());
                if let Some(d) = current {
                    // A missed beat is harmless: the lease is four beats long.
                    let _ = tokio::time::timeout(lease / 4, super::beat(&d, &id, chrono::Utc::now(), None)).await;
                }
            }
        }));
        self
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

    /// Keeps a finished trial: on disk at once, in the database now or, while it does not
    /// answer, at a later retry. The run goes on either way.
    pub fn keep(&mut self, trial: &TrialRecord) -> Result<(), JournalError> {
        self.journal.writer()?.write_trial(trial)?;
        self.keep_written(vec![trial.clone()])
    }

    /// A handle that writes trial lines into this sink's journal from another thread, for
    /// [`TrialSink::keep_written`].
    pub fn journal_writer(&self) -> Result<JournalWriter, JournalError> {
        self.journal.writer()
    }

    /// Keeps finished trials whose journal lines are written: puts the journal on disk, then
    /// stores them as [`TrialSink::keep`] does. Should the journal fail to reach the disk, they
    /// are still stored, and the error is returned.
    pub fn keep_written(&mut self, trials: Vec<TrialRecord>) -> Result<(), JournalError> {
        // On disk before the database is asked: from here on the trials cannot be lost.
        let synced = self.journal.sync();
        self.pending.extend(trials);
        self.try_store(false);
        synced
    }

    /// Keeps a finished trial and waits, retrying, until the database holds it or `wait`
    /// passes (the trial then stays in the journal).
    pub fn keep_now(&mut self, trial: &TrialRecord, wait: Duration) -> Result<Kept, Unstored> {
        let held_before = self.already_held;
        self.keep(trial).map_err(|e| self.unstored(e.to_string()))?;
        self.stored_within(wait)?;
        Ok(if self.already_held > held_before {
            Kept::AlreadyHeld
        } else {
            Kept::Stored
        })
    }

    /// Retries until nothing is pending, for up to `wait`.
    fn stored_within(&mut self, wait: Duration) -> Result<(), Unstored> {
        let deadline = Instant::now() + wait;
        loop {
            self.try_store(true);
            let Some(o) = &self.outage else { return Ok(()) };
            let now = Instant::now();
            if now >= deadline {
                return Err(self.unstored(o.error.to_string()));
            }
            std::thread::sleep(o.backoff.wait().min(deadline - now));
        }
    }

    pub(super) fn unstored(&self, error: String) -> Unstored {
        Unstored {
            run_id: self.run_id.clone(),
            url: db::redact_url(&self.url),
            journal: self.journal.path().to_owned(),
            trials: journal::read(self.journal.path()).map_or(self.pending.len(), |c| c.trials.len()),
            error,
        }
    }

    /// Notices a SQLite results file that was deleted or replaced since it was opened, and
    /// opens the file now at that path (a new one if it is gone).
    fn check_replaced(&mut self) -> Result<(), Unanswered> {
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
        old.shut();
        let db = Db::open(&self.url).map_err(|e| Unanswered::Failed(db::redact_text(&e.to_string(), &self.url)))?;
        self.sqlite_id = db::sqlite_file_id(&self.url);
        if let Ok(mut d) = self.db.lock() {
            *d = db;
        }
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
                let backoff = self.outage.as_ref().map_or_else(Backoff::default, |o| o.backoff.next());
                if self.outage.is_none() {
                    // `keep` lets the run go on; `keep_now` and `finish` wait here.
                    let goes_on = if force { "" } else { "the run goes on; " };
                    self.say(&format!(
                        "run {}: cannot write to the results database {}: {error}\n  {goes_on}finished trials are kept in {} and stored when it answers (retrying)",
                        self.run_id,
                        db::redact_url(&self.url),
                        self.journal.path().display()
                    ));
                }
                self.outage = Some(Outage {
                    backoff,
                    next_try: Instant::now() + backoff.wait(),
                    error,
                });
            }
        }
    }

    /// Whether the database answers at all, within [`retry::PROBE`].
    fn probe(&self) -> Result<(), Unanswered> {
        let db = self.current_db();
        let ping = async { crate::on_pool!(&db, |pool| sqlx::query("SELECT 1").execute(pool).await.map(|_| ())) };
        retry::answer(&self.url, retry::PROBE, ping)
    }

    /// One attempt: the environment, then the pending trials oldest first (or the whole
    /// journal after a replaced file). Each trial is popped once the database holds it.
    fn write_pending(&mut self) -> Result<(), Unanswered> {
        let db = self.current_db();
        let contents = if self.replay {
            Some(journal::read(self.journal.path()).map_err(|e| Unanswered::Failed(e.to_string()))?)
        } else {
            None
        };
        let run_id = self.run_id.as_str();
        let (pending, env, held) = (&mut self.pending, &mut self.env, &mut self.already_held);
        let replaying = contents.is_some();
        let attempt = async {
            if let Some(c) = &contents {
                journal::flush(&db, c).await?;
                pending.clear();
                return Ok(());
            }
            if let Some(e) = env.as_ref() {
                super::upsert_environment(&db, e).await?;
                *env = None;
            }
            while let Some(t) = pending.front() {
                if !super::insert_trial_once(&db, run_id, t).await? {
                    *held += 1;
                }
                pending.pop_front();
            }
            Ok::<(), JournalError>(())
        };
        let answered = retry::answer(&self.url, retry::ATTEMPT, attempt);
        if answered.is_ok() {
            self.replay = false;
            if replaying {
                // The replayed journal's header stored the environment with the run.
                self.env = None;
            }
        }
        answered
    }

    /// Ends the run's storage: records `status`, waits up to `wait` for an unreachable
    /// database, then checks the database against the journal and writes again whatever it
    /// lost. The journal is deleted only once the database holds all of it. Returns the
    /// connection in use at the end (a new one if the results file was replaced).
    /// `planned`: the trial count a sequential run that ended early settled on.
    pub fn finish(mut self, status: &RunStatus, planned: Option<u32>, wait: Duration) -> Result<Db, Unstored> {
        let finished_at = status.is_final().then(chrono::Utc::now);
        if let Some(h) = self.heartbeat.take() {
            h.abort();
        }
        if let Err(e) = self.journal.append_status(status, finished_at, planned) {
            return Err(self.unstored(e.to_string()));
        }
        self.stored_within(wait)?;
        self.check_replaced().map_err(|e| self.unstored(e.to_string()))?;
        let db = self.current_db();
        let contents = journal::read(self.journal.path()).map_err(|e| self.unstored(e.to_string()))?;
        let restored = match retry::answer(&self.url, retry::ATTEMPT, journal::flush(&db, &contents)) {
            Ok(flushed) => flushed.inserted,
            Err(e) => return Err(self.unstored(e.to_string())),
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

    /// Ends a worker's share of a run whose every trial the database holds: the journal has
    /// done its work.
    pub fn close(self) {
        if self.pending.is_empty() {
            self.journal.remove();
        }
    }
}

impl Drop for TrialSink {
    fn drop(&mut self) {
        if let Some(h) = self.heartbeat.take() {
            h.abort();
        }
    }
}
