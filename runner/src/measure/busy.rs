//! Whether the machine was busy during a run (trial load readings -> run figures -> the
//! warnings the console and the report print).
//!
//! **Busy** means that processes other than the run (and the stage processes it waited for)
//! used more than half the cores on average over the measured trials, weighted by how long
//! each trial ran. Where that could not be read, the 1-minute load average above half the
//! cores decides instead. The CPU time of other processes is the deciding signal because it
//! covers exactly the trials and leaves the run's own work out; the load average lags by
//! tens of seconds and counts the run's own threads, so a benchmark using every core would
//! call itself busy. It is still reported beside it, for comparison with `uptime`. A database
//! server on the same machine that a stage reads from counts as another process.
//!
//! **Frequency drop** means that the lowest mean CPU clock read after a measured trial is
//! below 90% of the highest: the CPU throttled or changed power state during the run.

use super::TrialLoad;
use serde::Serialize;

/// Share of the cores that other processes (or the load average) must exceed, on average,
/// for the run to count as busy.
pub const BUSY_FRACTION: f64 = 0.5;

/// A mean clock below this share of the highest counts as a frequency drop.
pub const FREQUENCY_DROP: f64 = 0.9;

/// Trials shorter than this are left out of `other_cpu_max`: the CPU counters tick 100 times a
/// second, so over a few milliseconds one tick more or less swings the figure by whole cores.
const MIN_SECONDS_FOR_MAX: f64 = 0.5;

/// Fewest clock ticks of wall time (per CPU) over which other processes' CPU time is judged:
/// at 100 ticks a second, one second. The counters move in whole ticks, and this process's
/// own ticks and the CPUs' busy ticks are read a moment apart, so over a shorter window a
/// single tick decides the figure; below it the figure is unknown.
pub const MIN_WINDOW_TICKS: u64 = 100;

/// How loaded the machine was during the measured trials (`report.json`'s `load`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadFigures {
    /// Mean over the measured trials of each trial's 1-minute load average (the mean of the
    /// readings before and after it). It includes the run's own work.
    pub mean: f64,
    /// The highest reading before or after a measured trial.
    pub max: f64,
    /// Cores available to the run (the largest count when trials ran on different machines).
    pub cores: u32,
    /// Cores' worth of CPU that other processes used over the measured trials: their CPU
    /// counters summed over the run, so short trials add up to a window the counters resolve
    /// (runs stored before the counters were kept: the per-trial figures of trials of at
    /// least half a second, weighted by wall time); `null` where it could not be read or the
    /// window is shorter than a second.
    pub other_cpu_mean: Option<f64>,
    /// The counters were read, but the measured trials cover less than a second of wall
    /// time, too little for their resolution: how busy other processes kept the machine is
    /// unknown (and the run is not called busy for it).
    pub other_cpu_unknown: bool,
    /// The highest per-trial figure among trials of at least half a second; `null` when none
    /// was that long.
    pub other_cpu_max: Option<f64>,
    /// `other_cpu_mean` above half the cores (or, where no counter could be read at all,
    /// `mean` above half the cores).
    pub busy: bool,
    /// Measured trials with readings.
    pub trials: usize,
}

/// The CPU clock after the measured trials (`report.json`'s `cpu_frequency`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrequencyFigures {
    /// Lowest, mean and highest of the per-trial mean clocks, in MHz.
    pub min_mhz: f64,
    pub mean_mhz: f64,
    pub max_mhz: f64,
    /// `min_mhz` below 90% of `max_mhz`.
    pub dropped: bool,
    /// Measured trials with a reading.
    pub trials: usize,
}

/// The run-level figures; each `None` when no measured trial recorded it (runs stored before
/// it was recorded, machines where it cannot be read).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MachineLoad {
    pub load: Option<LoadFigures>,
    pub frequency: Option<FrequencyFigures>,
}

impl MachineLoad {
    /// Summarizes the readings of the measured trials, each with its wall time in seconds.
    pub fn of<'a>(trials: impl IntoIterator<Item = (&'a TrialLoad, f64)>) -> MachineLoad {
        let trials: Vec<(&TrialLoad, f64)> = trials.into_iter().filter(|(t, _)| !t.is_empty()).collect();
        MachineLoad {
            load: load_figures(&trials),
            frequency: frequency_figures(&trials),
        }
    }

    /// Plain-text warnings, with figures: a busy machine, a dropping clock.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.load.as_ref().and_then(busy_warning));
        out.extend(self.frequency.as_ref().and_then(frequency_warning));
        out
    }
}

fn load_figures(trials: &[(&TrialLoad, f64)]) -> Option<LoadFigures> {
    let with: Vec<(&TrialLoad, f64, f64, u32)> = trials
        .iter()
        .filter_map(|&(t, secs)| Some((t, secs, t.load()?, t.cores.filter(|c| *c > 0)?)))
        .collect();
    if with.is_empty() {
        return None;
    }
    let cores = with.iter().map(|w| w.3).max()?;
    let mean = with.iter().map(|w| w.2).sum::<f64>() / with.len() as f64;
    let max = with
        .iter()
        .flat_map(|w| [w.0.load_before, w.0.load_after])
        .flatten()
        .fold(f64::NEG_INFINITY, f64::max);
    let other = other_cpu(&with);
    let others: Vec<(f64, f64, u32)> = with
        .iter()
        .filter_map(|w| Some((w.0.other_cpu?, w.1.max(0.0), w.3)))
        .collect();
    let other_cpu_max = others
        .iter()
        .filter(|o| o.1 >= MIN_SECONDS_FOR_MAX)
        .map(|o| o.0)
        .reduce(f64::max);
    let load_share = with.iter().map(|w| w.2 / f64::from(w.3)).sum::<f64>() / with.len() as f64;
    // The load average decides only where no counter could be read: it counts the run's own
    // threads, so over trials too short for the counters the answer is "unknown", not "busy".
    let (other_cpu_mean, busy) = match other {
        OtherCpu::Known(mean, share) => (Some(mean), share > BUSY_FRACTION),
        OtherCpu::TooShort => (None, false),
        OtherCpu::Unreadable => (None, load_share > BUSY_FRACTION),
    };
    Some(LoadFigures {
        mean,
        max,
        cores,
        other_cpu_mean,
        other_cpu_unknown: matches!(other, OtherCpu::TooShort),
        other_cpu_max,
        busy,
        trials: with.len(),
    })
}

/// What the CPU counters say of other processes over the trials.
enum OtherCpu {
    /// Mean cores' worth, and that as a share of the cores.
    Known(f64, f64),
    /// The counters were read, but the trials cover too little time for their resolution.
    TooShort,
    /// No trial could read them.
    Unreadable,
}

/// Other processes' mean CPU over the trials. Trials that kept their counters are summed: the
/// busy ticks minus this process's, over the wall ticks, with no clamping per trial (one
/// trial's tick read early and its neighbour's read late cancel). Older trials give their
/// per-trial figures, from trials long enough for the counters, weighted by wall time.
fn other_cpu(with: &[(&TrialLoad, f64, f64, u32)]) -> OtherCpu {
    let counted: Vec<&super::TickDelta> = with.iter().filter_map(|w| w.0.ticks.as_ref()).collect();
    if !counted.is_empty() {
        let wall: f64 = counted.iter().map(|t| t.total as f64 / f64::from(t.cpus.max(1))).sum();
        if wall < MIN_WINDOW_TICKS as f64 {
            return OtherCpu::TooShort;
        }
        let other: i128 = counted.iter().map(|t| i128::from(t.busy) - i128::from(t.own)).sum();
        let cores: f64 = counted.iter().map(|t| f64::from(t.cpus)).sum::<f64>() / counted.len() as f64;
        let mean = (other.max(0) as f64 / wall).min(cores);
        return OtherCpu::Known(mean, mean / cores);
    }
    if with.iter().all(|w| w.0.other_cpu.is_none()) {
        return OtherCpu::Unreadable;
    }
    // Shares of each trial's own core count, so trials from machines of different sizes weigh
    // alike; weighted by wall time, so a long trial counts for what it lasted.
    let others: Vec<(f64, f64, u32)> = with
        .iter()
        .filter(|w| w.1 >= MIN_SECONDS_FOR_MAX)
        .filter_map(|w| Some((w.0.other_cpu?, w.1, w.3)))
        .collect();
    let total: f64 = others.iter().map(|o| o.1).sum();
    if others.is_empty() || total <= 0.0 {
        return OtherCpu::TooShort;
    }
    OtherCpu::Known(
        others.iter().map(|o| o.0 * o.1 / total).sum(),
        others.iter().map(|o| o.0 / f64::from(o.2) * o.1 / total).sum(),
    )
}

fn frequency_figures(trials: &[(&TrialLoad, f64)]) -> Option<FrequencyFigures> {
    let mhz: Vec<f64> = trials.iter().filter_map(|(t, _)| t.cpu_mhz).collect();
    let min = mhz.iter().copied().reduce(f64::min)?;
    let max = mhz.iter().copied().reduce(f64::max)?;
    Some(FrequencyFigures {
        min_mhz: min,
        mean_mhz: mhz.iter().sum::<f64>() / mhz.len() as f64,
        max_mhz: max,
        dropped: min < FREQUENCY_DROP * max,
        trials: mhz.len(),
    })
}

fn one_decimal(v: f64) -> String {
    format!("{v:.1}")
}

fn measured_trials(n: usize) -> String {
    if n == 1 {
        "the one measured trial".to_owned()
    } else {
        format!("the {n} measured trials")
    }
}

/// "Busy machine: ..." when the figures say busy.
pub fn busy_warning(l: &LoadFigures) -> Option<String> {
    if !l.busy {
        return None;
    }
    let cores = format!("{} core{}", l.cores, if l.cores == 1 { "" } else { "s" });
    let load = format!(
        "the 1-minute load averaged {} (max {})",
        one_decimal(l.mean),
        one_decimal(l.max)
    );
    Some(match l.other_cpu_mean {
        Some(other) => format!(
            "Busy machine: other processes used {} of the {cores} on average{} during {}, and {load}, this run included; timings may be inflated and noisier.",
            one_decimal(other),
            l.other_cpu_max
                .map(|m| format!(" (max {} in one trial)", one_decimal(m)))
                .unwrap_or_default(),
            measured_trials(l.trials),
        ),
        None => format!(
            "Busy machine: {load} on {cores} during {}; timings may be inflated and noisier.",
            measured_trials(l.trials)
        ),
    })
}

/// "CPU frequency dropped: ..." when the lowest clock is below 90% of the highest.
pub fn frequency_warning(f: &FrequencyFigures) -> Option<String> {
    f.dropped.then(|| {
        format!(
            "CPU frequency dropped: the mean CPU clock after {} ranged from {:.0} to {:.0} MHz (the lowest is {:.0}% of the highest); the CPU throttled or changed power state, and timings may follow the clock.",
            measured_trials(f.trials),
            f.min_mhz,
            f.max_mhz,
            f.min_mhz / f.max_mhz * 100.0
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::TickDelta;

    fn trial(before: f64, after: f64, other: Option<f64>, cores: u32, mhz: Option<f64>) -> TrialLoad {
        TrialLoad {
            load_before: Some(before),
            load_after: Some(after),
            other_cpu: other,
            cores: Some(cores),
            cpu_mhz: mhz,
            ticks: None,
        }
    }

    #[test]
    fn other_processes_on_more_than_half_the_cores_make_a_busy_machine() {
        let a = trial(2.0, 4.2, Some(1.5), 2, Some(2600.0));
        let b = trial(2.6, 3.6, Some(1.9), 2, Some(2600.0));
        let m = MachineLoad::of([(&a, 1.0), (&b, 3.0)]);
        let l = m.load.clone().unwrap();
        assert!((l.mean - 3.1).abs() < 1e-9, "{l:?}");
        assert_eq!((l.max, l.cores, l.trials), (4.2, 2, 2));
        // Weighted by wall time: (1.5 * 1 + 1.9 * 3) / 4.
        assert!((l.other_cpu_mean.unwrap() - 1.8).abs() < 1e-9, "{l:?}");
        assert_eq!(l.other_cpu_max, Some(1.9));
        assert!(l.busy);
        assert_eq!(
            m.warnings(),
            ["Busy machine: other processes used 1.8 of the 2 cores on average (max 1.9 in one trial) during the 2 measured trials, and the 1-minute load averaged 3.1 (max 4.2), this run included; timings may be inflated and noisier."]
        );
    }

    #[test]
    fn a_high_load_from_the_run_itself_is_not_busy() {
        // The run kept both cores busy itself: the load average is high, other processes idle.
        let a = trial(2.1, 2.3, Some(0.1), 2, None);
        let m = MachineLoad::of([(&a, 5.0)]);
        assert!(!m.load.as_ref().unwrap().busy);
        assert!(m.warnings().is_empty());
    }

    #[test]
    fn without_cpu_counters_the_load_average_decides() {
        let a = trial(3.0, 3.2, None, 2, None);
        let m = MachineLoad::of([(&a, 0.01)]);
        let l = m.load.as_ref().unwrap();
        assert!(l.busy && l.other_cpu_mean.is_none() && l.other_cpu_max.is_none());
        assert_eq!(
            m.warnings(),
            ["Busy machine: the 1-minute load averaged 3.1 (max 3.2) on 2 cores during the one measured trial; timings may be inflated and noisier."]
        );
        let calm = trial(0.4, 0.6, None, 2, None);
        assert!(!MachineLoad::of([(&calm, 1.0)]).load.unwrap().busy);
    }

    #[test]
    fn short_trials_give_no_maximum_and_no_mean() {
        let a = trial(0.0, 0.0, Some(2.0), 4, None);
        let l = MachineLoad::of([(&a, 0.01)]).load.unwrap();
        assert_eq!((l.other_cpu_mean, l.other_cpu_max, l.busy), (None, None, false));
    }

    /// Trials of 1.5 ms on an idle 2-core machine whose counters tick 100 times a second,
    /// simulated: the run's own thread is the only work. The CPUs' busy ticks and this
    /// process's own ticks are read a moment apart, so a tick can land between the two reads.
    /// Judged trial by trial, the few trials that see a tick at all say "a whole core busy";
    /// summed over the run, the ticks cancel and the machine is idle. Under a second of trials
    /// in all, the figure is unknown.
    #[test]
    fn short_trials_are_judged_over_the_run_at_the_counters_resolution() {
        const TICK_US: u64 = 10_000;
        // (busy, own, total) at time `t` in microseconds: one core busy while a trial runs;
        // own time is charged in whole ticks of accumulated run time.
        struct Clock {
            busy: u64,
            own_us: u64,
            ticks_seen: u64,
        }
        let mut clock = Clock {
            busy: 0,
            own_us: 0,
            ticks_seen: 0,
        };
        let advance = |c: &mut Clock, from: u64, to: u64, running: bool| {
            for tick in (from / TICK_US + 1)..=(to / TICK_US) {
                let _ = tick;
                c.ticks_seen += 1;
                c.busy += u64::from(running);
            }
            if running {
                c.own_us += to - from;
            }
        };
        let mut loads = Vec::new();
        let mut t = 0u64;
        for i in 0..2_000u64 {
            // Each reading takes 20 us between the CPUs' counters and this process's.
            let gap = 20;
            let run = 1_500 + (i * 37) % 400;
            let before = (clock.busy, clock.ticks_seen * 2);
            advance(&mut clock, t, t + gap, true);
            let own_before = clock.own_us / TICK_US;
            advance(&mut clock, t + gap, t + run, true);
            let after = (clock.busy, clock.ticks_seen * 2);
            advance(&mut clock, t + run, t + run + gap, true);
            let own_after = clock.own_us / TICK_US;
            // Between trials the run stores the trial: 1 ms, idle on the CPUs it measures.
            advance(&mut clock, t + run + gap, t + run + gap + 1_000, false);
            t += run + gap + 1_000;
            let d = TickDelta {
                busy: after.0 - before.0,
                own: own_after - own_before,
                total: after.1 - before.1,
                cpus: 2,
            };
            let wall_ticks = d.total as f64 / 2.0;
            loads.push(TrialLoad {
                load_before: Some(0.6),
                load_after: Some(0.6),
                other_cpu: (wall_ticks > 0.0).then(|| (d.busy.saturating_sub(d.own) as f64 / wall_ticks).min(2.0)),
                cores: Some(2),
                cpu_mhz: None,
                ticks: Some(d),
            });
        }
        let secs = 0.0017;
        // The old reading, trial by trial: the trials that saw a tick claim whole cores.
        let per_trial: Vec<f64> = loads.iter().filter_map(|l| l.other_cpu).collect();
        let old = per_trial.iter().sum::<f64>() / per_trial.len() as f64;
        assert!(old > 0.5, "the simulation reproduces the misfire: {old}");
        // Over the run: about 3.4 s of trials, well past the resolution.
        let l = MachineLoad::of(loads.iter().map(|l| (l, secs))).load.unwrap();
        let other = l.other_cpu_mean.expect("a long enough window");
        assert!(other < 0.1 && !l.busy, "{l:?}");
        assert!(MachineLoad::of(loads.iter().map(|l| (l, secs))).warnings().is_empty());
        // Twenty such trials last 40 ms: unknown, even with the load average above half the
        // cores (the run's own threads count in it).
        let mut loaded: Vec<TrialLoad> = loads[..20].to_vec();
        for l in &mut loaded {
            l.load_before = Some(1.8);
            l.load_after = Some(1.8);
        }
        let l = MachineLoad::of(loaded.iter().map(|l| (l, secs))).load.unwrap();
        assert_eq!((l.other_cpu_mean, l.other_cpu_unknown, l.busy), (None, true, false));
    }

    #[test]
    fn a_clock_below_ninety_percent_of_the_highest_is_a_drop() {
        let fast = trial(0.1, 0.1, Some(0.0), 8, Some(3400.0));
        let slow = trial(0.1, 0.1, Some(0.0), 8, Some(1800.0));
        let m = MachineLoad::of([(&fast, 1.0), (&slow, 1.0)]);
        let f = m.frequency.clone().unwrap();
        assert!(f.dropped && f.mean_mhz == 2600.0);
        assert_eq!(
            m.warnings(),
            ["CPU frequency dropped: the mean CPU clock after the 2 measured trials ranged from 1800 to 3400 MHz (the lowest is 53% of the highest); the CPU throttled or changed power state, and timings may follow the clock."]
        );
        let steady = trial(0.1, 0.1, Some(0.0), 8, Some(3200.0));
        assert!(
            !MachineLoad::of([(&fast, 1.0), (&steady, 1.0)])
                .frequency
                .unwrap()
                .dropped
        );
    }

    #[test]
    fn trials_stored_before_readings_existed_give_no_figures() {
        let old = TrialLoad::default();
        let m = MachineLoad::of([(&old, 1.0), (&old, 2.0)]);
        assert_eq!(m, MachineLoad::default());
        assert!(m.warnings().is_empty());
        assert_eq!(MachineLoad::of([]), MachineLoad::default());
    }
}
