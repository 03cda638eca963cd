//! Tests of the comparisons (`stats::compare`).
use super::*;

fn settings() -> CompareSettings {
    CompareSettings {
        resamples: 2_000,
        ..CompareSettings::default()
    }
}

#[test]
fn clear_speedup_is_faster() {
    let base = [10.0, 10.1, 9.9, 10.2, 10.05, 9.95, 10.0, 10.1];
    let cand: Vec<f64> = base.iter().map(|v| v * 0.7).collect();
    let c = compare(&base, &cand, Direction::LowerIsBetter, &settings());
    assert_eq!(c.verdict, Verdict::Faster, "{c:?}");
    assert!((c.speedup - 1.0 / 0.7).abs() < 1e-9);
    let (lo, hi) = c.speedup_ci.unwrap();
    assert!(lo <= c.speedup && c.speedup <= hi);
    // Same data as a throughput metric: lower is worse.
    let t = compare(&base, &cand, Direction::HigherIsBetter, &settings());
    assert_eq!(t.verdict, Verdict::Slower);
}

/// Values that never varied give a zero-width interval, which says nothing about effects
/// below what the values could show: never "no change".
#[test]
fn identical_samples_are_not_no_change() {
    let v = [3.000_000_000_000_001_2; 6];
    let c = compare(&v, &v, Direction::LowerIsBetter, &settings());
    assert_eq!(c.resolution, None);
    assert_eq!(c.ratio_ci, Some((1.0, 1.0)));
    assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
    assert_eq!(c.p_value, 1.0);
    let p = compare_paired(&[(v[0], v[0]); 8], Direction::LowerIsBetter, &settings());
    assert_eq!(p.verdict, Verdict::Inconclusive, "{p:?}");
    // Printed as a whole number, the same values hide a third of their size each.
    let printed = compare(&[3.0; 6], &[3.0; 6], Direction::LowerIsBetter, &settings());
    let (lo, hi) = printed.ratio_ci.unwrap();
    assert!(
        (lo - 2.5 / 3.5).abs() < 1e-9 && (hi - 3.5 / 2.5).abs() < 1e-9,
        "{printed:?}"
    );
    assert_eq!(printed.verdict, Verdict::Inconclusive);
}

/// A 3% speedup printed to whole milliseconds of a 10 ms stage: most blocks read the same on
/// both sides. The interval holds what the rounding may hide, so it is never zero-wide,
/// never "no change", and names no detectable effect.
#[test]
fn a_coarse_print_is_inconclusive_not_no_change() {
    let pairs: Vec<(f64, f64)> = (0..16).map(|i| (10.0, if i % 5 == 0 { 9.0 } else { 10.0 })).collect();
    let c = compare_paired(&pairs, Direction::LowerIsBetter, &settings());
    assert_eq!(c.resolution.map(|r| r.step()), Some(1.0));
    assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
    let (lo, hi) = c.ratio_ci.unwrap();
    assert!(lo < 0.97 && hi > 1.03, "{c:?}");
    assert_eq!(c.detectable, None);
    assert_eq!(c.reps_needed, None);
    assert!(c.reason.as_deref().unwrap().contains("resolution"), "{c:?}");
}

#[test]
fn degenerate_inputs_are_inconclusive_with_reason() {
    let s = settings();
    for (a, b) in [
        (vec![1.0], vec![1.0, 2.0]),
        (vec![], vec![]),
        (vec![0.0, 0.0, 0.0], vec![1.0, 1.0, 1.0]),
        (vec![1.0, f64::NAN], vec![1.0, 2.0]),
    ] {
        let c = compare(&a, &b, Direction::LowerIsBetter, &s);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(c.reason.is_some() && c.ratio_ci.is_none());
    }
    let p = compare_paired(&[(1.0, 2.0)], Direction::LowerIsBetter, &s);
    assert_eq!(p.verdict, Verdict::Inconclusive);
    let z = compare_paired(&[(1.0, 0.0), (1.0, 1.0)], Direction::LowerIsBetter, &s);
    assert!(z.reason.unwrap().contains("positive"));
}

#[test]
fn small_noisy_sample_asks_for_more_reps() {
    let base = [10.0, 11.5, 9.0, 10.8];
    let cand = [9.6, 10.9, 8.9, 10.2];
    let c = compare(&base, &cand, Direction::LowerIsBetter, &settings());
    assert_eq!(c.verdict, Verdict::Inconclusive);
    assert!(c.reps_needed.unwrap() > 4, "{c:?}");
}

#[test]
fn paired_blocks_remove_block_noise() {
    // Block-to-block drift of ±30% hides a 10% effect from an unpaired test, but every
    // block shows the candidate 10% faster.
    let drift = [1.0, 1.3, 0.7, 1.2, 0.8, 1.25, 0.75, 1.1, 0.9, 1.15, 0.85, 1.05];
    let noise = [
        1.0, 1.004, 0.997, 1.002, 0.999, 1.003, 0.996, 1.001, 1.0, 0.998, 1.002, 0.999,
    ];
    let pairs: Vec<(f64, f64)> = drift.iter().zip(noise).map(|(d, e)| (10.0 * d, 9.0 * d * e)).collect();
    let c = compare_paired(&pairs, Direction::LowerIsBetter, &settings());
    assert_eq!(c.verdict, Verdict::Faster, "{c:?}");
    assert!((c.ratio - 0.9).abs() < 0.01);
    let (b, a): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    let unpaired = compare(&b, &a, Direction::LowerIsBetter, &settings());
    assert_eq!(unpaired.verdict, Verdict::Inconclusive);
}

#[test]
fn adjusted_p_can_demote_a_verdict() {
    let base = [10.0, 10.1, 9.9, 10.2, 10.05, 9.95];
    let cand = [9.0, 9.1, 8.9, 9.2, 9.05, 8.95];
    let c = compare(&base, &cand, Direction::LowerIsBetter, &settings());
    assert_eq!(c.verdict, Verdict::Faster);
    let adj = c.with_adjusted_p(0.05);
    assert_eq!(adj.verdict, Verdict::Inconclusive);
    assert!(adj.reps_needed.is_some());
}

/// A sequential look that spends no error (the first of `{ min = 8, max = 200 }`) can reject at
/// no size: it estimates no repetitions, and the paired estimate elsewhere starts where a
/// signed-rank test can first reject (2 / 2^n < alpha: 8 blocks at 1%).
#[test]
fn a_look_that_spends_nothing_estimates_no_repetitions() {
    let pairs: Vec<(f64, f64)> = (0..8)
        .map(|i| {
            let x = f64::from(i);
            (10.0 + 0.4 * (1.3 * x).sin(), 9.95 + 0.4 * (1.3 * x + 0.9).sin())
        })
        .collect();
    let plan = crate::stats::SequentialPlan { min: 8, max: 200 };
    let s = CompareSettings {
        sequential: Some(crate::stats::SequentialState { plan, blocks: 8 }),
        ..settings()
    };
    let c = compare_paired(&pairs, Direction::LowerIsBetter, &s);
    assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
    assert_eq!(c.reps_needed, None, "{c:?}");
    let few = compare_paired(&pairs[..6], Direction::LowerIsBetter, &settings());
    assert_eq!((few.verdict, few.alpha), (Verdict::Inconclusive, 0.01), "{few:?}");
    assert!(few.reps_needed.is_some_and(|n| n >= 8), "{few:?}");
}
