//! Per-sample-set description (stats input: one config's values of one metric -> report tables).

use serde::Serialize;

/// Descriptive statistics of one sample set. Outliers are flagged, never removed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n - 1 divisor); 0 for n < 2.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad: f64,
    /// Indices into the input whose modified z-score exceeds 3.5.
    pub outliers: Vec<usize>,
}

/// Threshold of the modified z-score recommended by Iglewicz & Hoaglin.
const OUTLIER_Z: f64 = 3.5;
/// Makes MAD comparable to a standard deviation under normality (1 / 1.4826).
const MAD_TO_Z: f64 = 0.6745;

impl Summary {
    /// Summarises `values`. An empty slice gives n = 0 and NaN statistics rather than a panic,
    /// because a config whose trials all failed still appears in reports.
    pub fn of(values: &[f64]) -> Summary {
        let n = values.len();
        if n == 0 {
            return Summary {
                n,
                median: f64::NAN,
                mean: f64::NAN,
                stddev: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
                mad: f64::NAN,
                outliers: Vec::new(),
            };
        }
        let med = median(values);
        let mean = values.iter().sum::<f64>() / n as f64;
        let stddev = if n < 2 {
            0.0
        } else {
            let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt()
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let deviations: Vec<f64> = values.iter().map(|v| (v - med).abs()).collect();
        let mad = median(&deviations);
        let outliers = deviations
            .iter()
            .enumerate()
            .filter(|(_, d)| {
                if mad > 0.0 {
                    MAD_TO_Z * **d / mad > OUTLIER_Z
                } else {
                    // Over half the values equal the median: anything else is infinitely far.
                    **d > 0.0
                }
            })
            .map(|(i, _)| i)
            .collect();
        Summary {
            n,
            median: med,
            mean,
            stddev,
            min,
            max,
            mad,
            outliers,
        }
    }
}

/// Median of `values` (mean of the two middle values for even n); NaN for an empty slice.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    median_in_place(&mut v)
}

/// Median that reorders `buf` instead of copying it.
fn median_in_place(buf: &mut [f64]) -> f64 {
    let n = buf.len();
    if n == 0 {
        return f64::NAN;
    }
    let mid = n / 2;
    let (lower, m, _) = buf.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *m;
    if n % 2 == 1 {
        upper
    } else {
        // The largest of the lower half is the other middle value.
        let below = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (below + upper) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, 100.0]);
        assert_eq!(s.n, 5);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 22.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 100.0);
        assert_eq!(s.mad, 1.0);
        // sample variance of [1,2,3,4,100] = 7610 / 4
        assert!((s.stddev - (7610.0f64 / 4.0).sqrt()).abs() < 1e-12);
        assert_eq!(s.outliers, vec![4]);
    }

    #[test]
    fn even_median_and_empty_input() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert!(median(&[]).is_nan());
        let empty = Summary::of(&[]);
        assert_eq!(empty.n, 0);
        assert!(empty.median.is_nan());
        let one = Summary::of(&[7.0]);
        assert_eq!((one.median, one.stddev, one.mad), (7.0, 0.0, 0.0));
        assert!(one.outliers.is_empty());
    }

    #[test]
    fn zero_mad_flags_values_off_the_median() {
        let s = Summary::of(&[5.0, 5.0, 5.0, 5.0, 6.0]);
        assert_eq!(s.mad, 0.0);
        assert_eq!(s.outliers, vec![4]);
    }
}
