//! A metric's history over the stored runs of an experiment as data (`assemble::history` fills it
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
    /// Steps that had runs enough around them to be tested.
    pub tested: usize,
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
    /// The machine of the run (host, CPU, cores, OS, GPU): a series never spans two.
    pub machine: String,
    pub branch: Option<String>,
    pub n: usize,
    pub median: Option<f64>,
    pub median_ci: Option<(f64, f64)>,
}

/// A config's change from one run to the next run of its series (same machine and branch).
#[derive(Debug, Clone, Serialize)]
pub struct HistoryStep {
    pub config: String,
    pub machine: String,
    pub branch: Option<String>,
    pub from_run: String,
    pub to_run: String,
    pub to_index: usize,
    /// The change into `to_run`, oriented so that above 1 is better: the tested change of the
    /// mean log level of the runs around the step where it was tested, else of the two runs.
    pub speedup: f64,
    /// 95% t-interval of `speedup`, from the run-to-run variation; `None` when untested.
    pub speedup_ci: Option<(f64, f64)>,
    /// Two-sided p-value of the step's own test (not adjusted across steps).
    pub p: Option<f64>,
    /// Runs on each side that the test read.
    pub runs_before: usize,
    pub runs_after: usize,
    /// `improved`, `regressed`, `steady`, `too few runs` or `config changed`.
    pub verdict: String,
    /// A significant change beyond the noise band.
    pub flagged: bool,
    /// For a config change: what changed (`work.argv: [..] -> [..]`).
    pub changes: Vec<String>,
}
