//! Reports (store -> stats -> **report**): the run data the store loads, the typed `Report`
//! model built from it (`build`, written as `report.json`), the Markdown view of that model
//! (`view`, rendered through minijinja templates into `report.md`) and SVG charts.
//!
//! Samples of a metric named `<stage>.<metric>` are, per successful trial, the value recorded
//! with `step == None`; when the stage only recorded a series (every value has a step), the
//! trial's sample is the mean over its steps. `<stage>.seconds` is the stage's wall time unless
//! the stage recorded its own metric called `seconds`; `trial.seconds` is the sum of the trial's
//! stage times.

mod bandwidth;
mod build;
pub mod by_size;
mod charts;
mod compare;
mod compare_view;
pub(crate) mod format;
mod gpu;
mod history;
mod markdown;
mod model;
pub mod neighbours;
mod others;
mod output;
mod prose;
pub mod provenance;
mod quality;
mod samples;
mod scaling;
mod scaling_view;
mod sequential;
mod stability;
mod tables;
mod view;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::metrics::Metric;
use crate::runspec::CompareSpec;

pub use build::{build_report, questions};
pub(crate) use charts::{padded_range, palette_color, render_charts, FONT as CHART_FONT};
pub use compare::{compare_runs, CompareModel};
pub use compare_view::{compare_view, CompareReport};
pub(crate) use history::commit_label;
pub use history::{build_history, render_history_markdown, History};
pub use markdown::{render_compare_markdown, render_markdown};
pub use model::{Interval, Report, StageNoteRow};
pub use output::{compare_output, report_output, OutputFormat};
pub(crate) use samples::{direction_of, metric_samples, settings_of};
pub use sequential::{Question, SequentialSummary};

/// One stored run, as the store hands it to the report (warm-up trials already excluded).
#[derive(Debug, Clone, PartialEq)]
pub struct RunData {
    pub run_id: String,
    pub experiment: String,
    pub description: String,
    /// `finished`, `interrupted` or `running`.
    pub status: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub manifest_path: String,
    pub manifest_hash: String,
    /// Fingerprint keys such as `git_commit`, `git_dirty`, `host`, `cpu`, `cores`, `os`, `rustc`,
    /// `measured_version`, `gpu`.
    pub environment: BTreeMap<String, String>,
    /// Stage name -> content hash of the data it loaded.
    pub data_hashes: BTreeMap<String, String>,
    /// The stock data the run's load stages read, as recorded when it started; `None` when it
    /// was not recorded (runs stored before it was, and runs without a load stage).
    pub stock_data: Option<crate::market::DataIdentity>,
    /// Configs in plan order.
    pub configs: Vec<ConfigData>,
    pub compare: CompareSpec,
    /// Exact command that reproduces the run.
    pub reproduce: String,
    /// The results database the run is stored in, password redacted.
    pub results_database: String,
    /// The stock database recorded with the run, password redacted; `None` when the run was
    /// stored before it was recorded.
    pub stock_database: Option<String>,
    /// Free-form remarks such as "CPU-only run".
    pub notes: Vec<String>,
    /// How busy the machine was during the measured trials (empty for runs stored before).
    pub machine: crate::measure::MachineLoad,
    /// Distinct notes the stages recorded.
    pub stage_notes: Vec<StageNoteRow>,
    /// How the trials were laid out, which decides the statistics.
    pub design: RunDesign,
}

/// The design a run's trials ran in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunDesign {
    /// Blocks pair the configs: an interleaved schedule (each block runs every config once,
    /// back to back, in shuffled order), or trials spread over hosts in whole blocks.
    pub paired: bool,
    /// Measured blocks that hold a trial of every config.
    pub blocks: u32,
    /// `repetitions = { min, max }`: blocks were added until decided.
    pub sequential: Option<crate::stats::SequentialPlan>,
    /// The sequential run's `max_time`, in seconds.
    pub max_time_seconds: Option<f64>,
}

impl RunData {
    /// The kind of the stage named `stage` (`train`, `command`, ...), as its trials recorded it.
    pub(crate) fn stage_kind(&self, stage: &str) -> Option<&str> {
        self.configs
            .iter()
            .flat_map(|c| &c.trials)
            .flat_map(|t| &t.stages)
            .find(|s| s.name == stage)
            .map(|s| s.kind.as_str())
    }
}

/// One variant at one sweep point.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigData {
    /// `baseline` or `reuse[batch_size=64]`.
    pub name: String,
    pub variant: String,
    /// Axis path (`stages.train.batch_size`) -> value, in axis order.
    pub sweep: Vec<(String, String)>,
    /// Stage name -> the parameters the config ran with (JSON, from the run's stored spec; empty
    /// for runs stored before specs). The Scaling section reads thread counts and problem sizes
    /// from it, since a variant can set them as well as a sweep.
    pub params: indexmap::IndexMap<String, serde_json::Value>,
    pub trials: Vec<TrialData>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TrialData {
    /// Position in the run's time order.
    pub index: u32,
    pub repetition: u32,
    /// Block of a paired design (see [`RunDesign::paired`]); paired statistics need it on every
    /// trial.
    pub block: Option<u32>,
    /// The schedule's block, paired or not (a sequential order numbers each config's
    /// repetitions).
    pub scheduled_block: u32,
    pub host: String,
    pub ok: bool,
    pub error: Option<String>,
    pub stages: Vec<StageData>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StageData {
    pub name: String,
    pub kind: String,
    pub ok: bool,
    pub seconds: f64,
    pub peak_rss_bytes: Option<u64>,
    pub metrics: Vec<Metric>,
}

/// The SVG chart of a history.
pub fn history_svg(h: &History) -> Result<String, ReportError> {
    charts::history_chart(h).map_err(|e| ReportError::Chart {
        file: "history".to_owned(),
        message: e.to_string(),
    })
}

/// Failures while rendering or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("template error: {0}")]
    Template(#[from] minijinja::Error),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot serialize the report: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot draw chart {file}: {message}")]
    Chart { file: String, message: String },
    #[error(
        "the runs loaded different data (stages: {}{}); comparing them would mix a code change with a data change",
        stages.join(", "),
        if differences.is_empty() { String::new() } else { format!("; {}", differences.join(", ")) }
    )]
    DataMismatch {
        stages: Vec<String>,
        /// What differs in the stock data, in words (`50 vs 500 symbols`, `seed 7 vs 42`).
        differences: Vec<String>,
    },
    #[error("the runs have no config in common (before: {}; after: {})", before.join(", "), after.join(", "))]
    NoCommonConfigs { before: Vec<String>, after: Vec<String> },
}

/// Files written by [`write_report`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportPaths {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub charts: Vec<PathBuf>,
}

/// A report and the files it was written to.
#[derive(Debug, Clone)]
pub struct WrittenReport {
    pub report: Report,
    pub paths: ReportPaths,
}

fn write_file(path: &Path, contents: &[u8]) -> Result<(), ReportError> {
    std::fs::write(path, contents).map_err(|source| ReportError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Builds the report of `run` and writes `report.md`, `report.json` and the SVG charts the
/// Markdown links to into `out_dir` (created if missing).
pub fn write_report(run: &RunData, out_dir: &Path, templates_dir: Option<&Path>) -> Result<WrittenReport, ReportError> {
    std::fs::create_dir_all(out_dir).map_err(|source| ReportError::Io {
        path: out_dir.to_owned(),
        source,
    })?;
    let report = build_report(run);
    let mut chart_paths = Vec::new();
    for (file, svg) in charts::render_charts(run, &report)? {
        let path = out_dir.join(&file);
        write_file(&path, svg.as_bytes())?;
        chart_paths.push(path);
    }
    let markdown = out_dir.join("report.md");
    write_file(&markdown, render_markdown(&report, templates_dir)?.as_bytes())?;
    let json = out_dir.join("report.json");
    let mut body = serde_json::to_string_pretty(&report)?;
    body.push('\n');
    write_file(&json, body.as_bytes())?;
    Ok(WrittenReport {
        report,
        paths: ReportPaths {
            markdown,
            json,
            charts: chart_paths,
        },
    })
}

/// True when the run regressed: the primary metric got worse in any comparison, or any guard
/// failed or could not be evaluated. Drives `--fail-on-regression`.
pub fn regression(report: &Report) -> bool {
    report.regression
}
