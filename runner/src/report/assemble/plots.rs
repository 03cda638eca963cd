//! What each chart draws (run data + results rows -> the plots of `model::charts`): per-config
//! stage medians, the primary metric's samples in plan and in trial order, the sweep's curves,
//! the per-step series and the bandwidth lines. Computed once here; `render::charts` only draws.

use std::collections::BTreeMap;

use super::bandwidth::{StageBandwidth, UNIT};
use super::samples::{metric_samples, sweep_axis, sweep_label, trial_value};
use crate::report::model::{
    BandwidthLine, BandwidthPlot, DistributionPlot, LossPlot, ResultRow, RunData, RunPlot, StageBreakdownPlot,
    SweepPlot, TrialPoint,
};
use crate::stats::median;

fn config_names(run: &RunData) -> Vec<String> {
    run.configs.iter().map(|c| c.name.clone()).collect()
}

/// Every stage's median seconds per config, over successful trials.
pub(crate) fn stage_breakdown(run: &RunData) -> StageBreakdownPlot {
    let mut stages: Vec<String> = Vec::new();
    for s in run.configs.iter().flat_map(|c| &c.trials).flat_map(|t| &t.stages) {
        if !stages.contains(&s.name) {
            stages.push(s.name.clone());
        }
    }
    let medians: Vec<Vec<f64>> = run
        .configs
        .iter()
        .map(|c| {
            stages
                .iter()
                .map(|name| {
                    let v: Vec<f64> = c
                        .trials
                        .iter()
                        .filter(|t| t.ok)
                        .filter_map(|t| t.stages.iter().find(|s| &s.name == name).map(|s| s.seconds))
                        .collect();
                    let m = median(&v);
                    if m.is_finite() {
                        m
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect();
    StageBreakdownPlot {
        stages,
        configs: config_names(run),
        medians,
    }
}

/// The primary metric's samples per config.
pub(crate) fn distribution(run: &RunData) -> DistributionPlot {
    let primary = &run.compare.primary;
    let samples: Vec<_> = run.configs.iter().map(|c| metric_samples(c, primary)).collect();
    DistributionPlot {
        metric: primary.clone(),
        unit: samples.iter().find_map(|s| s.unit.clone()).unwrap_or_default(),
        configs: config_names(run),
        values: samples.into_iter().map(|s| s.values).collect(),
    }
}

/// The primary metric of every measured, successful trial with a finite value, per config.
pub(crate) fn run(run: &RunData) -> RunPlot {
    let primary = &run.compare.primary;
    let points = run
        .configs
        .iter()
        .map(|c| {
            c.trials
                .iter()
                .filter(|t| t.ok)
                .filter_map(|t| {
                    let (value, _) = trial_value(t, primary)?;
                    value.is_finite().then_some(TrialPoint {
                        index: t.index,
                        block: t.scheduled_block,
                        value,
                    })
                })
                .collect()
        })
        .collect();
    let unit = run
        .configs
        .iter()
        .flat_map(|c| &c.trials)
        .find_map(|t| trial_value(t, primary).map(|v| v.1))
        .unwrap_or_default();
    RunPlot {
        metric: primary.clone(),
        unit,
        configs: config_names(run),
        points,
    }
}

/// Each variant's median and interval at every sweep point, read from the configs' rows of
/// `results` (one per config, in plan order).
pub(crate) fn sweep(run: &RunData, results: &[ResultRow]) -> SweepPlot {
    let primary = &run.compare.primary;
    let mut points: Vec<String> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    for c in &run.configs {
        if !points.contains(&sweep_label(c)) {
            points.push(sweep_label(c));
        }
        if !variants.contains(&c.variant) {
            variants.push(c.variant.clone());
        }
    }
    let mut unit = String::new();
    let curves: Vec<Vec<(i32, f64, f64, f64)>> = variants
        .iter()
        .map(|v| {
            run.configs
                .iter()
                .zip(results)
                .filter(|(c, _)| &c.variant == v)
                .filter_map(|(c, r)| {
                    let s = metric_samples(c, primary);
                    if let Some(u) = &s.unit {
                        unit.clone_from(u);
                    }
                    let p = points.iter().position(|p| *p == sweep_label(c))? as i32;
                    let m = r.median?;
                    let (lo, hi) = r.median_ci.unwrap_or((m, m));
                    Some((p, m, lo, hi))
                })
                .collect()
        })
        .collect();
    SweepPlot {
        metric: primary.clone(),
        unit,
        axis: sweep_axis(run),
        points,
        variants,
        curves,
    }
}

/// `stage.metric`'s series per config: the mean over successful trials at every step.
pub(crate) fn loss(run: &RunData, stage: &str, metric: &str, step_unit: &str) -> LossPlot {
    let mut value_unit = String::new();
    let curves: Vec<(String, Vec<(f64, f64)>)> = run
        .configs
        .iter()
        .map(|c| {
            let mut acc: BTreeMap<i64, (f64, usize)> = BTreeMap::new();
            for t in c.trials.iter().filter(|t| t.ok) {
                for m in t.stages.iter().filter(|s| s.name == stage).flat_map(|s| &s.metrics) {
                    if let (true, Some(step)) = (m.name == metric, m.step) {
                        if value_unit.is_empty() {
                            value_unit.clone_from(&m.unit);
                        }
                        let e = acc.entry(step).or_insert((0.0, 0));
                        e.0 += m.value;
                        e.1 += 1;
                    }
                }
            }
            let pts = acc
                .into_iter()
                .map(|(s, (sum, n))| (s as f64, sum / n as f64))
                .collect();
            (c.name.clone(), pts)
        })
        .collect();
    LossPlot {
        stage: stage.to_owned(),
        metric: metric.to_owned(),
        step_unit: step_unit.to_owned(),
        value_unit,
        curves,
    }
}

/// The lines of one stage's bandwidth chart, each with the marker of its config.
pub(crate) fn bandwidth(run: &RunData, data: &StageBandwidth) -> BandwidthPlot {
    let lines = data
        .lines()
        .iter()
        .map(|l| BandwidthLine {
            label: l.label(),
            shape: run.configs.iter().position(|c| c.name == l.config).unwrap_or(0),
            points: l.points.clone(),
        })
        .collect();
    BandwidthPlot {
        unit: UNIT.to_owned(),
        lines,
        sizes: data.sizes(),
    }
}
