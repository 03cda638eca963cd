//! Whether the machine held still during a run (stats: a config's values in trial order ->
//! level change and trial-to-trial jitter, and the flags the console, `show` and the report
//! print).
//!
//! **Level change**: the median of the last third of the trials over the median of the first
//! third, with a percentile-bootstrap interval that resamples each third on its own. The run
//! is *drifting* when that interval lies wholly outside the noise band: the level moved by more
//! than the band, and by more than its own noise could explain. That takes 12 trials (four per
//! third): with two, the bootstrap has too few distinct resamples to mean its level.
//!
//! **Trial-to-trial CV**: `sqrt(sum (x_{i+1} - x_i)^2 / (2 (n - 1))) / mean(x)`, the von
//! Neumann estimate of the standard deviation from successive differences. A slow drift
//! barely moves neighbouring trials apart, so this measures the jitter the paired analysis
//! has to live with, not the drift it cancels. The run is *jittery* above 5%.

use serde::Serialize;

use super::bootstrap::{percentile_interval, ratio_of_medians_replicates};
use super::summary::median;

/// A trial-to-trial CV above this flags a jittery machine.
pub const JITTER_CV: f64 = 0.05;

/// Fewest trials (two per third) for which stability is computed.
pub const MIN_STABILITY_TRIALS: usize = 6;

/// Fewest trials (four per third) from which a level change can flag a drifting machine: a
/// bootstrap of two values per third has too few distinct resamples to hold its level.
pub const MIN_DRIFT_TRIALS: usize = 12;

/// How steady one config's values were over a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stability {
    /// Values used, in trial order.
    pub trials: usize,
    /// Median of the last third over the median of the first third.
    pub level_change: f64,
    /// 95% percentile-bootstrap interval of `level_change`.
    pub level_change_ci: Option<(f64, f64)>,
    /// Trial-to-trial coefficient of variation, from successive differences.
    pub cv: f64,
    /// `level_change_ci` lies wholly outside the noise band, over at least
    /// [`MIN_DRIFT_TRIALS`] trials.
    pub drifting: bool,
    /// `cv` above [`JITTER_CV`].
    pub jittery: bool,
}

/// The stability of `values` (one config's, in trial order) against a noise band of
/// `±band`; `None` for fewer than [`MIN_STABILITY_TRIALS`] values or values that are not
/// all positive and finite.
pub fn stability(values: &[f64], band: f64, resamples: usize, seed: u64) -> Option<Stability> {
    let n = values.len();
    if n < MIN_STABILITY_TRIALS || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let third = n / 3;
    let (first, last) = (&values[..third], &values[n - third..]);
    let level_change = median(last) / median(first);
    let level_change_ci = percentile_interval(ratio_of_medians_replicates(first, last, resamples, seed), 0.95);
    let mean = values.iter().sum::<f64>() / n as f64;
    let mssd = values.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum::<f64>() / (n - 1) as f64;
    let cv = (mssd / 2.0).sqrt() / mean;
    let drifting = n >= MIN_DRIFT_TRIALS && level_change_ci.is_some_and(|(lo, hi)| lo > 1.0 + band || hi < 1.0 - band);
    Some(Stability {
        trials: n,
        level_change,
        level_change_ci,
        cv,
        drifting,
        jittery: cv > JITTER_CV,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_that_climbs_is_drifting_and_a_steady_one_is_not() {
        // 1% more per trial over 30 trials: the last third sits ~22% above the first.
        let climbing: Vec<f64> = (0..30).map(|i| 1.01f64.powi(i)).collect();
        let s = stability(&climbing, 0.02, 2_000, 1).unwrap();
        assert!(s.drifting && (s.level_change - 1.01f64.powi(20)).abs() < 0.01, "{s:?}");
        // Successive trials differ by 1%: the CV sees jitter of about 0.7%, not the drift.
        assert!(s.cv < 0.01 && !s.jittery, "{s:?}");
        let steady: Vec<f64> = (0..30).map(|i| 1.0 + 0.004 * f64::from(i % 3)).collect();
        let s = stability(&steady, 0.02, 2_000, 1).unwrap();
        assert!(!s.drifting && !s.jittery, "{s:?}");
    }

    #[test]
    fn alternating_values_are_jittery() {
        let v: Vec<f64> = (0..12).map(|i| if i % 2 == 0 { 1.0 } else { 1.2 }).collect();
        let s = stability(&v, 0.02, 1_000, 3).unwrap();
        // Successive differences of 0.2 around a mean of 1.1: sqrt(0.04 / 2) / 1.1.
        assert!((s.cv - (0.02f64).sqrt() / 1.1).abs() < 1e-12 && s.jittery, "{s:?}");
        assert!(!s.drifting, "{s:?}");
    }

    #[test]
    fn a_drift_over_fewer_than_twelve_trials_is_shown_but_not_flagged() {
        let climbing: Vec<f64> = (0..8).map(|i| 1.05f64.powi(i)).collect();
        let s = stability(&climbing, 0.02, 1_000, 1).unwrap();
        assert!(s.level_change > 1.2 && !s.drifting, "{s:?}");
    }

    #[test]
    fn too_few_or_non_positive_values_give_nothing() {
        assert_eq!(stability(&[1.0; 5], 0.02, 100, 0), None);
        assert_eq!(stability(&[1.0, 1.0, 0.0, 1.0, 1.0, 1.0], 0.02, 100, 0), None);
    }
}
