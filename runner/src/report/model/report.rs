//! The report of one run as data (assemble -> **`Report`** -> render): what `report.json` holds,
//! and what the Markdown view (`render::view`) formats for the templates. The rules every value
//! follows are in the model's module comment.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Interval;
pub use crate::measure::{FrequencyFigures, LoadFigures};
use crate::stats::{ClaimVerdict, Comparison, Direction, GuardResult, Tolerance, Verdict};

/// Version of the `report.json` layout below.
pub const SCHEMA_VERSION: u32 = 3;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub experiment: String,
    pub description: String,
    pub run_id: String,
    /// `finished`, `interrupted`, `incomplete`, `failed` or `running`.
    pub status: String,
    /// RFC 3339 timestamps.
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Whole seconds from start to finish; `null` for an unfinished run.
    pub duration_seconds: Option<i64>,
    /// The `[compare]` baseline variant.
    pub baseline: String,
    pub primary: Primary,
    pub method: Method,
    /// Plain-English verdicts, one per comparison, then one per claim; every figure in them is
    /// also in the typed fields below.
    pub summary: Vec<String>,
    /// One row per config, on the primary metric.
    pub results: Vec<ResultRow>,
    pub guards: Vec<GuardRow>,
    /// Each config's model quality against naive baselines (configs that validated a model).
    pub quality: Vec<super::sections::QualityRow>,
    /// `[compare] quality`: whether a model no better than predicting zero fails a guard.
    pub quality_under_test: bool,
    /// GPU telemetry of the monitored stages (CUDA stages, commands with `gpu_monitor`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpu: Vec<super::sections::GpuRow>,
    pub claims: Vec<ClaimRow>,
    /// Stage names, in order of first appearance; `stages[*].median_seconds` aligns with it.
    pub stage_columns: Vec<String>,
    pub stages: Vec<StageRow>,
    pub sweeps: Vec<SweepTable>,
    /// `[compare] sweep = "neighbours"`: each sweep point against the previous one, per
    /// variant; `null` otherwise.
    pub sweep_neighbours: Option<super::sections::NeighbourTable>,
    /// One table per stage that recorded `GB/s` series over copy sizes.
    pub bandwidth: Vec<BandwidthTable>,
    /// Each compared config against its baseline on a copy stage's `<direction>_seconds`, one
    /// verdict per size: a copy's cost depends on its size, so no single ratio stands for all.
    pub bandwidth_by_size: Vec<super::sections::SizeComparison>,
    /// Every recorded metric that is neither the primary metric, a guard, nor in a bandwidth
    /// table: grouped by metric, configs in plan order.
    pub other_metrics: Vec<OtherMetricRow>,
    /// Thread-count and problem-size scaling (`super::scaling::Scaling`); `null` when no variant
    /// or sweep axis varies such a parameter.
    pub scaling: Option<super::scaling::Scaling>,
    pub failed_trials: Vec<FailedTrialRow>,
    /// Fingerprint of the machine and code (`git_commit`, `cpu`, `gpu`, `rustc`, ...).
    pub environment: BTreeMap<String, String>,
    /// Stage -> content hash of the data it loaded.
    pub data_hashes: BTreeMap<String, String>,
    /// The stock data the load stages read: symbols, rows, date range and where it came from
    /// (`sources`: a synthetic market's parameters, imported files with their sha256, or
    /// `unknown`); `null` when the run did not record it (stored before it was, or without a
    /// load stage).
    pub stock_data: Option<crate::market::DataIdentity>,
    pub databases: Databases,
    pub manifest_path: String,
    pub manifest_hash: String,
    /// The command that runs the experiment again with the same seed (passwords redacted).
    pub reproduce: String,
    /// What else a rerun needs: the binary's build commit, the experiment's commit, how the
    /// data is made, the databases' kinds.
    pub reproduction: super::sections::Reproduction,
    /// The experiment's repository or the binary's build had uncommitted changes when the
    /// run started (`reproduction` says which): its commits alone do not reproduce it.
    pub dirty: bool,
    /// Plain-text remarks: run status, CPU-only or smoke runs, hosts, a busy machine, a
    /// dropping CPU clock.
    pub notes: Vec<String>,
    /// How loaded the machine was during the measured trials; `null` for runs stored before
    /// it was recorded (and where it cannot be read). `busy`: processes other than the run
    /// used more than half the cores on average (see `crate::measure::busy`).
    pub load: Option<LoadFigures>,
    /// The CPU clock after the measured trials; `null` where it was not recorded.
    pub cpu_frequency: Option<FrequencyFigures>,
    /// Distinct notes the stages recorded (symbols dropped, skipped), in order of first
    /// appearance.
    pub stage_notes: Vec<StageNoteRow>,
    /// What each config's measured trials ran on, from the facts their stages recorded
    /// (`train.device`, `train.rnn_engine`, ...): the facts every trial agreed on, and a list
    /// of those that differed; configs in plan order. Left out for runs stored before stages
    /// recorded facts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<super::sections::ConfigFacts>,
    /// How steady the machine was on the primary metric: each config's level change and
    /// trial-to-trial CV, and the drifting and jittery flags (from the baseline); `null` when
    /// the baseline has fewer than 6 trials.
    pub stability: Option<super::sections::StabilityReport>,
    pub charts: Vec<ChartRef>,
    /// Raw statistics of every primary-metric comparison.
    pub comparisons: Vec<ComparisonRecord>,
    /// The primary metric got worse in a comparison, or a guard failed or could not be
    /// evaluated (what `--fail-on-regression` gates on).
    pub regression: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Primary {
    /// `<stage>.<metric>`, `<stage>.seconds` or `trial.seconds`.
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// What the metric measures, from the stage catalog; `None` for a command's own metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Method {
    /// Level of every interval in the report.
    pub confidence: f64,
    /// Percentile-bootstrap resamples per interval.
    pub resamples: usize,
    pub seed: u64,
    /// Significance level of the rank tests.
    pub alpha: f64,
    /// Half-width of the noise band around a ratio of 1 (`0.02`: ±2%).
    pub band: f64,
    /// Number of primary-metric comparisons.
    pub comparisons: usize,
    /// How p-values are adjusted across the comparisons; `null` for a single comparison.
    pub p_adjustment: Option<PAdjustment>,
    /// The rank tests that ran, each with how many comparisons used it and why; empty when
    /// there was no comparison.
    pub tests: Vec<RankTest>,
    /// A sequential run (`repetitions = { min, max }`): its looks, the levels of the one this
    /// report is, and why it stopped; `null` for a fixed number of repetitions.
    pub sequential: Option<super::sections::SequentialSummary>,
    /// Questions this report answers: its comparisons and the claims it judged. Each is
    /// controlled on its own, at `question_error`.
    pub questions: usize,
    /// The most often one question's verdict is wrong: alpha for a direction with no effect,
    /// one side of a 95% interval for a verdict read off the interval.
    pub question_error: f64,
    /// The most often any of the questions' verdicts is wrong: the sum of their levels (the
    /// union bound).
    pub family_error: f64,
}

/// One rank test a report's comparisons used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankTest {
    pub test: RankTestKind,
    pub comparisons: usize,
    /// Why this design: `all trials ran on one host, so repetitions are independent samples`.
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RankTestKind {
    /// Unpaired: repetitions of each side are independent samples; ratio of medians.
    MannWhitneyU,
    /// Paired over blocks; Hodges-Lehmann estimate of the per-block log ratios.
    WilcoxonSignedRank,
    /// One run's level against another's, with the run-to-run variation of earlier runs of the
    /// series (Student's t on the log medians).
    RunLevelT,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PAdjustment {
    BenjaminiHochberg,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResultRow {
    pub config: String,
    /// Successful trials that recorded the primary metric.
    pub n: usize,
    pub unit: String,
    pub median: Option<f64>,
    pub median_ci: Option<Interval>,
    /// Another config is compared against this one.
    pub baseline: bool,
    /// The config this one is compared against; `null` when it is not compared.
    pub against: Option<String>,
    /// > 1 means better in the primary metric's direction.
    pub speedup: Option<f64>,
    pub speedup_ci: Option<Interval>,
    /// The p-value the verdict used (adjusted when `p_adjusted`).
    pub p: Option<f64>,
    pub p_adjusted: bool,
    /// `faster`, `slower`, `no_change` or `inconclusive`; `null` when not compared.
    pub verdict: Option<Verdict>,
    /// A guard of this comparison failed: faster (or not) but the results changed.
    pub changed_results: bool,
    /// For an inconclusive verdict: repetitions per side estimated to settle it.
    pub reps_needed: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ComparisonRecord {
    pub config: String,
    pub against: String,
    pub metric: String,
    pub comparison: Comparison,
    /// Guards this config failed against the same baseline.
    pub failed_guards: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageRow {
    pub config: String,
    /// Median wall time of each stage over successful trials, aligned with
    /// `Report::stage_columns`; `null` where the stage never succeeded.
    pub median_seconds: Vec<Option<f64>>,
    /// Median of the trials' summed stage times.
    pub total_seconds: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
}

/// An equivalence check of a guarded metric. `verdict` (`pass`, `fail`, `inconclusive`),
/// `diff` (candidate mean - baseline mean, in `unit`), `relative_diff` (`diff` over the
/// baseline mean), `ci` (interval of `diff`), `margin` (the absolute margin held against)
/// and `reason` come from the test itself.
#[derive(Debug, Clone, Serialize)]
pub struct GuardRow {
    pub config: String,
    pub against: String,
    pub metric: String,
    pub unit: String,
    pub baseline_mean: Option<f64>,
    pub candidate_mean: Option<f64>,
    /// `{"relative": 0.005}` (a fraction of the baseline mean) or `{"absolute": 0.001}`.
    pub tolerance: Tolerance,
    #[serde(flatten)]
    pub result: GuardResult,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClaimRow {
    /// The claimed speedup as written in the manifest.
    pub claim: String,
    /// The claim word for word, as its source states it (`null` for runs stored before claims
    /// quoted their sources).
    pub quote: Option<String>,
    pub source: Option<String>,
    /// The change the claim is about.
    pub change: Option<String>,
    /// The config measured (the claimed variant's name when it has no comparison).
    pub config: String,
    /// The config it was measured against; `null` when the variant has no comparison.
    pub against: Option<String>,
    pub metric: String,
    /// `supported`, `refuted`, `inconclusive`, `untestable`, `not_reproduced` or
    /// `not_this_experiments_claim`.
    pub verdict: ClaimVerdict,
    /// The claim as a speedup interval.
    pub claimed: Option<Interval>,
    pub speedup: Option<f64>,
    pub speedup_ci: Option<Interval>,
    pub reason: String,
    /// For an inconclusive claim: estimated repetitions per side (blocks) that would settle it.
    pub reps_needed: Option<usize>,
    /// A value claim (`value = "2ms..10ms"`): the measured median it is judged on (`claimed`
    /// is then a range of the metric's value in `unit`, not a speedup); `null` for a speedup
    /// claim.
    pub value: Option<ClaimedValue>,
    /// Where the experiment deliberately measures differently from the source (the manifest's
    /// `differs`); shown beside the verdict.
    pub differs: Option<String>,
}

/// What a value claim is judged on: the config's median of the metric, with its 95% interval.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimedValue {
    pub unit: String,
    pub median: Option<f64>,
    pub median_ci: Option<Interval>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepTable {
    pub axis: String,
    pub metric: String,
    pub unit: String,
    pub variants: Vec<String>,
    pub rows: Vec<SweepRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    pub point: String,
    /// Aligned with `SweepTable::variants`; `null` where the variant has no config at the point.
    pub cells: Vec<Option<SweepCell>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepCell {
    pub median: Option<f64>,
    pub median_ci: Option<Interval>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BandwidthTable {
    pub stage: String,
    /// File of the chart drawn from the same series.
    pub chart: String,
    /// Per series its median GB/s and, where recorded, its share of the peak; then each
    /// config's `peak_gbps`.
    pub columns: Vec<BandwidthColumn>,
    pub rows: Vec<BandwidthRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BandwidthColumn {
    /// `baseline · h2d_pinned_reuse`, `... % of peak`, `baseline · peak`.
    pub label: String,
    pub config: String,
    /// The stage-local metric name the values come from.
    pub metric: String,
    pub kind: BandwidthKind,
    /// `GB/s`, or `%` for shares of the peak.
    pub unit: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BandwidthKind {
    Bandwidth,
    PctPeak,
    Peak,
}

#[derive(Debug, Clone, Serialize)]
pub struct BandwidthRow {
    pub size_bytes: i64,
    /// Medians over successful trials, aligned with `BandwidthTable::columns`.
    pub cells: Vec<Option<f64>>,
}

/// One metric of one config in the Metrics table.
#[derive(Debug, Clone, Serialize)]
pub struct OtherMetricRow {
    /// `<stage>.<metric>`.
    pub metric: String,
    pub unit: String,
    /// The metric is a series (recorded per step): each trial's sample is its mean over steps.
    pub series: bool,
    pub config: String,
    /// Successful trials that recorded it.
    pub n: usize,
    pub median: Option<f64>,
    /// 95% percentile-bootstrap interval of the median.
    pub median_ci: Option<Interval>,
    /// The config the ratio is taken against (the primary comparison's baseline); `null`
    /// for configs that are not compared.
    pub against: Option<String>,
    /// Candidate over baseline: ratio of medians, or the geometric mean of block ratios for
    /// blocked runs. Not oriented by any direction and carries no verdict.
    pub ratio: Option<f64>,
    pub ratio_ci: Option<Interval>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailedTrialRow {
    pub config: String,
    pub repetition: u32,
    pub block: Option<u32>,
    pub host: String,
    /// The first stage that failed.
    pub stage: Option<String>,
    pub error: Option<String>,
}

/// One distinct note a stage recorded during the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageNoteRow {
    pub stage: String,
    /// The note as the stage wrote it.
    pub note: String,
    /// Configs whose trials recorded it, in order of first appearance.
    pub configs: Vec<String>,
    /// Trials that recorded it, warm-up trials included (a cached stage runs only in the
    /// first trial that needs it).
    pub trials: usize,
}

/// Where the run's data lived, URLs with any password replaced by `***`.
#[derive(Debug, Clone, Serialize)]
pub struct Databases {
    /// The results database the run is stored in (and the report was read from).
    pub results: String,
    /// The stock database the run's `load` stages read from, as recorded when the run was
    /// created (equal to `results` when it had none of its own); `null` for runs stored
    /// before it was recorded.
    pub stock: Option<String>,
}

/// One chart of the run: where the report places and links it, and what it draws.
#[derive(Debug, Clone, Serialize)]
pub struct ChartRef {
    /// `stages`, `distribution`, `run`, `sweep`, `loss`, `bandwidth` or `scaling`: where the
    /// template places the chart.
    pub kind: String,
    pub title: String,
    pub file: String,
    /// What the chart draws; not part of `report.json`.
    #[serde(skip)]
    pub plot: super::charts::Plot,
}
