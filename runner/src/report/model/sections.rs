//! The report's smaller sections as data (assembled in `assemble`, each in its own file there;

//! formatted in `render`): model quality, GPU telemetry, sweep neighbours, bandwidth by size,
//! reproduction, stability, the sequential run's questions, and what each config ran on.

use serde::Serialize;

use super::Interval;
use crate::stats::{Stability, Verdict};

/// What a quality guard compares a config against, in the Guards table.
pub(crate) const QUALITY_AGAINST: &str = "predicting zero";

/// The model quality of one config (medians over its successful trials).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QualityRow {
    pub config: String,
    /// The stage that recorded the metrics (e.g. `check`).
    pub stage: String,
    /// Trials with a `mse_vs_zero` value.
    pub n: usize,
    pub mse_vs_zero: Option<f64>,
    pub mse_vs_mean: Option<f64>,
    pub ic_per_date: Option<f64>,
    pub ic_t: Option<f64>,
    pub direction_accuracy: Option<f64>,
    /// The `(1 - 2 alpha)` t-interval of the mean `mse_vs_zero` across seeds lies wholly below
    /// 1: the model is shown better than predicting zero. Anything else, a mean above 1 or an
    /// interval that reaches 1, is "not shown better than predicting zero".
    pub shown_better: bool,
    /// That interval, when there were two seeds or more.
    pub mse_vs_zero_ci: Option<Interval>,
}

/// What one config's measured trials ran on, from the facts their stages recorded
/// (`<stage>.<fact>`, e.g. `train.device`): the facts every trial that recorded them agreed on,
/// and those whose value differed between trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigFacts {
    pub config: String,
    /// Measured trials the facts come from.
    pub trials: usize,
    pub agreed: std::collections::BTreeMap<String, String>,
    pub differed: Vec<DifferingFact>,
}

/// A fact whose value differed between a config's trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DifferingFact {
    /// `<stage>.<fact>`.
    pub fact: String,
    /// Each value with the number of trials that recorded it, most trials first; `null` for
    /// trials whose stage ran without recording it.
    pub values: Vec<FactValue>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactValue {
    pub value: Option<String>,
    pub trials: usize,
}

/// The telemetry of one config's monitored stage, over its successful trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuRow {
    pub config: String,
    pub stage: String,
    /// Trials with telemetry.
    pub n: usize,
    /// Median samples per trial.
    pub samples: Option<f64>,
    /// Median over trials of each trial's mean utilization (%), and the highest sample.
    pub util_mean: Option<f64>,
    pub util_max: Option<f64>,
    /// Most GPU memory used at any sample (B).
    pub mem_peak: Option<f64>,
    /// Lowest SM clock any sample saw, and the GPU's maximum (MHz).
    pub sm_clock_min: Option<f64>,
    pub sm_clock_max: Option<f64>,
    /// Median over trials of each trial's mean board power (W).
    pub power_mean: Option<f64>,
    /// Hottest sample (C).
    pub temp_max: Option<f64>,
    /// Trials with a throttled sample.
    pub throttled: usize,
}

/// One step along the sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NeighbourRow {
    pub variant: String,
    /// The sweep point stepped from and to, as the sweep table labels them.
    pub from: String,
    pub to: String,
    /// `to` against `from` on the primary metric: > 1 means `to` is better; `null` when it
    /// could not be computed.
    pub speedup: Option<f64>,
    pub speedup_ci: Option<Interval>,
    /// Rank-test p-value, Benjamini-Hochberg adjusted across the table's rows when there are
    /// several.
    pub p: Option<f64>,
    pub verdict: Verdict,
    pub reps_needed: Option<usize>,
}

/// The neighbour table of a run; `None` unless the manifest asks for it and the run sweeps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NeighbourTable {
    pub axis: String,
    pub metric: String,
    pub rows: Vec<NeighbourRow>,
}

/// One size of one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeRow {
    pub size_bytes: i64,
    /// Successful trials that recorded the size, baseline then candidate.
    pub n: (usize, usize),
    /// Baseline time / candidate time: > 1 means the candidate is faster; `null` when undefined.
    pub speedup: Option<f64>,
    pub speedup_ci: Option<Interval>,
    /// Mann-Whitney U p-value, Benjamini-Hochberg adjusted across the table's sizes.
    pub p: Option<f64>,
    pub verdict: Verdict,
}

/// A compared config against its baseline on one stage's `<direction>_seconds`, size by size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeComparison {
    pub stage: String,
    pub metric: String,
    pub config: String,
    pub against: String,
    pub rows: Vec<SizeRow>,
}

/// The pieces of a reproduction: the binary, the experiment's code, the data and the
/// databases' kinds (never their passwords).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reproduction {
    /// Commit the `measured` binary was built from; `null` when the run did not record it
    /// (stored before it was) or the binary was built outside a git checkout.
    pub build_commit: Option<String>,
    /// The binary was built from a tree with uncommitted changes.
    pub build_dirty: bool,
    /// Commit of the repository holding the manifest (`unknown` outside one).
    pub code_commit: String,
    /// That repository had uncommitted changes to tracked files when the run started.
    pub code_dirty: bool,
    /// How the stock data the run read is made again, one entry per source: the `measured
    /// data synth` command of a synthetic market, an imported file by sha256. Empty when the
    /// run read none or did not record it.
    pub data: Vec<String>,
    /// `sqlite` or `postgres`: where the results are stored.
    pub results_database: DatabaseKind,
    /// Kind of the stock database, when it was recorded.
    pub stock_database: Option<DatabaseKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DatabaseKind {
    Sqlite,
    Postgres,
}

impl DatabaseKind {
    /// The kind of a database given as on the command line (a URL or a SQLite path).
    pub fn of(url: &str) -> Self {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            DatabaseKind::Postgres
        } else {
            DatabaseKind::Sqlite
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "SQLite",
            DatabaseKind::Postgres => "Postgres",
        }
    }
}

/// One config's stability on the primary metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StabilityRow {
    pub config: String,
    #[serde(flatten)]
    pub figures: Stability,
}

/// The run's stability section (`report.json`'s `stability`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StabilityReport {
    /// The primary metric, whose values in trial order are judged.
    pub metric: String,
    /// The config whose figures raise the flags: the first baseline of the comparisons.
    pub baseline: String,
    /// The noise band the level change is held against (`0.02`: ±2%).
    pub band: f64,
    /// The trial-to-trial CV above which the machine is jittery.
    pub jitter_cv: f64,
    /// The baseline's level moved by more than the band (its interval clear of it).
    pub drifting: bool,
    /// The baseline's trial-to-trial CV is above `jitter_cv`.
    pub jittery: bool,
    /// Every config with enough trials, in plan order.
    pub rows: Vec<StabilityRow>,
}

/// A question the run answers: a primary comparison, or a claim that can be judged here.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Question {
    /// `reuse against baseline on train.epoch_seconds`, or `claim "5-15%" on prefetch`.
    pub what: String,
    /// Faster, slower or no change; supported or refuted.
    pub decided: bool,
    /// The verdict word.
    pub verdict: String,
    /// The speedup interval it rests on.
    pub interval: Option<Interval>,
}

/// Why a sequential run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// Every question was decided at a look.
    Decided,
    /// It ran to `max` blocks with questions open.
    MaxReached,
    /// `max_time` ran out first, with questions open.
    TimeBudget,
    /// It did not finish (interrupted, running, stopped by failures).
    Unfinished,
}

/// A sequential run's plan, the looks it took and why it stopped (`report.json`'s
/// `sequential`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SequentialSummary {
    pub min: u32,
    pub max: u32,
    pub max_time_seconds: Option<f64>,
    /// Block counts of the planned looks.
    pub looks_planned: Vec<u32>,
    /// Block counts of the looks taken, the last one the report's.
    pub looks_taken: Vec<u32>,
    /// Complete blocks.
    pub blocks: u32,
    /// The level this look's tests used, and the nominal level of its intervals.
    pub alpha_at_look: f64,
    pub confidence_at_look: f64,
    pub stop: StopKind,
    /// Questions the run answers (comparisons and claims it can judge).
    pub questions: usize,
    /// Questions still open.
    pub open: Vec<Question>,
}
