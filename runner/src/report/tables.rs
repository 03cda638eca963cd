//! Report tables (run data + stats -> guard, claim, stage, sweep, failed-trial rows).

use super::format;
use super::model::{ClaimRow, FailedTrialRow, GuardRow, KeyValue, StageRow, SweepRow, SweepTable};
use super::samples::{
    compare_configs, direction_of, metric_samples, settings_of, sweep_axis, sweep_label, trial_value,
};
use super::{ConfigData, RunData};
use crate::stats::{assess, bootstrap_median_ci, guard, guard_paired, median, Direction, GuardVerdict, Tolerance};

/// `(baseline, candidate)` values of `metric` from successful trials with the same repetition.
fn paired_by_repetition(base: &ConfigData, cand: &ConfigData, metric: &str) -> Vec<(f64, f64)> {
    base.trials
        .iter()
        .filter(|t| t.ok)
        .filter_map(|bt| {
            let ct = cand.trials.iter().find(|c| c.ok && c.repetition == bt.repetition)?;
            Some((trial_value(bt, metric)?.0, trial_value(ct, metric)?.0))
        })
        .collect()
}

pub(crate) fn guard_row(cand: &ConfigData, base: &ConfigData, metric: &str, tol: Tolerance, alpha: f64) -> GuardRow {
    let a = metric_samples(base, metric);
    let b = metric_samples(cand, metric);
    let unit = a.unit.clone().or(b.unit.clone()).unwrap_or_default();
    // Trials of one repetition share their seed: compare them pairwise when every trial pairs.
    let pairs = paired_by_repetition(base, cand, metric);
    let r = if pairs.len() >= 2 && pairs.len() == a.values.len().min(b.values.len()) {
        guard_paired(&pairs, tol, alpha)
    } else {
        guard(&a.values, &b.values, tol, alpha)
    };
    let mean = |v: &[f64]| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let relative = matches!(tol, Tolerance::Relative(_));
    let base_mean = mean(&a.values);
    let show = |d: f64| {
        if relative {
            format::percent(d / base_mean.abs())
        } else {
            format!("{:+}", format::sig(d, 3).parse::<f64>().unwrap_or(d))
        }
    };
    GuardRow {
        config: cand.name.clone(),
        against: base.name.clone(),
        metric: metric.to_owned(),
        baseline_mean: format::value(base_mean, &unit),
        candidate_mean: format::value(mean(&b.values), &unit),
        diff: if r.diff.is_finite() {
            show(r.diff)
        } else {
            "—".to_owned()
        },
        ci: r
            .ci
            .map(|(lo, hi)| format!("{} to {}", show(lo), show(hi)))
            .unwrap_or_else(|| "—".to_owned()),
        tolerance: tol.display(),
        verdict: match &r.reason {
            Some(reason) if r.verdict != GuardVerdict::Pass => {
                format!("{} ({reason})", r.verdict.as_str())
            }
            _ => r.verdict.as_str().to_owned(),
        },
        result: r,
    }
}

pub(crate) fn stage_table(run: &RunData) -> (Vec<String>, Vec<StageRow>) {
    let mut columns: Vec<String> = Vec::new();
    for stage in run.configs.iter().flat_map(|c| &c.trials).flat_map(|t| &t.stages) {
        if !columns.contains(&stage.name) {
            columns.push(stage.name.clone());
        }
    }
    let rows = run
        .configs
        .iter()
        .map(|c| {
            let ok: Vec<_> = c.trials.iter().filter(|t| t.ok).collect();
            let cells = columns
                .iter()
                .map(|name| {
                    let secs: Vec<f64> = ok
                        .iter()
                        .filter_map(|t| t.stages.iter().find(|s| &s.name == name).map(|s| s.seconds))
                        .collect();
                    format::seconds_or_dash(median(&secs))
                })
                .collect();
            let totals: Vec<f64> = ok.iter().map(|t| t.stages.iter().map(|s| s.seconds).sum()).collect();
            let peak = ok.iter().flat_map(|t| &t.stages).filter_map(|s| s.peak_rss_bytes).max();
            StageRow {
                config: c.name.clone(),
                cells,
                total: format::seconds_or_dash(median(&totals)),
                peak_rss: peak.map(|b| format::bytes(b as f64)).unwrap_or_else(|| "—".to_owned()),
            }
        })
        .collect();
    (columns, rows)
}

pub(crate) fn sweep_tables(run: &RunData, unit: &str) -> Vec<SweepTable> {
    if run.configs.iter().all(|c| c.sweep.is_empty()) {
        return Vec::new();
    }
    let mut variants: Vec<String> = Vec::new();
    let mut points: Vec<String> = Vec::new();
    for c in &run.configs {
        if !variants.contains(&c.variant) {
            variants.push(c.variant.clone());
        }
        let p = sweep_label(c);
        if !points.contains(&p) {
            points.push(p);
        }
    }
    let axis = sweep_axis(run);
    let settings = settings_of(run);
    let rows = points
        .iter()
        .map(|point| SweepRow {
            point: point.clone(),
            cells: variants
                .iter()
                .map(
                    |v| match run.configs.iter().find(|c| &c.variant == v && &sweep_label(c) == point) {
                        Some(c) => {
                            let s = metric_samples(c, &run.compare.primary);
                            let ci = bootstrap_median_ci(&s.values, settings.resamples, settings.seed);
                            format!(
                                "{} ({})",
                                format::value(median(&s.values), unit),
                                format::value_interval(ci, unit)
                            )
                        }
                        None => "—".to_owned(),
                    },
                )
                .collect(),
        })
        .collect();
    vec![SweepTable {
        axis,
        metric: run.compare.primary.clone(),
        variants,
        rows,
    }]
}

pub(crate) fn failed_trials(run: &RunData) -> Vec<FailedTrialRow> {
    run.configs
        .iter()
        .flat_map(|c| c.trials.iter().filter(|t| !t.ok).map(move |t| (c, t)))
        .map(|(c, t)| FailedTrialRow {
            config: c.name.clone(),
            repetition: t.repetition,
            block: t.block.map(|b| b.to_string()).unwrap_or_else(|| "—".to_owned()),
            host: format::cell(&t.host),
            stage: t
                .stages
                .iter()
                .find(|s| !s.ok)
                .map(|s| s.name.clone())
                .unwrap_or_else(|| "—".to_owned()),
            error: format::cell(t.error.as_deref().unwrap_or("(no message)")),
        })
        .collect()
}

pub(crate) fn key_values(map: &std::collections::BTreeMap<String, String>) -> Vec<KeyValue> {
    map.iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: format::cell(v),
        })
        .collect()
}

pub(crate) fn claim_rows(
    run: &RunData,
    plan: &[(usize, usize)],
    settings: &crate::stats::CompareSettings,
) -> Vec<ClaimRow> {
    let mut rows = Vec::new();
    for spec in &run.compare.claims {
        let source = spec.source.clone().unwrap_or_else(|| "—".to_owned());
        let matching: Vec<&(usize, usize)> = plan
            .iter()
            .filter(|(i, _)| run.configs[*i].variant == spec.variant)
            .collect();
        if matching.is_empty() {
            rows.push(ClaimRow {
                claim: spec.text.clone(),
                source,
                config: spec.variant.clone(),
                metric: spec.metric.clone(),
                claimed: "—".to_owned(),
                measured: "—".to_owned(),
                verdict: "untestable".to_owned(),
                reason: format!("variant `{}` has no comparison in this run", spec.variant),
                evaluation: None,
            });
            continue;
        }
        for &&(i, j) in &matching {
            let (cand, base) = (&run.configs[i], &run.configs[j]);
            let unit = metric_samples(base, &spec.metric).unit;
            let direction: Direction = direction_of(run, &spec.metric, unit.as_deref());
            let c = compare_configs(base, cand, &spec.metric, direction, settings);
            let e = assess(&spec.claim, &c);
            rows.push(ClaimRow {
                claim: format::cell(&spec.text),
                source: format::cell(&source),
                config: cand.name.clone(),
                metric: spec.metric.clone(),
                claimed: format::factor_interval(Some(e.claimed)),
                measured: format!(
                    "{} ({})",
                    format::factor(c.speedup),
                    format::factor_interval(c.speedup_ci)
                ),
                verdict: e.verdict.as_str().to_owned(),
                reason: e.reason.clone(),
                evaluation: Some(e),
            });
        }
    }
    rows
}
