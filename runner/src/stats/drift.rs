//! Whether the machine held still during a run (stats: a config's values in trial order ->
//! level change and trial-to-trial jitter, and the flags the console, `show` and the report
//! print).
//!
//! **Level change**: the median of the last third of the trials over the median of the first
//! third. Its 95% interval comes from the difference of the thirds' mean logs, with a standard
//! error that counts the noise's memory: neighbouring trials on a real machine are not
//! independent (a cache that warms, a clock that boosts for a while), and an interval that
//! treats them as independent calls a machine whose level merely wanders "drifting". The
//! residuals around a straight line through the log values give the noise's variance `s^2`
//! and its lag-1 autocorrelation `r` (bias-corrected, `r + (1 + 3 r) / n`, clamped to
//! `[0, 0.95]`); a third of `m` trials then has a mean with variance `s^2 (1 + r) / ((1 - r)
//! m)`, the AR(1) variance of a mean. The line takes a real trend out of the residuals, so a
//! drift does not inflate its own noise. The interval is the difference `+- t sqrt(2 var)`,
//! with `t` at the effective degrees of freedom `n (1 - r) / (1 + r) - 2` (at least 1). The
//! run is *drifting* when that interval lies wholly outside the noise band. That takes 12
//! trials (four per third).
//!
//! **Trial-to-trial CV**: `sqrt(sum (x_{i+1} - x_i)^2 / (2 (n - 1))) / mean(x)`, the von
//! Neumann estimate of the standard deviation from successive differences. A slow drift
//! barely moves neighbouring trials apart, so this measures the jitter the paired analysis
//! has to live with, not the drift it cancels. The run is *jittery* above 5%.

use serde::Serialize;

use super::dist::student_t_quantile;
use super::summary::median;

/// A trial-to-trial CV above this flags a jittery machine.
pub const JITTER_CV: f64 = 0.05;

/// Fewest trials (two per third) for which stability is computed.
pub const MIN_STABILITY_TRIALS: usize = 6;

/// Fewest trials (four per third) from which a level change can flag a drifting machine.
pub const MIN_DRIFT_TRIALS: usize = 12;

/// Largest lag-1 autocorrelation the level change's interval assumes: beyond it a run is too
/// short to tell a wandering level from a trend, and the interval is as wide as at 0.95.
const MAX_AUTOCORRELATION: f64 = 0.95;

/// How steady one config's values were over a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stability {
    /// Values used, in trial order.
    pub trials: usize,
    /// Median of the last third over the median of the first third.
    pub level_change: f64,
    /// 95% interval of the change in level, allowing for autocorrelated noise.
    pub level_change_ci: Option<(f64, f64)>,
    /// Trial-to-trial coefficient of variation, from successive differences.
    pub cv: f64,
    /// `level_change_ci` lies wholly outside the noise band, over at least
    /// [`MIN_DRIFT_TRIALS`] trials.
    pub drifting: bool,
    /// `cv` above [`JITTER_CV`].
    pub jittery: bool,
}

/// Residuals of `y` around its least-squares line over `0..n`.
fn detrended(y: &[f64]) -> Vec<f64> {
    let n = y.len() as f64;
    let xm = (n - 1.0) / 2.0;
    let ym = y.iter().sum::<f64>() / n;
    let sxx: f64 = (0..y.len()).map(|i| (i as f64 - xm).powi(2)).sum();
    let sxy: f64 = y.iter().enumerate().map(|(i, v)| (i as f64 - xm) * (v - ym)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    y.iter()
        .enumerate()
        .map(|(i, v)| v - ym - slope * (i as f64 - xm))
        .collect()
}

/// The 95% interval of the change in mean log level from the first third of `logs` to the
/// last, with the variance of each third's mean inflated for AR(1) noise (see the module docs).
fn level_change_interval(logs: &[f64], third: usize) -> Option<(f64, f64)> {
    let n = logs.len();
    let r = detrended(logs);
    let var = r.iter().map(|e| e * e).sum::<f64>() / (n as f64 - 2.0);
    let lag1 =
        r.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / r.iter().map(|e| e * e).sum::<f64>().max(f64::MIN_POSITIVE);
    let rho = (lag1 + (1.0 + 3.0 * lag1) / n as f64).clamp(0.0, MAX_AUTOCORRELATION);
    let inflation = (1.0 + rho) / (1.0 - rho);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let diff = mean(&logs[n - third..]) - mean(&logs[..third]);
    let se = (2.0 * var * inflation / third as f64).sqrt();
    let df = (n as f64 / inflation - 2.0).max(1.0);
    let half = student_t_quantile(0.975, df) * se;
    (half.is_finite() && diff.is_finite()).then(|| ((diff - half).exp(), (diff + half).exp()))
}

/// The stability of `values` (one config's, in trial order) against a noise band of
/// `±band`; `None` for fewer than [`MIN_STABILITY_TRIALS`] values or values that are not
/// all positive and finite.
pub fn stability(values: &[f64], band: f64) -> Option<Stability> {
    let n = values.len();
    if n < MIN_STABILITY_TRIALS || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let third = n / 3;
    let (first, last) = (&values[..third], &values[n - third..]);
    let level_change = median(last) / median(first);
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let level_change_ci = level_change_interval(&logs, third);
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
        let s = stability(&climbing, 0.02).unwrap();
        assert!(s.drifting && (s.level_change - 1.01f64.powi(20)).abs() < 0.01, "{s:?}");
        // Successive trials differ by 1%: the CV sees jitter of about 0.7%, not the drift.
        assert!(s.cv < 0.01 && !s.jittery, "{s:?}");
        let steady: Vec<f64> = (0..30).map(|i| 1.0 + 0.004 * f64::from(i % 3)).collect();
        let s = stability(&steady, 0.02).unwrap();
        assert!(!s.drifting && !s.jittery, "{s:?}");
    }

    #[test]
    fn alternating_values_are_jittery() {
        let v: Vec<f64> = (0..12).map(|i| if i % 2 == 0 { 1.0 } else { 1.2 }).collect();
        let s = stability(&v, 0.02).unwrap();
        // Successive differences of 0.2 around a mean of 1.1: sqrt(0.04 / 2) / 1.1.
        assert!((s.cv - (0.02f64).sqrt() / 1.1).abs() < 1e-12 && s.jittery, "{s:?}");
        assert!(!s.drifting, "{s:?}");
    }

    #[test]
    fn a_drift_over_fewer_than_twelve_trials_is_shown_but_not_flagged() {
        let climbing: Vec<f64> = (0..8).map(|i| 1.05f64.powi(i)).collect();
        let s = stability(&climbing, 0.02).unwrap();
        assert!(s.level_change > 1.2 && !s.drifting, "{s:?}");
    }

    #[test]
    fn too_few_or_non_positive_values_give_nothing() {
        assert_eq!(stability(&[1.0; 5], 0.02), None);
        assert_eq!(stability(&[1.0, 1.0, 0.0, 1.0, 1.0, 1.0], 0.02), None);
    }
}
