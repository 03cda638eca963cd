//! The results store (exec reporters -> **store** -> stats/report): runs, trials, stage
//! results, metrics and environments, on SQLite or Postgres.

mod db;
mod results;

pub use db::{
    database_identity, is_sqlite_url, redact_text, redact_url, sqlite_file_id, sqlite_path, Backend, Db, DbError,
    DEFAULT_SQLITE_PATH,
};
pub use results::{
    beat, environment, insert_run, insert_run_header, insert_trial, insert_trial_once, is_unreachable, list_runs,
    load_run, load_trials, run_exists, set_run_status, stored_trial_indices, upsert_environment, NewRun, RunHeader,
    RunRow, StoreError,
};

/// Dispatches one body over the pool of either backend; the SQL must be valid for both
/// (`$1`-style placeholders work on SQLite and Postgres alike).
#[macro_export]
#[doc(hidden)]
macro_rules! on_pool {
    ($db:expr, |$p:ident| $body:expr) => {
        match $db {
            $crate::store::Db::Sqlite($p) => $body,
            $crate::store::Db::Postgres($p) => $body,
        }
    };
}
