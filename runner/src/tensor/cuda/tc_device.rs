//! What the MLP step's engine ([`super::tc_engine`]) owns on the device besides its buffers:
//! the kernels of `tensor/tc/mlp.cu` loaded from their embedded PTX, a cuBLAS handle bound to
//! the engine's stream with its own workspace, and a captured CUDA graph. Each is released on
//! drop, after the engine synchronized its stream.

use crate::cuda_raw::{call, CudaFailure, DeviceBuf};
use crate::tensor::TrainError;
use cudarc::cublas::sys as blas;
use cudarc::driver::{result, sys};
use std::ffi::{c_void, CString};

/// The kernels of `tensor/tc/mlp.cu`, compiled to PTX by `runner/build.rs`.
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/mlp.ptx"));

/// cuBLAS's workspace, set explicitly so a captured product never allocates (PyTorch sets one
/// per handle for the same reason).
const BLAS_WORKSPACE: usize = 32 << 20;

pub(super) struct Kernels {
    module: sys::CUmodule,
    pub(super) cast: sys::CUfunction,
    pub(super) bias_act: sys::CUfunction,
    pub(super) bias: sys::CUfunction,
    pub(super) mse: sys::CUfunction,
    pub(super) act_back: sys::CUfunction,
    pub(super) sumsq: sys::CUfunction,
    pub(super) control: sys::CUfunction,
    pub(super) adam: sys::CUfunction,
}

impl Kernels {
    pub(super) fn load() -> Result<Kernels, CudaFailure> {
        let image = CString::new(PTX).expect("PTX has no NUL");
        // SAFETY: a NUL-terminated PTX image; the module is unloaded in `Drop`.
        let module = call("cuModuleLoadData (the MLP kernels' PTX)", unsafe {
            result::module::load_data(image.as_ptr() as *const c_void)
        })?;
        let get = |name: &str| {
            // SAFETY: the module is loaded; the name is a kernel of `mlp.cu`.
            call("cuModuleGetFunction", unsafe {
                result::module::get_function(module, CString::new(name).expect("no NUL"))
            })
        };
        Ok(Kernels {
            cast: get("mm_cast")?,
            bias_act: get("mm_bias_act")?,
            bias: get("mm_bias")?,
            mse: get("mm_mse")?,
            act_back: get("mm_act_back")?,
            sumsq: get("mm_sumsq")?,
            control: get("mm_control_step")?,
            adam: get("mm_adam_step")?,
            module,
        })
    }
}

impl Drop for Kernels {
    fn drop(&mut self) {
        // SAFETY: loaded by `load`, unloaded once, after the owner synchronized.
        let _ = unsafe { result::module::unload(self.module) };
    }
}

/// A cuBLAS handle on the engine's stream, with its own workspace.
pub(super) struct Blas {
    pub(super) handle: blas::cublasHandle_t,
    _workspace: DeviceBuf,
}

pub(super) fn blas_call(action: &'static str, status: blas::cublasStatus_t) -> Result<(), TrainError> {
    match status {
        blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        other => Err(TrainError::Device(format!("cublas: {action} returned {other:?}"))),
    }
}

impl Blas {
    pub(super) fn new(stream: sys::CUstream) -> Result<Blas, TrainError> {
        let mut handle = std::ptr::null_mut();
        // SAFETY: an out-pointer to a local; destroyed in `Drop`.
        blas_call("cublasCreate", unsafe { blas::cublasCreate_v2(&mut handle) })?;
        let workspace = DeviceBuf::new(BLAS_WORKSPACE)?;
        let this = Blas {
            handle,
            _workspace: workspace,
        };
        // SAFETY: a live handle and stream; the workspace outlives the handle (field order).
        unsafe {
            blas_call("cublasSetStream", blas::cublasSetStream_v2(handle, stream as _))?;
            blas_call(
                "cublasSetWorkspace",
                blas::cublasSetWorkspace_v2(handle, this._workspace.ptr as *mut c_void, BLAS_WORKSPACE),
            )?;
        }
        Ok(this)
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { blas::cublasDestroy_v2(self.handle) };
    }
}

/// A captured step and the weight addresses baked into it.
pub(super) struct Graph {
    pub(super) graph: sys::CUgraph,
    pub(super) exec: sys::CUgraphExec,
    /// The weight addresses baked into it.
    pub(super) params: Vec<sys::CUdeviceptr>,
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: both made by `capture`, destroyed once, after the owner synchronized.
        unsafe {
            let _ = sys::cuGraphExecDestroy(self.exec);
            let _ = sys::cuGraphDestroy(self.graph);
        }
    }
}
