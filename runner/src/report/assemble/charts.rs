//! The chart plan (run data -> which charts a run gets, their files and titles): the report
//! links to them (`Report::charts`, the bandwidth tables) and `render::charts` draws them.

use super::bandwidth::bandwidth_stages;
use super::samples::metric_samples;
use super::scaling::{scaling_file, AxisKind};
use crate::paths::file_safe;
use crate::report::model::{ChartRef, RunData};

pub(crate) enum ChartKind {
    StageBreakdown,
    Distribution,
    Run,
    Sweep,
    Loss { stage: String, metric: String },
    Bandwidth { stage: String },
    Scaling { axis: AxisKind, parameter: String },
}

pub(crate) struct ChartSpec {
    pub(crate) kind: ChartKind,
    pub(crate) file: String,
    pub(crate) title: String,
}

/// Stage metrics recorded as series whose name ends in `loss`, in order of first appearance.
pub(crate) fn loss_series(run: &RunData) -> Vec<(String, String)> {
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

pub(crate) fn chart_plan(run: &RunData) -> Vec<ChartSpec> {
    let mut specs = Vec::new();
    if run.configs.iter().flat_map(|c| &c.trials).any(|t| t.ok) {
        specs.push(ChartSpec {
            kind: ChartKind::StageBreakdown,
            file: "stage_breakdown.svg".to_owned(),
            title: "Seconds per stage, stacked per config: median over successful trials".to_owned(),
        });
    }
    if run
        .configs
        .iter()
        .any(|c| !metric_samples(c, &run.compare.primary).values.is_empty())
    {
        specs.push(ChartSpec {
            kind: ChartKind::Distribution,
            file: "primary_distribution.svg".to_owned(),
            title: format!(
                "{}: one dot per trial; median and its 95% CI per config",
                run.compare.primary
            ),
        });
        specs.push(ChartSpec {
            kind: ChartKind::Run,
            file: RUN_CHART.to_owned(),
            title: format!(
                "{} in the order the trials ran: one marker per trial",
                run.compare.primary
            ),
        });
        if run.configs.iter().any(|c| !c.sweep.is_empty()) {
            specs.push(ChartSpec {
                kind: ChartKind::Sweep,
                file: "sweep.svg".to_owned(),
                title: format!(
                    "{} across the sweep: median over trials per point, 95% CI",
                    run.compare.primary
                ),
            });
        }
    }
    for (stage, metric) in loss_series(run) {
        let unit = step_unit(run, &stage);
        specs.push(ChartSpec {
            file: format!("loss_{}_{}.svg", file_safe(&stage), file_safe(&metric)),
            title: format!("{stage}.{metric} per {unit}: mean over successful trials"),
            kind: ChartKind::Loss { stage, metric },
        });
    }
    for b in bandwidth_stages(run) {
        specs.push(ChartSpec {
            file: bandwidth_file(&b.stage),
            title: format!(
                "{} bandwidth by copy size: median over successful trials per size",
                b.stage
            ),
            kind: ChartKind::Bandwidth { stage: b.stage },
        });
    }
    for (axis, parameter) in super::scaling::chart_axes(run) {
        specs.push(ChartSpec {
            file: scaling_file(axis, &parameter),
            title: match axis {
                AxisKind::Threads => {
                    format!("Parallel efficiency over {parameter}: from median times, 95% CI; dashed: Amdahl fit")
                }
                AxisKind::Size => format!("Median time against {parameter}, log-log, 95% CI; dashed: fitted power law"),
            },
            kind: ChartKind::Scaling { axis, parameter },
        });
    }
    specs
}

/// File of the run chart: the primary metric in trial order.
pub(crate) const RUN_CHART: &str = "run_chart.svg";

/// File of the bandwidth chart of `stage`; the bandwidth tables link to it by this name.
pub(crate) fn bandwidth_file(stage: &str) -> String {
    format!("bandwidth_{}.svg", file_safe(stage))
}

/// The charts `render_charts` will produce, for the report to link to.
pub(crate) fn chart_refs(run: &RunData) -> Vec<ChartRef> {
    chart_plan(run)
        .into_iter()
        .map(|s| ChartRef {
            kind: match s.kind {
                ChartKind::StageBreakdown => "stages",
                ChartKind::Distribution => "distribution",
                ChartKind::Run => "run",
                ChartKind::Sweep => "sweep",
                ChartKind::Loss { .. } => "loss",
                ChartKind::Bandwidth { .. } => "bandwidth",
                ChartKind::Scaling { .. } => "scaling",
            }
            .to_owned(),
            title: s.title,
            file: s.file,
        })
        .collect()
}

/// What a step of `stage`'s series counts: training stages record one point per epoch.
pub(crate) fn step_unit(run: &RunData, stage: &str) -> &'static str {
    if run.stage_kind(stage) == Some("train") {
        "epoch"
    } else {
        "step"
    }
}
