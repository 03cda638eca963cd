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

mod config;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod timing;

use std::sync::atomic::AtomicBool;

use crate::metrics::Recorder;
use crate::params::ParamError;

pub use crate::size::{parse_size, SizeSpec};
pub use config::{Allocation, Direction, HostMemory, ModeList, SyncMode, TransferDevice, TransferParams};
pub use cpu::{cpu_copy_samples, CopySamples};
pub use timing::MIN_SAMPLE;

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

/// One concrete copy direction (`both` in the manifest expands to the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyDirection {
    H2d,
    D2h,
}

impl CopyDirection {
    pub fn as_str(self) -> &'static str {
        match self {
            CopyDirection::H2d => "h2d",
            CopyDirection::D2h => "d2h",
        }
    }
}

/// One measured combination; its [`Mode::name`] prefixes the metric names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mode {
    pub direction: CopyDirection,
    pub host_memory: HostMemory,
    pub allocation: Allocation,
    pub sync: SyncMode,
}

impl Mode {
    /// `h2d_pinned_reuse`, `d2h_pageable_per_copy`, `h2d_pinned_reuse_non_blocking`, ...
    /// (blocking copies, the default, carry no suffix).
    pub fn name(&self) -> String {
        let sync = match self.sync {
            SyncMode::Blocking => "",
            SyncMode::NonBlocking => "_non_blocking",
        };
        format!(
            "{}_{}_{}{sync}",
            self.direction.as_str(),
            self.host_memory.as_str(),
            self.allocation.as_str()
        )
    }
}

/// The checked parameters: sizes in bytes and the expanded mode list, in manifest order.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub sizes: Vec<u64>,
    pub modes: Vec<Mode>,
    pub iterations: u32,
    pub warmup: u32,
    pub prepare_next: bool,
}

/// Measures every (size, mode) of `params` on its device and records the metrics in `rec`.
pub fn run_transfer(params: &TransferParams, rec: &mut Recorder, cancel: &AtomicBool) -> Result<(), TransferError> {
    let plan = params.plan()?;
    let (device, note) = params.device.resolve();
    if let Some(note) = note {
        rec.note(note);
    }
    match device {
        TransferDevice::Cpu | TransferDevice::Auto => cpu::run(&plan, rec, cancel),
        #[cfg(feature = "cuda")]
        TransferDevice::Cuda => cuda::run(&plan, rec, cancel),
        #[cfg(not(feature = "cuda"))]
        TransferDevice::Cuda => Err(config::no_cuda_error().into()),
    }
}

/// The host's share of a loop iteration with `prepare_next`: one read-modify-write pass over
/// the next batch, the memory traffic of collating it.
pub(crate) fn prepare(buf: &mut [u8]) {
    for b in buf.iter_mut() {
        *b = b.wrapping_mul(3).wrapping_add(1);
    }
    std::hint::black_box(buf);
}

/// The bytes a round trip sends: a sequence that repeats at no power-of-two period, so a copy
/// that drops, repeats or misplaces a block of bytes does not hand the same bytes back.
pub(crate) fn pattern(len: usize) -> Result<Vec<u8>, TransferError> {
    let mut bytes = host_buffer(len)?;
    bytes.extend((0..len as u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ (i >> 3)) as u8));
    Ok(bytes)
}

/// An empty buffer with room for `len` bytes, or the error for host memory this machine
/// cannot give (rather than an abort).
pub(crate) fn host_buffer(len: usize) -> Result<Vec<u8>, TransferError> {
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(|_| TransferError::HostAlloc {
        size: crate::size::format_bytes(len as u64),
    })?;
    Ok(bytes)
}

/// Checks that a round trip through `mode`'s copy at `size` handed back the bytes it sent
/// (`verify_round_trips` runs one per mode and size, outside every clock).
pub(crate) fn check_round_trip(mode: &Mode, size: u64, sent: &[u8], got: &[u8]) -> Result<(), TransferError> {
    let differs = |i: usize| sent.get(i) != got.get(i);
    let n = sent.len().max(got.len());
    let Some(first) = (0..n).find(|&i| differs(i)) else {
        return Ok(());
    };
    let differing = (first..n).filter(|&i| differs(i)).count();
    Err(TransferError::Corrupt {
        mode: mode.name(),
        size: crate::size::format_bytes(size),
        differing,
        first,
        sent: sent.get(first).copied().unwrap_or(0),
        got: got.get(first).copied().unwrap_or(0),
    })
}

/// Round-trips every mode of `plan` at every size through `round_trip(len, mode)` (which
/// returns the bytes that came back from sending [`pattern`]), outside every clock, and
/// records `roundtrip_ok` (count, per size: 1 once every mode returned its bytes). A mode that
/// returns other bytes fails the stage: its timings would be of a broken copy.
pub(crate) fn verify_round_trips(
    plan: &Plan,
    rec: &mut Recorder,
    mut round_trip: impl FnMut(usize, Mode, &[u8]) -> Result<Vec<u8>, TransferError>,
) -> Result<(), TransferError> {
    for &size in &plan.sizes {
        let sent = pattern(len_of(size)?)?;
        for mode in &plan.modes {
            let got = round_trip(sent.len(), *mode, &sent)?;
            check_round_trip(mode, size, &sent, &got)?;
        }
        rec.record_step("roundtrip_ok", step_of(size), 1.0, "count");
    }
    Ok(())
}

/// Decimal gigabytes per second for `bytes` moved in `seconds`.
pub(crate) fn gbps(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / seconds / 1e9
}

/// The "% of peak" reference copies at least this many bytes per direction: large enough to be
/// bandwidth-bound (a copy at the size being judged is latency-bound at small sizes, and its
/// share would be about 100% by construction). NVIDIA's bandwidthTest uses 32 MB copies.
pub(crate) const REFERENCE_BYTES: u64 = 256 << 20;

/// Each direction's reference rate (GB/s): the mode that should be fastest, pinned host memory,
/// a reused buffer, blocking copies, at [`reference_size`], timed on the modes' own clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct References {
    pub h2d: Option<f64>,
    pub d2h: Option<f64>,
}

impl References {
    fn of(&self, direction: CopyDirection) -> Option<f64> {
        match direction {
            CopyDirection::H2d => self.h2d,
            CopyDirection::D2h => self.d2h,
        }
    }

    /// Measures the reference of every direction `plan` copies in with `measure(size, mode)`
    /// (seconds per copy) and records `reference_bytes` and `reference_<direction>_gbps`.
    pub fn measure(
        plan: &Plan,
        rec: &mut Recorder,
        mut measure: impl FnMut(u64, Mode) -> Result<f64, TransferError>,
    ) -> Result<Self, TransferError> {
        let size = reference_size(plan);
        let mut refs = References::default();
        for direction in [CopyDirection::H2d, CopyDirection::D2h] {
            if !plan.modes.iter().any(|m| m.direction == direction) {
                continue;
            }
            let mode = Mode {
                direction,
                host_memory: HostMemory::Pinned,
                allocation: Allocation::Reuse,
                sync: SyncMode::Blocking,
            };
            let rate = gbps(size, measure(size, mode)?);
            rec.record(format!("reference_{}_gbps", direction.as_str()), rate, "GB/s");
            match direction {
                CopyDirection::H2d => refs.h2d = Some(rate),
                CopyDirection::D2h => refs.d2h = Some(rate),
            }
        }
        rec.record("reference_bytes", size as f64, "B");
        Ok(refs)
    }
}

/// [`REFERENCE_BYTES`], or the largest planned size when that is larger.
pub(crate) fn reference_size(plan: &Plan) -> u64 {
    plan.sizes.iter().copied().max().unwrap_or(0).max(REFERENCE_BYTES)
}

/// Records `<mode>_seconds`, `<mode>_gbps` and, against its direction's reference,
/// `<mode>_pct_peak` (%) for one size.
pub(crate) fn record_mode(rec: &mut Recorder, mode: &Mode, size: u64, seconds: f64, refs: &References) {
    let name = mode.name();
    let step = step_of(size);
    let bandwidth = gbps(size, seconds);
    rec.record_step(format!("{name}_seconds"), step, seconds, "s");
    rec.record_step(format!("{name}_gbps"), step, bandwidth, "GB/s");
    if let Some(reference) = refs.of(mode.direction).filter(|r| *r > 0.0) {
        rec.record_step(format!("{name}_pct_peak"), step, 100.0 * bandwidth / reference, "%");
    }
}

/// The note for sizes whose host buffers stay in the CPU's last-level cache between copies
/// (nothing flushes them): their figures are cache bandwidth, not memory bandwidth.
pub(crate) fn cache_warm_note(plan: &Plan, rec: &mut Recorder) {
    let Some(llc) = last_level_cache_bytes() else {
        return;
    };
    let warm: Vec<String> = plan
        .sizes
        .iter()
        .filter(|&&s| s <= llc)
        .map(|&s| crate::size::format_bytes(s))
        .collect();
    if !warm.is_empty() {
        rec.note(format!(
            "cache-warm: {} fit{} in the CPU's {} last-level cache, so {} host buffers stay cached \
             between copies and {} figures are cache, not memory, bandwidth (shares of the \
             {} reference can pass 100%)",
            warm.join(", "),
            if warm.len() == 1 { "s" } else { "" },
            crate::size::format_bytes(llc),
            if warm.len() == 1 { "its" } else { "their" },
            if warm.len() == 1 { "its" } else { "their" },
            crate::size::format_bytes(reference_size(plan)),
        ));
    }
}

/// The largest CPU cache (Linux sysfs), e.g. 32 MiB for `32768K`.
fn last_level_cache_bytes() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path().join("size")).ok())
        .filter_map(|s| parse_cache_size(s.trim()))
        .max()
}

fn parse_cache_size(text: &str) -> Option<u64> {
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// Series step for a size; sizes above `i64::MAX` bytes cannot be allocated anyway.
pub(crate) fn step_of(size: u64) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

/// A size as a `usize` length, or the error for a size this address space cannot hold.
pub(crate) fn len_of(size: u64) -> Result<usize, TransferError> {
    usize::try_from(size).map_err(|_| TransferError::TooLarge {
        size: crate::size::format_bytes(size),
    })
}

#[cfg(test)]
mod tests;
