//! The "Model quality" section (validate metrics of each config -> skill against naive
//! baselines) and the guard that flags a model worse than predicting zero.
//!
//! A config's quality comes from the stage that recorded `mse_vs_zero` (a `validate` stage):
//! medians over the successful trials of its MSE ratios to the naive baselines, per-date IC with
//! its t-statistic and direction accuracy. Each repetition trains with its own seed, so these are
//! distributions across seeds. Unless the manifest says `[compare] quality = "not_under_test"`,
//! a config whose mean `mse_vs_zero` is 1 or more (no better than predicting zero) gets a failed
//! guard row, which fails the verdict like any other guard.

use super::samples::metric_samples;
use crate::report::model::{ConfigData, GuardRow, QualityRow, RunData, QUALITY_AGAINST};
use crate::stats::{median, GuardResult, GuardVerdict, Tolerance};

/// The stage of `config` whose trials recorded `mse_vs_zero`, if any.
fn quality_stage(config: &ConfigData) -> Option<String> {
    config.trials.iter().flat_map(|t| &t.stages).find_map(|s| {
        s.metrics
            .iter()
            .any(|m| m.name == "mse_vs_zero")
            .then(|| s.name.clone())
    })
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// One row per config that validated a model, in config order.
pub(crate) fn quality_rows(run: &RunData) -> Vec<QualityRow> {
    run.configs
        .iter()
        .filter_map(|c| {
            let stage = quality_stage(c)?;
            let values = |name: &str| metric_samples(c, &format!("{stage}.{name}")).values;
            let ratios = values("mse_vs_zero");
            let med = |name: &str| finite(median(&values(name)));
            let mean = ratios.iter().sum::<f64>() / ratios.len().max(1) as f64;
            Some(QualityRow {
                config: c.name.clone(),
                n: ratios.len(),
                mse_vs_zero: finite(median(&ratios)),
                mse_vs_mean: med("mse_vs_mean"),
                ic_per_date: med("ic_per_date"),
                ic_t: med("ic_t"),
                direction_accuracy: med("direction_accuracy"),
                worse_than_zero: !ratios.is_empty() && mean >= 1.0,
                stage,
            })
        })
        .collect()
}

/// A guard row per quality row: "no worse than predicting zero" (mean `mse_vs_zero` below 1),
/// failed when the mean is 1 or more. The interval is the `(1 - 2 alpha)` t-interval of the
/// mean ratio minus 1 across trials (seeds), shown as the CI of the difference.
pub(crate) fn quality_guards(run: &RunData, rows: &[QualityRow], alpha: f64) -> Vec<GuardRow> {
    rows.iter()
        .filter_map(|row| {
            let config = run.configs.iter().find(|c| c.name == row.config)?;
            let metric = format!("{}.mse_vs_zero", row.stage);
            let ratios = metric_samples(config, &metric).values;
            if ratios.is_empty() {
                return None;
            }
            let n = ratios.len() as f64;
            let mean = ratios.iter().sum::<f64>() / n;
            let diff = mean - 1.0;
            let ci = if ratios.len() >= 2 {
                let sd = (ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
                let half = crate::stats::student_t_quantile(1.0 - alpha, n - 1.0) * sd / n.sqrt();
                (diff - half, diff + half)
            } else {
                (diff, diff)
            };
            let verdict = if row.worse_than_zero {
                GuardVerdict::Fail
            } else {
                GuardVerdict::Pass
            };
            Some(GuardRow {
                config: row.config.clone(),
                against: QUALITY_AGAINST.to_owned(),
                metric,
                unit: "ratio".to_owned(),
                baseline_mean: Some(1.0),
                candidate_mean: Some(mean),
                tolerance: Tolerance::Absolute(0.0),
                result: GuardResult {
                    verdict,
                    diff,
                    relative_diff: diff,
                    ci: Some(ci),
                    margin: 0.0,
                    reason: row.worse_than_zero.then(|| {
                        "the model's validation MSE is no better than predicting zero (quality is under test; \
                         `[compare] quality = \"not_under_test\"` says it is not)"
                            .to_owned()
                    }),
                },
            })
        })
        .collect()
}
