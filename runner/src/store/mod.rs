//! The results store (exec reporters -> **store** -> stats/report): runs, trials, stage
//! results, metrics and environments, on SQLite or Postgres.

pub mod journal;
mod read;
mod results;
pub mod retry;
mod sink;

pub use read::{environment, list_runs, load_run, load_trials};
pub use results::{
    beat, insert_run, insert_run_header, insert_trial, insert_trial_once, is_unreachable, run_exists,
    set_planned_trials, set_run_status, stored_trial_indices, upsert_environment, NewRun, RunHeader, RunRow,
    StoreError,
};
pub use sink::{Kept, TrialSink, Unstored};
