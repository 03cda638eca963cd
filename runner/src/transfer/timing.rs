//! Sampling for the `transfer` stage (copy routine -> per-copy seconds samples -> median).
//!
//! A single 4 KiB copy takes well under a microsecond on a CPU, close to the clock's own
//! overhead, so each sample times a batch of copies long enough to read reliably and divides.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::TransferError;

/// A sample lasts at least this long (batches of back-to-back copies).
pub const MIN_SAMPLE: Duration = Duration::from_micros(100);
/// Upper bound on copies per sample, so a mis-estimate cannot make a sample run away.
const MAX_BATCH: u64 = 100_000;

/// How many samples to take for one (size, mode).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sampler {
    pub iterations: u32,
    pub warmup: u32,
}

impl Sampler {
    /// Samples of seconds per copy, timed by the host clock around `batch(k)`, which must
    /// perform `k` copies and return only once they have completed.
    pub fn wall(
        &self,
        cancel: &AtomicBool,
        mut batch: impl FnMut(u64) -> Result<(), TransferError>,
    ) -> Result<Vec<f64>, TransferError> {
        self.timed(cancel, |k| {
            let start = Instant::now();
            batch(k)?;
            Ok(start.elapsed().as_secs_f64())
        })
    }

    /// Samples of seconds per copy, where `batch(k)` performs `k` copies and returns the
    /// seconds they took by its own clock (CUDA events).
    pub fn timed(
        &self,
        cancel: &AtomicBool,
        mut batch: impl FnMut(u64) -> Result<f64, TransferError>,
    ) -> Result<Vec<f64>, TransferError> {
        check_cancel(cancel)?;
        // The first copy also pays for first-touch page faults and lazy setup; it only sizes
        // the batch.
        let first = batch(1)?.max(1e-9);
        let k = ((MIN_SAMPLE.as_secs_f64() / first).ceil() as u64).clamp(1, MAX_BATCH);
        for _ in 0..self.warmup {
            check_cancel(cancel)?;
            batch(k)?;
        }
        let mut samples = Vec::with_capacity(self.iterations as usize);
        for _ in 0..self.iterations {
            check_cancel(cancel)?;
            samples.push(batch(k)? / k as f64);
        }
        Ok(samples)
    }
}

pub(crate) fn check_cancel(cancel: &AtomicBool) -> Result<(), TransferError> {
    if cancel.load(Ordering::Relaxed) {
        Err(TransferError::Cancelled)
    } else {
        Ok(())
    }
}
