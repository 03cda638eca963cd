//! Before/after comparison of two runs (two stored runs -> `CompareReport` -> compare.md).
//!
//! Configs are matched by name. Each matched pair is compared on the primary metric of the
//! "before" run with its statistical settings, the p-values adjusted together
//! (Benjamini-Hochberg), and the guards of the "before" run are re-checked across the runs.
//! A comparison is only rendered as Markdown, so `CompareReport` holds the formatted cells.

use serde::Serialize;

use super::build::method;
use super::format;
use super::model::ComparisonRecord;
use super::prose::{comparison_sentence, method_sentence, verdict_cell, Style};
use super::samples::{compare_configs, direction_of, metric_samples, settings_of};
use super::view::{key_values, KeyValue};
use super::{ReportError, RunData};
use crate::stats::{benjamini_hochberg, guard, median, Comparison, GuardVerdict, Verdict};

#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    pub experiment: String,
    pub before_run: String,
    pub after_run: String,
    pub before_started: String,
    pub after_started: String,
    pub primary: String,
    pub direction: String,
    pub method: String,
    pub summary: Vec<String>,
    pub rows: Vec<CompareRow>,
    pub guards: Vec<CompareGuardRow>,
    pub environment: Vec<EnvDiffRow>,
    pub data_hashes: Vec<KeyValue>,
    /// Set when the runs loaded different data and the comparison was allowed anyway.
    pub data_warning: Option<String>,
    /// Configs present in only one of the runs.
    pub unmatched: Vec<String>,
    pub comparisons: Vec<ComparisonRecord>,
    pub regression: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    pub config: String,
    pub n: String,
    pub before: String,
    pub after: String,
    pub speedup: String,
    pub speedup_ci: String,
    pub p: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareGuardRow {
    pub config: String,
    pub metric: String,
    pub before: String,
    pub after: String,
    pub diff: String,
    pub tolerance: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct EnvDiffRow {
    pub key: String,
    pub before: String,
    pub after: String,
    pub changed: bool,
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

/// Compares run `b` ("after") against run `a` ("before"). Refuses runs whose data hashes differ
/// unless `allow_different_data`, because a speedup across different inputs measures nothing.
pub fn build_comparison(a: &RunData, b: &RunData, allow_different_data: bool) -> Result<CompareReport, ReportError> {
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
        .map(|&(i, j)| compare_configs(&a.configs[i], &b.configs[j], primary, direction, &settings))
        .collect();
    let adjusted = benjamini_hochberg(&raw.iter().map(|c| c.p_value).collect::<Vec<_>>());
    let comparisons: Vec<Comparison> = if raw.len() > 1 {
        raw.into_iter()
            .zip(adjusted)
            .map(|(c, p)| c.with_adjusted_p(p))
            .collect()
    } else {
        raw
    };

    let mut guards = Vec::new();
    let mut guard_gate = false;
    for &(i, j) in &matched {
        for g in &a.compare.guards {
            let before = metric_samples(&a.configs[i], &g.metric);
            let after = metric_samples(&b.configs[j], &g.metric);
            let gunit = before.unit.clone().unwrap_or_default();
            let r = guard(&before.values, &after.values, g.tolerance, a.compare.alpha);
            guard_gate |= r.fails_gate();
            guards.push(CompareGuardRow {
                config: a.configs[i].name.clone(),
                metric: g.metric.clone(),
                before: format::value(median(&before.values), &gunit),
                after: format::value(median(&after.values), &gunit),
                diff: format::percent(r.relative_diff),
                tolerance: g.tolerance.display(),
                verdict: r.verdict.as_str().to_owned(),
            });
        }
    }

    let mut summary = Vec::new();
    let mut rows = Vec::new();
    let mut records = Vec::new();
    for (&(i, j), c) in matched.iter().zip(&comparisons) {
        let name = &a.configs[i].name;
        let failed: Vec<String> = guards
            .iter()
            .filter(|g| &g.config == name && g.verdict == GuardVerdict::Fail.as_str())
            .map(|g| g.metric.clone())
            .collect();
        let sentence = comparison_sentence(&format!("{name}: after"), "before", primary, &unit, c);
        summary.push(if failed.is_empty() {
            format!("{sentence}.")
        } else {
            format!(
                "{sentence} — {}: guard {} failed.",
                Style::Markdown.strong("but changed results"),
                failed.join(", ")
            )
        });
        rows.push(CompareRow {
            config: name.clone(),
            n: format!("{} → {}", c.n_baseline, c.n_candidate),
            before: format::value(median(&metric_samples(&a.configs[i], primary).values), &unit),
            after: format::value(median(&metric_samples(&b.configs[j], primary).values), &unit),
            speedup: format::factor(c.speedup),
            speedup_ci: format::factor_interval(c.speedup_ci),
            p: format::p_value(c.p_for_verdict()),
            verdict: verdict_cell(c.verdict, c.reps_needed, !failed.is_empty()),
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
            let before = a.environment.get(k).cloned().unwrap_or_else(|| "—".to_owned());
            let after = b.environment.get(k).cloned().unwrap_or_else(|| "—".to_owned());
            EnvDiffRow {
                key: k.clone(),
                changed: before != after,
                before: format::cell(&before),
                after: format::cell(&after),
            }
        })
        .collect();
    let unmatched = a
        .configs
        .iter()
        .filter(|c| !b.configs.iter().any(|d| d.name == c.name))
        .map(|c| format!("{} (before only)", c.name))
        .chain(
            b.configs
                .iter()
                .filter(|d| !a.configs.iter().any(|c| c.name == d.name))
                .map(|d| format!("{} (after only)", d.name)),
        )
        .collect();
    let regression = records.iter().any(|r| r.comparison.verdict == Verdict::Slower) || guard_gate;
    let stamp = |r: &RunData| r.started_at.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    Ok(CompareReport {
        experiment: a.experiment.clone(),
        before_run: a.run_id.clone(),
        after_run: b.run_id.clone(),
        before_started: stamp(a),
        after_started: stamp(b),
        primary: primary.clone(),
        direction: direction.as_str().to_owned(),
        method: method_sentence(&method(a, comparisons.len())),
        summary,
        rows,
        guards,
        environment,
        data_hashes: key_values(&a.data_hashes),
        data_warning: (!differing.is_empty()).then(|| {
            format!(
                "The runs loaded different data (stages: {}; {}); differences mix code and data changes.",
                differing.join(", "),
                differences.join(", ")
            )
        }),
        unmatched,
        comparisons: records,
        regression,
    })
}
