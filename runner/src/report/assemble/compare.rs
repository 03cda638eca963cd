//! Before/after comparison of two runs (two stored runs' data -> **compare** -> the typed
//! `CompareModel` of `model::compare` -> its Markdown view in `render::compare_view` ->
//! compare.md).
//!
//! Configs are matched by name, and a config that ran with other parameters in the two runs
//! (another input file, argument or size) is refused unless the caller allows it: a speedup
//! across changed configs measures the change of config. Each matched config is compared on
//! the primary metric of the "before" run in two ways:
//! - **its level** (`results`): one run against the other, judged against the run-to-run
//!   variation of earlier runs of that config on the same machine (`stats::runs`), since a
//!   whole run's level moves from run to run; without earlier runs, the trials' interval is
//!   shown and no verdict given;
//! - **its speedup over its run's baseline config** (`relative`): each run's own paired
//!   estimate, whose run-level offset cancels inside the run, compared between the runs.
//!
//! The level p-values are adjusted together (Benjamini-Hochberg), and the guards of the
//! "before" run are re-checked across the runs. `CompareModel` follows the conventions of
//! `report.json` (see `model`): raw numbers with their unit, snake_case verdicts, `null` for
//! what could not be computed, no Markdown.

use super::history::{machine_key, param_changes};
use super::report::{method, Samples};
use super::samples::{
    compare_across_runs, compare_configs, comparison_plan, direction_of, metric_samples, settings_of,
};
use crate::report::error::ReportError;
use crate::report::model::{
    finite, CompareGuard, CompareMetric, CompareModel, CompareRelative, CompareResult, ComparisonRecord, EnvChange,
    Primary, RunData, RunStamp, COMPARE_SCHEMA_VERSION,
};
use crate::report::prose::{compare_summary_line, Style};
use crate::stats::{
    compare_run_levels, guard, median, ratio_of_ratios, CompareSettings, Comparison, Direction, GuardVerdict,
    RunSpread, Verdict,
};

/// What a caller allows `compare_runs` to compare anyway, and what it assumes.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    /// Runs whose stages loaded different data.
    pub allow_different_data: bool,
    /// Configs that ran with other parameters in the two runs.
    pub allow_config_change: bool,
    /// The run-to-run variation of a whole run's level assumed where no earlier runs on the
    /// machine measure it (a fraction: 0.05 for ±5%).
    pub run_spread: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            allow_different_data: false,
            allow_config_change: false,
            run_spread: crate::stats::ASSUMED_RUN_SPREAD,
        }
    }
}

/// The log medians of `metric` for `config` in `history`'s runs on `machine` (oldest first), in
/// stretches of unchanged parameters: what the run-to-run spread is estimated from.
fn series_stretches(history: &[RunData], config: &str, machine: &str, metric: &str) -> Vec<Vec<f64>> {
    let mut stretches: Vec<Vec<f64>> = Vec::new();
    let mut last_params = None;
    for run in history.iter().filter(|r| machine_key(r) == machine) {
        let Some(c) = run.configs.iter().find(|c| c.name == config) else {
            continue;
        };
        let m = median(&metric_samples(c, metric).values);
        if !(m.is_finite() && m > 0.0) {
            continue;
        }
        if last_params.as_ref() != Some(&c.params) || stretches.is_empty() {
            stretches.push(Vec::new());
            last_params = Some(c.params.clone());
        }
        stretches.last_mut().expect("pushed above").push(m.ln());
    }
    stretches
}

/// The run-to-run spread of every config with earlier runs on `machine`, pooled: how much a
/// run's level typically moves on that machine.
fn machine_spread(history: &[RunData], configs: &[String], machine: &str, metric: &str) -> Option<RunSpread> {
    let stretches: Vec<Vec<f64>> = configs
        .iter()
        .flat_map(|c| series_stretches(history, c, machine, metric))
        .collect();
    RunSpread::of(&stretches).map(|s| RunSpread {
        source: crate::stats::SpreadSource::Machine,
        ..s
    })
}

/// Each candidate config's speedup over its run's baseline config, in both runs, and the change.
fn relative_rows(
    a: &RunData,
    b: &RunData,
    primary: &str,
    direction: Direction,
    settings: &CompareSettings,
) -> Vec<CompareRelative> {
    let settings_b = settings_of(b);
    comparison_plan(a)
        .into_iter()
        .filter_map(|(i, j)| {
            let (cand, base) = (&a.configs[i], &a.configs[j]);
            let cand_b = b.configs.iter().find(|c| c.name == cand.name)?;
            let base_b = b.configs.iter().find(|c| c.name == base.name)?;
            let before = compare_configs(base, cand, primary, direction, settings);
            let after = compare_configs(base_b, cand_b, primary, direction, &settings_b);
            let change = match (before.speedup_ci, after.speedup_ci) {
                (Some(x), Some(y)) => ratio_of_ratios(
                    (before.speedup, x, before.confidence),
                    (after.speedup, y, after.confidence),
                ),
                _ => None,
            };
            let verdict = change.map_or(Verdict::Inconclusive, |(_, (lo, hi), p)| {
                let band = settings.band;
                if p < settings.alpha && lo > 1.0 + band {
                    Verdict::Faster
                } else if p < settings.alpha && hi < 1.0 - band {
                    Verdict::Slower
                } else if lo >= 1.0 - band && hi <= 1.0 + band {
                    Verdict::NoChange
                } else {
                    Verdict::Inconclusive
                }
            });
            Some(CompareRelative {
                config: cand.name.clone(),
                baseline: base.name.clone(),
                before_speedup: finite(before.speedup),
                before_ci: before.speedup_ci,
                after_speedup: finite(after.speedup),
                after_ci: after.speedup_ci,
                change: change.and_then(|c| finite(c.0)),
                change_ci: change.map(|c| c.1),
                p: change.and_then(|c| finite(c.2)),
                verdict,
            })
        })
        .collect()
}

/// The stability flags of a run, as notes for a comparison that reads it.
fn stability_notes(run: &RunData, side: &str) -> Vec<String> {
    let Some(s) = super::stability::stability_report(run) else {
        return Vec::new();
    };
    let Some(base) = s.rows.iter().find(|r| r.config == s.baseline) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    if s.drifting {
        notes.push(format!(
            "The {side} run's machine was drifting: {} of {} moved by {} from its first third of trials to its last.",
            s.metric,
            s.baseline,
            crate::report::format::level_change(base.figures.level_change)
        ));
    }
    if s.jittery {
        notes.push(format!(
            "The {side} run's machine was jittery: trial-to-trial CV {:.1}% on {} of {}.",
            base.figures.cv * 100.0,
            s.metric,
            s.baseline
        ));
    }
    notes
}

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

// Long because: it builds the comparison in order (the data and config checks that may refuse
// it, the configs both runs share, their level comparisons adjusted as one family, the relative
// ones, guards, rows, the environment diff), and every step reads the matched configs.
/// Compares run `b` ("after") against run `a` ("before"). `history` holds the experiment's
/// other stored runs, oldest first, from which the run-to-run variation is estimated. Refuses
/// runs whose data hashes differ, or whose shared configs ran with other parameters, unless
/// `options` allows it, because a speedup across different inputs or configs measures nothing
/// about the code.
pub fn compare_runs(
    a: &RunData,
    b: &RunData,
    options: CompareOptions,
    history: &[RunData],
) -> Result<CompareModel, ReportError> {
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
    if !differing.is_empty() && !options.allow_different_data {
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
    let config_changes: Vec<String> = matched
        .iter()
        .flat_map(|&(i, j)| {
            param_changes(&a.configs[i].params, &b.configs[j].params)
                .into_iter()
                .map(move |c| format!("{}: {c}", a.configs[i].name))
        })
        .collect();
    if !config_changes.is_empty() && !options.allow_config_change {
        return Err(ReportError::ConfigChanged {
            changes: config_changes,
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
    let (machine, same_machine) = (machine_key(a), machine_key(a) == machine_key(b));
    let mut notes = Vec::new();
    if !same_machine {
        notes.push(
            "The runs ran on different machines: a config's level in one against the other measures the machines as \
             much as the code, so levels get no verdict; the speedups over each run's baseline config still compare."
                .to_owned(),
        );
    }
    // The spread a level is judged against: earlier runs of its config on this machine, else
    // of the experiment's other configs on it, else the caller's assumption.
    let names: Vec<String> = matched.iter().map(|&(i, _)| a.configs[i].name.clone()).collect();
    let machine_wide = machine_spread(history, &names, &machine, primary);
    let raw: Vec<Comparison> = matched
        .iter()
        .map(|&(i, j)| {
            let trials = compare_across_runs(&a.configs[i], &b.configs[j], primary, direction, &settings);
            let own = RunSpread::of(&series_stretches(history, &a.configs[i].name, &machine, primary));
            let spread = own
                .or(machine_wide)
                .unwrap_or_else(|| RunSpread::assumed(options.run_spread));
            compare_run_levels(trials, &spread)
        })
        .collect();
    if !config_changes.is_empty() {
        notes.push(format!(
            "Compared although configs ran with other parameters (allowed on request): {}.",
            config_changes.join("; ")
        ));
    }
    notes.extend(stability_notes(a, "before"));
    notes.extend(stability_notes(b, "after"));
    let mut comparisons = Comparison::adjust_family(raw);
    if !same_machine {
        // Another machine's level says nothing about this code change.
        for c in &mut comparisons {
            c.verdict = Verdict::Inconclusive;
            c.reps_needed = None;
            c.reason = Some("the runs ran on different machines".to_owned());
        }
    }
    let relative = relative_rows(a, b, primary, direction, &settings);

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
        relative,
        notes,
        config_changes,
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
