//! Building a runnable stage where it runs (exec -> **registry** -> each kind): maps a stage's
//! validated, typed parameters to the stage. What each kind accepts is `crate::kinds`'s.

use super::runnable::Stage;
use super::{command, load, model, normalize, transfer};
use crate::kinds::StageParams;
use std::sync::Arc;

/// Builds the stage its parameters are of. The manifest's validation read and checked them, so
/// this cannot fail.
pub fn build(params: &StageParams) -> Arc<dyn Stage> {
    match params {
        StageParams::Command(p) => command::build(p),
        StageParams::Load(p) => load::build_load(p),
        StageParams::Normalize(p) => normalize::build_normalize(p),
        StageParams::Train(p) => model::build_train(p),
        StageParams::Validate(p) => model::build_validate(p),
        StageParams::Transfer(p) => transfer::build(p),
    }
}
