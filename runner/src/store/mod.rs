//! The results store (exec reporters -> **store** -> stats/report): runs, trials, stage
//! results, metrics and environments, on SQLite or Postgres.

mod results;

pub use results::{
    beat, environment, insert_run, insert_run_header, insert_trial, insert_trial_once, is_unreachable, list_runs,
    load_run, load_trials, run_exists, set_run_status, stored_trial_indices, upsert_environment, NewRun, RunHeader,
    RunRow, StoreError,
};
