//! Copy comparisons size by size (run data -> each compared config against its baseline on
//! the `transfer` stage's mode-free `<direction>_seconds` series, at every size both measured).
//!
//! A copy's cost depends on its size: allocating a destination per copy can cost nothing at
//! 64 KiB and several-fold at 256 MiB. A ratio taken at one size is no conclusion about the
//! others, so the report states one per size, each with its interval and verdict.

use super::bandwidth::stepped_values;
use super::samples::settings_of;
use crate::report::model::{finite, RunData, SizeComparison, SizeRow};
use crate::stats::{compare, Comparison, Direction};

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
