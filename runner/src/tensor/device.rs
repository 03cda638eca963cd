//! What the training loop asks of a dfdx device (CPU or CUDA) beyond its kernels, the bound
//! every engine, the step check and the loop put on the device they run on.

use dfdx::tensor::TensorToArray;

/// What the training loop needs from a dfdx device, beyond the kernels: synchronization for
/// honest timing and reading a scalar loss back.
pub trait TrainDevice:
    dfdx::tensor_ops::Device<f32> + dfdx::tensor::Synchronize + TensorToArray<(), f32, Array = f32>
{
}

impl<D> TrainDevice for D where
    D: dfdx::tensor_ops::Device<f32> + dfdx::tensor::Synchronize + TensorToArray<(), f32, Array = f32>
{
}
