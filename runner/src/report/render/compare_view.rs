//! The Markdown view of a before/after comparison (typed `CompareModel` -> the strings
//! `compare.md.j2` and `compare_github.md.j2` print as `r`).
//!
//! As for run reports (`view`), every figure is formatted here so templates only lay them out.

use serde::Serialize;

use super::view::{key_values, KeyValue};
use crate::report::format;
use crate::report::model::{CompareModel, ComparisonRecord};
use crate::report::prose::{compare_summary_line, method_sentence, verdict_cell, Style};

const DASH: &str = "—";

#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    pub experiment: String,
    pub before_run: String,
    pub after_run: String,
    pub before_started: String,
    pub after_started: String,
    pub primary: String,
    pub primary_about: Option<String>,
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
    /// Each candidate's speedup over its run's baseline config, before and after.
    pub relative: Vec<CompareRelativeRow>,
    pub notes: Vec<String>,
    pub metrics: Vec<CompareMetricRow>,
    pub regression: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareRelativeRow {
    pub config: String,
    pub baseline: String,
    pub before: String,
    pub before_ci: String,
    pub after: String,
    pub after_ci: String,
    pub change: String,
    pub change_ci: String,
    pub p: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompareMetricRow {
    pub config: String,
    pub metric: String,
    pub unit: String,
    pub n: String,
    pub before: String,
    pub before_ci: String,
    pub after: String,
    pub after_ci: String,
    pub ratio: String,
    pub ratio_ci: String,
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

fn value(v: Option<f64>, unit: &str) -> String {
    format::value(v.unwrap_or(f64::NAN), unit)
}

fn stamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

// Long because: one struct literal, a field per section of the comparison, each formatted in place.
/// The Markdown view of `m`.
pub fn compare_view(m: &CompareModel) -> CompareReport {
    let unit = m.primary.unit.as_str();
    CompareReport {
        experiment: m.experiment.clone(),
        before_run: m.before.run_id.clone(),
        after_run: m.after.run_id.clone(),
        before_started: stamp(m.before.started_at),
        after_started: stamp(m.after.started_at),
        primary: m.primary.metric.clone(),
        primary_about: m.primary.about.clone(),
        direction: m.primary.direction.as_str().to_owned(),
        method: method_sentence(&m.method),
        summary: m
            .comparisons
            .iter()
            .map(|rec| compare_summary_line(rec, unit, Style::Markdown))
            .collect(),
        rows: m
            .results
            .iter()
            .map(|r| CompareRow {
                config: r.config.clone(),
                n: format!("{} → {}", r.n_before, r.n_after),
                before: value(r.before_median, unit),
                after: value(r.after_median, unit),
                speedup: format::factor(r.speedup.unwrap_or(f64::NAN)),
                speedup_ci: format::factor_interval(r.speedup_ci),
                p: format::p_value(r.p.unwrap_or(f64::NAN)),
                verdict: verdict_cell(r.verdict, r.reps_needed, r.changed_results),
            })
            .collect(),
        guards: m
            .guards
            .iter()
            .map(|g| CompareGuardRow {
                config: g.config.clone(),
                metric: g.metric.clone(),
                before: value(g.before_median, &g.unit),
                after: value(g.after_median, &g.unit),
                diff: format::percent(g.result.relative_diff),
                tolerance: g.tolerance.display(),
                verdict: g.result.verdict.as_str().to_owned(),
            })
            .collect(),
        environment: m
            .environment
            .iter()
            .map(|e| EnvDiffRow {
                key: e.key.clone(),
                before: format::cell(e.before.as_deref().unwrap_or(DASH)),
                after: format::cell(e.after.as_deref().unwrap_or(DASH)),
                changed: e.changed,
            })
            .collect(),
        data_hashes: key_values(&m.data_hashes),
        data_warning: (!m.different_data.is_empty()).then(|| {
            format!(
                "The runs loaded different data (stages: {}; {}); differences mix code and data changes.",
                m.different_data.join(", "),
                m.data_differences.join(", ")
            )
        }),
        unmatched: m
            .before_only
            .iter()
            .map(|c| format!("{c} (before only)"))
            .chain(m.after_only.iter().map(|c| format!("{c} (after only)")))
            .collect(),
        comparisons: m.comparisons.clone(),
        relative: m
            .relative
            .iter()
            .map(|r| CompareRelativeRow {
                config: r.config.clone(),
                baseline: r.baseline.clone(),
                before: format::factor(r.before_speedup.unwrap_or(f64::NAN)),
                before_ci: format::factor_interval(r.before_ci),
                after: format::factor(r.after_speedup.unwrap_or(f64::NAN)),
                after_ci: format::factor_interval(r.after_ci),
                change: format::factor(r.change.unwrap_or(f64::NAN)),
                change_ci: format::factor_interval(r.change_ci),
                p: format::p_value(r.p.unwrap_or(f64::NAN)),
                verdict: match r.verdict {
                    crate::stats::Verdict::Faster => "**grew**".to_owned(),
                    crate::stats::Verdict::Slower => "**shrank**".to_owned(),
                    v => v.as_str().to_owned(),
                },
            })
            .collect(),
        notes: m.notes.clone(),
        metrics: m
            .metrics
            .iter()
            .map(|r| CompareMetricRow {
                config: r.config.clone(),
                metric: format::cell(&r.metric),
                unit: if r.unit.is_empty() {
                    DASH.to_owned()
                } else {
                    format::cell(&r.unit)
                },
                n: format!("{} → {}", r.n_before, r.n_after),
                before: format::cell(&value(r.before_median, &r.unit)),
                before_ci: format::cell(&format::value_interval(r.before_ci, &r.unit)),
                after: format::cell(&value(r.after_median, &r.unit)),
                after_ci: format::cell(&format::value_interval(r.after_ci, &r.unit)),
                ratio: format::factor(r.ratio.unwrap_or(f64::NAN)),
                ratio_ci: format::factor_interval(r.ratio_ci),
            })
            .collect(),
        regression: m.regression,
    }
}
