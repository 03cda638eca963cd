//! The cuDNN 9 functions the recurrent path calls, as a table of function pointers read from
//! the loaded library (cuda_dl's `Library::Cudnn` -> [`Api`]), with the enum values it passes.
//!
//! A table rather than the generated forwarders cuBLAS and NVRTC get: those exist only in a
//! `cuda` build, and the call sequence built on this table is tested in every build, against a
//! stub library compiled by the test. The signatures are cuDNN 9's (`cudnn_adv.h`,
//! `cudnn_ops.h`, `cudnn_graph.h`), unchanged from cuDNN 8's v8 RNN API.

use std::ffi::{c_char, c_void};

/// `cudnnStatus_t`: 0 is success.
pub type Status = i32;
/// Any cuDNN handle or descriptor: an opaque pointer.
pub type Desc = *mut c_void;

/// `CUDNN_DATA_FLOAT`.
pub const DATA_FLOAT: i32 = 0;
/// `CUDNN_RNN_ALGO_STANDARD`.
pub const ALGO_STANDARD: i32 = 0;
/// `CUDNN_LSTM`, `CUDNN_GRU` (`cudnnRNNMode_t`).
pub const MODE_LSTM: i32 = 2;
pub const MODE_GRU: i32 = 3;
/// `CUDNN_RNN_DOUBLE_BIAS`: an input and a recurrent bias per gate, as PyTorch and the CPU
/// engine have.
pub const DOUBLE_BIAS: i32 = 2;
/// `CUDNN_UNIDIRECTIONAL`.
pub const UNIDIRECTIONAL: i32 = 0;
/// `CUDNN_LINEAR_INPUT`: the first layer multiplies its input by a weight matrix.
pub const LINEAR_INPUT: i32 = 0;
/// `CUDNN_FMA_MATH`: FP32 kernels only (no tensor cores, so no TF32), for `precision = "f32"`.
pub const FMA_MATH: i32 = 3;
/// `CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED`: `[batch, seq, vector]`, as the batches are.
pub const BATCH_MAJOR_UNPACKED: i32 = 2;
/// `CUDNN_RNN_PADDED_IO_ENABLED`, which the batch-major layout requires.
pub const PADDED_IO_ENABLED: u32 = 1;
/// `CUDNN_FWD_MODE_INFERENCE`, `CUDNN_FWD_MODE_TRAINING`.
pub const FWD_INFERENCE: i32 = 0;
pub const FWD_TRAINING: i32 = 1;
/// `CUDNN_WGRAD_MODE_ADD`: weight gradients are added to the buffer (zeroed first).
pub const WGRAD_ADD: i32 = 0;

macro_rules! api {
    ($($name:ident: fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The cuDNN functions, resolved once from a loaded library.
        #[allow(non_snake_case)]
        pub struct Api {
            $(pub $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }

        impl Api {
            /// Every function from `lib`; an error names the first one missing.
            ///
            /// # Safety
            /// `lib` is a cuDNN 9 library (or a stand-in with these signatures) and outlives
            /// the table.
            pub unsafe fn from_library(lib: &libloading::Library) -> Result<Api, String> {
                Ok(Api {
                    $($name: {
                        // SAFETY: the caller vouches for the library; the type is the
                        // function's declared signature.
                        let f = unsafe {
                            lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(
                                concat!(stringify!($name), "\0").as_bytes(),
                            )
                        };
                        *f.map_err(|e| format!("the loaded cuDNN has no `{}`: {e}", stringify!($name)))?
                    },)*
                })
            }
        }
    };
}

api! {
    cudnnGetVersion: fn() -> usize;
    cudnnGetErrorString: fn(Status) -> *const c_char;
    cudnnCreate: fn(*mut Desc) -> Status;
    cudnnDestroy: fn(Desc) -> Status;
    cudnnSetStream: fn(Desc, *mut c_void) -> Status;
    cudnnCreateTensorDescriptor: fn(*mut Desc) -> Status;
    cudnnSetTensorNdDescriptor: fn(Desc, i32, i32, *const i32, *const i32) -> Status;
    cudnnGetTensorNdDescriptor: fn(Desc, i32, *mut i32, *mut i32, *mut i32, *mut i32) -> Status;
    cudnnDestroyTensorDescriptor: fn(Desc) -> Status;
    cudnnCreateDropoutDescriptor: fn(*mut Desc) -> Status;
    cudnnSetDropoutDescriptor: fn(Desc, Desc, f32, *mut c_void, usize, u64) -> Status;
    cudnnDropoutGetStatesSize: fn(Desc, *mut usize) -> Status;
    cudnnDestroyDropoutDescriptor: fn(Desc) -> Status;
    cudnnCreateRNNDescriptor: fn(*mut Desc) -> Status;
    cudnnSetRNNDescriptor_v8:
        fn(Desc, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, Desc, u32) -> Status;
    cudnnDestroyRNNDescriptor: fn(Desc) -> Status;
    cudnnCreateRNNDataDescriptor: fn(*mut Desc) -> Status;
    cudnnSetRNNDataDescriptor: fn(Desc, i32, i32, i32, i32, i32, *const i32, *mut c_void) -> Status;
    cudnnDestroyRNNDataDescriptor: fn(Desc) -> Status;
    cudnnGetRNNWeightSpaceSize: fn(Desc, Desc, *mut usize) -> Status;
    cudnnGetRNNTempSpaceSizes: fn(Desc, Desc, i32, Desc, *mut usize, *mut usize) -> Status;
    cudnnGetRNNWeightParams:
        fn(Desc, Desc, i32, usize, *const c_void, i32, Desc, *mut *mut c_void, Desc, *mut *mut c_void) -> Status;
    cudnnRNNForward: fn(
        Desc, Desc, i32, *const i32, Desc, *const c_void, Desc, *mut c_void, Desc, *const c_void,
        *mut c_void, Desc, *const c_void, *mut c_void, usize, *const c_void, usize, *mut c_void,
        usize, *mut c_void
    ) -> Status;
    cudnnRNNBackwardData_v8: fn(
        Desc, Desc, *const i32, Desc, *const c_void, *const c_void, Desc, *mut c_void, Desc,
        *const c_void, *const c_void, *mut c_void, Desc, *const c_void, *const c_void, *mut c_void,
        usize, *const c_void, usize, *mut c_void, usize, *mut c_void
    ) -> Status;
    cudnnRNNBackwardWeights_v8: fn(
        Desc, Desc, i32, *const i32, Desc, *const c_void, Desc, *const c_void, Desc,
        *const c_void, usize, *mut c_void, usize, *mut c_void, usize, *mut c_void
    ) -> Status;
}

/// A cuDNN call that failed, or cuDNN that could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct CudnnError(pub String);

impl Api {
    /// The process's cuDNN, loaded on first use (see `cuda_dl::Library::Cudnn` for where it is
    /// looked for); the error says what was looked for and how to get it.
    pub fn get() -> Result<&'static Api, CudnnError> {
        static API: std::sync::OnceLock<Result<Api, CudnnError>> = std::sync::OnceLock::new();
        API.get_or_init(|| {
            let lib = crate::cuda_dl::load(crate::cuda_dl::Library::Cudnn).map_err(|e| CudnnError(e.with_hint()))?;
            // SAFETY: the library was found under cuDNN 9's SONAME and lives for the process.
            unsafe { Api::from_library(lib) }.map_err(CudnnError)
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// The library's version, e.g. 91002 for 9.10.2.
    pub fn version(&self) -> usize {
        // SAFETY: no arguments, no preconditions.
        unsafe { (self.cudnnGetVersion)() }
    }

    /// `Ok` for success, else an error naming `call` and cuDNN's text for the status.
    pub fn check(&self, call: &str, status: Status) -> Result<(), CudnnError> {
        if status == 0 {
            return Ok(());
        }
        // SAFETY: cuDNN returns a static NUL-terminated string for any status (or null).
        let text = unsafe {
            let p = (self.cudnnGetErrorString)(status);
            if p.is_null() {
                String::new()
            } else {
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Err(CudnnError(format!("{call} returned {status} ({text})")))
    }
}

/// "9.10.2" for 91002 (cuDNN 9 numbers versions major * 10000 + minor * 100 + patch).
pub fn version_text(version: usize) -> String {
    format!("{}.{}.{}", version / 10000, version % 10000 / 100, version % 100)
}
