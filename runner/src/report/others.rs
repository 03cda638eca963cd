//! Other metrics (run data -> every recorded metric no other table shows -> one row per
//! metric and config, with a ratio against the primary comparison's baseline).
//!
//! Stages record more than `[compare]` names: validation scores against naive baselines,
//! throughputs, counts, whatever a command prints. They are summarized here rather than
//! judged: the ratio carries no direction and no verdict, so dozens of them raise no
//! multiple-comparison problem and need no guessed "better".

use super::bandwidth::bandwidth_metrics;
use super::model::{finite, OtherMetricRow};
use super::samples::{compare_configs, metric_samples};
use super::RunData;
use crate::stats::{median, CompareSettings, Direction};

/// A metric a successful trial recorded: `<stage>.<metric>`, its unit, and whether it was only
/// ever recorded per step.
struct Recorded {
    name: String,
    unit: String,
    series: bool,
}

/// Metrics of successful trials in order of first appearance, minus `shown_elsewhere`.
fn recorded_metrics(run: &RunData, shown_elsewhere: &[String]) -> Vec<Recorded> {
    let mut found: Vec<Recorded> = Vec::new();
    let successful = run.configs.iter().flat_map(|c| &c.trials).filter(|t| t.ok);
    for stage in successful.flat_map(|t| &t.stages) {
        for m in &stage.metrics {
            let name = format!("{}.{}", stage.name, m.name);
            if shown_elsewhere.contains(&name) {
                continue;
            }
            match found.iter_mut().find(|r| r.name == name) {
                Some(r) => r.series &= m.step.is_some(),
                None => found.push(Recorded {
                    name,
                    unit: m.unit.clone(),
                    series: m.step.is_some(),
                }),
            }
        }
    }
    found
}

/// One row per metric and config (configs in plan order) for every metric that is neither the
/// primary metric, a guard, nor in a bandwidth table. `plan` pairs each compared config with
/// its baseline, as in the results table.
pub(crate) fn other_metric_rows(
    run: &RunData,
    plan: &[(usize, usize)],
    settings: &CompareSettings,
) -> Vec<OtherMetricRow> {
    let mut shown = bandwidth_metrics(run);
    shown.push(run.compare.primary.clone());
    shown.extend(run.compare.guards.iter().map(|g| g.metric.clone()));
    let mut rows = Vec::new();
    for m in recorded_metrics(run, &shown) {
        for (idx, config) in run.configs.iter().enumerate() {
            let samples = metric_samples(config, &m.name);
            if samples.values.is_empty() {
                continue;
            }
            let mut row = OtherMetricRow {
                metric: m.name.clone(),
                unit: m.unit.clone(),
                series: m.series,
                config: config.name.clone(),
                n: samples.values.len(),
                median: finite(median(&samples.values)),
                against: None,
                ratio: None,
                ratio_ci: None,
            };
            if let Some(&(_, j)) = plan.iter().find(|&&(i, _)| i == idx) {
                let base = &run.configs[j];
                // The ratio and its interval do not depend on the direction; any will do.
                let c = compare_configs(base, config, &m.name, Direction::LowerIsBetter, settings);
                row.against = Some(base.name.clone());
                row.ratio = finite(c.ratio);
                row.ratio_ci = c.ratio_ci;
            }
            rows.push(row);
        }
    }
    rows
}
