//! SVG charts of a run (run data + report model -> plotters SVG strings -> files beside
//! report.md), drawn to the chart plan `assemble::charts` makes; `style` holds what they share.

mod configs;
mod history;
mod run;
mod scaling;
mod series;
pub(crate) mod style;

pub(crate) use history::history_chart;
pub(crate) use style::{padded_range, palette_color, FONT};

use crate::report::assemble::charts::{chart_plan, ChartKind};
use crate::report::error::ReportError;
use crate::report::model::{Report, RunData};

/// Renders every chart of the run as `(file name, SVG text)`; `report` is the run's model, whose
/// medians, intervals and scaling fits the charts draw.
pub(crate) fn render_charts(run: &RunData, report: &Report) -> Result<Vec<(String, String)>, ReportError> {
    chart_plan(run)
        .into_iter()
        .map(|spec| {
            let drawn = match &spec.kind {
                ChartKind::StageBreakdown => configs::stage_breakdown(run, &spec.title),
                ChartKind::Distribution => configs::distribution(run, &report.results, &spec.title),
                ChartKind::Run => run::run_chart(run, &spec.title),
                ChartKind::Sweep => series::sweep(run, &report.results, &spec.title),
                ChartKind::Loss { stage, metric } => series::loss(run, &spec.title, stage, metric),
                ChartKind::Bandwidth { stage } => series::bandwidth(run, &spec.title, stage),
                ChartKind::Scaling { axis, parameter } => {
                    scaling::chart(report.scaling.as_ref(), &spec.title, *axis, parameter)
                }
            };
            drawn
                .map(|svg| (spec.file.clone(), svg))
                .map_err(|e| ReportError::Chart {
                    file: spec.file,
                    message: e.to_string(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests;
