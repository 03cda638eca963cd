//! The phase clock never waits for the device: stamps are read only once complete, at the
//! latest when the epoch has synchronized; and on the CPU the phases it records are parts of
//! the epoch's time.

use super::*;
use crate::tensor::phases::{Phase, PhaseClock, Stamps, MAX_PENDING};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// A device timeline under the test's control: a stamp is a time in milliseconds, complete once
/// the device has reached it; `wait` jumps the device to it and counts.
#[derive(Clone, Default)]
struct FakeDevice {
    /// Where the host is: the next stamp's time.
    host_ms: Rc<Cell<u64>>,
    /// Where the device is: stamps at or before this are complete.
    done_ms: Rc<Cell<u64>>,
    waits: Rc<Cell<usize>>,
    reads: Rc<Cell<usize>>,
}

impl Stamps for FakeDevice {
    type Stamp = u64;

    fn stamp(&mut self) -> Result<u64, TrainError> {
        Ok(self.host_ms.get())
    }

    fn ready(&self, stamp: &u64) -> Result<bool, TrainError> {
        Ok(*stamp <= self.done_ms.get())
    }

    fn wait(&self, stamp: &u64) -> Result<(), TrainError> {
        self.waits.set(self.waits.get() + 1);
        self.done_ms.set(self.done_ms.get().max(*stamp));
        Ok(())
    }

    fn between(&self, start: &u64, end: &u64) -> Result<Duration, TrainError> {
        assert!(
            *end <= self.done_ms.get(),
            "read a stamp the device has not reached: {end} > {}",
            self.done_ms.get()
        );
        self.reads.set(self.reads.get() + 1);
        Ok(Duration::from_millis(end - start))
    }
}

#[test]
fn laps_read_only_complete_stamps_and_never_wait() {
    let device = FakeDevice::default();
    let mut clock = PhaseClock::new(device.clone(), true);
    clock.restart().unwrap();
    // Three steps of 1 + 2 + 3 + 4 ms, issued while the device has done nothing.
    for _ in 0..3 {
        for (phase, ms) in Phase::ALL.iter().zip([1, 2, 3, 4]) {
            device.host_ms.set(device.host_ms.get() + ms);
            clock.lap(*phase).unwrap();
        }
    }
    assert_eq!(clock.unread(), 12);
    assert_eq!(device.reads.get(), 0);
    // The device catches up with the first step: its four stamps read at the next lap.
    device.done_ms.set(10);
    device.host_ms.set(device.host_ms.get() + 1);
    clock.lap(Phase::Prep).unwrap();
    assert_eq!(clock.unread(), 9);
    assert_eq!(device.reads.get(), 4);
    // The epoch ends: the loop has synchronized, so everything is complete.
    device.done_ms.set(device.host_ms.get());
    clock.settle().unwrap();
    assert_eq!(clock.unread(), 0);
    assert_eq!(device.waits.get(), 0, "the clock waited for the device");
    let ms = clock.spent.map(|d| d.as_millis());
    assert_eq!(ms, [3 + 1, 6, 9, 12]);
}

#[test]
fn a_host_far_ahead_waits_only_beyond_the_bound() {
    let device = FakeDevice::default();
    let mut clock = PhaseClock::new(device.clone(), true);
    clock.restart().unwrap();
    for _ in 0..MAX_PENDING + 3 {
        device.host_ms.set(device.host_ms.get() + 1);
        clock.lap(Phase::Compute).unwrap();
    }
    assert_eq!(device.waits.get(), 3);
    assert_eq!(clock.unread(), MAX_PENDING);
    device.done_ms.set(device.host_ms.get());
    clock.settle().unwrap();
    assert_eq!(
        clock.spent[Phase::Compute as usize],
        Duration::from_millis((MAX_PENDING + 3) as u64)
    );
}

#[test]
fn a_disabled_clock_takes_no_stamps() {
    let device = FakeDevice::default();
    let mut clock = PhaseClock::new(device.clone(), false);
    clock.restart().unwrap();
    device.host_ms.set(5);
    clock.lap(Phase::Compute).unwrap();
    clock.settle().unwrap();
    assert_eq!((clock.unread(), device.reads.get()), (0, 0));
    assert_eq!(clock.spent, [Duration::ZERO; 4]);
}

/// On the CPU the phases are consecutive parts of each epoch's clock: never negative, every
/// one of them seen, and together at most the epochs' time. (That the phases change nothing the
/// training computes is `knobs_change_speed_never_results`.)
#[test]
fn cpu_phases_are_parts_of_the_epoch_time() {
    let windows = learnable_windows(300, 40, 4);
    let params = TrainParams {
        hidden: Some(vec![8]),
        batch_size: 32,
        epochs: 2,
        phase_timing: true,
        ..TrainParams::default()
    };
    let (_, rec) = run_train(&windows, &params, 2);
    let epochs: f64 = series(&rec, "epoch_seconds").iter().sum();
    let phases: Vec<f64> = Phase::ALL
        .iter()
        .map(|p| {
            rec.single(p.metric())
                .unwrap_or_else(|| panic!("{} recorded", p.metric()))
        })
        .collect();
    assert!(phases.iter().all(|s| *s >= 0.0), "{phases:?}");
    assert!(phases[Phase::Compute as usize] > 0.0, "{phases:?}");
    let total: f64 = phases.iter().sum();
    assert!(total <= epochs, "phases {total} s > epochs {epochs} s");
    // The host-clock batch preparation covers the same calls as prep and h2d do on the CPU,
    // so it is inside the epochs' time and leaves compute out.
    let host_prep = rec
        .single("batch_prep_host_seconds")
        .expect("batch_prep_host_seconds recorded");
    assert!(host_prep > 0.0 && host_prep <= epochs, "{host_prep} s of {epochs} s");
    assert!(
        host_prep < epochs - phases[Phase::Compute as usize] + 1e-3,
        "host prep {host_prep} s took in compute ({phases:?} of {epochs} s)"
    );
    // One read per step, each timed on the host: together inside the epochs' time.
    let per_read = rec
        .single("readback_host_seconds_per_read")
        .expect("per-read host time recorded");
    let steps = rec.single("train_steps").unwrap();
    assert!(
        per_read >= 0.0 && per_read * steps <= epochs,
        "{per_read} s x {steps} of {epochs} s"
    );
    // No step reads the loss: nothing to put a per-read figure on.
    let quiet = TrainParams {
        loss_sync_every: 0,
        ..params
    };
    let (_, rec) = run_train(&windows, &quiet, 2);
    assert_eq!(rec.single("readback_host_seconds_per_read"), None);
}
