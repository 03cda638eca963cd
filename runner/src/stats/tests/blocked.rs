//! Simulations of blocked runs: the paired interval's coverage under drift, and the
//! sequential stopping rule's error and power, on simulated machines and on a real GPU trace.
//! Seeded (each simulated run from its own seed, so the results do not depend on how rayon
//! spreads the runs over threads), and no timing.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

use crate::stats::{compare_paired, CompareSettings, Comparison, Direction, SequentialPlan, SequentialState, Verdict};

/// How the simulated machine's level moves over a run of `2 n` trials (two configs).
#[derive(Debug, Clone, Copy)]
enum Machine {
    Steady,
    /// The level climbs linearly by 50% over the run.
    LinearDrift,
    /// The level jumps by 40% halfway, inside a block.
    Step,
    /// Autocorrelated noise: AR(1) with coefficient 0.8 on top of the trial noise.
    Ar1,
}

/// `n` blocks of (baseline, candidate), the candidate `ratio` times the baseline, each block's
/// two trials in a random order on a machine that moves as `machine` says, with 5% log-normal
/// trial noise.
fn simulate(rng: &mut ChaCha8Rng, machine: Machine, n: usize, ratio: f64) -> Vec<(f64, f64)> {
    let trials = 2 * n;
    let noise = Normal::new(0.0, 0.05).expect("valid normal");
    let shock = Normal::new(0.0, 0.06).expect("valid normal");
    let mut ar = 0.0;
    let level: Vec<f64> = (0..trials)
        .map(|t| {
            let tf = t as f64 / trials as f64;
            let drift = match machine {
                Machine::Steady => 0.0,
                Machine::LinearDrift => (1.0 + 0.5 * tf).ln(),
                Machine::Step => {
                    if t > n {
                        1.4f64.ln()
                    } else {
                        0.0
                    }
                }
                Machine::Ar1 => {
                    ar = 0.8 * ar + shock.sample(rng);
                    ar
                }
            };
            (drift + noise.sample(rng)).exp()
        })
        .collect();
    (0..n)
        .map(|i| {
            let candidate_first = rng.gen::<bool>();
            let (c, b) = if candidate_first {
                (2 * i, 2 * i + 1)
            } else {
                (2 * i + 1, 2 * i)
            };
            (level[b], ratio * level[c])
        })
        .collect()
}

fn settings(seed: u64) -> CompareSettings {
    CompareSettings {
        seed,
        ..CompareSettings::default()
    }
}

/// Monte Carlo tolerance: three standard errors of a rate `p` over `sims` runs.
fn three_se(p: f64, sims: usize) -> f64 {
    3.0 * (p * (1.0 - p) / sims as f64).sqrt()
}

/// The paired 95% interval holds the true ratio at least 95% of the time (within Monte Carlo
/// error) at 8, 16 and 50 blocks, on a steady machine and under a 50% linear drift, a 40% step
/// halfway and AR(1) noise. The shuffled order in each block is what makes this hold.
#[test]
fn paired_interval_covers_the_truth_under_drift() {
    let sims = 2_000;
    let truth = 1.0 / 1.05;
    for (m, machine) in [Machine::Steady, Machine::LinearDrift, Machine::Step, Machine::Ar1]
        .into_iter()
        .enumerate()
    {
        for n in [8, 16, 50] {
            let covered: usize = (0..sims)
                .into_par_iter()
                .map(|i| {
                    let mut rng = ChaCha8Rng::seed_from_u64(((m * 100 + n) * 10_000 + i) as u64);
                    let pairs = simulate(&mut rng, machine, n, truth);
                    let c = compare_paired(&pairs, Direction::LowerIsBetter, &settings(i as u64));
                    let (lo, hi) = c.ratio_ci.expect("8 blocks or more give an interval");
                    usize::from(lo <= truth && truth <= hi)
                })
                .sum();
            let rate = covered as f64 / sims as f64;
            eprintln!("{machine:?}, {n} blocks: coverage {rate:.4}");
            assert!(
                rate >= 0.95 - three_se(0.95, sims),
                "{machine:?} at {n} blocks: coverage {rate}"
            );
        }
    }
}

/// Runs the stopping rule of a sequential run over `pairs` (`plan.max` of them): a look at
/// each planned block count, stopping at the first that decides. The same comparison the
/// report and the runner make at a look.
fn sequential(pairs: &[(f64, f64)], plan: SequentialPlan, base: &CompareSettings) -> Comparison {
    let mut last = None;
    for blocks in plan.looks() {
        let s = CompareSettings {
            sequential: Some(SequentialState { plan, blocks }),
            ..*base
        };
        let c = compare_paired(&pairs[..blocks as usize], Direction::LowerIsBetter, &s);
        if c.verdict != Verdict::Inconclusive {
            return c;
        }
        last = Some(c);
    }
    last.expect("a plan has at least one look")
}

/// The same looks with a fixed design's levels at each: what optional stopping does without
/// spending.
fn naive(pairs: &[(f64, f64)], plan: SequentialPlan, base: &CompareSettings) -> Comparison {
    let mut last = None;
    for blocks in plan.looks() {
        let c = compare_paired(&pairs[..blocks as usize], Direction::LowerIsBetter, base);
        if matches!(c.verdict, Verdict::Faster | Verdict::Slower) {
            return c;
        }
        last = Some(c);
    }
    last.expect("a plan has at least one look")
}

fn directional(c: &Comparison) -> bool {
    matches!(c.verdict, Verdict::Faster | Verdict::Slower)
}

/// A/A under drift: with the stopping rule, at most alpha of 2,000 runs say faster or slower,
/// with the default band and with no band at all (where only the test stands between noise
/// and a verdict). Looking as often without spending does exceed alpha, so the simulation
/// can tell the two apart.
#[test]
fn aa_runs_with_optional_stopping_stay_within_alpha() {
    let sims = 2_000;
    let plan = SequentialPlan { min: 8, max: 60 };
    let alpha = CompareSettings::default().alpha;
    let limit = ((alpha + three_se(alpha, sims)) * sims as f64).floor() as usize;
    let (banded, bare, unspent) = (0..sims)
        .into_par_iter()
        .map(|i| {
            let mut rng = ChaCha8Rng::seed_from_u64(7_000_000 + i as u64);
            let machine = [Machine::LinearDrift, Machine::Ar1][i % 2];
            let pairs = simulate(&mut rng, machine, plan.max as usize, 1.0);
            let s = settings(i as u64);
            let no_band = CompareSettings { band: 0.0, ..s };
            (
                usize::from(directional(&sequential(&pairs, plan, &s))),
                usize::from(directional(&sequential(&pairs, plan, &no_band))),
                usize::from(directional(&naive(&pairs, plan, &no_band))),
            )
        })
        .reduce(|| (0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    assert!(
        banded <= limit,
        "{banded} of {sims} A/A runs were directional (limit {limit})"
    );
    assert!(
        bare <= limit,
        "{bare} of {sims} band-free A/A runs were directional (limit {limit})"
    );
    assert!(
        unspent > limit,
        "looking {} times at full alpha gave only {unspent} directional runs (limit {limit})",
        plan.looks().len()
    );
    eprintln!("A/A over {sims} runs: {banded} directional with the band, {bare} without, {unspent} without spending");
}

/// The per-block log differences (second trial over first) of the H200 A/A trace: its drift
/// and jitter as the blocks saw them.
fn h200_block_differences() -> Vec<f64> {
    let text = include_str!("../../../tests/fixtures/traces/h200-aa-epoch-seconds.csv");
    let mut blocks: std::collections::BTreeMap<u32, Vec<(u32, f64)>> = Default::default();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f[3] == "1" {
            continue;
        }
        let (trial, block, value) = (f[0].parse().unwrap(), f[1].parse().unwrap(), f[4].parse().unwrap());
        blocks.entry(block).or_default().push((trial, value));
    }
    blocks
        .values_mut()
        .map(|b| {
            b.sort_by_key(|t| t.0);
            (b[1].1 / b[0].1).ln()
        })
        .collect()
}

/// A true 5% speedup under the H200 trace's drift and jitter (its blocks resampled, each
/// block's order shuffled again) is decided faster, with the interval holding 1.05, within
/// `max` in at least 90% of 500 runs.
#[test]
fn a_five_percent_effect_under_the_h200_trace_is_decided() {
    let differences = h200_block_differences();
    assert_eq!(differences.len(), 20);
    let plan = SequentialPlan { min: 8, max: 200 };
    let sims = 500usize;
    let results: Vec<(bool, usize)> = (0..sims)
        .into_par_iter()
        .map(|i| {
            let mut rng = ChaCha8Rng::seed_from_u64(2026 + i as u64);
            // Each block at a level of its own, 30-50 ms as on the trace (a constant level
            // of exactly 1 would read as a figure printed to whole units).
            let pairs: Vec<(f64, f64)> = (0..plan.max)
                .map(|_| {
                    let d = differences[rng.gen_range(0..differences.len())];
                    let noise = if rng.gen::<bool>() { d } else { -d };
                    let level = 0.03 + 0.02 * rng.gen::<f64>();
                    (level, level * (noise - 1.05f64.ln()).exp())
                })
                .collect();
            let c = sequential(&pairs, plan, &settings(i as u64));
            let (lo, hi) = c.speedup_ci.expect("an interval");
            (c.verdict == Verdict::Faster && lo <= 1.05 && 1.05 <= hi, c.n_baseline)
        })
        .collect();
    let decided = results.iter().filter(|r| r.0).count();
    let mut blocks_used: Vec<usize> = results.iter().map(|r| r.1).collect();
    blocks_used.sort_unstable();
    assert!(decided * 10 >= sims * 9, "decided {decided} of {sims}");
    assert!(blocks_used[sims / 2] < plan.max as usize, "{blocks_used:?}");
    eprintln!(
        "5% effect on the H200 trace: {decided} of {sims} decided faster with 1.05 inside; blocks used: median {}, 90th percentile {}",
        blocks_used[sims / 2],
        blocks_used[sims * 9 / 10]
    );
}
