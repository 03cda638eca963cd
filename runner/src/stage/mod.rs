//! Stages: the trait every stage kind implements, and the registry that builds a stage from
//! its typed parameters (exec -> stage -> features, tensor, transfer, market).
//!
//! Parameters are read and checked once, when the manifest is validated (`crate::kinds`'s
//! `StageParams`); the stage itself is built from them where it runs, just before it is timed.

mod command;
mod load;
mod model;
mod normalize;
mod registry;
mod runnable;
mod services;
mod transfer;

pub use crate::kinds::TrialInfo;
pub use command::{each_line, parse_metric_line, MetricLine, MAX_LINE};
pub use registry::build;
pub use runnable::{Inputs, Stage, StageCtx, StageError};
pub use services::{missing_named_stock, Services};
