//! Scale-out (manifest/plan -> **queue** -> workers -> exec -> store): a run's trials as
//! claimable units in a Postgres queue, served by `measured worker` processes on any machine
//! that reaches the database, optionally started as a Slurm job array.
//!
//! A unit is one block of the schedule (one repetition of every config, in the planned
//! interleaved order), so the configs a comparison pairs always run back to back on one host.
//! Exactly one result per planned trial holds because trials are stored under their primary key
//! (run, trial index): a unit re-claimed after a lost lease skips what is stored, and a late
//! duplicate from the old holder is rejected by the key.

pub(crate) mod claim;
pub(crate) mod slurm;
pub(crate) mod status;
pub(crate) mod worker;

pub use slurm::SlurmOptions;

use std::path::PathBuf;

/// Lease length when neither `submit --lease-seconds` nor `worker --lease-seconds` says.
pub const DEFAULT_LEASE_SECONDS: f64 = 60.0;

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error(
        "the trial queue needs PostgreSQL, but the database is `{0}` (SQLite), which workers on other machines cannot share\n\
         (hint: set DATABASE_URL=postgres://user:password@host/db, reachable from every worker)"
    )]
    NotPostgres(String),
    #[error("run {0} has no trial queue (only runs created by `measured submit` do)")]
    NoQueue(String),
    #[error("the stored manifest of run {0} does not validate: {1}")]
    Manifest(String, String),
    #[error(transparent)]
    Tampered(crate::store::StoreError),
    #[error("invalid Slurm option: {0}")]
    SlurmOption(String),
    #[error("{0}")]
    Sbatch(String),
    #[error("cannot write {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The driver's message, printed once (not also chained as a source).
    #[error("database error: {0}")]
    Sql(sqlx::Error),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("trial execution failed: {0}")]
    Exec(String),
    #[error(
        "run {run}: cannot store a finished trial in the results database ({error}).\n\
         Nothing is lost: this worker's finished trials are kept in {}.\n\
         hint: when the database answers again, start a worker for the run in this folder; it stores them first:\n  measured worker --run {run}",
        journal.display()
    )]
    Unstored {
        run: String,
        journal: PathBuf,
        error: String,
    },
    #[error(
        "cannot {what}: the database did not answer for {wait_seconds} s ({error})\n\
         hint: start the worker again once it answers; the units of a stopped worker are claimed again when their lease expires"
    )]
    Unreachable {
        what: String,
        wait_seconds: f64,
        error: String,
    },
    #[error(transparent)]
    Journal(#[from] crate::store::journal::JournalError),
    #[error(transparent)]
    UnsafeName(#[from] crate::paths::UnsafeName),
}

impl From<crate::store::ReopenError> for QueueError {
    fn from(e: crate::store::ReopenError) -> Self {
        use crate::store::{ReopenError, StoreError};
        match e {
            ReopenError::Store(e @ StoreError::Tampered { .. }) => QueueError::Tampered(e),
            ReopenError::Store(e) => QueueError::Store(e),
            ReopenError::Manifest { run, errors } => QueueError::Manifest(run, errors.to_string()),
            ReopenError::UnsafeName(e) => e.into(),
            ReopenError::Journal(e) => e.into(),
        }
    }
}

impl From<sqlx::Error> for QueueError {
    fn from(e: sqlx::Error) -> Self {
        QueueError::Sql(e)
    }
}

/// The queue lives in Postgres only: a SQLite URL (or the SQLite default) is a usage error.
pub fn require_postgres(url: &str) -> Result<(), QueueError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(())
    } else {
        Err(QueueError::NotPostgres(crate::db::redact_url(url)))
    }
}
