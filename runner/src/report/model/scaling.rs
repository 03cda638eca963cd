//! The Scaling section as data (thread-count and problem-size groups with their fitted scaling
//! models, in `report.json`): `assemble::scaling` fills it, `render::scaling_view` formats it and
//! `render::charts` draws it.

use serde::Serialize;

use super::Interval;
use crate::stats::{AmdahlFit, PowerFit};

/// Thread-count and problem-size scaling of a run: `report.json`'s `scaling`, `null` when no
/// variant or sweep axis varies such a parameter.
#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    /// The timed metric every figure here is computed on: the primary metric when its unit is
    /// `s`, else `trial.seconds`.
    pub metric: String,
    pub threads: Vec<ThreadAxis>,
    pub sizes: Vec<SizeAxis>,
    /// Configs or parameters left out, and why.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadAxis {
    /// The parameter's path, `stages.features.threads`.
    pub parameter: String,
    /// File of the efficiency chart of every group.
    pub chart: String,
    pub groups: Vec<ThreadGroup>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadGroup {
    /// What the group's configs share: their variants and the other sweep values.
    pub label: String,
    /// The config speedups are taken against: the group's 1-thread config, else its smallest
    /// count with samples.
    pub reference: Option<String>,
    pub reference_threads: Option<u64>,
    /// Ascending thread counts.
    pub points: Vec<ThreadPoint>,
    /// Thread counts with samples: the points the fit used.
    pub n_points: usize,
    /// Amdahl's `f` from a weighted least-squares fit of `T(p) = T1 (f + (1 - f)/p)` to the
    /// medians: a model fit, not a measurement. Exact when `n_points` is 2. Not clamped to
    /// `[0, 1]`: values outside say the model does not describe the points.
    pub serial_fraction: Option<f64>,
    /// Percentile bootstrap over trials within each config.
    pub serial_fraction_ci: Option<Interval>,
    /// Amdahl's model fitted to the points' medians, for the chart's fitted curve.
    #[serde(skip)]
    pub fit: Option<AmdahlFit>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadPoint {
    pub config: String,
    pub threads: u64,
    /// Successful trials that recorded the metric.
    pub n: usize,
    pub median_seconds: Option<f64>,
    pub median_ci: Option<Interval>,
    /// Reference median over this median (> 1: less time); exactly 1 at the reference, which
    /// has no interval.
    pub speedup: Option<f64>,
    pub speedup_ci: Option<Interval>,
    /// `speedup * reference_threads / threads`; 1 is ideal.
    pub efficiency: Option<f64>,
    pub efficiency_ci: Option<Interval>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeAxis {
    /// The parameter's path, `stages.load.symbols`.
    pub parameter: String,
    /// `count`, or `B` for sizes written with a byte unit.
    pub unit: String,
    /// File of the log-log chart of every group.
    pub chart: String,
    pub groups: Vec<SizeGroup>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeGroup {
    /// What the group's configs share: their variants and the other sweep values.
    pub label: String,
    /// Ascending sizes.
    pub points: Vec<SizePoint>,
    /// Sizes with samples: the points the fit used.
    pub n_points: usize,
    /// `b` in `T ∝ size^b`: least-squares slope of ln(median time) on ln(size), a model fit.
    /// Exact when `n_points` is 2.
    pub exponent: Option<f64>,
    /// Percentile bootstrap over trials within each config.
    pub exponent_ci: Option<Interval>,
    /// The power law fitted to the points' medians, for the chart's fitted line.
    #[serde(skip)]
    pub fit: Option<PowerFit>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizePoint {
    pub config: String,
    pub size: f64,
    pub n: usize,
    pub median_seconds: Option<f64>,
    pub median_ci: Option<Interval>,
}
