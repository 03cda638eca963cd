//! How finely a config's values were printed (stats internals: one config's values -> the grid
//! they lie on -> bounds that the paired and independent comparisons widen their intervals by).
//!
//! A command stage that prints whole milliseconds for a 10 ms stage gives values on a 1 ms grid:
//! a true 3% speedup then reads 10 ms on both sides in most blocks, most per-block log ratios
//! are exactly 0, and an interval computed as if the values were exact collapses to 1.00x-1.00x.
//! No procedure can recover what the printing threw away. What stays valid is to treat every
//! printed value `v` as "somewhere in `[v - q/2, v + q/2]`" (`q` the grid step) and to widen
//! each end of the interval by what the rounding could have hidden (see `stats::paired`).
//!
//! The grid step is found from the values themselves, in two ways:
//! - **decimal places**: a value printed to `k` decimals, stored as a double, reads back with at
//!   most `k` fractional digits in its shortest form; decimal printing has a step of `10^-k`
//!   for the largest `k` among the values;
//! - **gaps**: where values repeat (which continuous timings never do), the smallest gap between
//!   distinct values, when every other gap is a whole multiple of it. That finds grids that are
//!   not decimal (a clock that ticks 64 times a second) and is never below the true step.
//!
//! The resolution is the larger of the two where the values repeat on a grid, else the decimal
//! step: when in doubt, the wider bound, so the widening is never too small. Values with
//! [`CONTINUOUS_DIGITS`] or more fractional digits (a clock's nanoseconds in seconds) have none.

use serde::{Deserialize, Serialize};

/// Fractional digits beyond which a value is taken as continuous: a double has 17 significant
/// digits, so a timing in seconds printed in full has about that many.
const CONTINUOUS_DIGITS: usize = 12;

/// Number of fractional digits in the shortest decimal form of `v` that reads back as `v`.
fn fraction_digits(v: f64) -> usize {
    // Rust's `Display` for f64 is the shortest round-trip form, without an exponent.
    let s = format!("{}", v.abs());
    s.split_once('.').map_or(0, |(_, frac)| frac.len())
}

/// The grid step of values that repeat: the smallest gap between distinct values, when every
/// gap is a whole multiple of it (to a relative 1e-6, which absorbs binary rounding of decimal
/// steps); `None` when no value repeats or the gaps are not on one grid.
fn gap_step(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let distinct: Vec<f64> = {
        let mut d = sorted.clone();
        d.dedup();
        d
    };
    if distinct.len() == sorted.len() || distinct.len() < 2 {
        return None;
    }
    let gaps: Vec<f64> = distinct.windows(2).map(|w| w[1] - w[0]).collect();
    let step = gaps.iter().copied().fold(f64::INFINITY, f64::min);
    if !(step > 0.0 && step.is_finite()) {
        return None;
    }
    gaps.iter()
        .all(|g| {
            let k = g / step;
            (k - k.round()).abs() <= 1e-6 * k.max(1.0)
        })
        .then_some(step)
}

/// The resolution of `values`: the rounding step they were printed at, or 0 for values that
/// carry more digits than any printed figure ([`CONTINUOUS_DIGITS`]). Non-finite values are
/// ignored.
pub fn resolution(values: &[f64]) -> f64 {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.is_empty() {
        return 0.0;
    }
    let digits = finite.iter().map(|v| fraction_digits(*v)).max().unwrap_or(0);
    if digits >= CONTINUOUS_DIGITS {
        return 0.0;
    }
    let decimal = 10f64.powi(-(digits as i32));
    match gap_step(&finite) {
        Some(g) => g.max(decimal),
        None => decimal,
    }
}

/// The resolution of both sides of a comparison, and what it means next to their medians.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// Grid step of the baseline's values, in their unit (0 when continuous).
    pub baseline: f64,
    /// Grid step of the candidate's values.
    pub candidate: f64,
    /// The larger step over its side's median: how much of a value the printing may hide.
    pub relative: f64,
}

impl Resolution {
    /// The resolution of two sides with these medians; `None` when both are continuous (or the
    /// medians are not positive, when no ratio is defined anyway).
    pub fn of(baseline: f64, candidate: f64, baseline_median: f64, candidate_median: f64) -> Option<Resolution> {
        if (baseline <= 0.0 && candidate <= 0.0) || !(baseline_median > 0.0 && candidate_median > 0.0) {
            return None;
        }
        let relative = (baseline / baseline_median).max(candidate / candidate_median);
        Some(Resolution {
            baseline,
            candidate,
            relative,
        })
    }

    /// The step that matters for a message: the larger of the two.
    pub fn step(&self) -> f64 {
        self.baseline.max(self.candidate)
    }

    /// Whether the printing limits what can be told against a noise band of `±band`: the
    /// rounding alone may hide at least half the band. Reports then name the resolution and
    /// drop the smallest detectable effect, which assumes values measured to the last digit.
    pub fn limits(&self, band: f64) -> bool {
        self.relative >= band / 2.0
    }

    /// Whether no effect inside the band can be told apart from no effect at all: the
    /// rounding alone may hide a whole band's width. More blocks do not help; more printed
    /// digits do.
    pub fn coarse(&self, band: f64) -> bool {
        (1.0 + self.relative).ln() >= band
    }
}

/// The per-block log ratio bounds `(lower, upper)` of `(baseline, candidate)` values each known
/// only to within half a step: `ln((c - qc/2) / (b + qb/2))` and `ln((c + qc/2) / (b - qb/2))`.
/// `None` when a lower edge reaches zero (a value within half a step of 0 bounds no ratio).
pub(crate) fn log_ratio_bounds(pairs: &[(f64, f64)], step: (f64, f64)) -> Option<(Vec<f64>, Vec<f64>)> {
    let (hb, hc) = (step.0 / 2.0, step.1 / 2.0);
    let mut lower = Vec::with_capacity(pairs.len());
    let mut upper = Vec::with_capacity(pairs.len());
    for &(b, c) in pairs {
        if b - hb <= 0.0 || c - hc <= 0.0 {
            return None;
        }
        lower.push(((c - hc) / (b + hb)).ln());
        upper.push(((c + hc) / (b - hb)).ln());
    }
    Some((lower, upper))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_milliseconds_have_a_millisecond_step() {
        // Printed in ms as whole numbers.
        assert_eq!(resolution(&[10.0, 11.0, 10.0, 9.0]), 1.0);
        // The same in seconds: three decimals.
        let s = [0.010, 0.011, 0.010, 0.009];
        assert!((resolution(&s) - 0.001).abs() < 1e-15, "{}", resolution(&s));
        // Values that repeat on a 2 ms grid, written with 3 decimals: the gaps say 2 ms, the
        // decimals 1 ms; the wider bound is kept.
        assert!((resolution(&[0.010, 0.012, 0.010, 0.014]) - 0.002).abs() < 1e-15);
        // Whole numbers that repeat on a grid of 5.
        assert_eq!(resolution(&[100.0, 105.0, 100.0, 115.0]), 5.0);
        // Whole numbers that never repeat: only the decimals speak.
        assert_eq!(resolution(&[100.0, 105.0, 101.0, 115.0]), 1.0);
    }

    #[test]
    fn a_gap_grid_finer_than_the_decimals_is_found() {
        // A clock of 64 ticks a second: 6 decimals, but the values repeat on its tick.
        let tick = 1.0 / 64.0;
        assert_eq!(resolution(&[10.0 * tick, 11.0 * tick, 10.0 * tick, 13.0 * tick]), tick);
        // Values that repeat on no common grid: only the decimals bound the step.
        assert_eq!(gap_step(&[1.0, 1.3, 1.0, 2.0]), None);
    }

    #[test]
    fn continuous_timings_have_no_resolution() {
        let v = [0.010_234_567_891_234, 0.010_298_765_432_1, 0.009_876_543_219_87];
        assert_eq!(resolution(&v), 0.0);
        assert_eq!(resolution(&[]), 0.0);
        assert_eq!(Resolution::of(0.0, 0.0, 1.0, 1.0), None);
    }

    #[test]
    fn a_millisecond_on_ten_is_coarse_against_a_two_percent_band() {
        let r = Resolution::of(0.001, 0.001, 0.010, 0.0097).unwrap();
        assert!((r.relative - 0.001 / 0.0097).abs() < 1e-12);
        assert!(r.coarse(0.02) && r.limits(0.02));
        // A microsecond on 150 µs: 0.7%, below half a 2% band.
        let fine = Resolution::of(1.0, 1.0, 150.0, 151.0).unwrap();
        assert!(!fine.coarse(0.02) && !fine.limits(0.02));
    }

    #[test]
    fn bounds_hold_every_value_the_rounding_could_hide() {
        let (lo, hi) = log_ratio_bounds(&[(10.0, 10.0)], (1.0, 1.0)).unwrap();
        assert!((lo[0] - (9.5f64 / 10.5).ln()).abs() < 1e-15);
        assert!((hi[0] - (10.5f64 / 9.5).ln()).abs() < 1e-15);
        assert_eq!(log_ratio_bounds(&[(0.4, 10.0)], (1.0, 1.0)), None);
    }
}
