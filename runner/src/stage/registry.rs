//! Building a runnable stage where it runs (exec, plan -> **registry** -> each kind): maps a
//! stage's `kind` and its validated parameter table to the stage. What each kind accepts is
//! `crate::kinds`'s.

use super::runnable::Stage;
use super::{command, load, model, normalize, transfer};
use crate::params::ParamError;
use std::sync::Arc;

/// Builds the stage of kind `kind` from its parameter table. The manifest's validation has
/// checked the same table, so this fails only for a table it never saw.
pub fn build(kind: &str, table: &toml::Table) -> Result<Arc<dyn Stage>, ParamError> {
    let build = match kind {
        "command" => command::build,
        "load" => load::build_load,
        "normalize" => normalize::build_normalize,
        "train" => model::build_train,
        "validate" => model::build_validate,
        "transfer" => transfer::build,
        _ => return Err(ParamError::unlocated(format!("unknown stage kind `{kind}`"))),
    };
    build(table)
}
