//! Reading bars back for a run (stock tables -> **read** -> the `load` stage's `Bars`
//! artifact): the symbols a selection (`crate::kinds::LoadParams`, what a manifest gives)
//! resolves to in the run's dataset versions ([`load`]), and one worker's fetch with
//! the chosen strategy, on Postgres ([`fetch`]) or SQLite ([`fetch_sqlite`]), with what the
//! strategies share in [`rows`] and every failure in [`error`].

pub(super) mod error;
pub(super) mod fetch;
pub(super) mod fetch_sqlite;
pub(super) mod load;
mod rows;
