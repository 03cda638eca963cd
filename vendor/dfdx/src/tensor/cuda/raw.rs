//! Added for `measured` (not in dfdx 0.13.0): what a caller needs to issue its own
//! stream-ordered copies into dfdx tensors (for example from page-locked host memory, which
//! dfdx does not allocate) and to time work on the stream dfdx queues it on.

use super::{device::CachableCudaSlice, Cuda, CudaError};
use crate::{
    shapes::{Shape, Unit},
    tensor::Tensor,
};
use cudarc::driver::{sys, CudaDevice, DevicePtr, DevicePtrMut};
use std::sync::Arc;

impl Cuda {
    /// The cudarc device this device runs on: its context, and `cu_stream()`, the stream every
    /// kernel, copy and stream-ordered allocation of this device is queued on.
    pub fn cudarc_device(&self) -> &Arc<CudaDevice> {
        &self.dev
    }

    /// A tensor of `shape` whose memory comes from the tensor cache when it is on, else from a
    /// stream-ordered allocation; nothing is written to it.
    ///
    /// # Safety
    /// The contents are undefined until the caller writes all of them (for example with a copy
    /// on this device's stream) before any kernel reads them.
    pub unsafe fn try_alloc_uninit<S: Shape, E: Unit>(&self, shape: S) -> Result<Tensor<S, E, Self>, CudaError> {
        let slice = unsafe { self.alloc_empty::<E>(shape.num_elements()) }?;
        Ok(self.build_tensor(shape, shape.strides(), slice))
    }
}

impl<S: Shape, E: Unit, T> Tensor<S, E, Cuda, T> {
    /// The device address of this tensor's data, for reading it with stream-ordered work.
    pub fn cu_device_ptr(&self) -> sys::CUdeviceptr {
        let storage: &CachableCudaSlice<E> = self.data.as_ref();
        *storage.device_ptr()
    }

    /// The device address of this tensor's data, for writing it with stream-ordered work. The
    /// data is made unique first: if another tensor shares it, it is copied (as every in-place
    /// dfdx operation does), so the write never reaches the other tensor.
    pub fn cu_device_ptr_mut(&mut self) -> sys::CUdeviceptr {
        let storage: &mut CachableCudaSlice<E> = Arc::make_mut(&mut self.data);
        *storage.device_ptr_mut()
    }
}
