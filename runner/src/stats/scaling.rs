//! Scaling statistics: speedup and efficiency against a reference thread count, Amdahl's serial
//! fraction and the cost exponent of a problem size, each with a seeded percentile-bootstrap
//! interval (stats internals: used by the report's Scaling section).
//!
//! Every estimator sees a config only through the median of its trials, like the rest of the
//! reports. Intervals resample the trials within each config independently (configs are
//! independent samples) and refit; the interval is the 2.5% and 97.5% quantiles of the refits.
//!
//! **Serial fraction.** Amdahl's model `T(p) = T1 · (f + (1 − f)/p)` is linear in `x = 1/p`:
//! `T = a + b·x` with `T1 = a + b` and `f = a / (a + b)`. It is fitted by weighted least squares
//! with weights `1/T²`, i.e. on relative residuals, because timing noise grows with the time:
//! unweighted, the slow 1-thread point would dominate the fit. The fit uses every point,
//! including the reference one, and needs no point at `p = 1` (`T1` is a fitted parameter, not
//! the measured 1-thread median taken as exact). The Karp-Flatt metric was not chosen as the
//! primary estimate: it is undefined at `p = 1`, divides by the reference median as if it were
//! noise-free, and gives one value per point that would still have to be combined. With two
//! points the fit is exact and equals the Karp-Flatt metric `(1/S − 1/p) / (1 − 1/p)` of the
//! larger count (when the other one is 1), so its interval reflects trial noise only, never
//! the model's lack of fit.
//!
//! **Cost exponent.** `b` in `T ∝ size^b`: the ordinary least-squares slope of `ln median(T)`
//! against `ln size`. Logarithms make multiplicative noise additive, so equal weights fit.
//!
//! No estimate is clamped: a serial fraction below 0 (a speedup above the thread ratio) or
//! above 1 (slower with more threads) says the model does not describe the points, and the
//! report says so instead of hiding it.

use super::bootstrap::{medians_replicates, percentile_interval, ratio_of_medians_replicates};
use super::median;

/// Level of every interval here.
const CONFIDENCE: f64 = 0.95;

/// A point estimate with its 95% percentile-bootstrap interval; `value` is NaN when it could not
/// be computed, `ci` is `None` when no interval could be (too few trials, or more than 1% of
/// the refits failed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub ci: Option<(f64, f64)>,
}

impl Estimate {
    const NONE: Estimate = Estimate {
        value: f64::NAN,
        ci: None,
    };
}

/// Amdahl's model fitted to `(p, T)` points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AmdahlFit {
    /// Modelled time at one thread.
    pub t1: f64,
    /// `f`: the share of `t1` that does not shrink with more threads.
    pub serial_fraction: f64,
}

impl AmdahlFit {
    /// Modelled time at `p` threads.
    pub fn time(&self, p: f64) -> f64 {
        self.t1 * (self.serial_fraction + (1.0 - self.serial_fraction) / p)
    }
}

/// `T ∝ size^exponent` fitted to `(size, T)` points: `T = coefficient · size^exponent`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerFit {
    pub exponent: f64,
    pub coefficient: f64,
}

impl PowerFit {
    pub fn time(&self, size: f64) -> f64 {
        self.coefficient * size.powf(self.exponent)
    }
}

/// Weighted least-squares line `y = a + b·x`; `None` without two distinct `x`.
fn weighted_line(points: impl Iterator<Item = (f64, f64, f64)>) -> Option<(f64, f64)> {
    let (mut w, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (x, y, wt) in points {
        w += wt;
        sx += wt * x;
        sy += wt * y;
        sxx += wt * x * x;
        sxy += wt * x * y;
    }
    let det = w * sxx - sx * sx;
    // Relative to the scale of the x values, so equal x (no slope to fit) is caught.
    if det.is_nan() || det <= 1e-12 * w * sxx {
        return None;
    }
    let b = (w * sxy - sx * sy) / det;
    Some(((sy - b * sx) / w, b))
}

/// Amdahl's model fitted to `(p, T)` points (see the module docs); `None` without two distinct
/// positive thread counts, with a non-positive time, or when the fitted `T1` is not positive.
pub fn amdahl_fit(points: &[(f64, f64)]) -> Option<AmdahlFit> {
    if points.iter().any(|&(p, t)| !(p > 0.0 && t > 0.0 && t.is_finite())) {
        return None;
    }
    let (a, b) = weighted_line(points.iter().map(|&(p, t)| (1.0 / p, t, 1.0 / (t * t))))?;
    let t1 = a + b;
    (t1 > 0.0 && t1.is_finite()).then(|| AmdahlFit {
        t1,
        serial_fraction: a / t1,
    })
}

/// `T ∝ size^b` fitted to `(size, T)` points by least squares in log-log space; `None` without
/// two distinct positive sizes or with a non-positive time.
pub fn power_fit(points: &[(f64, f64)]) -> Option<PowerFit> {
    if points
        .iter()
        .any(|&(s, t)| !(s > 0.0 && t > 0.0 && s.is_finite() && t.is_finite()))
    {
        return None;
    }
    let (ln_c, b) = weighted_line(points.iter().map(|&(s, t)| (s.ln(), t.ln(), 1.0)))?;
    Some(PowerFit {
        exponent: b,
        coefficient: ln_c.exp(),
    })
}

/// `fit` of the per-point medians, with a bootstrap interval from refitting resampled medians.
/// Points without samples are left out; the interval needs at least two samples at every point.
fn fitted(
    samples: &[(f64, Vec<f64>)],
    resamples: usize,
    seed: u64,
    fit: impl Fn(&[(f64, f64)]) -> Option<f64>,
) -> Estimate {
    let used: Vec<&(f64, Vec<f64>)> = samples.iter().filter(|(_, v)| !v.is_empty()).collect();
    let xs: Vec<f64> = used.iter().map(|(x, _)| *x).collect();
    let points: Vec<(f64, f64)> = used.iter().map(|(x, v)| (*x, median(v))).collect();
    let Some(value) = fit(&points) else {
        return Estimate::NONE;
    };
    let ci = if used.iter().all(|(_, v)| v.len() >= 2) {
        let slices: Vec<&[f64]> = used.iter().map(|(_, v)| v.as_slice()).collect();
        let mut buf: Vec<(f64, f64)> = points.clone();
        let reps = medians_replicates(&slices, resamples, seed, |medians| {
            for ((pt, x), m) in buf.iter_mut().zip(&xs).zip(medians) {
                *pt = (*x, *m);
            }
            fit(&buf).unwrap_or(f64::NAN)
        });
        percentile_interval(reps, CONFIDENCE)
    } else {
        None
    };
    Estimate { value, ci }
}

/// Amdahl's serial fraction from trial times per thread count `(p, times)` (see the module
/// docs): a model fit, with a bootstrap interval over trials within each config.
pub fn serial_fraction(samples_by_p: &[(f64, Vec<f64>)], resamples: usize, seed: u64) -> Estimate {
    fitted(samples_by_p, resamples, seed, |pts| {
        amdahl_fit(pts).map(|f| f.serial_fraction)
    })
}

/// The exponent `b` in `T ∝ size^b` from trial times per size `(size, times)`, with a bootstrap
/// interval over trials within each config.
pub fn cost_exponent(samples_by_size: &[(f64, Vec<f64>)], resamples: usize, seed: u64) -> Estimate {
    fitted(samples_by_size, resamples, seed, |pts| {
        power_fit(pts).map(|f| f.exponent)
    })
}

/// Speedup `median(reference) / median(at)` (> 1: `at` takes less time), with a bootstrap
/// interval that resamples both sides independently; no interval with fewer than two trials on
/// either side.
pub fn speedup(reference: &[f64], at: &[f64], resamples: usize, seed: u64) -> Estimate {
    if reference.is_empty() || at.is_empty() {
        return Estimate::NONE;
    }
    let value = median(reference) / median(at);
    let ci = (reference.len() >= 2 && at.len() >= 2)
        .then(|| percentile_interval(ratio_of_medians_replicates(at, reference, resamples, seed), CONFIDENCE))
        .flatten();
    Estimate { value, ci }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESAMPLES: usize = 10_000;
    const SEED: u64 = 0x5ca1e;

    /// Ten samples of `t` with a fixed ±2% multiplicative pattern: deterministic, median exactly `t`.
    fn noisy(t: f64) -> Vec<f64> {
        (0..10).map(|i| t * (1.0 + 0.01 * (f64::from(i % 5) - 2.0))).collect()
    }

    fn covers(e: &Estimate, truth: f64) -> bool {
        e.ci.is_some_and(|(lo, hi)| lo <= truth && truth <= hi)
    }

    fn amdahl_samples(ps: &[f64]) -> Vec<(f64, Vec<f64>)> {
        ps.iter().map(|&p| (p, noisy(1.0 * (0.2 + 0.8 / p)))).collect()
    }

    #[test]
    fn serial_fraction_interval_covers_the_true_fraction() {
        let e = serial_fraction(&amdahl_samples(&[1.0, 2.0, 4.0, 8.0]), RESAMPLES, SEED);
        assert!((e.value - 0.2).abs() < 1e-9, "{e:?}");
        assert!(covers(&e, 0.2), "{e:?}");
        let (lo, hi) = e.ci.unwrap();
        // Noise of ±2% cannot leave the fraction anywhere near 0 or 0.4.
        assert!(lo > 0.15 && hi < 0.25, "{e:?}");
        // Seeded: the same interval every time.
        assert_eq!(
            serial_fraction(&amdahl_samples(&[1.0, 2.0, 4.0, 8.0]), RESAMPLES, SEED),
            e
        );
    }

    #[test]
    fn serial_fraction_needs_no_one_thread_point_and_two_points_fit_exactly() {
        let e = serial_fraction(&amdahl_samples(&[2.0, 4.0, 8.0]), RESAMPLES, SEED);
        assert!((e.value - 0.2).abs() < 1e-9 && covers(&e, 0.2), "{e:?}");
        // Two points: the fit is exact, and equals the Karp-Flatt metric of the larger count.
        let pts = [(1.0, 1.0), (4.0, 0.4)];
        let s = 1.0 / 0.4;
        let karp_flatt = (1.0 / s - 0.25) / (1.0 - 0.25);
        let fit = amdahl_fit(&pts).unwrap();
        assert!((fit.serial_fraction - karp_flatt).abs() < 1e-12, "{fit:?}");
        assert!((fit.time(1.0) - 1.0).abs() < 1e-12 && (fit.time(4.0) - 0.4).abs() < 1e-12);
    }

    #[test]
    fn serial_fraction_is_not_clamped_and_degenerate_input_gives_none() {
        // Superlinear: 8 threads take less than an eighth of the time.
        let fit = amdahl_fit(&[(1.0, 1.0), (8.0, 0.1)]).unwrap();
        assert!(fit.serial_fraction < 0.0, "{fit:?}");
        assert!(amdahl_fit(&[(2.0, 1.0), (2.0, 1.1)]).is_none());
        assert!(amdahl_fit(&[(1.0, 1.0)]).is_none());
        assert!(amdahl_fit(&[(1.0, 0.0), (2.0, 1.0)]).is_none());
        let e = serial_fraction(&[(1.0, vec![1.0, 1.1]), (2.0, vec![])], RESAMPLES, SEED);
        assert!(e.value.is_nan() && e.ci.is_none(), "{e:?}");
        // One trial at a point: an estimate, but no interval.
        let e = serial_fraction(&[(1.0, vec![1.0]), (2.0, vec![0.6, 0.61])], RESAMPLES, SEED);
        assert!(e.value.is_finite() && e.ci.is_none(), "{e:?}");
    }

    fn power_samples(exponent: f64) -> Vec<(f64, Vec<f64>)> {
        [10.0f64, 100.0, 1000.0]
            .iter()
            .map(|&s| (s, noisy(1e-3 * s.powf(exponent))))
            .collect()
    }

    #[test]
    fn cost_exponent_interval_covers_the_true_exponent_and_excludes_the_other() {
        let linear = cost_exponent(&power_samples(1.0), RESAMPLES, SEED);
        let quadratic = cost_exponent(&power_samples(2.0), RESAMPLES, SEED);
        assert!((linear.value - 1.0).abs() < 1e-9 && covers(&linear, 1.0), "{linear:?}");
        assert!(!covers(&linear, 2.0), "{linear:?}");
        assert!(
            (quadratic.value - 2.0).abs() < 1e-9 && covers(&quadratic, 2.0),
            "{quadratic:?}"
        );
        assert!(!covers(&quadratic, 1.0), "{quadratic:?}");
        let fit = power_fit(&[(10.0, 0.01), (1000.0, 100.0)]).unwrap();
        assert!(
            (fit.exponent - 2.0).abs() < 1e-12 && (fit.time(100.0) - 1.0).abs() < 1e-9,
            "{fit:?}"
        );
        assert!(power_fit(&[(10.0, 1.0), (10.0, 2.0)]).is_none());
    }

    #[test]
    fn speedup_is_a_ratio_of_medians_with_an_interval() {
        let e = speedup(&noisy(1.0), &noisy(0.5), RESAMPLES, SEED);
        assert!((e.value - 2.0).abs() < 1e-12, "{e:?}");
        assert!(covers(&e, 2.0), "{e:?}");
        assert!(speedup(&[1.0], &[0.5, 0.6], RESAMPLES, SEED).ci.is_none());
        assert!(speedup(&[], &[0.5], RESAMPLES, SEED).value.is_nan());
    }
}
