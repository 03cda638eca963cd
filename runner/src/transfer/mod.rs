//! The `transfer` stage's measurement (manifest params -> copies timed here -> metrics recorder).
//!
//! It answers "how fast do bytes move between host and device, and what do pinned host memory
//! and buffer reuse buy?" for a list of sizes. Each trial measures every (size, mode) pair,
//! where a mode is one direction x host memory kind x allocation policy:
//!
//! | parameter     | values                          | default                     |
//! |---------------|---------------------------------|-----------------------------|
//! | `sizes`       | `4096`, `4KiB`, `1GB`, `256x60x105xf32` | 4 KiB, 16 KiB, ... 256 MiB (powers of 4) |
//! | `direction`   | `h2d`, `d2h`, `both`            | `h2d`                       |
//! | `host_memory` | `pageable`, `pinned`            | `["pageable", "pinned"]`    |
//! | `allocation`  | `per_copy`, `reuse`             | `["per_copy", "reuse"]`     |
//! | `sync`        | `blocking`, `non_blocking`      | `blocking`                  |
//! | `prepare_next`| also prepare the next batch on the host each iteration | `false` |
//! | `iterations`  | samples per (size, mode), >= 1  | 20                          |
//! | `warmup`      | unrecorded samples before those | 3                           |
//! | `device`      | `cpu`, `cuda`                   | `cpu`                       |
//!
//! `direction`, `host_memory`, `allocation` and `sync` take one value or a list; the stage measures
//! every combination in the same trial, so the modes see the same machine state.
//!
//! What the modes mean. `host_memory` is the kind of the host-side buffer: `pageable` is an
//! ordinary allocation, `pinned` is page-locked (CUDA: `cuMemHostAlloc`; CPU: `mlock`, falling
//! back to pageable when `RLIMIT_MEMLOCK` refuses, recorded as `pinned_locked = 0`).
//! `allocation` is about the destination: `per_copy` allocates it, copies and frees it on every
//! copy (as `to_vec()` or building a fresh tensor does); `reuse` copies into one buffer
//! allocated before timing. With `device = "cpu"` the "device" side is a second host buffer, so
//! the same manifest measures host memcpy costs where no GPU exists.
//!
//! `sync` and `prepare_next` model a data loader's loop: each iteration copies a batch and the
//! host prepares the next one (a read-modify-write pass over a second host buffer of the same
//! size). `blocking` copies, waits, then prepares; `non_blocking` issues the copy, prepares
//! meanwhile, and waits before the iteration ends, since the loop uses the batch next. On CUDA
//! that is a stream-ordered copy (it can overlap only from pinned memory); on the CPU a
//! copy-engine thread stands in for the GPU's copy engine, so the overlap is real but costs a
//! hand-off per copy. With `prepare_next`, `<mode>_seconds` is the loop's time per batch.
//!
//! Timing. A sample is a batch of back-to-back copies lasting at least [`MIN_SAMPLE`]; its time
//! divided by the batch length is one "seconds per copy". On CUDA the device is synchronized
//! before the clock starts and before it stops, so no unfinished copy is ever timed. The
//! recorded value is the median over `iterations` samples, or over those taken in 2 s when a
//! slow mode (a pinned allocation per copy at 256 MiB) passes that after its first three.
//!
//! Metrics, recorded as series with `step` = size in bytes (`<mode>` is
//! `<direction>_<host_memory>_<allocation>`, plus `_non_blocking` for non-blocking copies, e.g.
//! `h2d_pinned_reuse`):
//! - `<mode>_seconds` (`s`): median seconds per copy;
//! - `<mode>_gbps` (`GB/s`): size / seconds, in 10^9 bytes per second;
//! - `<mode>_pct_peak` (`%`): the mode's rate as a share of its direction's reference;
//! - `<mode>_event_seconds` (`s`, CUDA, pinned reused modes from 16 MiB): the same copies
//!   issued back to back and timed between CUDA events, bandwidthTest's clock, beside the host
//!   clock's figure;
//! - `pinned_locked` (`count`, CPU with `pinned` only): 1 when every pinned buffer was locked.
//! - `roundtrip_ok` (`count`, per size): 1 once a non-constant pattern sent through every
//!   mode's copy (and back with a plain copy) came back equal, checked after the timings and
//!   outside every clock. Other bytes fail the stage ([`TransferError::Corrupt`]).
//!
//! And single values: `reference_h2d_gbps` and `reference_d2h_gbps` (`GB/s`, the directions a
//! run copies in): pinned, reused, blocking copies of `reference_bytes` (`B`, at least 256 MiB)
//! on the modes' own clock; `d2d_gbps` (`GB/s`, CUDA only): a device-to-device copy of at least
//! 64 MiB, bytes copied per second (memory traffic is twice that), as context for the device;
//! `link_theoretical_gbps` (`GB/s`, CUDA only): the PCIe link's rate from NVML.

mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod error;
mod measure;
mod timing;

use std::sync::atomic::AtomicBool;

use crate::metrics::Recorder;

pub use crate::kinds::transfer::{
    Allocation, CopyDirection, Direction, HostMemory, Mode, ModeList, SyncMode, TransferDevice, TransferParams,
};
pub use crate::size::{parse_size, SizeSpec};
pub use cpu::{cpu_copy_samples, CopySamples};
pub use error::TransferError;
pub use timing::MIN_SAMPLE;

/// Measures every (size, mode) of `params` on its device and records the metrics in `rec`.
pub fn run_transfer(params: &TransferParams, rec: &mut Recorder, cancel: &AtomicBool) -> Result<(), TransferError> {
    let plan = params.plan()?;
    let (device, note) = params.device.resolve();
    if let Some(note) = note {
        rec.note(note);
    }
    let on_cuda = device == TransferDevice::Cuda;
    rec.fact("device", if on_cuda { "cuda" } else { "cpu" });
    if let Some(gpu) = on_cuda.then(|| crate::cuda_dl::device_name(0)).flatten() {
        rec.fact("gpu", gpu);
    }
    match device {
        TransferDevice::Cpu | TransferDevice::Auto => cpu::run(&plan, rec, cancel),
        #[cfg(feature = "cuda")]
        TransferDevice::Cuda => cuda::run(&plan, rec, cancel),
        #[cfg(not(feature = "cuda"))]
        TransferDevice::Cuda => Err(crate::kinds::transfer::no_cuda_error().into()),
    }
}

#[cfg(test)]
mod tests;
