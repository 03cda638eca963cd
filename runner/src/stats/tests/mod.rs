//! Statistical behaviour tests of the stats module: reference p-values, properties, coverage,
//! calibration and power on simulated data.

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};

use super::*;

mod blocked;
mod real_data;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// Name, x, y, scipy's U of x, scipy's p.
type MannWhitneyCase = (&'static str, Vec<f64>, Vec<f64>, f64, f64);

/// Reference values computed once with scipy 1.17.1:
/// `scipy.stats.mannwhitneyu(x, y)` (defaults: method="auto", use_continuity=True,
/// alternative="two-sided"); the statistic is U of `x`.
#[test]
fn mann_whitney_matches_scipy() {
    let asym_ties_x = [3., 4., 4., 5., 5., 5., 6., 6., 7., 7., 8., 8., 9., 3., 4.];
    let asym_ties_y = [5., 6., 6., 7., 7., 7., 8., 8., 9., 9., 10., 4., 5., 6., 7.];
    let unbalanced_y: Vec<f64> = (0..20).map(|i| i as f64 + 0.25).collect();
    let cases: Vec<MannWhitneyCase> = vec![
        (
            "exact, small, no ties",
            vec![1.1, 2.2, 3.3, 4.4, 5.5],
            vec![2.5, 3.5, 6.0, 7.1, 8.2, 9.0],
            5.0,
            0.08225108225108226,
        ),
        (
            "small with ties -> asymptotic",
            vec![1., 2., 2., 3., 4.],
            vec![2., 3., 3., 5., 6., 7.],
            6.0,
            0.11390314458853068,
        ),
        (
            "asymptotic, no ties",
            vec![10.2, 11.5, 9.8, 10.9, 12.1, 10.4, 11.0, 9.5, 10.7, 11.8, 10.1, 11.3],
            vec![11.9, 12.5, 13.1, 11.2, 12.8, 13.6, 12.2, 11.7, 12.9, 13.3],
            7.0,
            0.0005366804361047722,
        ),
        (
            "asymptotic, many ties",
            asym_ties_x.to_vec(),
            asym_ties_y.to_vec(),
            67.5,
            0.061949854682594806,
        ),
        (
            "exact, 3 vs 20",
            vec![1.5, 2.5, 9.5],
            unbalanced_y,
            15.0,
            0.19649915302089213,
        ),
        ("all tied", vec![2.0; 3], vec![2.0; 4], 6.0, 1.0),
        (
            "exact, 8 vs 8, complete separation",
            (1..=8).map(f64::from).collect(),
            (9..=16).map(f64::from).collect(),
            0.0,
            0.0001554001554001554,
        ),
    ];
    for (name, x, y, u_ref, p_ref) in cases {
        let (u, p) = mann_whitney_u(&x, &y);
        assert_eq!(u, u_ref, "{name}: U");
        assert!(close(p, p_ref, 1e-9), "{name}: p = {p}, scipy {p_ref}");
    }
}

/// Reference values from `scipy.stats.wilcoxon(d)` (scipy 1.17.1, defaults) for inputs where
/// both implementations use the same method: exact without ties or zeros, and the normal
/// approximation for n > 50.
#[test]
fn wilcoxon_matches_scipy() {
    let exact = [0.12, -0.05, 0.3, 0.22, 0.41, -0.08, 0.15, 0.27, 0.33, 0.09];
    let (w, p) = wilcoxon_signed_rank(&exact);
    assert_eq!(w, 3.0);
    assert!(close(p, 0.009765625, 1e-12), "{p}");
    let big: Vec<f64> = (0..60)
        .map(|i| (((i * 37) % 23) as f64 - 7.0) / 10.0 + 0.001 * i as f64)
        .collect();
    let (w, p) = wilcoxon_signed_rank(&big);
    assert_eq!(w, 381.0);
    assert!(close(p, 8.455949525614442e-05, 1e-9), "{p}");
}

fn lognormal_sample(rng: &mut ChaCha8Rng, median: f64, sigma: f64, n: usize) -> Vec<f64> {
    let d = LogNormal::new(median.ln(), sigma).expect("valid log-normal");
    (0..n).map(|_| d.sample(rng)).collect()
}

/// The 95% percentile-bootstrap interval of the ratio of medians covers the true ratio at close
/// to its nominal rate. Log-normal samples (sigma = 0.25, a skewed timing-like distribution) with
/// known medians 1.0 and 0.8, so the true ratio is 0.8; n = 20 per side; 1,000 resamples per
/// interval to keep the test fast. Across seeds and n from 8 to 100 this interval measured
/// slightly conservative (about 95.5-97%), because bootstrap medians are discrete. 1,000
/// simulations give a Monte Carlo standard error of 0.7 points, so 93-97% is nominal ±3 SE.
#[test]
fn ratio_interval_covers_true_ratio_at_nominal_rate() {
    let settings = CompareSettings {
        resamples: 1_000,
        ..CompareSettings::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(20_240_601);
    let sims = 1_000;
    let mut covered = 0;
    for i in 0..sims {
        let a = lognormal_sample(&mut rng, 1.0, 0.25, 20);
        let b = lognormal_sample(&mut rng, 0.8, 0.25, 20);
        let c = compare(
            &a,
            &b,
            Direction::LowerIsBetter,
            &CompareSettings { seed: i, ..settings },
        );
        let (lo, hi) = c.ratio_ci.expect("interval");
        if lo <= 0.8 && 0.8 <= hi {
            covered += 1;
        }
    }
    let rate = covered as f64 / sims as f64;
    assert!((0.93..=0.97).contains(&rate), "coverage {rate}");
}

/// A/A calibration: identical distributions must rarely be called faster or slower.
#[test]
fn identical_distributions_rarely_get_a_directional_verdict() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut directional = 0;
    for i in 0..200 {
        let a = lognormal_sample(&mut rng, 2.0, 0.03, 10);
        let b = lognormal_sample(&mut rng, 2.0, 0.03, 10);
        let s = CompareSettings {
            resamples: 2_000,
            seed: i,
            ..CompareSettings::default()
        };
        let c = compare(&a, &b, Direction::LowerIsBetter, &s);
        if matches!(c.verdict, Verdict::Faster | Verdict::Slower) {
            directional += 1;
        }
    }
    assert!(
        directional <= 10,
        "{directional} of 200 A/A comparisons were directional"
    );
}

/// Power: a true 10% improvement with 3% noise and 10 repetitions per side is detected.
#[test]
fn ten_percent_effect_is_detected_with_ten_reps() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let sims = 200;
    let mut faster = 0;
    let mut throughput_faster = 0;
    for i in 0..sims {
        let a = lognormal_sample(&mut rng, 2.0, 0.03, 10);
        let b = lognormal_sample(&mut rng, 1.8, 0.03, 10);
        let s = CompareSettings {
            resamples: 2_000,
            seed: i,
            ..CompareSettings::default()
        };
        if compare(&a, &b, Direction::LowerIsBetter, &s).verdict == Verdict::Faster {
            faster += 1;
        }
        // The same effect on a throughput metric: 10% higher is faster.
        let ta = lognormal_sample(&mut rng, 100.0, 0.03, 10);
        let tb = lognormal_sample(&mut rng, 110.0, 0.03, 10);
        if compare(&ta, &tb, Direction::HigherIsBetter, &s).verdict == Verdict::Faster {
            throughput_faster += 1;
        }
    }
    assert!(faster * 10 >= sims * 9, "detected {faster} of {sims}");
    assert!(
        throughput_faster * 10 >= sims * 9,
        "detected {throughput_faster} of {sims}"
    );
}

#[test]
fn direction_from_unit() {
    for unit in ["s", "B", "count", "loss", "furlongs"] {
        assert_eq!(Direction::from_unit(unit), Direction::LowerIsBetter, "{unit}");
    }
    for unit in ["samples/s", "B/s", "score"] {
        assert_eq!(Direction::from_unit(unit), Direction::HigherIsBetter, "{unit}");
    }
    assert!(CompareSettings::default().resamples >= 10_000);
}

/// A ratio a hair inside the noise band's edge (0.98 with the 2% band) once made the
/// repetitions estimate walk towards ~1e11 one step at a time: a hang, found by the property
/// test below. The estimate is bounded now, and stated as unknown.
#[test]
fn an_effect_at_the_band_edge_gets_no_estimate_and_no_hang() {
    let base = [1.0, 3.0];
    let cand = [0.980_001, 2.940_003];
    let c = compare(&base, &cand, Direction::LowerIsBetter, &CompareSettings::default());
    assert!((c.ratio - 0.980_001).abs() < 1e-9, "{}", c.ratio);
    assert_eq!(c.reps_needed, None);
    assert!(super::rank::min_attainable_p(154_628_938_168, false) == 0.0);
}

fn positive_samples() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(0.01f64..1_000.0, 2..12)
}

proptest! {
    // No failure persistence: regressions worth keeping become explicit unit tests.
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn ratio_interval_contains_point_estimate(a in positive_samples(), b in positive_samples(), seed in 0u64..1_000) {
        let s = CompareSettings { resamples: 300, seed, ..CompareSettings::default() };
        let c = compare(&a, &b, Direction::LowerIsBetter, &s);
        let (lo, hi) = c.ratio_ci.expect("positive samples give an interval");
        prop_assert!(lo <= c.ratio && c.ratio <= hi, "{lo} <= {} <= {hi}", c.ratio);
        let (slo, shi) = c.speedup_ci.unwrap();
        prop_assert!(close(slo, 1.0 / hi, 1e-12) && close(shi, 1.0 / lo, 1e-12));
        prop_assert!((0.0..=1.0).contains(&c.p_value));
    }

    #[test]
    fn summary_invariants(v in prop::collection::vec(-1e6f64..1e6, 1..40)) {
        let s = Summary::of(&v);
        prop_assert_eq!(s.n, v.len());
        prop_assert!(s.min <= s.median && s.median <= s.max);
        prop_assert!(s.min <= s.mean + 1e-6 && s.mean <= s.max + 1e-6);
        prop_assert!(s.stddev >= 0.0 && s.mad >= 0.0);
        for &i in &s.outliers {
            let d = (v[i] - s.median).abs();
            prop_assert!(s.mad == 0.0 || 0.6745 * d / s.mad > 3.5);
        }
    }

    #[test]
    fn bh_is_monotone_and_bounded(p in prop::collection::vec(0.0f64..=1.0, 1..30)) {
        let adj = benjamini_hochberg(&p);
        for i in 0..p.len() {
            prop_assert!(adj[i] >= p[i] && adj[i] <= 1.0);
            for j in 0..p.len() {
                if p[i] <= p[j] {
                    prop_assert!(adj[i] <= adj[j]);
                }
            }
        }
    }

    #[test]
    fn mann_whitney_is_symmetric(a in positive_samples(), b in positive_samples()) {
        let (u1, p1) = mann_whitney_u(&a, &b);
        let (u2, p2) = mann_whitney_u(&b, &a);
        prop_assert!((u1 + u2 - (a.len() * b.len()) as f64).abs() < 1e-9);
        prop_assert!((p1 - p2).abs() < 1e-12);
    }
}
