//! The `transfer` stage (exec -> stage -> transfer): host <-> device copy bandwidth per size
//! and mode. The measuring itself lives in `crate::transfer`.

use super::{BuildError, Inputs, Stage, StageCtx, StageError};
use crate::artifact::Artifact;
use crate::transfer::{run_transfer, TransferError, TransferParams};
use std::sync::Arc;

#[derive(Debug)]
struct TransferStage {
    params: TransferParams,
}

pub(super) fn build(table: &toml::Table) -> Result<Arc<dyn Stage>, BuildError> {
    let params: TransferParams = super::params_from_table(table)?;
    params.check()?;
    Ok(Arc::new(TransferStage { params }))
}

impl Stage for TransferStage {
    fn run(&self, ctx: &mut StageCtx<'_>, _inputs: &Inputs) -> Result<Artifact, StageError> {
        match run_transfer(&self.params, &mut ctx.rec, ctx.cancel) {
            Ok(()) => Ok(Artifact::None),
            Err(TransferError::Cancelled) => Err(StageError::cancelled()),
            Err(e) => Err(StageError::new(e.to_string())),
        }
    }
}
