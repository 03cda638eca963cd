//! What each stage kind accepts (manifest::validate -> **kinds** -> stage): the stage kinds as a
//! type (`StageKind`), a stage's checked parameters as one (`StageParams`), the parameter
//! structs of the built-in kinds with their checks, and the kinds' descriptions (what each
//! consumes and produces, its fields, schema and metrics). Reading a manifest needs only this;
//! the stages that compute with the parameters live in `stage` and below it.

pub mod catalog;
mod command;
pub mod cuda_graph;
pub mod facts;
pub mod features;
mod kind;
mod load;
pub mod memory;
pub mod normalize;
mod params;
mod preview;
mod registry;
pub mod rnn_engine;
pub mod train;
pub mod transfer;

pub use command::{
    sample_trial, template_variables, CommandParams, Rendered, TrialInfo, UnresolvedProgram, TEMPLATE_BUILTINS,
};
pub use kind::StageKind;
pub use load::{date_schema, is_valid_code, FetchStrategy, LoadParams, SymbolSelection};
pub(crate) use params::field_names;
pub use preview::{shown_dir, shown_working_dir};
pub(crate) use registry::check_train_memory;
pub use registry::{checked, KindParams, StageParams};
