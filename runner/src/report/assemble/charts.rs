//! The chart plan (run data + results rows -> which charts a run gets, their files and titles,
//! and what each draws): the report links to them (`Report::charts`, the bandwidth tables) and
//! `render::charts` draws them from the plots computed here (`plots`).

use super::bandwidth::bandwidth_stages;
use super::plots;
use super::samples::metric_samples;
use super::scaling::scaling_file;
use crate::paths::file_safe;
use crate::report::model::{AxisKind, ChartRef, Plot, ResultRow, RunData};

/// Stage metrics recorded as series whose name ends in `loss`, in order of first appearance.
fn loss_series(run: &RunData) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for stage in run.configs.iter().flat_map(|c| &c.trials).flat_map(|t| &t.stages) {
        for m in &stage.metrics {
            let key = (stage.name.clone(), m.name.clone());
            if m.step.is_some() && m.name.ends_with("loss") && !found.contains(&key) {
                found.push(key);
            }
        }
    }
    found
}

/// The charts of `run`, in the order the report shows them, each with what it draws; `results`
/// are the report's results rows (one per config), whose medians and intervals the charts draw.
pub(crate) fn charts(run: &RunData, results: &[ResultRow]) -> Vec<ChartRef> {
    let chart = |kind: &str, file: String, title: String, plot: Plot| ChartRef {
        kind: kind.to_owned(),
        title,
        file,
        plot,
    };
    let mut charts = Vec::new();
    if run.configs.iter().flat_map(|c| &c.trials).any(|t| t.ok) {
        charts.push(chart(
            "stages",
            "stage_breakdown.svg".to_owned(),
            "Seconds per stage, stacked per config: median over successful trials".to_owned(),
            Plot::StageBreakdown(plots::stage_breakdown(run)),
        ));
    }
    if run
        .configs
        .iter()
        .any(|c| !metric_samples(c, &run.compare.primary).values.is_empty())
    {
        charts.push(chart(
            "distribution",
            "primary_distribution.svg".to_owned(),
            format!(
                "{}: one dot per trial; median and its 95% CI per config",
                run.compare.primary
            ),
            Plot::Distribution(plots::distribution(run)),
        ));
        charts.push(chart(
            "run",
            RUN_CHART.to_owned(),
            format!(
                "{} in the order the trials ran: one marker per trial",
                run.compare.primary
            ),
            Plot::Run(plots::run(run)),
        ));
        if run.configs.iter().any(|c| !c.sweep.is_empty()) {
            charts.push(chart(
                "sweep",
                "sweep.svg".to_owned(),
                format!(
                    "{} across the sweep: median over trials per point, 95% CI",
                    run.compare.primary
                ),
                Plot::Sweep(plots::sweep(run, results)),
            ));
        }
    }
    for (stage, metric) in loss_series(run) {
        let unit = step_unit(run, &stage);
        charts.push(chart(
            "loss",
            format!("loss_{}_{}.svg", file_safe(&stage), file_safe(&metric)),
            format!("{stage}.{metric} per {unit}: mean over successful trials"),
            Plot::Loss(plots::loss(run, &stage, &metric, unit)),
        ));
    }
    for b in bandwidth_stages(run) {
        charts.push(chart(
            "bandwidth",
            bandwidth_file(&b.stage),
            format!(
                "{} bandwidth by copy size: median over successful trials per size",
                b.stage
            ),
            Plot::Bandwidth(plots::bandwidth(run, &b)),
        ));
    }
    for (axis, parameter) in super::scaling::chart_axes(run) {
        charts.push(chart(
            "scaling",
            scaling_file(axis, &parameter),
            match axis {
                AxisKind::Threads => {
                    format!("Parallel efficiency over {parameter}: from median times, 95% CI; dashed: Amdahl fit")
                }
                AxisKind::Size => format!("Median time against {parameter}, log-log, 95% CI; dashed: fitted power law"),
            },
            Plot::Scaling { axis, parameter },
        ));
    }
    charts
}

/// File of the run chart: the primary metric in trial order.
const RUN_CHART: &str = "run_chart.svg";

/// File of the bandwidth chart of `stage`; the bandwidth tables link to it by this name.
pub(crate) fn bandwidth_file(stage: &str) -> String {
    format!("bandwidth_{}.svg", file_safe(stage))
}

/// What a step of `stage`'s series counts: training stages record one point per epoch.
fn step_unit(run: &RunData, stage: &str) -> &'static str {
    if run.stage_kind(stage) == Some(crate::kinds::StageKind::Train) {
        "epoch"
    } else {
        "step"
    }
}
