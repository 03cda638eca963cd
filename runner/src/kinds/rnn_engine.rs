//! `rnn_engine`: which engine an LSTM or GRU runs on CUDA (a `train` or `validate` parameter
//! -> `check()` -> `tensor`'s cuDNN self-check).

use crate::arch::ModelKind;
use crate::params::ParamError;
use serde::{Deserialize, Serialize};

/// Which engine computes an LSTM's or GRU's steps on CUDA (the CPU always runs its native
/// engine). Recorded as the fact `rnn_engine` of every trial that ran on CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RnnEngine {
    /// cuDNN where its self-check agrees with dfdx for the shape, else dfdx, with a stage note
    /// saying why.
    #[default]
    Auto,
    /// cuDNN; a failed self-check, or no cuDNN, fails the stage.
    Cudnn,
    /// dfdx's autodiff over the cells composed from its ops.
    Dfdx,
}

impl RnnEngine {
    pub fn as_str(self) -> &'static str {
        match self {
            RnnEngine::Auto => "auto",
            RnnEngine::Cudnn => "cudnn",
            RnnEngine::Dfdx => "dfdx",
        }
    }

    /// A choice other than `auto` is only honoured on CUDA (`on_cpu`: the stage's device is
    /// `"cpu"`), for a recurrent model (`model`, where the stage knows it).
    pub(super) fn check(self, on_cpu: bool, model: Option<ModelKind>) -> Result<(), ParamError> {
        if self == RnnEngine::Auto {
            return Ok(());
        }
        let hint = "leave `rnn_engine` out (\"auto\": cuDNN where its self-check agrees, else dfdx)";
        if model == Some(ModelKind::Mlp) {
            return Err(ParamError::new(
                "rnn_engine",
                format!(
                    "\"{}\" chooses an LSTM's or GRU's CUDA engine, and this stage trains an MLP",
                    self.as_str()
                ),
            )
            .with_hint(hint));
        }
        if on_cpu {
            return Err(ParamError::new(
                "rnn_engine",
                format!(
                    "\"{}\" chooses a CUDA engine, and this stage runs on \"cpu\" (its native engine)",
                    self.as_str()
                ),
            )
            .with_hint("set `device = \"cuda\"` (or \"auto\"), or leave `rnn_engine` out"));
        }
        Ok(())
    }
}
