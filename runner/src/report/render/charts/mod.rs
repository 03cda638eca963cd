//! SVG charts of a run (report model -> plotters SVG strings -> files beside report.md): each of
//! the report's charts drawn from the plot it carries; `style` holds what they share.

mod configs;
mod history;
mod run;
mod scaling;
mod series;
pub(crate) mod style;

pub(crate) use history::history_chart;
pub(crate) use style::{padded_range, palette_color, FONT};

use crate::report::error::ReportError;
use crate::report::model::{Plot, Report};

/// Renders every chart of the report as `(file name, SVG text)`, each from its plot and, for the
/// distribution and scaling charts, the medians, intervals and fits of the report's results and
/// Scaling section.
pub(crate) fn render_charts(report: &Report) -> Result<Vec<(String, String)>, ReportError> {
    report
        .charts
        .iter()
        .map(|chart| {
            let title = &chart.title;
            let drawn = match &chart.plot {
                Plot::StageBreakdown(plot) => configs::stage_breakdown(plot, title),
                Plot::Distribution(plot) => configs::distribution(plot, &report.results, title),
                Plot::Run(plot) => run::run_chart(plot, title),
                Plot::Sweep(plot) => series::sweep(plot, title),
                Plot::Loss(plot) => series::loss(plot, title),
                Plot::Bandwidth(plot) => series::bandwidth(plot, title),
                Plot::Scaling { axis, parameter } => scaling::chart(report.scaling.as_ref(), title, *axis, parameter),
            };
            drawn
                .map(|svg| (chart.file.clone(), svg))
                .map_err(|e| ReportError::Chart {
                    file: chart.file.clone(),
                    message: e.to_string(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests;
