//! The `transfer` stage on `device = "cuda"` (checked plan -> driver-API copies -> recorder).
//!
//! Uses cudarc's driver API directly (the crate dfdx's CUDA device is built on): dfdx does
//! not expose page-locked host memory or streams, and a copy benchmark must control exactly
//! which allocation and which copy call happen inside the timed region.
//!
//! - `pageable`: a `Vec<u8>` with the synchronous `cuMemcpyHtoD`/`cuMemcpyDtoH`, as copying a
//!   tensor from an ordinary Rust buffer does; the driver stages it through its own pinned
//!   buffer.
//! - `pinned`: `cuMemHostAlloc` memory with `cuMemcpy*Async` on a non-blocking stream.
//!   `blocking` waits for the stream after each copy (what `.to(device)` does);
//!   `non_blocking` waits only at the end of the iteration, after the host has prepared the
//!   next batch (`prepare_next`), which is when a loop would use the copied batch.
//!   Pageable copies return only when done whatever `sync` says: the driver stages them
//!   synchronously, so `non_blocking` cannot overlap them (as in CUDA itself).
//! - `per_copy`: every copy allocates its destination (`cuMemAlloc` on the device for h2d, a
//!   new `Vec` or `cuMemHostAlloc` buffer on the host for d2h), copies, waits, and frees it.
//!   `cuMemAlloc` is uncached, so this is the cost an allocator without a pool pays.
//!
//! Every sample synchronizes the context before starting the clock and after the last copy,
//! so no asynchronous work is left untimed. The "% of peak" reference (`reference_<direction>_gbps`)
//! is the pinned, reused, blocking mode at 256 MiB or more, on the same host clock as the modes;
//! `d2d_gbps` is stream-ordered device copies between CUDA events.

use std::ptr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaDevice, DriverError};

use crate::cuda_raw::{self, call, CudaFailure, DeviceBuf, Event, PinnedBuf, Stream};

use super::error::TransferError;
use super::measure::{cache_warm_note, gbps, len_of, prepare, record_mode, step_of, References};
use super::timing::{Sampler, Warmed};
use crate::kinds::transfer::{Allocation, CopyDirection, HostMemory, Mode, Plan, SyncMode};
use crate::metrics::Recorder;
use crate::stats::median;

/// Fill byte for source buffers, so no copy reads never-written memory.
const FILL: u8 = 0xA5;
/// The device-to-device reference copies at least this much, so it reaches full bandwidth.
const D2D_MIN_BYTES: u64 = 64 << 20;
/// From this size up, pinned reused modes are also timed between CUDA events
/// (`<mode>_event_seconds`), the clock bandwidthTest uses, so the host clock can be checked
/// against it where the per-copy overhead of the host clock should vanish.
const EVENT_CLOCK_BYTES: u64 = 16 << 20;

pub(crate) fn run(plan: &Plan, rec: &mut Recorder, cancel: &AtomicBool) -> Result<(), TransferError> {
    // Declared first so it is dropped last: every buffer below is freed while the context
    // is still alive.
    let gpu = Gpu::open()?;
    let stream = Stream::new()?;
    let sampler = Sampler::new(plan.iterations, plan.warmup);
    let mut warmed = Warmed::default();

    let largest = plan.sizes.iter().copied().max().unwrap_or(D2D_MIN_BYTES);
    let d2d = d2d_gbps(largest.max(D2D_MIN_BYTES), &stream, sampler, cancel)?;
    rec.record("d2d_gbps", d2d, "GB/s");

    // The "% of peak" reference: pinned, reused, blocking copies of at least 256 MiB per
    // direction, on the host clock the modes use.
    let refs = References::measure(plan, rec, |size, mode| {
        Ok(median(&copy_samples(
            len_of(size)?,
            mode,
            &stream,
            warmed.sampler(sampler, size),
            false,
            cancel,
        )?))
    })?;
    cache_warm_note(plan, rec);
    // The ceiling the reference is judged against (read outside every sample's clock).
    match crate::measure::gpu::PcieLink::read(0) {
        Ok(link) => {
            if let Some(rate) = link.theoretical_gbps() {
                rec.record("link_theoretical_gbps", rate, "GB/s");
            }
            rec.note(link.describe());
        }
        Err(why) => rec.note(format!("no PCIe link rate: {why}")),
    }
    for &size in &plan.sizes {
        let len = len_of(size)?;
        for mode in &plan.modes {
            let seconds = copy_samples(
                len,
                *mode,
                &stream,
                warmed.sampler(sampler, size),
                plan.prepare_next,
                cancel,
            )?;
            record_mode(rec, mode, size, median(&seconds), &refs);
            if size >= EVENT_CLOCK_BYTES
                && mode.host_memory == HostMemory::Pinned
                && mode.allocation == Allocation::Reuse
            {
                let events = event_samples(len, mode.direction, &stream, warmed.sampler(sampler, size), cancel)?;
                rec.record_step(
                    format!("{}_event_seconds", mode.name()),
                    step_of(size),
                    median(&events),
                    "s",
                );
            }
        }
    }
    super::measure::verify_round_trips(plan, rec, |len, mode, sent| round_trip(len, mode, sent, &stream))?;
    drop(stream);
    drop(gpu);
    Ok(())
}

/// Device-to-device copy rate (bytes copied per second), capped to a quarter of free memory.
fn d2d_gbps(want: u64, stream: &Stream, sampler: Sampler, cancel: &AtomicBool) -> Result<f64, TransferError> {
    let (free, _total) = cuda("cuMemGetInfo", result::mem_get_info())?;
    let len = len_of(want)?.min(free / 4).max(1);
    let src = DeviceBuf::filled(len, FILL)?;
    let dst = DeviceBuf::new(len)?;
    let samples = event_timed(stream, sampler, cancel, || {
        // SAFETY: both device buffers hold `len` bytes and outlive the event wait.
        cuda("cuMemcpyDtoDAsync", unsafe {
            result::memcpy_dtod_async(dst.ptr, src.ptr, len, stream.0)
        })
    })?;
    Ok(gbps(len as u64, median(&samples)))
}

/// Samples of seconds per `copy`, its copies issued back to back on `stream` and timed between
/// two CUDA events (bandwidthTest's clock).
fn event_timed(
    stream: &Stream,
    sampler: Sampler,
    cancel: &AtomicBool,
    mut copy: impl FnMut() -> Result<(), TransferError>,
) -> Result<Vec<f64>, TransferError> {
    let (start, end) = (Event::new(true)?, Event::new(true)?);
    sampler.timed(cancel, |k| {
        start.record(stream.0)?;
        for _ in 0..k {
            copy()?;
        }
        end.record(stream.0)?;
        Ok(Event::seconds_between(&start, &end)?)
    })
}

/// Seconds per copy of pinned, reused copies in `direction`, issued back to back on `stream`
/// and timed between two CUDA events (bandwidthTest's clock), one value per sample.
fn event_samples(
    len: usize,
    direction: CopyDirection,
    stream: &Stream,
    sampler: Sampler,
    cancel: &AtomicBool,
) -> Result<Vec<f64>, TransferError> {
    let s = stream.0;
    let device = DeviceBuf::filled(len, FILL)?;
    let host = PinnedBuf::filled(len, FILL)?;
    ctx_sync()?;
    event_timed(stream, sampler, cancel, || match direction {
        // SAFETY: both buffers hold `len` bytes and outlive the event wait.
        CopyDirection::H2d => Ok(unsafe { cuda_raw::htod_async(device.ptr, host.ptr, host.len, s) }?),
        // SAFETY: as above.
        CopyDirection::D2h => Ok(unsafe { cuda_raw::dtoh_async(host.ptr, device.ptr, host.len, s) }?),
    })
}

/// What one iteration's copy needs kept alive until the stream has finished with it (a fresh
/// `per_copy` buffer), freed only after the iteration's synchronization.
type Keep = Option<Box<dyn std::any::Any>>;

// Long because: the timed copy loop of every mode, with its clock reads inline so that nothing else
// runs between them.
fn copy_samples(
    len: usize,
    mode: Mode,
    stream: &Stream,
    sampler: Sampler,
    prepare_next: bool,
    cancel: &AtomicBool,
) -> Result<Vec<f64>, TransferError> {
    let s = stream.0;
    // Copies from and to pinned memory are stream-ordered; pageable ones return when done
    // (the driver stages them), so `non_blocking` cannot overlap them, as in CUDA itself.
    let stream_ordered = mode.host_memory == HostMemory::Pinned;
    let mut next = if prepare_next { Some(vec![FILL; len]) } else { None };
    let mut timed = |issue: &mut dyn FnMut() -> Result<Keep, TransferError>| {
        sampler.wall(cancel, |k| {
            for _ in 0..k {
                let keep = issue()?;
                if stream_ordered && mode.sync == SyncMode::Blocking {
                    stream.sync()?;
                }
                if let Some(buf) = next.as_deref_mut() {
                    prepare(buf);
                }
                if stream_ordered && mode.sync == SyncMode::NonBlocking {
                    stream.sync()?;
                }
                drop(keep);
            }
            ctx_sync()
        })
    };
    ctx_sync()?;
    match (mode.direction, mode.host_memory, mode.allocation) {
        (CopyDirection::H2d, HostMemory::Pageable, alloc) => {
            let src = vec![FILL; len];
            let reused = DeviceBuf::new(len)?;
            timed(&mut || {
                let fresh = fresh_device(alloc, len)?;
                let dst = fresh.as_ref().unwrap_or(&reused);
                // SAFETY: `dst` holds `len` bytes; the call returns once `src` has been read.
                cuda("cuMemcpyHtoD", unsafe { result::memcpy_htod_sync(dst.ptr, &src) })?;
                if fresh.is_some() {
                    // Small pageable copies may still be in flight; wait before freeing.
                    ctx_sync()?;
                }
                Ok(None)
            })
        }
        (CopyDirection::H2d, HostMemory::Pinned, alloc) => {
            let src = PinnedBuf::filled(len, FILL)?;
            let reused = DeviceBuf::new(len)?;
            timed(&mut || {
                let fresh = fresh_device(alloc, len)?;
                let dst = fresh.as_ref().unwrap_or(&reused);
                // SAFETY: both buffers hold `len` bytes; a fresh `dst` is kept until the
                // iteration has synchronized the stream.
                unsafe { cuda_raw::htod_async(dst.ptr, src.ptr, src.len, s) }?;
                Ok(fresh.map(|b| Box::new(b) as Box<dyn std::any::Any>))
            })
        }
        (CopyDirection::D2h, HostMemory::Pageable, Allocation::Reuse) => {
            let src = DeviceBuf::filled(len, FILL)?;
            let mut dst = vec![0u8; len];
            timed(&mut || {
                // SAFETY: `src` holds `len` bytes; the call returns once `dst` is written.
                cuda("cuMemcpyDtoH", unsafe { result::memcpy_dtoh_sync(&mut dst, src.ptr) })?;
                Ok(None)
            })
        }
        (CopyDirection::D2h, HostMemory::Pageable, Allocation::PerCopy) => {
            let src = DeviceBuf::filled(len, FILL)?;
            timed(&mut || {
                let mut dst: Vec<u8> = Vec::with_capacity(len);
                // SAFETY: the spare capacity holds `len` writable bytes and `src` holds `len`
                // bytes; the synchronous copy initializes all of them before `set_len`.
                unsafe {
                    cuda(
                        "cuMemcpyDtoH",
                        sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src.ptr, len).result(),
                    )?;
                    dst.set_len(len);
                }
                drop(std::hint::black_box(dst));
                Ok(None)
            })
        }
        (CopyDirection::D2h, HostMemory::Pinned, Allocation::Reuse) => {
            let src = DeviceBuf::filled(len, FILL)?;
            let dst = PinnedBuf::new(len)?;
            timed(&mut || {
                // SAFETY: both buffers hold `len` bytes and live until the sample's sync.
                unsafe { cuda_raw::dtoh_async(dst.ptr, src.ptr, dst.len, s) }?;
                Ok(None)
            })
        }
        (CopyDirection::D2h, HostMemory::Pinned, Allocation::PerCopy) => {
            let src = DeviceBuf::filled(len, FILL)?;
            timed(&mut || {
                let dst = PinnedBuf::new(len)?;
                // SAFETY: both buffers hold `len` bytes; `dst` is kept until the iteration
                // has synchronized the stream.
                unsafe { cuda_raw::dtoh_async(dst.ptr, src.ptr, dst.len, s) }?;
                Ok(Some(Box::new(dst) as Box<dyn std::any::Any>))
            })
        }
    }
}

/// Sends `sent` to the device and back, with `mode`'s own copy in its direction (pageable or
/// pinned host memory; a plain synchronous copy the other way), and returns what came back.
/// Outside every clock.
fn round_trip(len: usize, mode: Mode, sent: &[u8], stream: &Stream) -> Result<Vec<u8>, TransferError> {
    let s = stream.0;
    let device = DeviceBuf::new(len)?;
    let pinned = mode.host_memory == HostMemory::Pinned;
    if mode.direction == CopyDirection::H2d && pinned {
        let src = PinnedBuf::new(len)?;
        // SAFETY: `src` owns `len` writable bytes and `sent` holds `len` bytes; they do not overlap.
        unsafe { ptr::copy_nonoverlapping(sent.as_ptr(), src.ptr, len) };
        // SAFETY: both buffers hold `len` bytes and live until the stream is synchronized.
        unsafe { cuda_raw::htod_async(device.ptr, src.ptr, src.len, s) }?;
        stream.sync()?;
    } else {
        // SAFETY: `device` holds `len` bytes; the call returns once `sent` has been read.
        cuda("cuMemcpyHtoD", unsafe { result::memcpy_htod_sync(device.ptr, sent) })?;
    }
    let mut back = vec![0u8; len];
    if mode.direction == CopyDirection::D2h && pinned {
        let dst = PinnedBuf::new(len)?;
        // SAFETY: both buffers hold `len` bytes and live until the stream is synchronized.
        unsafe { cuda_raw::dtoh_async(dst.ptr, device.ptr, dst.len, s) }?;
        stream.sync()?;
        // SAFETY: the synchronized copy wrote all `len` bytes of `dst`; `back` holds `len`.
        unsafe { ptr::copy_nonoverlapping(dst.ptr, back.as_mut_ptr(), len) };
    } else {
        // SAFETY: `device` holds `len` bytes; the call returns once `back` is written.
        cuda("cuMemcpyDtoH", unsafe {
            result::memcpy_dtoh_sync(&mut back, device.ptr)
        })?;
    }
    ctx_sync()?;
    Ok(back)
}

/// A new device buffer for `per_copy`, nothing for `reuse`.
fn fresh_device(alloc: Allocation, len: usize) -> Result<Option<DeviceBuf>, TransferError> {
    match alloc {
        Allocation::PerCopy => Ok(Some(DeviceBuf::new(len)?)),
        Allocation::Reuse => Ok(None),
    }
}

fn cuda<T>(action: &'static str, r: Result<T, DriverError>) -> Result<T, TransferError> {
    Ok(call(action, r)?)
}

/// Waits for all work in the current context, on every stream.
fn ctx_sync() -> Result<(), TransferError> {
    Ok(cuda_raw::ctx_sync()?)
}

/// Device 0 with its primary context bound to this thread.
struct Gpu {
    _device: Arc<CudaDevice>,
}

impl Gpu {
    fn open() -> Result<Self, TransferError> {
        // The libraries load at run time; cudarc's `CudaDevice::new` panics when the driver
        // cannot initialise or has no device. The probe checks all of that first.
        crate::cuda_dl::probe().map_err(|e| TransferError::Cuda {
            action: "loading CUDA",
            message: e.with_hint(),
        })?;
        let device = cuda("opening device 0", CudaDevice::new(0))?;
        cuda("binding the context", device.bind_to_thread())?;
        Ok(Gpu { _device: device })
    }
}

impl From<CudaFailure> for TransferError {
    fn from(e: CudaFailure) -> Self {
        TransferError::Cuda {
            action: e.action,
            message: e.message,
        }
    }
}
