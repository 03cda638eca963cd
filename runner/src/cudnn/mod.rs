//! cuDNN's recurrent networks for the LSTM and GRU on CUDA (tensor -> cudnn -> cuda_dl): the
//! library's functions loaded at run time ([`api`]), one network's descriptors and calls for
//! a batch shape ([`rnn`]), and the converter between the CPU engine's parameter layout and
//! cuDNN's packed weights ([`layout`]). Nothing here allocates device memory itself or needs
//! the `cuda` feature: the CUDA path passes its buffers in, and the tests run every call
//! against a stub library.

pub mod api;
pub mod layout;
pub mod rnn;

#[cfg(test)]
mod tests;

pub use api::{Api, CudnnError};
pub use layout::Block;
pub use rnn::{BackwardIo, DevPtr, DeviceMemory, ForwardIo, RnnPlan, RnnShape};
