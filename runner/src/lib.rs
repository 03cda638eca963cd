//! measured: turns performance claims into measurements.
//!
//! Data flow: manifest (parse, validate) -> plan (configs, DAG, trial schedule) -> exec (stages,
//! timing, events) -> reporters (console, store, JSON) -> stats -> report. See README.md.

pub(crate) mod arch;
pub mod artifact;
pub(crate) mod build_info;
pub mod cli;
pub(crate) mod color;
pub mod commands;
// Its loader is called only by a `cuda` build.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub mod cuda_dl;
#[cfg(feature = "cuda")]
pub(crate) mod cuda_raw;
pub mod cudnn;
pub mod db;
pub(crate) mod digest;
pub(crate) mod error;
pub(crate) mod exec;
pub mod features;
pub(crate) mod gitrev;
pub(crate) mod globals;
pub(crate) mod hint;
pub mod kinds;
pub mod manifest;
pub mod market;
pub mod measure;
pub mod metrics;
pub(crate) mod params;
pub(crate) mod paths;
pub(crate) mod plan;
pub(crate) mod preflight;
pub mod printable;
pub(crate) mod produced;
pub mod publish;
pub(crate) mod queue;
pub(crate) mod record;
pub(crate) mod report;
pub(crate) mod rundata;
pub mod size;
pub mod stage;
pub mod stats;
pub mod store;
pub mod tensor;
pub mod transfer;
