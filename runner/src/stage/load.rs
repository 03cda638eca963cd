//! The `load` stage (exec -> stage -> market): reads daily bars from the stock database.

use super::runnable::{Inputs, Stage, StageCtx, StageError};
use crate::artifact::Artifact;
use crate::kinds::LoadParams;
use crate::market::load_within;
use std::sync::Arc;

#[derive(Debug)]
struct LoadStage {
    params: LoadParams,
}

pub(super) fn build_load(params: &LoadParams) -> Arc<dyn Stage> {
    Arc::new(LoadStage { params: params.clone() })
}

impl Stage for LoadStage {
    fn run(&self, ctx: &mut StageCtx<'_>, _inputs: &Inputs) -> Result<Artifact, StageError> {
        let db = ctx.services.stock_db()?;
        let view = ctx.services.view(ctx.data)?;
        let bars = crate::db::wait(load_within(db, &self.params, &view, &mut ctx.rec))?;
        ctx.content_hash = Some(bars.content_hash.clone());
        Ok(Artifact::Bars(Arc::new(bars)))
    }
}
