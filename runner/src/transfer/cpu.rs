//! The `transfer` stage on `device = "cpu"` (checked plan -> host memcpy timings -> recorder).
//!
//! The "device" side is a second host buffer, so the modes measure what their CUDA
//! counterparts cost on the host alone: allocating a fresh destination per copy against
//! reusing a warm one, and page-locked (`mlock`) against ordinary host memory.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use super::error::TransferError;
use super::measure::{cache_warm_note, host_buffer, len_of, prepare, record_mode, step_of, References};
use super::timing::{Sampler, Warmed};
use crate::kinds::transfer::{Allocation, CopyDirection, HostMemory, Mode, Plan, SyncMode};
use crate::metrics::Recorder;
use crate::stats::median;

/// Fill byte for source buffers: non-zero, so allocation cannot hand back shared zero pages.
const FILL: u8 = 0xA5;

/// What one (size, mode) measurement produced.
#[derive(Debug, Clone)]
pub struct CopySamples {
    /// Seconds per copy, one value per recorded sample.
    pub seconds: Vec<f64>,
    /// Whether every `pinned` buffer was really page-locked (`true` for `pageable`).
    pub page_locked: bool,
}

pub(crate) fn run(plan: &Plan, rec: &mut Recorder, cancel: &AtomicBool) -> Result<(), TransferError> {
    let sampler = Sampler::new(plan.iterations, plan.warmup);
    let mut warmed = Warmed::default();
    let refs = References::measure(plan, rec, |size, mode| {
        let sampler = warmed.sampler(sampler, size);
        Ok(median(&copy_samples(size, mode, sampler, false, cancel)?.seconds))
    })?;
    cache_warm_note(plan, rec);
    let any_pinned = plan.modes.iter().any(|m| m.host_memory == HostMemory::Pinned);
    for &size in &plan.sizes {
        let step = step_of(size);
        let mut all_locked = true;
        for mode in &plan.modes {
            let samples = copy_samples(size, *mode, warmed.sampler(sampler, size), plan.prepare_next, cancel)?;
            all_locked &= samples.page_locked;
            record_mode(rec, mode, size, median(&samples.seconds), &refs);
        }
        if any_pinned {
            rec.record_step("pinned_locked", step, f64::from(u8::from(all_locked)), "count");
        }
    }
    // The "device" is a second host buffer here: the round trip copies the pattern into it and
    // back, which checks the bookkeeping the CUDA path shares.
    super::measure::verify_round_trips(plan, rec, |_len, _mode, sent| copy_into_new(&copy_into_new(sent)?))
}

/// Samples of seconds per copy for one size and mode on the host, `warmup` samples first.
/// This is the per-trial measurement `run_transfer` summarizes by its median.
pub fn cpu_copy_samples(
    size: u64,
    mode: Mode,
    iterations: u32,
    warmup: u32,
    cancel: &AtomicBool,
) -> Result<CopySamples, TransferError> {
    if size == 0 || iterations == 0 {
        return Err(TransferError::Params(crate::params::ParamError::new(
            if size == 0 { "sizes" } else { "iterations" },
            "must be at least 1",
        )));
    }
    copy_samples(size, mode, Sampler::new(iterations, warmup), false, cancel)
}

fn copy_samples(
    size: u64,
    mode: Mode,
    sampler: Sampler,
    prepare_next: bool,
    cancel: &AtomicBool,
) -> Result<CopySamples, TransferError> {
    let pinned = mode.host_memory == HostMemory::Pinned;
    // Whether every pinned buffer was locked; the per-copy d2h destinations update it.
    let locked = AtomicBool::new(true);
    let mut next = if prepare_next { Some(filled(size)?) } else { None };
    let next = next.as_deref_mut();
    let run = |copy: &mut (dyn FnMut() -> Result<(), TransferError> + Send), next: Option<&mut [u8]>| {
        batch_loop(sampler, cancel, mode.sync, next, copy)
    };
    let seconds = match (mode.direction, mode.allocation) {
        // Host buffer (of the mode's kind) -> "device" buffer.
        (CopyDirection::H2d, Allocation::Reuse) => {
            let src = HostBuf::filled(size, pinned)?;
            locked.store(src.locked || !pinned, Ordering::Relaxed);
            let mut dst = filled(size)?;
            run(
                &mut || {
                    dst.copy_from_slice(black_box(src.as_slice()));
                    black_box(&mut dst);
                    Ok(())
                },
                next,
            )?
        }
        (CopyDirection::H2d, Allocation::PerCopy) => {
            let src = HostBuf::filled(size, pinned)?;
            locked.store(src.locked || !pinned, Ordering::Relaxed);
            run(
                &mut || {
                    let dst = copy_into_new(black_box(src.as_slice()))?;
                    drop(black_box(dst));
                    Ok(())
                },
                next,
            )?
        }
        // "Device" buffer -> host buffer of the mode's kind.
        (CopyDirection::D2h, Allocation::Reuse) => {
            let src = filled(size)?;
            let mut dst = HostBuf::filled(size, pinned)?;
            locked.store(dst.locked || !pinned, Ordering::Relaxed);
            run(
                &mut || {
                    dst.as_mut_slice().copy_from_slice(black_box(&src));
                    black_box(dst.as_mut_slice());
                    Ok(())
                },
                next,
            )?
        }
        (CopyDirection::D2h, Allocation::PerCopy) => {
            let src = filled(size)?;
            run(
                &mut || {
                    let dst = HostBuf::copy_of(black_box(&src), pinned)?;
                    if pinned && !dst.locked {
                        locked.store(false, Ordering::Relaxed);
                    }
                    drop(black_box(dst));
                    Ok(())
                },
                next,
            )?
        }
    };
    Ok(CopySamples {
        seconds,
        page_locked: locked.load(Ordering::Relaxed),
    })
}

/// Times iterations of one copy, plus the next batch's preparation on the host when `next` is
/// given. `blocking`: copy, then prepare. `non_blocking`: hand the copy to a copy-engine
/// thread (the stand-in for a GPU's copy engine), prepare meanwhile, then wait for the copy
/// before the iteration ends, as a loop must before it uses the batch.
fn batch_loop(
    sampler: Sampler,
    cancel: &AtomicBool,
    sync: SyncMode,
    mut next: Option<&mut [u8]>,
    copy: &mut (dyn FnMut() -> Result<(), TransferError> + Send),
) -> Result<Vec<f64>, TransferError> {
    match sync {
        SyncMode::Blocking => sampler.wall(cancel, |k| {
            for _ in 0..k {
                copy()?;
                if let Some(buf) = next.as_deref_mut() {
                    prepare(buf);
                }
            }
            Ok(())
        }),
        SyncMode::NonBlocking => std::thread::scope(|scope| {
            let (issue, jobs) = mpsc::channel::<()>();
            let (done, finished) = mpsc::channel::<Result<(), TransferError>>();
            scope.spawn(move || {
                while jobs.recv().is_ok() {
                    if done.send(copy()).is_err() {
                        break;
                    }
                }
            });
            // `issue` is dropped when this closure returns, which ends the engine's loop
            // before the scope joins it.
            sampler.wall(cancel, |k| {
                for _ in 0..k {
                    issue.send(()).map_err(|_| TransferError::EngineStopped)?;
                    if let Some(buf) = next.as_deref_mut() {
                        prepare(buf);
                    }
                    finished.recv().map_err(|_| TransferError::EngineStopped)??;
                }
                Ok(())
            })
        }),
    }
}

/// An ordinary buffer of `size` bytes, written once so its pages exist before timing.
fn filled(size: u64) -> Result<Vec<u8>, TransferError> {
    let len = len_of(size)?;
    let mut v = host_buffer(len)?;
    v.resize(len, FILL);
    Ok(v)
}

/// A fresh allocation holding a copy of `src`: what `to_vec()` does, with a recoverable error.
fn copy_into_new(src: &[u8]) -> Result<Vec<u8>, TransferError> {
    let mut v = host_buffer(src.len())?;
    v.extend_from_slice(src);
    Ok(v)
}

/// A host buffer that is page-locked when `pinned` and the system allows it; unlocked on drop.
struct HostBuf {
    data: Vec<u8>,
    locked: bool,
}

impl HostBuf {
    fn filled(size: u64, pinned: bool) -> Result<Self, TransferError> {
        let mut buf = HostBuf {
            data: filled(size)?,
            locked: false,
        };
        if pinned {
            buf.locked = lock(&buf.data);
        }
        Ok(buf)
    }

    /// A new buffer holding a copy of `src`; when `pinned`, locked before the copy, as a
    /// page-locked staging buffer would be.
    fn copy_of(src: &[u8], pinned: bool) -> Result<Self, TransferError> {
        let mut data = host_buffer(src.len())?;
        let locked = pinned && lock_spare(&mut data, src.len());
        data.extend_from_slice(src);
        Ok(HostBuf { data, locked })
    }

    fn as_slice(&self) -> &[u8] {
        &self.data
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.data
    }
}

impl Drop for HostBuf {
    fn drop(&mut self) {
        if self.locked {
            // SAFETY: the range is the one `lock`/`lock_spare` locked (the buffer never grows
            // after locking, so `len` is that range), still owned by `data`.
            unsafe { libc::munlock(self.data.as_ptr().cast(), self.data.len()) };
        }
    }
}

/// Locks the pages of `data`; `false` when the system refuses (e.g. `RLIMIT_MEMLOCK`), which
/// leaves the buffer pageable rather than failing the measurement.
fn lock(data: &[u8]) -> bool {
    // SAFETY: mlock only changes paging for a range this process owns; it does not touch
    // the bytes.
    data.is_empty() || unsafe { libc::mlock(data.as_ptr().cast(), data.len()) } == 0
}

/// Locks the `len` bytes of capacity `data` has reserved but not yet initialized.
fn lock_spare(data: &mut Vec<u8>, len: usize) -> bool {
    let spare = data.spare_capacity_mut();
    debug_assert!(spare.len() >= len);
    // SAFETY: as in `lock`; the spare capacity is allocated memory owned by `data`, and
    // mlock neither reads nor writes it.
    len == 0 || unsafe { libc::mlock(spare.as_ptr().cast(), len) } == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_buffers_hold_the_data_locked_or_not() {
        for pinned in [false, true] {
            let buf = HostBuf::filled(8192, pinned).unwrap();
            assert!(buf.as_slice().iter().all(|&b| b == FILL));
            assert!(!pinned || buf.locked || !lock(&[1u8; 16]));
            let src: Vec<u8> = (0..=255).collect();
            let copy = HostBuf::copy_of(&src, pinned).unwrap();
            assert_eq!(copy.as_slice(), &src[..]);
        }
    }

    #[test]
    fn absurd_sizes_are_errors_not_aborts() {
        let err = filled(u64::MAX / 2).unwrap_err();
        assert!(
            matches!(err, TransferError::HostAlloc { .. } | TransferError::TooLarge { .. }),
            "{err}"
        );
    }
}
