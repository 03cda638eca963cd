//! The model stages (exec -> stage -> tensor): `train` fits an MLP on the windows, `validate`
//! scores it on the validation windows against naive baselines.

use super::runnable::{Inputs, Stage, StageCtx, StageError};
use crate::artifact::{Artifact, ArtifactKind};
use crate::tensor::{train, validate, TrainParams, ValidateParams};
use std::sync::Arc;

#[derive(Debug)]
struct TrainStage {
    params: TrainParams,
}

pub(super) fn build_train(params: &TrainParams) -> Arc<dyn Stage> {
    Arc::new(TrainStage { params: params.clone() })
}

impl Stage for TrainStage {
    fn gpu_monitor(&self) -> Option<f64> {
        self.params
            .device
            .runs_on_cuda()
            .then_some(crate::measure::gpu::DEFAULT_HZ)
    }

    fn run(&self, ctx: &mut StageCtx<'_>, inputs: &Inputs) -> Result<Artifact, StageError> {
        let Some(Artifact::Windows(windows)) = inputs.get(ArtifactKind::Windows) else {
            return Err(StageError::MissingInput("train needs the windows of a normalize stage"));
        };
        // An explicit seed in the manifest wins; otherwise the per-repetition stage seed.
        let seed = self.params.seed.unwrap_or(ctx.seed);
        let model = train(windows.clone(), &self.params, seed, &mut ctx.rec, ctx.cancel)?;
        Ok(Artifact::Model(Arc::new(model)))
    }
}

#[derive(Debug)]
struct ValidateStage {
    params: ValidateParams,
}

pub(super) fn build_validate(params: &ValidateParams) -> Arc<dyn Stage> {
    Arc::new(ValidateStage { params: params.clone() })
}

impl Stage for ValidateStage {
    fn gpu_monitor(&self) -> Option<f64> {
        self.params
            .device
            .runs_on_cuda()
            .then_some(crate::measure::gpu::DEFAULT_HZ)
    }

    fn run(&self, ctx: &mut StageCtx<'_>, inputs: &Inputs) -> Result<Artifact, StageError> {
        let Some(Artifact::Model(model)) = inputs.get(ArtifactKind::Model) else {
            return Err(StageError::MissingInput("validate needs the model of a train stage"));
        };
        validate(model, &self.params, &mut ctx.rec)?;
        Ok(Artifact::None)
    }
}
