//! Training-period statistics and their application (compute -> normalize -> windows).
//!
//! Statistics see only rows dated before the split, and the same numbers scale the
//! validation rows, so the model never learns anything about the validation period's
//! distribution. Pooled statistics are combined in symbol order, never in completion order,
//! so a parallel run produces the same bits as a sequential one.

use super::compute::SymbolFeatures;
use crate::kinds::normalize::NormMethod;
use rayon::prelude::*;

/// Per-feature `center` and `scale`: a normalized value is `(x - center) / scale`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stats {
    pub(crate) center: Vec<f64>,
    pub(crate) scale: Vec<f64>,
}

impl Stats {
    /// Builds statistics from centers and spreads (standard deviation or IQR / 1.349).
    fn from_parts(center: Vec<f64>, spread: Vec<f64>) -> Stats {
        // A feature constant over the training rows has no spread: keep it centered, unscaled.
        let scale = spread
            .into_iter()
            .map(|s| if s.is_finite() && s > 0.0 { s } else { 1.0 })
            .collect();
        Stats { center, scale }
    }
}

/// Count, mean and sum of squared deviations of one feature over some rows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Moments {
    pub(crate) count: f64,
    pub(crate) mean: f64,
    pub(crate) m2: f64,
}

impl Moments {
    /// Two passes (mean, then squared deviations): more accurate than running sums.
    pub(crate) fn of(values: &[f64]) -> Moments {
        if values.is_empty() {
            return Moments::default();
        }
        let count = values.len() as f64;
        let mean = values.iter().sum::<f64>() / count;
        let m2 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        Moments { count, mean, m2 }
    }

    /// Chan et al.'s pairwise combination of two disjoint sets.
    pub(crate) fn merge(self, other: Moments) -> Moments {
        if self.count == 0.0 {
            return other;
        }
        if other.count == 0.0 {
            return self;
        }
        let count = self.count + other.count;
        let delta = other.mean - self.mean;
        let mean = self.mean + delta * other.count / count;
        let m2 = self.m2 + other.m2 + delta * delta * self.count * other.count / count;
        Moments { count, mean, m2 }
    }

    fn sd(&self) -> f64 {
        if self.count < 2.0 {
            f64::NAN
        } else {
            (self.m2 / (self.count - 1.0)).sqrt()
        }
    }
}

/// Dividing the interquartile range by this gives the standard deviation of a normal
/// distribution, so robust units read like z-scores.
const IQR_TO_SD: f64 = 1.349;

/// Linear-interpolation quantile (numpy's default) without sorting: selecting the two order
/// statistics it interpolates between is O(n), and they are the values a sort would put there.
pub(crate) fn select_quantile(values: &mut [f64], q: f64) -> f64 {
    let pos = q * (values.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let (_, &mut low, right) = values.select_nth_unstable_by(lo, f64::total_cmp);
    let high = if pos > lo as f64 {
        right.iter().copied().min_by(f64::total_cmp).unwrap_or(low)
    } else {
        low
    };
    low + (high - low) * (pos - lo as f64)
}

fn median_iqr(values: &mut [f64]) -> (f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let median = select_quantile(values, 0.5);
    let iqr = select_quantile(values, 0.75) - select_quantile(values, 0.25);
    (median, iqr / IQR_TO_SD)
}

/// Statistics of one symbol over its training rows `rows` (start..end, end exclusive).
pub(crate) fn symbol_stats(
    sym: &SymbolFeatures,
    n_features: usize,
    rows: std::ops::Range<usize>,
    method: NormMethod,
) -> Stats {
    let mut center = Vec::with_capacity(n_features);
    let mut spread = Vec::with_capacity(n_features);
    let mut scratch = Vec::new();
    for j in 0..n_features {
        let values = &sym.col(j)[rows.clone()];
        match method {
            NormMethod::ZScore => {
                let m = Moments::of(values);
                center.push(m.mean);
                spread.push(m.sd());
            }
            NormMethod::Robust => {
                scratch.clear();
                scratch.extend_from_slice(values);
                let (c, s) = median_iqr(&mut scratch);
                center.push(c);
                spread.push(s);
            }
        }
    }
    Stats::from_parts(center, spread)
}

/// One set of statistics over the training rows of all symbols; `rows[s]` are symbol `s`'s
/// training rows. Partial results are combined in symbol order whatever the thread count.
pub(crate) fn pooled_stats(
    syms: &[SymbolFeatures],
    rows: &[std::ops::Range<usize>],
    n_features: usize,
    method: NormMethod,
    parallel: bool,
) -> Stats {
    let per_feature = |j: usize| -> (f64, f64) {
        match method {
            NormMethod::ZScore => {
                let total = syms
                    .iter()
                    .zip(rows)
                    .map(|(s, r)| Moments::of(&s.col(j)[r.clone()]))
                    .fold(Moments::default(), Moments::merge);
                (total.mean, total.sd())
            }
            NormMethod::Robust => {
                let len = rows.iter().map(|r| r.len()).sum();
                let mut all = Vec::with_capacity(len);
                for (s, r) in syms.iter().zip(rows) {
                    all.extend_from_slice(&s.col(j)[r.clone()]);
                }
                median_iqr(&mut all)
            }
        }
    };
    // Features are independent, so they are the unit of parallel work; within a feature the
    // fold runs in a fixed order.
    let pairs: Vec<(f64, f64)> = if parallel {
        (0..n_features).into_par_iter().map(per_feature).collect()
    } else {
        (0..n_features).map(per_feature).collect()
    };
    let (center, spread) = pairs.into_iter().unzip();
    Stats::from_parts(center, spread)
}

/// Writes rows `rows` of `sym`, normalized, as row-major f32 into `out`.
pub(crate) fn write_rows(
    sym: &SymbolFeatures,
    stats: &Stats,
    rows: std::ops::Range<usize>,
    clip: Option<f64>,
    out: &mut [f32],
) {
    let nf = stats.center.len();
    debug_assert_eq!(out.len(), rows.len() * nf);
    let limit = clip.unwrap_or(f64::INFINITY);
    let cols: Vec<&[f64]> = (0..nf).map(|j| &sym.col(j)[rows.clone()]).collect();
    // Row by row, so the output (the larger, freshly faulted-in buffer) is written
    // sequentially; the inputs are read as `nf` sequential streams. Each value is the same
    // expression whatever the loop order, so the bytes do not change.
    // Reciprocals would be faster but round differently from the division the docs state.
    for (i, row) in out.chunks_exact_mut(nf).enumerate() {
        for (((o, col), &c), &s) in row.iter_mut().zip(&cols).zip(&stats.center).zip(&stats.scale) {
            *o = ((col[i] - c) / s).clamp(-limit, limit) as f32;
        }
    }
}
