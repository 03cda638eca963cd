//! The before/after comparison of two runs as data (`assemble::compare` fills it from two runs' data;

//! `render::compare_view` formats it for compare.md; `--format json` prints it).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::report::{ComparisonRecord, Method, Primary};
use super::Interval;
use crate::stats::{GuardResult, Tolerance, Verdict};

/// Version of the `--format json` layout of a comparison; grows whenever a field is renamed,
/// removed or retyped.
pub const COMPARE_SCHEMA_VERSION: u32 = 1;

/// A before/after comparison of two runs of one experiment.
#[derive(Debug, Clone, Serialize)]
pub struct CompareModel {
    pub schema_version: u32,
    pub experiment: String,
    pub before: RunStamp,
    pub after: RunStamp,
    /// The primary metric of the "before" run, which both runs are compared on.
    pub primary: Primary,
    pub method: Method,
    /// Plain-English verdicts, one per compared config; every figure in them is also in the
    /// typed fields below.
    pub summary: Vec<String>,
    /// One row per config present in both runs.
    pub results: Vec<CompareResult>,
    /// The "before" run's guards, re-checked across the runs.
    pub guards: Vec<CompareGuard>,
    /// Every environment key of either run, with both values.
    pub environment: Vec<EnvChange>,
    /// Stage -> content hash of the data the "before" run loaded.
    pub data_hashes: BTreeMap<String, String>,
    /// Stages whose data differed between the runs (compared anyway on request); empty when the
    /// runs loaded the same data.
    pub different_data: Vec<String>,
    /// What differs between the two runs' stock data, in words ("50 vs 500 symbols").
    pub data_differences: Vec<String>,
    /// Configs of one run only, not compared.
    pub before_only: Vec<String>,
    pub after_only: Vec<String>,
    /// Raw statistics of every comparison, in `results` order.
    pub comparisons: Vec<ComparisonRecord>,
    /// Each candidate config's speedup over its run's baseline config, before and after: the
    /// comparison whose run-level offset cancels inside each run.
    pub relative: Vec<CompareRelative>,
    /// What a reader must know beside the verdicts: how levels were judged, each run's
    /// stability flags, configs compared although their parameters changed.
    pub notes: Vec<String>,
    /// Parameters that differ between the runs' configs (`config: stage.key: before -> after`),
    /// compared anyway on request; empty when none changed.
    pub config_changes: Vec<String>,
    /// Every other metric both runs recorded, per matched config: medians with their CIs and
    /// the after/before ratio with its CI (no direction, no verdict).
    pub metrics: Vec<CompareMetric>,
    /// The after run is worse on the primary metric for some config, or a guard failed or could
    /// not be evaluated (what `--fail-on-regression` gates on).
    pub regression: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunStamp {
    pub run_id: String,
    /// RFC 3339 timestamp.
    pub started_at: DateTime<Utc>,
}

/// One config, before against after, on the primary metric.
#[derive(Debug, Clone, Serialize)]
pub struct CompareResult {
    pub config: String,
    /// Samples (or blocks) on each side.
    pub n_before: usize,
    pub n_after: usize,
    pub unit: String,
    pub before_median: Option<f64>,
    pub after_median: Option<f64>,
    /// > 1 means the after run is better in the primary metric's direction.
    pub speedup: Option<f64>,
    pub speedup_ci: Option<Interval>,
    /// The p-value the verdict used (adjusted when `p_adjusted`).
    pub p: Option<f64>,
    pub p_adjusted: bool,
    /// `faster`, `slower`, `no_change` or `inconclusive`.
    pub verdict: Verdict,
    /// A guard of this config failed: faster (or not) but the results changed.
    pub changed_results: bool,
    /// For an inconclusive verdict: repetitions per side estimated to settle it.
    pub reps_needed: Option<usize>,
}

/// One candidate config's speedup over its run's baseline config, in each run, and the change.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRelative {
    pub config: String,
    pub baseline: String,
    /// The before run's speedup of `config` over `baseline` (> 1: faster), with its interval.
    pub before_speedup: Option<f64>,
    pub before_ci: Option<Interval>,
    pub after_speedup: Option<f64>,
    pub after_ci: Option<Interval>,
    /// after / before of the two speedups, with its 95% interval (normal approximation on the
    /// log scale, the runs independent) and two-sided p-value.
    pub change: Option<f64>,
    pub change_ci: Option<Interval>,
    pub p: Option<f64>,
    /// `faster`: the candidate's advantage grew; `slower`: it shrank.
    pub verdict: Verdict,
}

/// A guard re-checked across the runs; the fields of `result` are those of `report.json`'s
/// guards (`verdict`, `diff`, `relative_diff`, `ci`, `margin`, `reason`).
#[derive(Debug, Clone, Serialize)]
pub struct CompareGuard {
    pub config: String,
    pub metric: String,
    pub unit: String,
    pub before_median: Option<f64>,
    pub after_median: Option<f64>,
    pub tolerance: Tolerance,
    #[serde(flatten)]
    pub result: GuardResult,
}

/// One environment key; `null` where a run did not record it.
#[derive(Debug, Clone, Serialize)]
pub struct EnvChange {
    pub key: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub changed: bool,
}

/// One metric of one config across the two runs.
#[derive(Debug, Clone, Serialize)]
pub struct CompareMetric {
    pub config: String,
    pub metric: String,
    pub unit: String,
    pub n_before: usize,
    pub n_after: usize,
    pub before_median: Option<f64>,
    pub before_ci: Option<Interval>,
    pub after_median: Option<f64>,
    pub after_ci: Option<Interval>,
    /// after / before, ratio of medians (runs are independent samples).
    pub ratio: Option<f64>,
    pub ratio_ci: Option<Interval>,
}
