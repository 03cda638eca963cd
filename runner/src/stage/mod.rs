//! Stages: the trait every stage kind implements, and the registry that maps a manifest's
//! `kind` to a constructor (manifest::validate -> stage -> exec).
//!
//! Parameters are checked when the manifest is validated (the constructor runs then), so
//! nothing runs before every stage of every config has been built.

pub mod catalog;
mod command;
mod load;
mod model;
mod normalize;
mod params;
mod registry;
mod runnable;
mod services;
mod transfer;

pub use command::{each_line, parse_metric_line, template_variables, CommandParams, MetricLine, MAX_LINE};
pub(crate) use model::check_train_memory;
pub(crate) use params::{field_names, params_from_table};
pub use registry::{find_kind, registry, KindSpec};
pub use runnable::{Inputs, Stage, StageCtx, StageError, TrialInfo};
pub use services::{missing_named_stock, Services};
