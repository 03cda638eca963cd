//! Writing bars as dataset versions (source -> **write** -> stock tables `symbols`,
//! `daily_bars` and `dataset_versions`): one transaction per new version, binary COPY and array
//! upserts on Postgres ([`bulk`]), multi-row INSERTs with deferred indexes on SQLite
//! ([`sqlite`]), with what both share in [`plan`].

mod bulk;
mod plan;
mod sqlite;

pub(crate) use bulk::{write_import, write_synth};
pub(crate) use plan::SynthPlan;
