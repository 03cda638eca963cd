//! Before/after comparison of two runs (two stored runs' data -> **compare** -> the typed
//! `CompareModel` of `model::compare` -> its Markdown view in `render::compare_view` ->
//! compare.md).
//!
//! Configs are matched by name. Each matched pair is compared on the primary metric of the
//! "before" run with its statistical settings, the p-values adjusted together
//! (Benjamini-Hochberg), and the guards of the "before" run are re-checked across the runs.
//! `CompareModel` follows the conventions of `report.json` (see `model`): raw numbers with their
//! unit, snake_case verdicts, `null` for what could not be computed, no Markdown.

use super::report::{method, Samples};
use super::samples::{compare_across_runs, direction_of, metric_samples, settings_of};
use crate::report::error::ReportError;
use crate::report::model::{
    finite, CompareGuard, CompareMetric, CompareModel, CompareResult, ComparisonRecord, EnvChange, Primary, RunData,
    RunStamp, COMPARE_SCHEMA_VERSION,
};
use crate::report::prose::{compare_summary_line, Style};
use crate::stats::{guard, median, Comparison, GuardVerdict, Verdict};

/// The metrics table of a comparison: what `report`'s Metrics table shows for one run, across
/// two (the primary metric and charted loss series are left out, as there).
fn compare_metrics(a: &RunData, b: &RunData, matched: &[(usize, usize)]) -> Vec<CompareMetric> {
    let settings = settings_of(a);
    let shown = vec![a.compare.primary.clone()];
    let mut rows = Vec::new();
    for m in super::others::recorded_metrics(a, &shown) {
        if m.series && m.name.ends_with("loss") {
            continue;
        }
        for &(i, j) in matched {
            let (before, after) = (
                metric_samples(&a.configs[i], &m.name),
                metric_samples(&b.configs[j], &m.name),
            );
            if before.values.is_empty() || after.values.is_empty() {
                continue;
            }
            let c = crate::stats::compare(
                &before.values,
                &after.values,
                crate::stats::Direction::LowerIsBetter,
                &settings,
            );
            rows.push(CompareMetric {
                config: a.configs[i].name.clone(),
                metric: m.name.clone(),
                unit: m.unit.clone(),
                n_before: before.values.len(),
                n_after: after.values.len(),
                before_median: finite(median(&before.values)),
                before_ci: crate::stats::bootstrap_median_ci(&before.values, settings.resamples, settings.seed),
                after_median: finite(median(&after.values)),
                after_ci: crate::stats::bootstrap_median_ci(&after.values, settings.resamples, settings.seed),
                ratio: finite(c.ratio),
                ratio_ci: c.ratio_ci,
            });
        }
    }
    rows
}

/// What differs between the stock data of two runs whose stages loaded different data, in
/// the terms of their recorded identities; a run without one is named as unknown.
fn data_differences(a: &RunData, b: &RunData) -> Vec<String> {
    match (&a.stock_data, &b.stock_data) {
        (Some(x), Some(y)) => {
            let d = x.differences(y);
            if d.is_empty() {
                vec![format!(
                    "the same stock data ({}), from which the stages selected different bars",
                    x.extent()
                )]
            } else {
                d
            }
        }
        (x, y) => {
            let side = |r: &RunData, id: &Option<crate::market::DataIdentity>| match id {
                Some(i) => format!("run {}: {i}", r.run_id),
                None => format!("run {}: stock data unknown (not recorded with the run)", r.run_id),
            };
            vec![side(a, x), side(b, y)]
        }
    }
}

// Long because: it builds the comparison in order (the data check that may refuse it, the
// configs both runs share, their comparisons adjusted as one family, guards, rows, the
// environment diff), and every step reads the matched configs.
/// Compares run `b` ("after") against run `a` ("before"). Refuses runs whose data hashes differ
/// unless `allow_different_data`, because a speedup across different inputs measures nothing.
pub fn compare_runs(a: &RunData, b: &RunData, allow_different_data: bool) -> Result<CompareModel, ReportError> {
    let differing: Vec<String> = a
        .data_hashes
        .keys()
        .chain(b.data_hashes.keys())
        .filter(|k| a.data_hashes.get(*k) != b.data_hashes.get(*k))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let differences = if differing.is_empty() {
        Vec::new()
    } else {
        data_differences(a, b)
    };
    if !differing.is_empty() && !allow_different_data {
        return Err(ReportError::DataMismatch {
            stages: differing,
            differences,
        });
    }
    let matched: Vec<(usize, usize)> = a
        .configs
        .iter()
        .enumerate()
        .filter_map(|(i, c)| b.configs.iter().position(|d| d.name == c.name).map(|j| (i, j)))
        .collect();
    if matched.is_empty() {
        return Err(ReportError::NoCommonConfigs {
            before: a.configs.iter().map(|c| c.name.clone()).collect(),
            after: b.configs.iter().map(|c| c.name.clone()).collect(),
        });
    }
    let settings = settings_of(a);
    let primary = &a.compare.primary;
    let unit = a
        .configs
        .iter()
        .find_map(|c| metric_samples(c, primary).unit)
        .unwrap_or_else(|| "s".to_owned());
    let direction = direction_of(a, primary, Some(&unit));
    let raw: Vec<Comparison> = matched
        .iter()
        .map(|&(i, j)| compare_across_runs(&a.configs[i], &b.configs[j], primary, direction, &settings))
        .collect();
    let comparisons = Comparison::adjust_family(raw);

    let mut guards = Vec::new();
    for &(i, j) in &matched {
        for g in &a.compare.guards {
            let before = metric_samples(&a.configs[i], &g.metric);
            let after = metric_samples(&b.configs[j], &g.metric);
            guards.push(CompareGuard {
                config: a.configs[i].name.clone(),
                metric: g.metric.clone(),
                unit: before.unit.clone().unwrap_or_default(),
                before_median: finite(median(&before.values)),
                after_median: finite(median(&after.values)),
                tolerance: g.tolerance,
                result: guard(&before.values, &after.values, g.tolerance, a.compare.alpha),
            });
        }
    }

    let mut results = Vec::new();
    let mut records = Vec::new();
    for (&(i, j), c) in matched.iter().zip(&comparisons) {
        let name = &a.configs[i].name;
        let failed: Vec<String> = guards
            .iter()
            .filter(|g| &g.config == name && g.result.verdict == GuardVerdict::Fail)
            .map(|g| g.metric.clone())
            .collect();
        results.push(CompareResult {
            config: name.clone(),
            n_before: c.n_baseline,
            n_after: c.n_candidate,
            unit: unit.clone(),
            before_median: finite(median(&metric_samples(&a.configs[i], primary).values)),
            after_median: finite(median(&metric_samples(&b.configs[j], primary).values)),
            speedup: finite(c.speedup),
            speedup_ci: c.speedup_ci,
            p: finite(c.p_for_verdict()),
            p_adjusted: c.p_adjusted.is_some(),
            verdict: c.verdict,
            changed_results: !failed.is_empty(),
            reps_needed: c.reps_needed,
        });
        records.push(ComparisonRecord {
            config: name.clone(),
            against: format!("{}:{name}", a.run_id),
            metric: primary.clone(),
            comparison: c.clone(),
            failed_guards: failed,
        });
    }

    let keys: std::collections::BTreeSet<&String> = a.environment.keys().chain(b.environment.keys()).collect();
    let environment = keys
        .into_iter()
        .map(|k| {
            let (before, after) = (a.environment.get(k).cloned(), b.environment.get(k).cloned());
            EnvChange {
                key: k.clone(),
                changed: before != after,
                before,
                after,
            }
        })
        .collect();
    let only = |x: &RunData, y: &RunData| -> Vec<String> {
        x.configs
            .iter()
            .filter(|c| !y.configs.iter().any(|d| d.name == c.name))
            .map(|c| c.name.clone())
            .collect()
    };
    let regression =
        records.iter().any(|r| r.comparison.verdict == Verdict::Slower) || guards.iter().any(|g| g.result.fails_gate());
    let mut model = CompareModel {
        schema_version: COMPARE_SCHEMA_VERSION,
        experiment: a.experiment.clone(),
        before: RunStamp {
            run_id: a.run_id.clone(),
            started_at: a.started_at,
        },
        after: RunStamp {
            run_id: b.run_id.clone(),
            started_at: b.started_at,
        },
        primary: Primary {
            metric: primary.clone(),
            unit,
            direction,
            about: super::report::about_metric(a, primary),
        },
        method: method(a, &comparisons, Samples::TwoRuns),
        summary: Vec::new(),
        results,
        guards,
        environment,
        data_hashes: a.data_hashes.clone(),
        different_data: differing,
        before_only: only(a, b),
        after_only: only(b, a),
        data_differences: differences,
        comparisons: records,
        metrics: compare_metrics(a, b, &matched),
        regression,
    };
    model.summary = model
        .comparisons
        .iter()
        .map(|rec| compare_summary_line(rec, &model.primary.unit, Style::Plain))
        .collect();
    Ok(model)
}
