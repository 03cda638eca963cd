//! What each stage kind accepts (manifest::validate -> **kinds** -> stage): the parameter
//! structs of the built-in kinds, their checks, and the kinds' descriptions (what each consumes
//! and produces, its fields, schema and metrics). Reading a manifest needs only this; the
//! stages that compute with the parameters live in `stage` and below it.

pub mod catalog;
mod command;
pub mod cuda_graph;
pub mod facts;
pub mod features;
pub mod memory;
pub mod normalize;
mod params;
mod registry;
pub mod rnn_engine;
pub mod train;
pub mod transfer;

pub use command::{
    sample_trial, template_variables, CommandParams, Rendered, TrialInfo, UnresolvedProgram, TEMPLATE_BUILTINS,
};
pub(crate) use params::{field_names, params_from_table};
pub(crate) use registry::check_train_memory;
pub use registry::{checked, find_kind, registry, KindParams, KindSpec};
