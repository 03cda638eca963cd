//! The "Model quality" section (validate metrics of each config -> skill against naive
//! baselines) and the guard that flags a model worse than predicting zero.
//!
//! A config's quality comes from the stage that recorded `mse_vs_zero` (a `validate` stage):
//! medians over the successful trials of its MSE ratios to the naive baselines, per-date IC with
//! its t-statistic and direction accuracy. Each repetition trains with its own seed, so these are
//! distributions across seeds. Unless the manifest says `[compare] quality = "not_under_test"`,
//! a config gets a quality guard row that passes only when the model is *shown* better than
//! predicting zero: the `(1 - 2 alpha)` t-interval of its mean `mse_vs_zero` across seeds lies
//! wholly below 1. A point estimate below 1 with an interval that reaches 1 is "not shown better
//! than predicting zero", the same verdict as a model that is worse, so a model no better than
//! chance gets one verdict run after run instead of one that follows the noise of the mean.
//! The quality guard judges each config on its own: it is never a change between configs, so it
//! never makes a comparison "faster but changed results".

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

/// The `(1 - 2 alpha)` t-interval of the mean of `ratios`; `None` for fewer than two.
fn mean_interval(ratios: &[f64], alpha: f64) -> Option<(f64, f64)> {
    if ratios.len() < 2 {
        return None;
    }
    let n = ratios.len() as f64;
    let mean = ratios.iter().sum::<f64>() / n;
    let sd = (ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let half = crate::stats::student_t_quantile(1.0 - alpha, n - 1.0) * sd / n.sqrt();
    Some((mean - half, mean + half))
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
            let ci = mean_interval(&ratios, run.compare.alpha);
            Some(QualityRow {
                config: c.name.clone(),
                n: ratios.len(),
                mse_vs_zero: finite(median(&ratios)),
                mse_vs_mean: med("mse_vs_mean"),
                ic_per_date: med("ic_per_date"),
                ic_t: med("ic_t"),
                direction_accuracy: med("direction_accuracy"),
                shown_better: ci.is_some_and(|(_, hi)| hi < 1.0),
                mse_vs_zero_ci: ci,
                stage,
            })
        })
        .collect()
}

/// A guard row per quality row: "shown better than predicting zero" (the interval of the mean
/// `mse_vs_zero` wholly below 1) passes; anything else fails as "not shown better than
/// predicting zero". The interval is shown as the CI of the mean ratio minus 1.
pub(crate) fn quality_guards(run: &RunData, rows: &[QualityRow]) -> Vec<GuardRow> {
    rows.iter()
        .filter_map(|row| {
            let config = run.configs.iter().find(|c| c.name == row.config)?;
            let metric = format!("{}.mse_vs_zero", row.stage);
            let ratios = metric_samples(config, &metric).values;
            if ratios.is_empty() {
                return None;
            }
            let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
            let diff = mean - 1.0;
            let ci = row.mse_vs_zero_ci.map(|(lo, hi)| (lo - 1.0, hi - 1.0));
            let verdict = if row.shown_better {
                GuardVerdict::Pass
            } else {
                GuardVerdict::Fail
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
                    ci,
                    margin: 0.0,
                    reason: (!row.shown_better).then(|| {
                        format!(
                            "the model is not shown better than predicting zero: {} (quality is under test; \
                             `[compare] quality = \"not_under_test\"` says it is not)",
                            match row.mse_vs_zero_ci {
                                Some((lo, hi)) => format!(
                                    "the interval of its validation MSE over that of predicting zero, {:.4} to {:.4}, \
                                     reaches 1",
                                    lo, hi
                                ),
                                None => "one seed gives no interval".to_owned(),
                            }
                        )
                    }),
                },
            })
        })
        .collect()
}
