//! Copy comparisons size by size (run data -> each compared config against its baseline on
//! the `transfer` stage's mode-free `<direction>_seconds` series, at every size both measured).
//!
//! A copy's cost depends on its size: allocating a destination per copy can cost nothing at
//! 64 KiB and several-fold at 256 MiB. A ratio taken at one size is no conclusion about the
//! others, so the report states one per size, each with its interval and verdict.

use serde::Serialize;

use super::bandwidth::stepped_values;
use super::format;
use super::model::{finite, Interval};
use super::prose::verdict_cell;
use super::samples::settings_of;
use super::RunData;
use crate::stats::{compare, Comparison, Direction, Verdict};

/// One size of one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeRow {
    pub size_bytes: i64,
    /// Successful trials that recorded the size, baseline then candidate.
    pub n: (usize, usize),
    /// Baseline time / candidate time: > 1 means the candidate is faster; `null` when undefined.
    pub speedup: Option<f64>,
    pub speedup_ci: Option<Interval>,
    /// Mann-Whitney U p-value, Benjamini-Hochberg adjusted across the table's sizes.
    pub p: Option<f64>,
    pub verdict: Verdict,
}

/// A compared config against its baseline on one stage's `<direction>_seconds`, size by size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeComparison {
    pub stage: String,
    pub metric: String,
    pub config: String,
    pub against: String,
    pub rows: Vec<SizeRow>,
}

/// The mode-free series compared size by size.
pub(crate) const METRICS: [&str; 2] = ["h2d_seconds", "d2h_seconds"];

/// Per-size comparisons for every `(candidate, baseline)` pair of `plan` on each stage's
/// `h2d_seconds` / `d2h_seconds` series (recorded when a config copies in one mode per
/// direction), at the sizes both sides measured.
pub(crate) fn size_comparisons(run: &RunData, plan: &[(usize, usize)], stages: &[String]) -> Vec<SizeComparison> {
    let settings = settings_of(run);
    let mut out = Vec::new();
    for stage in stages {
        for metric in METRICS {
            for &(cand, base) in plan {
                let (b, c) = (&run.configs[base], &run.configs[cand]);
                let (Some(bv), Some(cv)) = (
                    stepped_values(b, stage).remove(metric),
                    stepped_values(c, stage).remove(metric),
                ) else {
                    continue;
                };
                let sizes: Vec<i64> = bv.keys().filter(|k| cv.contains_key(k)).copied().collect();
                if sizes.is_empty() {
                    continue;
                }
                let raw: Vec<_> = sizes
                    .iter()
                    .map(|s| compare(&bv[s], &cv[s], Direction::LowerIsBetter, &settings))
                    .collect();
                let rows = sizes
                    .iter()
                    .zip(Comparison::adjust_family(raw))
                    .map(|(&size, cmp)| SizeRow {
                        size_bytes: size,
                        n: (cmp.n_baseline, cmp.n_candidate),
                        speedup: finite(cmp.speedup),
                        speedup_ci: cmp.speedup_ci,
                        p: finite(cmp.p_for_verdict()),
                        verdict: cmp.verdict,
                    })
                    .collect();
                out.push(SizeComparison {
                    stage: stage.clone(),
                    metric: metric.to_owned(),
                    config: c.name.clone(),
                    against: b.name.clone(),
                    rows,
                });
            }
        }
    }
    out
}

/// The Markdown cells of one size.
#[derive(Debug, Clone, Serialize)]
pub struct SizeRowView {
    pub size: String,
    pub n: String,
    pub speedup: String,
    pub speedup_ci: String,
    pub p: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeComparisonView {
    pub stage: String,
    pub metric: String,
    pub config: String,
    pub against: String,
    pub rows: Vec<SizeRowView>,
}

pub(crate) fn size_comparison_view(t: &SizeComparison) -> SizeComparisonView {
    SizeComparisonView {
        stage: t.stage.clone(),
        metric: t.metric.clone(),
        config: t.config.clone(),
        against: t.against.clone(),
        rows: t
            .rows
            .iter()
            .map(|r| SizeRowView {
                size: format::size(r.size_bytes as f64),
                n: format!("{} vs {}", r.n.0, r.n.1),
                speedup: format::factor(r.speedup.unwrap_or(f64::NAN)),
                speedup_ci: format::factor_interval(r.speedup_ci),
                p: r.p.map_or_else(|| "—".to_owned(), format::p_value),
                verdict: verdict_cell(r.verdict, None, false),
            })
            .collect(),
    }
}
