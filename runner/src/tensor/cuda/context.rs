//! The CUDA device's context and stream as the training path's own driver calls need them
//! (device -> context bound to this thread -> work queued on dfdx's stream).

use crate::tensor::TrainError;
use cudarc::driver::sys;
use dfdx::tensor::Cuda;

/// Binds the device's context to the calling thread, for the driver calls made here directly.
pub(super) fn bind(dev: &Cuda) -> Result<(), TrainError> {
    Ok(crate::cuda_raw::call(
        "binding the context",
        dev.cudarc_device().bind_to_thread(),
    )?)
}

/// The stream dfdx queues all of this device's work on.
pub(super) fn stream(dev: &Cuda) -> sys::CUstream {
    *dev.cudarc_device().cu_stream()
}
