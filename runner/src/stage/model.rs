//! The model stages (exec -> stage -> tensor): `train` fits an MLP on the windows, `validate`
//! scores it on the validation windows against naive baselines.

use super::params::params_from_table;
use super::runnable::{Inputs, Stage, StageCtx, StageError};
use crate::artifact::{Artifact, ArtifactKind};
use crate::params::ParamError;
use crate::tensor::{train, validate, TrainParams, ValidateParams};
use std::sync::Arc;

#[derive(Debug)]
struct TrainStage {
    params: TrainParams,
}

pub(super) fn build_train(table: &toml::Table) -> Result<Arc<dyn Stage>, ParamError> {
    let params: TrainParams = params_from_table(table)?;
    params.check()?;
    Ok(Arc::new(TrainStage { params }))
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

pub(super) fn build_validate(table: &toml::Table) -> Result<Arc<dyn Stage>, ParamError> {
    let params: ValidateParams = params_from_table(table)?;
    params.check()?;
    Ok(Arc::new(ValidateStage { params }))
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

/// The memory check of a `train` stage before any trial runs: its model on the input width the
/// upstream `normalize` stage gives (`seq_len` x features). Without a readable `normalize`
/// table the width is unknown and the check waits for `train` itself, which repeats it on the
/// real windows before allocating.
pub(crate) fn check_train_memory(train: &toml::Table, normalize: Option<&toml::Table>) -> Result<(), ParamError> {
    let params: TrainParams = params_from_table(train)?;
    let Some(norm) = normalize.and_then(|t| params_from_table::<crate::features::NormalizeParams>(t).ok()) else {
        return Ok(());
    };
    let Ok(features) = norm.feature_list() else {
        return Ok(());
    };
    crate::tensor::memory::check(&params, norm.seq_len, features.len(), 1)?;
    Ok(())
}
