//! The `normalize` stage (exec -> stage -> features): bars -> leakage-free, windowed features.

use super::runnable::{Inputs, Stage, StageCtx, StageError};
use crate::artifact::{Artifact, ArtifactKind};
use crate::features::{build_windows, NormalizeParams};
use std::sync::Arc;

#[derive(Debug)]
struct NormalizeStage {
    params: NormalizeParams,
}

pub(super) fn build_normalize(params: &NormalizeParams) -> Arc<dyn Stage> {
    Arc::new(NormalizeStage { params: params.clone() })
}

impl Stage for NormalizeStage {
    fn run(&self, ctx: &mut StageCtx<'_>, inputs: &Inputs) -> Result<Artifact, StageError> {
        let Some(Artifact::Bars(bars)) = inputs.get(ArtifactKind::Bars) else {
            return Err(StageError::MissingInput("normalize needs the bars of a load stage"));
        };
        let w = build_windows(bars, &self.params, &mut ctx.rec, ctx.cancel)?;
        ctx.content_hash = Some(w.content_hash.clone());
        Ok(Artifact::Windows(Arc::new(w)))
    }
}
