//! Reports (store -> stats -> **report**), a pipeline in three layers: `model` holds the run
//! data the store loads and the typed `Report` (and the comparison and history models) built
//! from it; `assemble` turns run data and statistics into that model (written as `report.json`);
//! `render` turns the model into Markdown through minijinja templates (`report.md`,
//! `compare.md`, pull-request comments), JSON on stdout and SVG charts, from the model alone
//! (`write_report` assembles a run's model, then has it rendered). Each layer uses only those
//! before it; `format` (numbers as text), `prose` (verdict sentences, which the model's
//! summaries and the Markdown share) and `error` sit beside them.
//!
//! Samples of a metric named `<stage>.<metric>` are, per successful trial, the value recorded
//! with `step == None`; when the stage only recorded a series (every value has a step), the
//! trial's sample is the mean over its steps. `<stage>.seconds` is the stage's wall time unless
//! the stage recorded its own metric called `seconds`; `trial.seconds` is the sum of the trial's
//! stage times.

use std::path::Path;

mod assemble;
mod error;
pub(crate) mod format;
mod model;
mod prose;
mod render;

#[cfg(test)]
mod tests;

pub use assemble::{build_history, build_report, compare_runs, questions, CompareOptions};
pub(crate) use assemble::{commit_label, direction_of, machine_key, metric_samples, settings_of};
pub use error::ReportError;
pub(crate) use model::QUALITY_AGAINST;
pub use model::{
    ConfigData, ConfigFacts, DifferingFact, FactValue, History, Interval, Question, Report, RunData, RunDesign,
    StageData, StageNoteRow, TrialData,
};
pub(crate) use prose::ci_label;
pub use render::{
    compare_output, compare_view, history_svg, render_compare_markdown, render_history_markdown, render_markdown,
    report_output, OutputFormat, WrittenReport,
};
pub(crate) use render::{padded_range, palette_color, render_charts, CHART_FONT};

/// Assembles the report of `run` and writes `report.md`, `report.json` and the SVG charts the
/// Markdown links to into `out_dir` (created if missing).
pub fn write_report(run: &RunData, out_dir: &Path, templates_dir: Option<&Path>) -> Result<WrittenReport, ReportError> {
    render::write_files(build_report(run), out_dir, templates_dir)
}

/// True when the run regressed: the primary metric got worse in any comparison, or any guard
/// failed or could not be evaluated. Drives `--fail-on-regression`.
pub fn regression(report: &Report) -> bool {
    report.regression
}
