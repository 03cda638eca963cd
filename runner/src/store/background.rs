//! A local run's trial sink on a thread of its own (exec -> **background** -> sink -> journal,
//! database): what makes a finished trial durable happens beside the next trial instead of
//! between the two.
//!
//! Each finished trial's journal line is written before the next trial starts, by the run's
//! own thread: from then on a crash or kill of measured cannot lose it, since the kernel holds
//! the line. The sink's thread then puts the journal on disk (`fdatasync`) and only after that
//! writes the trials to the database, exactly as [`TrialSink::keep`] does, several at once
//! when they finished faster than one commit takes. Nothing says a trial is stored before the
//! database holds it: [`BackgroundSink::finish`] waits for the thread, then ends the run's
//! storage as [`TrialSink::finish`] does.

use super::journal::{JournalError, JournalWriter};
use super::sink::{TrialSink, Unstored};
use crate::db::Db;
use crate::record::TrialRecord;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A [`TrialSink`] fed from the run's thread and kept on its own.
pub struct BackgroundSink {
    writer: JournalWriter,
    send: Option<mpsc::Sender<TrialRecord>>,
    thread: Option<JoinHandle<TrialSink>>,
    /// The first error the sink's thread met putting the journal on disk.
    failed: Arc<Mutex<Option<String>>>,
    /// What to report should the thread die: the run, its database and its journal.
    unstored: Unstored,
}

impl BackgroundSink {
    /// Moves `sink` onto a thread of its own.
    pub fn start(sink: TrialSink) -> Result<BackgroundSink, JournalError> {
        let writer = sink.journal_writer()?;
        let unstored = sink.unstored(String::new());
        let failed = Arc::new(Mutex::new(None));
        let (send, receive) = mpsc::channel::<TrialRecord>();
        let failures = failed.clone();
        let thread = std::thread::Builder::new()
            .name("measured-sink".into())
            .spawn(move || keep_all(sink, &receive, &failures))
            .map_err(|source| JournalError::Write {
                path: unstored.journal.display().to_string(),
                source,
            })?;
        Ok(BackgroundSink {
            writer,
            send: Some(send),
            thread: Some(thread),
            failed,
            unstored,
        })
    }

    /// Keeps a finished trial: its journal line is written now, the rest happens on the
    /// sink's thread. An error the thread met since the last call is returned here.
    pub fn keep(&mut self, trial: &TrialRecord) -> Result<(), JournalError> {
        if let Some(message) = self.failed.lock().ok().and_then(|mut f| f.take()) {
            return Err(JournalError::Write {
                path: self.unstored.journal.display().to_string(),
                source: std::io::Error::other(message),
            });
        }
        self.writer.write_trial(trial)?;
        let sent = self.send.as_ref().is_some_and(|s| s.send(trial.clone()).is_ok());
        if !sent {
            return Err(JournalError::Write {
                path: self.unstored.journal.display().to_string(),
                source: std::io::Error::other("the thread that stores trials has stopped; the trial is in the journal"),
            });
        }
        Ok(())
    }

    /// Waits until the sink's thread has kept every trial, then ends the run's storage as
    /// [`TrialSink::finish`] does.
    pub fn finish(mut self, status: &super::RunStatus, planned: Option<u32>, wait: Duration) -> Result<Db, Unstored> {
        self.send = None;
        let joined = self.thread.take().map(JoinHandle::join);
        match joined {
            Some(Ok(sink)) => sink.finish(status, planned, wait),
            _ => {
                let mut u = self.unstored.clone();
                u.error = "the thread that stores trials stopped".to_owned();
                u.trials = super::journal::read(&u.journal).map_or(0, |c| c.trials.len());
                Err(u)
            }
        }
    }
}

/// The sink's thread: takes trials until the run's thread lets go, putting each batch that
/// arrived meanwhile on disk once.
fn keep_all(mut sink: TrialSink, receive: &mpsc::Receiver<TrialRecord>, failed: &Mutex<Option<String>>) -> TrialSink {
    while let Ok(first) = receive.recv() {
        let mut batch = vec![first];
        batch.extend(receive.try_iter());
        if let Err(e) = sink.keep_written(batch) {
            if let Ok(mut f) = failed.lock() {
                f.get_or_insert_with(|| e.to_string());
            }
        }
    }
    sink
}

impl Drop for BackgroundSink {
    fn drop(&mut self) {
        // A run that ends by an error still lets the thread keep what it was given.
        self.send = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::journal::{self, tests::header, tests::trial, Journal};

    #[test]
    fn each_trial_is_in_the_journal_when_keep_returns_and_in_the_database_after_finish() {
        let dir = tempfile::tempdir().unwrap();
        let url = dir.path().join("r.sqlite").display().to_string();
        let db = Db::open(&url).unwrap();
        let run = header("run-1");
        crate::db::wait(async {
            crate::store::insert_run_header(&db, &run).await.unwrap();
            crate::store::upsert_environment(&db, &run.env).await.unwrap();
        });
        let path = Journal::path_for(dir.path(), "exp", "run-1");
        let sink = TrialSink::new(db, &url, "run-1", Journal::create(&path, &run).unwrap(), true);
        let mut kept = BackgroundSink::start(sink).unwrap();
        for i in 0..5u32 {
            kept.keep(&trial(i, &run.env.hash)).unwrap();
            // Written before `keep` returns: from here on a crash or kill cannot lose it.
            let written = journal::read(&path).unwrap().trials;
            assert_eq!(
                written.iter().map(|t| t.index).collect::<Vec<_>>(),
                (0..=i).collect::<Vec<_>>()
            );
        }
        let db = kept
            .finish(&crate::store::RunStatus::Finished, None, Duration::from_secs(30))
            .unwrap();
        let stored = crate::db::wait(crate::store::stored_trial_indices(&db, "run-1")).unwrap();
        assert_eq!(stored.len(), 5, "{stored:?}");
        assert!(
            !path.exists(),
            "the journal is removed once the database holds all of it"
        );
        db.shut();
    }
}
