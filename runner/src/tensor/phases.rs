//! Where the training loop's time goes (`phase_timing`): prep, host-to-device, compute and
//! readback, measured without ever waiting for the device.
//!
//! Each phase boundary records a stamp and moves on. On the CPU a stamp is the host clock
//! (nothing is queued there, so the host clock is the work's clock). On CUDA it is an event
//! recorded on the stream the training runs on: the phases are then intervals of the device's
//! timeline, between the points where the host issued each phase's end. Stamps are turned into
//! durations only once they are complete: as the loop goes, from stamps the device has already
//! passed (a query that never waits), and at the end of the epoch, after its one
//! synchronization, for the rest. So turning `phase_timing` on adds no synchronization and
//! changes neither what the step computes nor when the host waits.

use super::TrainError;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Prep,
    HostToDevice,
    Compute,
    Readback,
}

impl Phase {
    pub const ALL: [Phase; 4] = [Phase::Prep, Phase::HostToDevice, Phase::Compute, Phase::Readback];

    pub fn metric(self) -> &'static str {
        match self {
            Phase::Prep => "prep_seconds",
            Phase::HostToDevice => "h2d_seconds",
            Phase::Compute => "compute_seconds",
            Phase::Readback => "readback_seconds",
        }
    }
}

/// A source of timestamps on the clock the device's work runs on.
pub trait Stamps {
    type Stamp;

    /// Records a stamp at the current point of the work; never waits.
    fn stamp(&mut self) -> Result<Self::Stamp, TrainError>;

    /// Whether the work before `stamp` is done, so it can be read; never waits.
    fn ready(&self, stamp: &Self::Stamp) -> Result<bool, TrainError>;

    /// Waits until the work before `stamp` is done.
    fn wait(&self, stamp: &Self::Stamp) -> Result<(), TrainError>;

    /// The time between two ready stamps, `start` recorded first.
    fn between(&self, start: &Self::Stamp, end: &Self::Stamp) -> Result<Duration, TrainError>;

    /// Takes back a stamp that has been read, for reuse.
    fn recycle(&mut self, _stamp: Self::Stamp) {}
}

/// The host clock: the CPU device's work is the host's own.
#[derive(Default)]
pub struct HostStamps;

impl Stamps for HostStamps {
    type Stamp = Instant;

    fn stamp(&mut self) -> Result<Instant, TrainError> {
        Ok(Instant::now())
    }

    fn ready(&self, _: &Instant) -> Result<bool, TrainError> {
        Ok(true)
    }

    fn wait(&self, _: &Instant) -> Result<(), TrainError> {
        Ok(())
    }

    fn between(&self, start: &Instant, end: &Instant) -> Result<Duration, TrainError> {
        Ok(end.saturating_duration_since(*start))
    }
}

/// What the training loop needs from a device beyond dfdx's traits.
pub trait LoopDevice {
    type Stamps: Stamps;

    /// The stamps that time the loop's phases without synchronizing.
    fn phase_stamps(&self) -> Result<Self::Stamps, TrainError>;

    /// Hands back memory the device keeps for reuse (CUDA: dfdx's tensor cache), called after
    /// each epoch's untimed evaluation so the cache holds one epoch's sizes, not every size
    /// the run has seen.
    fn release_cached(&self) -> Result<(), TrainError> {
        Ok(())
    }

    /// Whether the loop's work goes through the CUDA driver, whose calls that wait for the
    /// device are counted (`cuda_dl::CallCounts`): the training then records them.
    fn counts_driver_calls(&self) -> bool {
        false
    }

    /// Seconds of warm-up steps before the first epoch when `warmup_seconds` is not set.
    fn default_warm_up_seconds(&self) -> f64 {
        0.0
    }
}

impl LoopDevice for dfdx::tensor::Cpu {
    type Stamps = HostStamps;

    fn phase_stamps(&self) -> Result<HostStamps, TrainError> {
        Ok(HostStamps)
    }
}

/// Unread stamps beyond this many are waited for, oldest first: a bound on memory (and on
/// CUDA events) when the host runs this far ahead of the device, which a launch queue does not
/// allow in practice.
pub const MAX_PENDING: usize = 4096;

/// The phases' time so far: stamps at each boundary, read when complete.
pub struct PhaseClock<S: Stamps> {
    stamps: S,
    enabled: bool,
    /// The last stamp read: where the next phase started.
    open: Option<S::Stamp>,
    /// Stamps not read yet, each closing the phase it is labelled with.
    pending: VecDeque<(Phase, S::Stamp)>,
    pub spent: [Duration; 4],
}

impl<S: Stamps> PhaseClock<S> {
    pub fn new(stamps: S, enabled: bool) -> Self {
        Self {
            stamps,
            enabled,
            open: None,
            pending: VecDeque::new(),
            spent: [Duration::ZERO; 4],
        }
    }

    /// Starts an epoch's phases here (after the epoch's opening synchronization).
    pub fn restart(&mut self) -> Result<(), TrainError> {
        if !self.enabled {
            return Ok(());
        }
        self.settle()?;
        if let Some(old) = self.open.take() {
            self.stamps.recycle(old);
        }
        self.open = Some(self.stamps.stamp()?);
        Ok(())
    }

    /// Closes `phase` here: records a stamp, reads those already complete, never waits (unless
    /// more than [`MAX_PENDING`] are unread).
    pub fn lap(&mut self, phase: Phase) -> Result<(), TrainError> {
        if !self.enabled {
            return Ok(());
        }
        let stamp = self.stamps.stamp()?;
        self.pending.push_back((phase, stamp));
        self.drain(false)
    }

    /// Reads every pending stamp; call after the device has finished the epoch's work.
    pub fn settle(&mut self) -> Result<(), TrainError> {
        self.drain(true)
    }

    /// Stamps recorded but not read yet.
    #[cfg(test)]
    pub fn unread(&self) -> usize {
        self.pending.len()
    }

    fn drain(&mut self, all: bool) -> Result<(), TrainError> {
        while let Some((_, next)) = self.pending.front() {
            if !self.stamps.ready(next)? {
                if !all && self.pending.len() <= MAX_PENDING {
                    break;
                }
                self.stamps.wait(next)?;
            }
            let (phase, end) = self.pending.pop_front().expect("checked non-empty above");
            let start = self
                .open
                .take()
                .ok_or_else(|| TrainError::Internal("a phase closed before the clock started".into()))?;
            self.spent[phase as usize] += self.stamps.between(&start, &end)?;
            self.stamps.recycle(start);
            self.open = Some(end);
        }
        Ok(())
    }
}
