//! The persistence wing (exec -> sink -> **store** -> report): runs, trials, stage results,
//! metrics and environments, on SQLite or Postgres. `sink` is the one path a finished trial
//! takes (the `journal`, then the database, by the one `retry` policy); `results` writes and
//! `read` reads back; `spec` is what a run is about, in the versioned form stored with it;
//! `status` is a run's status (and a queue unit's), text only at the SQL and journal boundary;
//! `reopen` is the one way a stored run is opened to continue it (`--resume`, the queue worker).

mod background;
pub mod journal;
mod read;
mod reopen;
mod results;
pub mod retry;
mod run;
mod sink;
pub mod spec;
mod status;

pub use background::BackgroundSink;
pub use read::{environment, list_runs, load_run, load_trials};
pub use reopen::{ReopenError, Reopened, SinkTarget};
pub use results::{
    beat, insert_run, insert_run_header, insert_trial, insert_trial_once, is_unreachable, run_exists,
    set_planned_trials, set_run_status, set_run_stopped, stored_trial_indices, upsert_environment, NewRun, RunHeader,
    RunRow, StoreError,
};
pub use run::StoredRun;
pub use sink::{Kept, TrialSink, Unstored};
pub use status::{measured_nothing, RunStatus, UnitStatus};
