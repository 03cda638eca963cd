//! Report tables (run data + stats -> typed guard, claim, stage, sweep, failed-trial rows).

use super::samples::{compare_configs, direction_of, metric_samples, sweep_axis, sweep_label, trial_value};
use crate::report::model::{
    finite, ClaimRow, ClaimedValue, ConfigData, FailedTrialRow, GuardRow, ResultRow, RunData, StageRow, SweepCell,
    SweepRow, SweepTable,
};
use crate::report::prose::{no_comparison_reason, Style};
use crate::stats::{
    assess, assess_value, bootstrap_median_ci, guard, guard_paired, median, ClaimUnit, ClaimVerdict, Direction,
    Tolerance,
};

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
    let result = if pairs.len() >= 2 && pairs.len() == a.values.len().min(b.values.len()) {
        guard_paired(&pairs, tol, alpha)
    } else {
        guard(&a.values, &b.values, tol, alpha)
    };
    let mean = |v: &[f64]| finite(v.iter().sum::<f64>() / v.len() as f64);
    GuardRow {
        config: cand.name.clone(),
        against: base.name.clone(),
        metric: metric.to_owned(),
        unit,
        baseline_mean: mean(&a.values),
        candidate_mean: mean(&b.values),
        tolerance: tol,
        result,
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
            let median_seconds = columns
                .iter()
                .map(|name| {
                    let secs: Vec<f64> = ok
                        .iter()
                        .filter_map(|t| t.stages.iter().find(|s| &s.name == name).map(|s| s.seconds))
                        .collect();
                    finite(median(&secs))
                })
                .collect();
            let totals: Vec<f64> = ok.iter().map(|t| t.stages.iter().map(|s| s.seconds).sum()).collect();
            StageRow {
                config: c.name.clone(),
                median_seconds,
                total_seconds: finite(median(&totals)),
                peak_rss_bytes: ok.iter().flat_map(|t| &t.stages).filter_map(|s| s.peak_rss_bytes).max(),
            }
        })
        .collect();
    (columns, rows)
}

/// The sweep table of the primary metric: each config's median and its interval, read from its
/// row of `results` (one per config, in plan order).
pub(crate) fn sweep_tables(run: &RunData, unit: &str, results: &[ResultRow]) -> Vec<SweepTable> {
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
    let rows = points
        .iter()
        .map(|point| SweepRow {
            point: point.clone(),
            cells: variants
                .iter()
                .map(|v| {
                    let i = run
                        .configs
                        .iter()
                        .position(|c| &c.variant == v && &sweep_label(c) == point)?;
                    Some(SweepCell {
                        median: results[i].median,
                        median_ci: results[i].median_ci,
                    })
                })
                .collect(),
        })
        .collect();
    vec![SweepTable {
        axis: sweep_axis(run),
        metric: run.compare.primary.clone(),
        unit: unit.to_owned(),
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
            block: t.block,
            host: t.host.clone(),
            stage: t.stages.iter().find(|s| !s.ok).map(|s| s.name.clone()),
            error: t.error.clone(),
        })
        .collect()
}

/// The note on the configs of a claim's variant that its conditions leave out (`context`, as
/// `(candidate, baseline)` pairs); `None` when there are none.
fn context_note(run: &RunData, spec: &crate::stats::ClaimSpec, context: &[(usize, usize)]) -> Option<String> {
    if context.is_empty() {
        return None;
    }
    let names: Vec<String> = context
        .iter()
        .map(|(i, _)| format!("`{}`", run.configs[*i].name))
        .collect();
    Some(format!(
        "Claim \"{}\" on `{}` is for {}: {} {} not judged against it (measured, as context only).",
        spec.text,
        spec.variant,
        spec.requires.describe_params(),
        names.join(", "),
        if names.len() == 1 { "is" } else { "are" },
    ))
}

/// Why `spec` is not judged at config `cand`, with the verdict that says so: a claim this
/// experiment does not test (another change, another measurement), or a config that did not
/// recreate what the claim is about, can neither refute nor support it; the measurement stays
/// as context. `None` when the claim is judged there.
fn not_judged_at(
    run: &RunData,
    spec: &crate::stats::ClaimSpec,
    cand: &ConfigData,
    base: &ConfigData,
) -> Option<(ClaimVerdict, String)> {
    spec.not_judged().or_else(|| {
        let (facts, device_stages) = ran_facts(cand);
        let median = |metric: &str| {
            let s = metric_samples(base, metric);
            let m = median(&s.values);
            m.is_finite()
                .then(|| (m, crate::report::format::value(m, s.unit.as_deref().unwrap_or(""))))
        };
        let baseline = crate::stats::Measured {
            config: &base.name,
            median: &median,
        };
        let ran = crate::stats::Ran {
            params: &cand.params,
            facts: &facts,
            device_stages: &device_stages,
            baseline: Some(&baseline),
        };
        crate::stats::unmet(&spec.requires, &run.environment, ran).map(|why| (ClaimVerdict::NotReproduced, why))
    })
}

/// What `config`'s successful trials recorded they ran on (`<stage>.<fact>` -> values), and its
/// stages of a kind that records the device it ran on.
pub(crate) fn ran_facts(config: &ConfigData) -> (crate::stats::RanFacts, Vec<String>) {
    let mut facts = crate::stats::RanFacts::new();
    let mut device_stages: Vec<String> = Vec::new();
    for stage in config.trials.iter().filter(|t| t.ok).flat_map(|t| &t.stages) {
        if crate::kinds::facts::find_fact(&stage.kind, "device").is_some() && !device_stages.contains(&stage.name) {
            device_stages.push(stage.name.clone());
        }
        for (name, value) in &stage.facts {
            facts
                .entry(format!("{}.{name}", stage.name))
                .or_default()
                .insert(value.clone());
        }
    }
    (facts, device_stages)
}

/// The row of a value claim (`value = "2ms..10ms"`) at config `cand`: judged on the interval
/// of its median, unless the claim is not this experiment's or the run missed its conditions.
/// On the primary metric the interval is the one in `cand`'s results row (`result`), when
/// given: it is computed once, there.
fn value_claim_row(
    run: &RunData,
    spec: &crate::stats::ClaimSpec,
    cand: &ConfigData,
    result: Option<&ResultRow>,
    settings: &crate::stats::CompareSettings,
    base: ClaimRow,
) -> ClaimRow {
    let s = metric_samples(cand, &spec.metric);
    let m = median(&s.values);
    let ci = match result {
        Some(r) if spec.metric == run.compare.primary => r.median_ci,
        _ => bootstrap_median_ci(&s.values, settings.resamples, settings.seed),
    };
    let mut e = assess_value(&spec.claim, m, ci, s.values.len(), run.compare.band);
    let unit = s.unit.as_deref().unwrap_or("");
    let not_judged = not_judged_at(run, spec, cand, cand).or_else(|| {
        let on = spec.made_on.as_ref()?;
        other_hardware(run, on, cand, m, unit, &spec.claim).map(|why| (ClaimVerdict::NotReproduced, why))
    });
    if let Some((verdict, why)) = not_judged {
        e.verdict = verdict;
        e.reason = why;
    }
    ClaimRow {
        verdict: e.verdict,
        reason: e.reason,
        claimed: Some(e.claimed),
        value: Some(ClaimedValue {
            unit: s.unit.unwrap_or_default(),
            median: finite(m),
            median_ci: ci,
        }),
        reps_needed: e.reps_needed.filter(|_| e.verdict == ClaimVerdict::Inconclusive),
        ..base
    }
}

/// Why a value claim stated for other hardware (`made_on`) is not judged at `cand`, with its
/// median as context: scaled to the claim's link where the claim gives its rate and the run
/// measured its own. `None` when `cand` ran on the claim's hardware.
fn other_hardware(
    run: &RunData,
    on: &crate::stats::MadeOn,
    cand: &ConfigData,
    median: f64,
    unit: &str,
    claim: &crate::stats::Claim,
) -> Option<String> {
    let (facts, _) = ran_facts(cand);
    let gpu = facts
        .iter()
        .find(|(k, _)| k.ends_with(".gpu"))
        .and_then(|(_, v)| v.iter().next().cloned())
        .or_else(|| run.environment.get("gpu").cloned())
        .unwrap_or_else(|| "an unknown GPU".to_owned());
    if on.is(&gpu) {
        return None;
    }
    use crate::report::format;
    let mut why = format!(
        "not reproduced here: the figure was stated for {}; this run had {gpu}, so its median ({}) is context, not a \
         verdict",
        on.hardware,
        format::value(median, unit)
    );
    let ours = on
        .link_metric
        .as_deref()
        .map(|m| median_of(cand, m))
        .filter(|r| r.is_finite());
    if let (Some(ours), Some(theirs)) = (ours, on.link_gbps) {
        if let Some(scaled) = on.scaled(median, ours) {
            let (low, high) = claim.value_interval();
            let inside = low <= scaled && scaled <= high;
            why.push_str(&format!(
                "; scaled from this link's {} to the claim's {}, it is {}, {} the claimed range",
                format::value(ours, "GB/s"),
                format::value(theirs, "GB/s"),
                format::value(scaled, unit),
                if inside { "inside" } else { "outside" }
            ));
        }
    }
    Some(why)
}

/// The median of `metric` over `config`'s successful trials (NaN where none recorded it).
fn median_of(config: &ConfigData, metric: &str) -> f64 {
    median(&metric_samples(config, metric).values)
}

/// A claim row with no measurement yet: what the claim says, and a verdict with its reason.
fn blank_claim_row(spec: &crate::stats::ClaimSpec, config: String, verdict: ClaimVerdict, reason: String) -> ClaimRow {
    ClaimRow {
        claim: spec.text.clone(),
        quote: spec.quote.clone(),
        source: spec.source.clone(),
        change: spec.change.clone(),
        config,
        against: None,
        metric: spec.metric.clone(),
        verdict,
        claimed: None,
        speedup: None,
        speedup_ci: None,
        reason,
        reps_needed: None,
        value: None,
        differs: spec.differs.clone(),
    }
}

/// The (candidate, baseline) config pairs a claim is about: a value claim, each of its variant's
/// configs on its own, baseline or not (as `(i, i)`); a speedup claim, each of its variant's
/// configs against the config it is compared with.
fn claim_pairs(run: &RunData, spec: &crate::stats::ClaimSpec, plan: &[(usize, usize)]) -> Vec<(usize, usize)> {
    if spec.claim.unit == ClaimUnit::Value {
        (0..run.configs.len())
            .filter(|&i| run.configs[i].variant == spec.variant)
            .map(|i| (i, i))
            .collect()
    } else {
        plan.iter()
            .copied()
            .filter(|(i, _)| run.configs[*i].variant == spec.variant)
            .collect()
    }
}

/// The verdict of a claim made at parameter values none of the run's configs has.
fn params_not_reproduced(
    run: &RunData,
    spec: &crate::stats::ClaimSpec,
    context: &[(usize, usize)],
) -> (ClaimVerdict, String) {
    let had: Vec<String> = context
        .iter()
        .flat_map(|(i, _)| crate::stats::params_unmet(&spec.requires, &run.configs[*i].params))
        .collect();
    spec.not_judged().unwrap_or_else(|| {
        (
            ClaimVerdict::NotReproduced,
            format!(
                "not reproduced here: the claim is for {}; this run measured {}",
                spec.requires.describe_params(),
                had.join(", ")
            ),
        )
    })
}

/// The claim rows of a report, and notes on the configs a claim does not cover.
///
/// A claim made at given parameter values (`requires.params`, e.g. 500 symbols) is judged only
/// at the configs that have them; the variant's other sweep points get no row (their speedups
/// are in the report's other tables) and one note says so. When no config has them, one row
/// says the claim was not reproduced here. `results` are the report's results rows (one per
/// config), whose median intervals value claims on the primary metric read; `None` where there
/// are none yet (the questions a sequential run asks at a look).
pub(crate) fn claim_rows(
    run: &RunData,
    plan: &[(usize, usize)],
    settings: &crate::stats::CompareSettings,
    results: Option<&[ResultRow]>,
) -> (Vec<ClaimRow>, Vec<String>) {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for spec in &run.compare.claims {
        let row =
            |config: String, verdict: ClaimVerdict, reason: String| blank_claim_row(spec, config, verdict, reason);
        let matching = claim_pairs(run, spec, plan);
        if matching.is_empty() {
            rows.push(row(
                spec.variant.clone(),
                ClaimVerdict::Untestable,
                no_comparison_reason(&spec.variant, Style::Plain),
            ));
            continue;
        }
        // (candidate, baseline) config pairs the claim covers, and the others.
        type Pairs = Vec<(usize, usize)>;
        let (covered, context): (Pairs, Pairs) = matching
            .into_iter()
            .partition(|(i, _)| crate::stats::params_unmet(&spec.requires, &run.configs[*i].params).is_empty());
        notes.extend(context_note(run, spec, &context));
        if covered.is_empty() {
            let (verdict, reason) = params_not_reproduced(run, spec, &context);
            rows.push(row(spec.variant.clone(), verdict, reason));
            continue;
        }
        for &(i, j) in &covered {
            let (cand, base) = (&run.configs[i], &run.configs[j]);
            if spec.claim.unit == ClaimUnit::Value {
                rows.push(value_claim_row(
                    run,
                    spec,
                    cand,
                    results.map(|r| &r[i]),
                    settings,
                    row(cand.name.clone(), ClaimVerdict::Untestable, String::new()),
                ));
                continue;
            }
            let unit = metric_samples(base, &spec.metric).unit;
            let direction: Direction = direction_of(run, &spec.metric, unit.as_deref());
            let c = compare_configs(base, cand, &spec.metric, direction, settings);
            let mut e = assess(&spec.claim, &c);
            if let Some((verdict, why)) = not_judged_at(run, spec, cand, base) {
                e.verdict = verdict;
                e.reason = why;
            }
            rows.push(ClaimRow {
                against: Some(base.name.clone()),
                claimed: Some(e.claimed),
                speedup: finite(c.speedup),
                speedup_ci: c.speedup_ci,
                reps_needed: e.reps_needed.filter(|_| e.verdict == ClaimVerdict::Inconclusive),
                ..row(cand.name.clone(), e.verdict, e.reason)
            });
        }
    }
    (rows, notes)
}
