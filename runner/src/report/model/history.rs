//! A metric's history over the stored runs of an experiment as data (`build::history` fills it
//! from every run's data; `render::history` prints it as Markdown and draws its chart).

use serde::Serialize;

use crate::stats::Direction;

/// The history of one metric, oldest run first.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub experiment: String,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    pub alpha: f64,
    pub band: f64,
    /// What the step test is, in words, for the report.
    pub method: String,
    pub points: Vec<HistoryPoint>,
    pub steps: Vec<HistoryStep>,
    pub notes: Vec<String>,
}

/// One config in one run.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryPoint {
    pub run_id: String,
    /// Position of the run in the history (0 = oldest).
    pub run_index: usize,
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// Short commit of the measured code, `+dirty` when the tree had changes.
    pub commit: String,
    pub config: String,
    pub n: usize,
    pub median: Option<f64>,
    pub median_ci: Option<(f64, f64)>,
}

/// A config's change from one run to the next run that has it.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryStep {
    pub config: String,
    pub from_run: String,
    pub to_run: String,
    pub to_index: usize,
    /// later / earlier, ratio of medians.
    pub ratio: f64,
    pub ratio_ci: Option<(f64, f64)>,
    /// Two-sided p-value of the step's own test (not adjusted across steps).
    pub p: f64,
    /// `improved`, `regressed`, `no change` or `inconclusive`.
    pub verdict: String,
    /// A significant change beyond the noise band.
    pub flagged: bool,
}
