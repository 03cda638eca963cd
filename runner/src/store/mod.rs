//! The persistence wing (exec -> sink -> **store** -> report): runs, trials, stage results,
//! metrics and environments, on SQLite or Postgres. `sink` is the one path a finished trial
//! takes (the `journal`, then the database, by the one `retry` policy); `results` writes and
//! `read` reads back; `spec` is what a run is about, in the versioned form stored with it.

mod background;
pub mod journal;
mod read;
mod results;
pub mod retry;
mod run;
mod sink;
pub mod spec;

pub use background::BackgroundSink;
pub use read::{environment, list_runs, load_run, load_trials};
pub use results::{
    beat, insert_run, insert_run_header, insert_trial, insert_trial_once, is_unreachable, run_exists,
    set_planned_trials, set_run_status, stored_trial_indices, upsert_environment, NewRun, RunHeader, RunRow,
    StoreError,
};
pub use run::StoredRun;
pub use sink::{Kept, TrialSink, Unstored};
