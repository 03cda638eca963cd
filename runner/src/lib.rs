//! measured: turns performance claims into measurements.
//!
//! Data flow: manifest (parse, validate) -> plan (configs, DAG, trial schedule) -> exec (stages,
//! timing, events) -> reporters (console, store, JSON) -> stats -> report. See README.md.

pub mod arch;
pub mod artifact;
pub mod build_info;
pub mod cli;
pub mod color;
pub mod commands;
pub mod cuda_dl;
pub mod db;
pub mod digest;
pub mod error;
pub mod exec;
pub mod features;
pub mod gitrev;
pub mod globals;
pub mod hint;
pub mod journal;
pub mod manifest;
pub mod market;
pub mod measure;
pub mod metrics;
pub mod params;
pub mod paths;
pub mod plan;
pub mod preflight;
pub mod produced;
pub mod publish;
pub mod queue;
pub mod record;
pub mod report;
pub mod rundata;
pub mod runspec;
pub mod stage;
pub mod stats;
pub mod store;
pub mod tensor;
pub mod transfer;
