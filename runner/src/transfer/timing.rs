//! Sampling for the `transfer` stage (copy routine -> per-copy seconds samples -> median).
//!
//! A single 4 KiB copy takes well under a microsecond on a CPU, close to the clock's own
//! overhead, so each sample times a batch of copies long enough to read reliably (at least
//! 1 ms) and divides, after a warm-up of at least 100 ms. The samples of one (size, mode)
//! stop after 2 s once three are taken, so a slow mode bounds its own cost. For comparison: NVIDIA's
//! bandwidthTest times 100 copies of 32 MB per figure, nvbench runs at least 0.5 s per
//! measurement (see docs/gpu-methodology.md).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::error::TransferError;

/// A sample lasts at least this long (batches of back-to-back copies): long enough that the
/// clock's resolution and the per-batch overhead stay below 0.1% of it.
pub const MIN_SAMPLE: Duration = Duration::from_millis(1);
/// The warm-up lasts at least this long, whatever `warmup` says: time for a PCIe link to leave
/// its power-saving state and for the copy path's caches and pools to fill.
pub const MIN_WARMUP: Duration = Duration::from_millis(100);
/// Upper bound on copies per sample, so a mis-estimate cannot make a sample run away.
const MAX_BATCH: u64 = 100_000;
/// The samples of one (size, mode) stop once they have taken this long, after at least
/// [`MIN_SAMPLES`]: a mode that allocates 256 MiB of pinned memory per copy takes a tenth of a
/// second per sample on a GPU machine, and would otherwise dominate the run.
pub const MAX_SAMPLING: Duration = Duration::from_secs(2);
/// Samples always taken (or `iterations`, when fewer), however long they last.
pub const MIN_SAMPLES: u32 = 3;

/// How many samples to take for one (size, mode).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sampler {
    pub iterations: u32,
    /// Warm-up batches at least (the warm-up also lasts at least `min_warmup`).
    pub warmup: u32,
    /// The least time the warm-up lasts: [`MIN_WARMUP`] for the first measurement of a size,
    /// none for the later ones ([`Warmed`]).
    pub min_warmup: Duration,
}

/// The sizes a stage run has spent its minimum warm-up on. The link and the copy path are
/// warm after the first mode measured at a size; the other modes at that size only run their
/// `warmup` batches (at least one, which sizes their samples from warm copies). A small copy
/// then costs its stage milliseconds per mode, not [`MIN_WARMUP`] each.
#[derive(Debug, Default)]
pub(crate) struct Warmed(std::collections::HashSet<u64>);

impl Warmed {
    /// `sampler` for the next measurement at `size`.
    pub fn sampler(&mut self, sampler: Sampler, size: u64) -> Sampler {
        let first = self.0.insert(size);
        Sampler {
            min_warmup: if first { MIN_WARMUP } else { Duration::ZERO },
            ..sampler
        }
    }
}

impl Sampler {
    /// `iterations` samples after `warmup` batches and [`MIN_WARMUP`].
    pub fn new(iterations: u32, warmup: u32) -> Sampler {
        Sampler {
            iterations,
            warmup,
            min_warmup: MIN_WARMUP,
        }
    }

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
    /// seconds they took by its own clock.
    ///
    /// The copies per sample are sized from warm copies, never from the first one alone: the
    /// first copy pays for first-touch page faults and lazy setup, so it only gives the warm-up
    /// its first batch size. Every warm-up batch re-estimates the size from its own time, and
    /// the warm-up goes on until it has run `warmup` batches and [`MIN_WARMUP`]. The samples
    /// then all use the last estimate, so each lasts about [`MIN_SAMPLE`] or more.
    pub fn timed(
        &self,
        cancel: &AtomicBool,
        mut batch: impl FnMut(u64) -> Result<f64, TransferError>,
    ) -> Result<Vec<f64>, TransferError> {
        check_cancel(cancel)?;
        let mut k = copies_for(batch(1)?);
        let (mut batches, mut warm) = (0u32, 0.0);
        while batches < self.warmup.max(1) || warm < self.min_warmup.as_secs_f64() {
            check_cancel(cancel)?;
            let seconds = batch(k)?;
            warm += seconds;
            batches += 1;
            k = copies_for(seconds / k as f64);
        }
        let mut samples = Vec::with_capacity(self.iterations as usize);
        let mut spent = 0.0;
        for i in 0..self.iterations {
            if i >= MIN_SAMPLES && spent >= MAX_SAMPLING.as_secs_f64() {
                break;
            }
            check_cancel(cancel)?;
            let seconds = batch(k)?;
            spent += seconds;
            samples.push(seconds / k as f64);
        }
        Ok(samples)
    }
}

/// Copies per sample for copies of `per_copy` seconds each.
fn copies_for(per_copy: f64) -> u64 {
    ((MIN_SAMPLE.as_secs_f64() / per_copy.max(1e-9)).ceil() as u64).clamp(1, MAX_BATCH)
}

pub(crate) fn check_cancel(cancel: &AtomicBool) -> Result<(), TransferError> {
    if cancel.load(Ordering::Relaxed) {
        Err(TransferError::Cancelled)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake clock: the first copy takes `cold` seconds, every later one `warm`. Returns the
    /// samples and the batch sizes asked for, in order.
    fn run(sampler: Sampler, cold: f64, warm: f64) -> (Vec<f64>, Vec<(u64, f64)>) {
        let mut calls = Vec::new();
        let samples = sampler
            .timed(&AtomicBool::new(false), |k| {
                let seconds = if calls.is_empty() { cold } else { k as f64 * warm };
                calls.push((k, seconds));
                Ok(seconds)
            })
            .unwrap();
        (samples, calls)
    }

    #[test]
    fn slow_copies_stop_sampling_after_two_seconds_but_not_before_three_samples() {
        let sampler = Sampler::new(10, 2);
        // 0.9 s per copy (a 256 MiB pinned allocation per copy on a slow machine): three
        // samples, then the 2 s budget is spent.
        let (samples, _) = run(sampler, 0.9, 0.9);
        assert_eq!(samples.len(), 3);
        // Fast copies take every sample asked for.
        let (samples, _) = run(sampler, 1e-3, 1e-6);
        assert_eq!(samples.len(), 10);
    }

    #[test]
    fn samples_last_a_millisecond_sized_from_warm_copies_not_the_cold_first_one() {
        // A 50 ms first copy (page faults, lazy setup) and 2 us copies afterwards: sized from
        // the first copy alone a sample would be one copy, 2 us long.
        let sampler = Sampler::new(5, 0);
        let (samples, calls) = run(sampler, 0.05, 2e-6);
        let timed = &calls[calls.len() - 5..];
        for &(k, seconds) in timed {
            // 1 ms / 2 us, give or take the rounding of the division.
            assert!((500..=501).contains(&k), "{k} copies per sample");
            assert!(seconds >= MIN_SAMPLE.as_secs_f64() * 0.999, "{seconds}");
        }
        assert_eq!(samples.len(), 5);
        assert!(samples.iter().all(|s| (s - 2e-6).abs() < 1e-12), "{samples:?}");
    }

    #[test]
    fn the_minimum_warm_up_is_spent_once_per_size() {
        let mut warmed = Warmed::default();
        let base = Sampler::new(2, 3);
        let first = warmed.sampler(base, 4096);
        let again = warmed.sampler(base, 4096);
        let other = warmed.sampler(base, 1 << 20);
        assert_eq!((first.min_warmup, other.min_warmup), (MIN_WARMUP, MIN_WARMUP));
        assert_eq!(again.min_warmup, Duration::ZERO);
        // Warm copies of 10 us: the first mode warms for 100 ms, the next for its 3 batches.
        let (_, calls) = run(first, 1e-5, 1e-5);
        let spent: f64 = calls[1..calls.len() - 2].iter().map(|c| c.1).sum();
        assert!(spent >= MIN_WARMUP.as_secs_f64(), "{spent} s");
        let (_, calls) = run(again, 1e-5, 1e-5);
        let warm = &calls[1..calls.len() - 2];
        assert_eq!(warm.len(), 3, "{warm:?}");
        assert!(warm.iter().map(|c| c.1).sum::<f64>() < 0.01);
        // With no batches asked for, one still sizes the samples from warm copies.
        let (_, calls) = run(warmed.sampler(Sampler::new(2, 0), 4096), 0.05, 2e-6);
        assert_eq!(calls.len(), 1 + 1 + 2, "{calls:?}");
        assert!((500..=501).contains(&calls[2].0), "{calls:?}");
    }

    #[test]
    fn the_warm_up_lasts_100_ms_and_at_least_the_batches_asked_for() {
        for warmup in [0, 3, 400] {
            let sampler = Sampler::new(2, warmup);
            let (_, calls) = run(sampler, 1e-3, 1e-5);
            // The sizing copy, the warm-up batches, the two samples.
            let warm = &calls[1..calls.len() - 2];
            let spent: f64 = warm.iter().map(|c| c.1).sum();
            assert!(spent >= MIN_WARMUP.as_secs_f64(), "warmup {warmup}: {spent} s");
            assert!(warm.len() >= warmup as usize, "warmup {warmup}: {} batches", warm.len());
            // Not much more than asked: it stops as soon as both hold.
            let without_last = spent - warm.last().unwrap().1;
            assert!(
                warm.len() == warmup as usize || without_last < MIN_WARMUP.as_secs_f64(),
                "warmup {warmup}: {} batches, {spent} s",
                warm.len()
            );
        }
    }

    #[test]
    fn slow_copies_take_one_per_sample_and_a_cancel_stops_the_warm_up() {
        let sampler = Sampler::new(3, 1);
        // 30 ms copies (256 MiB at about 9 GB/s): one per sample, four to warm up.
        let (samples, calls) = run(sampler, 0.03, 0.03);
        assert!(calls.iter().all(|c| c.0 == 1));
        assert_eq!(calls.len(), 1 + 4 + 3);
        assert_eq!(samples.len(), 3);
        let cancel = AtomicBool::new(true);
        let err = sampler.timed(&cancel, |_| Ok(1e-3)).unwrap_err();
        assert!(matches!(err, TransferError::Cancelled));
    }
}
