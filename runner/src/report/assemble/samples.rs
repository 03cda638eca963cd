//! Sample extraction and comparison planning (run data -> per-config samples -> stats calls).

use std::collections::BTreeMap;

use crate::report::model::{ConfigData, RunData, TrialData};
use crate::stats::{
    compare_at, compare_paired_at, resolution, CompareSettings, Comparison, Direction, SequentialState,
};

/// The value of `metric` in one trial, with its unit; `None` when the trial did not record it.
/// A sum (`features.seconds + train.h2d_seconds`) is the sum of its parts, when the trial
/// recorded every part, in one unit.
pub(crate) fn trial_value(trial: &TrialData, metric: &str) -> Option<(f64, String)> {
    let parts = crate::metrics::summed(metric);
    if parts.len() > 1 {
        let mut total = 0.0;
        let mut unit: Option<String> = None;
        for part in parts {
            let (v, u) = trial_value(trial, part)?;
            if unit.get_or_insert_with(|| u.clone()) != &u {
                return None;
            }
            total += v;
        }
        return unit.map(|u| (total, u));
    }
    if metric == "trial.seconds" {
        return Some((trial.stages.iter().map(|s| s.seconds).sum(), "s".to_owned()));
    }
    let (stage_name, name) = metric.split_once('.')?;
    let stage = trial.stages.iter().find(|s| s.name == stage_name)?;
    let recorded: Vec<_> = stage.metrics.iter().filter(|m| m.name == name).collect();
    if let Some(single) = recorded.iter().find(|m| m.step.is_none()) {
        return Some((single.value, single.unit.clone()));
    }
    if !recorded.is_empty() {
        // Series only: one sample per trial is the mean over its steps.
        let mean = recorded.iter().map(|m| m.value).sum::<f64>() / recorded.len() as f64;
        return Some((mean, recorded[0].unit.clone()));
    }
    (name == "seconds").then(|| (stage.seconds, "s".to_owned()))
}

/// Values of `metric` over the successful trials of a config.
#[derive(Debug, Clone, Default)]
pub(crate) struct MetricSamples {
    pub values: Vec<f64>,
    pub blocks: Vec<Option<u32>>,
    pub unit: Option<String>,
}

pub(crate) fn metric_samples(config: &ConfigData, metric: &str) -> MetricSamples {
    let mut out = MetricSamples::default();
    for trial in config.trials.iter().filter(|t| t.ok) {
        if let Some((v, unit)) = trial_value(trial, metric) {
            out.values.push(v);
            out.blocks.push(trial.block);
            out.unit.get_or_insert(unit);
        }
    }
    out
}

/// Per-block means of both sides over the blocks they share, when every sample has a block;
/// `None` for an unblocked design.
fn block_pairs(base: &MetricSamples, cand: &MetricSamples) -> Option<Vec<(f64, f64)>> {
    let by_block = |s: &MetricSamples| -> Option<BTreeMap<u32, Vec<f64>>> {
        let mut map: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for (v, b) in s.values.iter().zip(&s.blocks) {
            map.entry((*b)?).or_default().push(*v);
        }
        Some(map)
    };
    let (a, b) = (by_block(base)?, by_block(cand)?);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .filter_map(|(block, va)| b.get(block).map(|vb| (mean(va), mean(vb))))
        .collect();
    (!pairs.is_empty()).then_some(pairs)
}

pub(crate) fn settings_of(run: &RunData) -> CompareSettings {
    CompareSettings {
        alpha: run.compare.alpha,
        band: run.compare.band,
        resamples: run.compare.resamples,
        seed: run.compare.seed,
        sequential: run.design.sequential.map(|plan| SequentialState {
            plan,
            blocks: run.design.blocks,
        }),
    }
}

/// Direction of `metric`: the `[compare]` override for the primary metric, else from its unit.
pub(crate) fn direction_of(run: &RunData, metric: &str, unit: Option<&str>) -> Direction {
    match run.compare.direction {
        Some(d) if metric == run.compare.primary => d,
        _ => Direction::from_unit(unit.unwrap_or("s")),
    }
}

/// Compares `metric` of two configs: paired when both sides are fully blocked and share blocks,
/// independent otherwise.
pub(crate) fn compare_configs(
    base: &ConfigData,
    cand: &ConfigData,
    metric: &str,
    direction: Direction,
    settings: &CompareSettings,
) -> Comparison {
    let (a, b) = (metric_samples(base, metric), metric_samples(cand, metric));
    let steps = printed_steps(&a, &b);
    match block_pairs(&a, &b) {
        Some(pairs) => compare_paired_at(&pairs, steps, direction, settings),
        None => compare_at(&a.values, &b.values, steps, direction, settings),
    }
}

/// Compares `metric` of the same config in two runs: always unpaired, since blocks with the
/// same number in two runs ran at different times.
pub(crate) fn compare_across_runs(
    before: &ConfigData,
    after: &ConfigData,
    metric: &str,
    direction: Direction,
    settings: &CompareSettings,
) -> Comparison {
    let (a, b) = (metric_samples(before, metric), metric_samples(after, metric));
    compare_at(&a.values, &b.values, printed_steps(&a, &b), direction, settings)
}

/// The step each side's values were printed at (`stats::resolution`), read off each side's own
/// values: a block's mean of several values lies on a finer grid than the values it averages,
/// but hides as much. Counts and byte sizes are exact whole numbers, not rounded figures.
fn printed_steps(a: &MetricSamples, b: &MetricSamples) -> (f64, f64) {
    match a.unit.as_deref().or(b.unit.as_deref()) {
        Some("count" | "B") => (0.0, 0.0),
        _ => (resolution(&a.values), resolution(&b.values)),
    }
}

/// Which config each non-baseline config is compared against, as `(candidate, baseline)` indices
/// into `run.configs`. With several variants: the baseline variant at the same sweep point. With
/// a single variant and a sweep: every sweep point against the first one.
pub(crate) fn comparison_plan(run: &RunData) -> Vec<(usize, usize)> {
    let configs = &run.configs;
    let mut variants: Vec<&str> = Vec::new();
    for c in configs {
        if !variants.contains(&c.variant.as_str()) {
            variants.push(&c.variant);
        }
    }
    if variants.len() <= 1 {
        return (1..configs.len()).map(|i| (i, 0)).collect();
    }
    configs
        .iter()
        .enumerate()
        .filter(|(_, c)| c.variant != run.compare.baseline)
        .filter_map(|(i, c)| {
            configs
                .iter()
                .position(|b| b.variant == run.compare.baseline && b.sweep == c.sweep)
                .map(|j| (i, j))
        })
        .collect()
}

/// Label of a config's sweep point (`64` or `batch_size=64, lr=0.1`); empty without a sweep.
pub(crate) fn sweep_label(config: &ConfigData) -> String {
    match config.sweep.as_slice() {
        [] => String::new(),
        [(_, v)] => v.clone(),
        many => many
            .iter()
            .map(|(k, v)| format!("{}={v}", k.rsplit('.').next().unwrap_or(k)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The sweep's axis names joined for a label, e.g. `batch_size × threads` (every config of a
/// run sweeps the same axes).
pub(crate) fn sweep_axis(run: &RunData) -> String {
    run.configs.first().map_or_else(String::new, |c| {
        c.sweep.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(" × ")
    })
}
