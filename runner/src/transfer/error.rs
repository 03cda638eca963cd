//! Why a `transfer` measurement stopped (checked plan -> copies -> recorder): the one error
//! type the parameters, the timing loop and both devices' copies return.

use crate::params::ParamError;

/// Why a transfer measurement stopped.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("invalid transfer parameters: {0}")]
    Params(#[from] ParamError),
    #[error("cancelled")]
    Cancelled,
    #[error("could not allocate {size} of host memory")]
    HostAlloc { size: String },
    #[error("size {size} does not fit in this machine's address space")]
    TooLarge { size: String },
    #[error("CUDA {action} failed: {message}")]
    Cuda { action: &'static str, message: String },
    #[error("the copy-engine thread stopped before finishing its copies")]
    EngineStopped,
    /// A round trip through a mode's copy returned other bytes than it sent.
    #[error(
        "the {mode} copy of {size} returned different bytes: {differing} of them differ, the first at byte \
         {first} (sent {sent:#04x}, got {got:#04x})"
    )]
    Corrupt {
        mode: String,
        size: String,
        differing: usize,
        first: usize,
        sent: u8,
        got: u8,
    },
}
