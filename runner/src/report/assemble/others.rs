//! The Metrics table (run data -> every recorded metric -> one row per metric and config: its
//! median with a 95% CI, and a ratio against the primary comparison's baseline with its CI).
//! Left out: the primary metric (the Results table has it), the bandwidth tables' metrics, and
//! per-step loss series (charted).
//!
//! Stages record more than `[compare]` names: validation scores against naive baselines,
//! throughputs, counts, whatever a command prints. They are summarized here rather than
//! judged: the ratio carries no direction and no verdict, so dozens of them raise no
//! multiple-comparison problem and need no guessed "better".

use super::bandwidth::bandwidth_metrics;
use super::samples::{compare_configs, metric_samples};
use crate::report::model::{finite, OtherMetricRow, RunData};
use crate::stats::{bootstrap_median_ci, median, CompareSettings, Direction};

/// A metric a successful trial recorded: `<stage>.<metric>`, its unit, and whether it was only
/// ever recorded per step.
pub(crate) struct Recorded {
    pub(crate) name: String,
    pub(crate) unit: String,
    pub(crate) series: bool,
}

/// Metrics of successful trials in order of first appearance, minus `shown_elsewhere`.
pub(crate) fn recorded_metrics(run: &RunData, shown_elsewhere: &[String]) -> Vec<Recorded> {
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
/// primary metric, in a bandwidth table, nor a charted loss series. `plan` pairs each compared config with
/// its baseline, as in the results table.
pub(crate) fn other_metric_rows(
    run: &RunData,
    plan: &[(usize, usize)],
    settings: &CompareSettings,
) -> Vec<OtherMetricRow> {
    let mut shown = bandwidth_metrics(run);
    shown.push(run.compare.primary.clone());
    // Compared size by size in the bandwidth section.
    for b in super::bandwidth::bandwidth_stages(run) {
        shown.extend(super::by_size::METRICS.iter().map(|m| format!("{}.{m}", b.stage)));
    }
    let mut rows = Vec::new();
    for m in recorded_metrics(run, &shown) {
        if m.series && m.name.ends_with("loss") {
            continue;
        }
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
                median_ci: bootstrap_median_ci(&samples.values, settings.resamples, settings.seed),
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
