//! A metric over every stored run of an experiment (stored runs -> run data -> **history**, the
//! typed `History` of `model::history` -> Markdown table + SVG chart in `render::history`), with
//! the steps between consecutive runs that are statistically significant flagged, like asv's
//! regression detection.
//!
//! Each run contributes one point per config: the median of the metric over its successful
//! measured trials, with a percentile-bootstrap 95% CI. A step compares a config's samples in
//! one run with its samples in the previous run that has that config: Mann-Whitney U
//! (two-sided; runs are independent samples, so no pairing), ratio of medians with a bootstrap
//! CI, and the same verdict rule as a report (significant at alpha *and* the CI outside the
//! noise band).
//!
//! Steps are not adjusted for multiplicity across the history: each step answers its own
//! question ("did this change move the metric?"), asked when that run lands, and an adjustment
//! over a growing history would make a real regression harder to flag the longer a project
//! keeps its runs. The price, stated in the method text, is about `alpha x steps` false flags
//! over a long history.

use super::samples::metric_samples;
use crate::report::format;
use crate::report::model::{History, HistoryPoint, HistoryStep, RunData};
use crate::stats::{bootstrap_median_ci, compare, median, CompareSettings, Direction, Verdict};

// Long because: one pass over the runs, oldest first, carrying each config's last samples forward.
/// Builds the history of `metric` over `runs` (oldest first). `direction` is `None` to infer it
/// from the metric's unit.
pub fn build_history(experiment: &str, metric: &str, direction: Option<Direction>, runs: &[RunData]) -> History {
    let settings = runs.last().map_or(
        CompareSettings {
            alpha: 0.01,
            band: 0.02,
            resamples: 10_000,
            seed: 0,
            sequential: None,
        },
        super::samples::settings_of,
    );
    let mut unit = String::new();
    let mut points = Vec::new();
    // Per config: the samples of the last run that had it, with that run's id.
    let mut last: Vec<(String, String, Vec<f64>)> = Vec::new();
    let mut raw_steps = Vec::new();
    let mut notes = Vec::new();
    // The dataset versions of the previous run that named them.
    let mut last_data: Option<(String, String)> = None;
    for (index, run) in runs.iter().enumerate() {
        let commit = short_commit(run);
        if let Some(data) = run.stock_data.as_ref().filter(|d| !d.versions.is_empty()) {
            let labels = data.version_labels();
            if let Some((prev_run, prev)) = last_data.as_ref().filter(|(_, prev)| *prev != labels) {
                notes.push(format!(
                    "Run {} read other stock data than run {prev_run} (dataset versions {labels} vs {prev}): the \
                     steps between them compare different inputs.",
                    run.run_id
                ));
            }
            last_data = Some((run.run_id.clone(), labels));
        }
        for config in &run.configs {
            let samples = metric_samples(config, metric);
            if let Some(u) = &samples.unit {
                unit.clone_from(u);
            }
            let values = samples.values;
            let m = median(&values);
            points.push(HistoryPoint {
                run_id: run.run_id.clone(),
                run_index: index,
                started_at: run.started_at,
                commit: commit.clone(),
                config: config.name.clone(),
                n: values.len(),
                median: m.is_finite().then_some(m),
                median_ci: bootstrap_median_ci(&values, settings.resamples, settings.seed),
            });
            if values.is_empty() {
                continue;
            }
            match last.iter_mut().find(|(c, _, _)| *c == config.name) {
                Some(prev) => {
                    raw_steps.push((
                        config.name.clone(),
                        prev.1.clone(),
                        run.run_id.clone(),
                        index,
                        prev.2.clone(),
                        values.clone(),
                    ));
                    prev.1.clone_from(&run.run_id);
                    prev.2 = values;
                }
                None => last.push((config.name.clone(), run.run_id.clone(), values)),
            }
        }
    }
    let direction = direction.unwrap_or_else(|| Direction::from_unit(if unit.is_empty() { "s" } else { &unit }));
    let comparisons: Vec<_> = raw_steps
        .iter()
        .map(|(_, _, _, _, before, after)| compare(before, after, direction, &settings))
        .collect();
    let steps = raw_steps
        .into_iter()
        .zip(comparisons)
        .map(|(step, c)| {
            let (config, from_run, to_run, to_index, _, _) = step;
            let verdict = match c.verdict {
                Verdict::Faster => "improved",
                Verdict::Slower => "regressed",
                Verdict::NoChange => "no change",
                Verdict::Inconclusive => "inconclusive",
            };
            HistoryStep {
                config,
                from_run,
                to_run,
                to_index,
                ratio: c.ratio,
                ratio_ci: c.ratio_ci,
                p: c.p_value,
                verdict: verdict.to_owned(),
                flagged: matches!(c.verdict, Verdict::Faster | Verdict::Slower),
            }
        })
        .collect::<Vec<_>>();
    let method = format!(
        "Each step compares a config with the previous run that has it: Mann-Whitney U (two-sided; \
         runs are independent samples) and the ratio of medians with a 95% percentile-bootstrap CI \
         ({} resamples). A step is flagged when p < {} and the CI lies outside the ±{}% noise band. \
         Each step is tested on its own, not adjusted across the history: over {} steps, expect \
         about {} flagged by chance.",
        format::thousands(settings.resamples),
        settings.alpha,
        format::trimmed(settings.band * 100.0),
        steps.len(),
        format::trimmed(settings.alpha * steps.len() as f64)
    );
    History {
        experiment: experiment.to_owned(),
        metric: metric.to_owned(),
        unit,
        direction,
        alpha: settings.alpha,
        band: settings.band,
        method,
        points,
        steps,
        notes,
    }
}

fn short_commit(run: &RunData) -> String {
    commit_label(
        run.environment.get("git_commit").map(String::as_str).unwrap_or(""),
        run.environment.get("git_dirty").map(String::as_str) == Some("true"),
    )
}

/// A commit as charts and tables show it: its first 10 characters (`unknown` when empty), with
/// `+dirty` when the tree had changes.
pub(crate) fn commit_label(commit: &str, dirty: bool) -> String {
    let short: String = commit.chars().take(10).collect();
    let short = if short.is_empty() { "unknown".to_owned() } else { short };
    if dirty {
        format!("{short}+dirty")
    } else {
        short
    }
}
