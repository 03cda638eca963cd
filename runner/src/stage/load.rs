//! The `load` stage (exec -> stage -> market): reads daily bars from the stock database.

use super::runnable::{Inputs, Stage, StageCtx, StageError};
use crate::artifact::Artifact;
use crate::market::{load_within, LoadParams};
use crate::params::ParamError;
use std::sync::Arc;

#[derive(Debug)]
struct LoadStage {
    params: LoadParams,
}

pub(super) fn build_load(table: &toml::Table) -> Result<Arc<dyn Stage>, ParamError> {
    let params: LoadParams = crate::kinds::checked(table)?;
    Ok(Arc::new(LoadStage { params }))
}

impl Stage for LoadStage {
    fn run(&self, ctx: &mut StageCtx<'_>, _inputs: &Inputs) -> Result<Artifact, StageError> {
        let db = ctx.services.stock_db()?;
        let view = ctx.services.view(ctx.data)?;
        let bars = ctx
            .services
            .block_on(load_within(db, &self.params, &view, &mut ctx.rec))?;
        ctx.content_hash = Some(bars.content_hash.clone());
        Ok(Artifact::Bars(Arc::new(bars)))
    }
}
