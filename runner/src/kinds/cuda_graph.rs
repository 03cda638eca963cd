//! `cuda_graph`: whether a `train` stage's steps on CUDA are captured as a CUDA graph and
//! replayed (a parameter -> `check()` -> `tensor`'s graph self-check).

use crate::arch::ModelKind;
use crate::params::ParamError;
use serde::{Deserialize, Deserializer, Serialize};

/// Whether full training steps on CUDA are replayed from a captured CUDA graph. Recorded as the
/// fact `cuda_graph` (`on` or `off`) of every trial that ran on CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CudaGraph {
    /// Where it applies (an MLP on CUDA with at least one full batch) and its self-check agrees
    /// with the eager step, else eagerly with a stage note saying why.
    #[default]
    Auto,
    /// Graphs; a failed self-check fails the stage.
    On,
    /// Every step eagerly.
    Off,
}

impl CudaGraph {
    pub fn as_str(self) -> &'static str {
        match self {
            CudaGraph::Auto => "\"auto\"",
            CudaGraph::On => "true",
            CudaGraph::Off => "false",
        }
    }

    /// `true` is only honoured for an MLP (`model`) that can run on CUDA (`on_cpu`: the stage's
    /// device is `"cpu"`).
    pub(super) fn check(self, on_cpu: bool, model: ModelKind) -> Result<(), ParamError> {
        if self != CudaGraph::On {
            return Ok(());
        }
        let hint = "leave `cuda_graph` out (\"auto\": graphs where they apply and their self-check agrees)";
        if on_cpu {
            return Err(
                ParamError::new("cuda_graph", "true captures CUDA steps, and this stage runs on \"cpu\"")
                    .with_hint(hint),
            );
        }
        if model != ModelKind::Mlp {
            return Err(ParamError::new(
                "cuda_graph",
                format!(
                    "true applies to the MLP's step, and this stage trains a recurrent model (here {}), whose \
                     cuDNN steps run eagerly",
                    model.as_str()
                ),
            )
            .with_hint(hint));
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for CudaGraph {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Flag(bool),
            Word(String),
        }
        match Raw::deserialize(d)? {
            Raw::Flag(true) => Ok(CudaGraph::On),
            Raw::Flag(false) => Ok(CudaGraph::Off),
            Raw::Word(w) if w == "auto" => Ok(CudaGraph::Auto),
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "expected true, false or \"auto\", got \"{w}\""
            ))),
        }
    }
}

/// `cuda_graph` in the JSON schema: a boolean or `"auto"`.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum CudaGraphSchema {
    Flag(bool),
    Word(AutoWord),
}

#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
pub(super) enum AutoWord {
    #[serde(rename = "auto")]
    Auto,
}
