//! Why training or validation could not finish (parameters -> windows -> device -> model
//! files): the one error type of every part of `tensor`, with the device errors it wraps.

use crate::params::ParamError;
use dfdx::tensor::CpuError;

/// Why training or validation could not finish.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("invalid parameter {0}")]
    Params(#[from] ParamError),
    #[error("no data: {0}")]
    EmptyData(String),
    #[error("shape mismatch: {0}")]
    Shape(String),
    #[error("device error: {0}")]
    Device(String),
    #[error("training diverged: the mean loss of epoch {epoch} is {loss}")]
    Diverged { epoch: usize, loss: f64 },
    #[error("cancelled")]
    Cancelled,
    #[error("check_step: {0}")]
    StepMismatch(String),
    #[error("model file {path}: {message}")]
    ModelFile { path: String, message: String },
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<CpuError> for TrainError {
    fn from(e: CpuError) -> Self {
        TrainError::Device(format!("cpu: {e}"))
    }
}

#[cfg(feature = "cuda")]
impl From<dfdx::tensor::CudaError> for TrainError {
    fn from(e: dfdx::tensor::CudaError) -> Self {
        TrainError::Device(format!("cuda: {e}"))
    }
}
