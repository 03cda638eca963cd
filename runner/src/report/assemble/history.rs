//! A metric over every stored run of an experiment (stored runs -> run data -> **history**, the
//! typed `History` of `model::history` -> Markdown table + SVG chart in `render::history`), with
//! the steps along each series flagged, in the spirit of asv's step detection.
//!
//! A **series** is one config on one machine (host, CPU, cores, OS, GPU) and one branch, like a
//! series on the published site: a run on another machine starts a series of its own instead
//! of counting as a step. Each run contributes one point per config: the median of the metric
//! over its successful measured trials, with a percentile-bootstrap 95% CI.
//!
//! A **step** into a run is tested against the variation from run to run, not against the
//! trials inside the two runs (`stats::runs`): the log medians of up to 8 runs before the step
//! against up to 8 from it on, a pooled two-sample t-test, flagged when `p < alpha` and the
//! 95% interval of the change lies outside the noise band, keeping the most significant of
//! neighbouring candidates. A run whose config ran with other parameters than the run before
//! it (a changed argument, input file, size) is a **config change**: the series breaks there,
//! and nothing is compared across it.
//!
//! Steps are not adjusted for multiplicity across the history: each answers its own question
//! ("did this change move the metric?"), and under identical code each is flagged with
//! probability at most alpha, the false-flag rate the method text states.

use super::samples::metric_samples;
use crate::report::format;
use crate::report::model::{History, HistoryPoint, HistoryStep, RunData};
use crate::stats::{bootstrap_median_ci, median, steps, Direction, StepCall};

/// The machine a run ran on, as a series key: host, CPU, cores, OS and GPU (not the versions
/// of measured or the compiler, which change with every build of the code under test).
pub(crate) fn machine_key(run: &RunData) -> String {
    ["host", "cpu", "cores", "os", "gpu"]
        .iter()
        .map(|k| run.environment.get(*k).map_or("", String::as_str))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The parameters a config ran with, as text to compare between runs: `argv: [..] -> [..]`
/// per stage parameter that differs, empty when nothing does.
pub(crate) fn param_changes(
    before: &indexmap::IndexMap<String, serde_json::Value>,
    after: &indexmap::IndexMap<String, serde_json::Value>,
) -> Vec<String> {
    let mut changes = Vec::new();
    let stages: Vec<&String> = before
        .keys()
        .chain(after.keys().filter(|k| !before.contains_key(*k)))
        .collect();
    for stage in stages {
        let empty = serde_json::Map::new();
        let obj =
            |v: Option<&serde_json::Value>| v.and_then(|v| v.as_object()).cloned().unwrap_or_else(|| empty.clone());
        let (b, a) = (obj(before.get(stage)), obj(after.get(stage)));
        let keys: Vec<&String> = b.keys().chain(a.keys().filter(|k| !b.contains_key(*k))).collect();
        for key in keys {
            let (x, y) = (b.get(key), a.get(key));
            if x != y {
                let show = |v: Option<&serde_json::Value>| v.map_or_else(|| "(not set)".to_owned(), |v| v.to_string());
                changes.push(format!("{stage}.{key}: {} -> {}", show(x), show(y)));
            }
        }
    }
    changes
}

/// One config's run in a series, before its step is known.
struct SeriesRun {
    run_id: String,
    index: usize,
    log_median: f64,
    /// What changed in the config's parameters from the series' previous run.
    changes: Vec<String>,
}

// Long because: one pass gathers the points and series, a second tests every series' steps.
/// Builds the history of `metric` over `runs` (oldest first). `direction` is `None` to infer it
/// from the metric's unit.
pub fn build_history(experiment: &str, metric: &str, direction: Option<Direction>, runs: &[RunData]) -> History {
    let settings = runs
        .last()
        .map_or_else(crate::stats::CompareSettings::default, super::samples::settings_of);
    let mut unit = String::new();
    let mut points = Vec::new();
    // (config, machine, branch) -> the runs of that series with a value, and the config's
    // parameters in the last one.
    type Key = (String, String, Option<String>);
    let mut series: Vec<(Key, Vec<SeriesRun>, indexmap::IndexMap<String, serde_json::Value>)> = Vec::new();
    let mut notes = Vec::new();
    let mut last_data: Option<(String, String)> = None;
    let machines: std::collections::BTreeSet<String> = runs.iter().map(machine_key).collect();
    for (index, run) in runs.iter().enumerate() {
        let commit = short_commit(run);
        if let Some(data) = run.stock_data.as_ref().filter(|d| !d.versions.is_empty()) {
            let labels = data.version_labels();
            if let Some((prev_run, prev)) = last_data.as_ref().filter(|(_, prev)| *prev != labels) {
                notes.push(format!(
                    "Run {} read other stock data than run {prev_run} (dataset versions {labels} vs {prev}): the \
                     steps between them compare different inputs.",
                    run.run_id
                ));
            }
            last_data = Some((run.run_id.clone(), labels));
        }
        let machine = machine_key(run);
        let branch = run.environment.get("git_branch").cloned();
        for config in &run.configs {
            let samples = metric_samples(config, metric);
            if let Some(u) = &samples.unit {
                unit.clone_from(u);
            }
            let values = samples.values;
            let m = median(&values);
            points.push(HistoryPoint {
                run_id: run.run_id.clone(),
                run_index: index,
                started_at: run.started_at,
                commit: commit.clone(),
                config: config.name.clone(),
                machine: machine.clone(),
                branch: branch.clone(),
                n: values.len(),
                median: m.is_finite().then_some(m),
                median_ci: bootstrap_median_ci(&values, settings.resamples, settings.seed),
            });
            if !(m.is_finite() && m > 0.0) {
                continue;
            }
            let key: Key = (config.name.clone(), machine.clone(), branch.clone());
            let entry = match series.iter_mut().find(|(k, _, _)| *k == key) {
                Some(e) => e,
                None => {
                    series.push((key, Vec::new(), config.params.clone()));
                    series.last_mut().expect("just pushed")
                }
            };
            let changes = if entry.1.is_empty() {
                Vec::new()
            } else {
                param_changes(&entry.2, &config.params)
            };
            entry.2.clone_from(&config.params);
            entry.1.push(SeriesRun {
                run_id: run.run_id.clone(),
                index,
                log_median: m.ln(),
                changes,
            });
        }
    }
    let direction = direction.unwrap_or_else(|| Direction::from_unit(if unit.is_empty() { "s" } else { &unit }));
    let mut all_steps = Vec::new();
    let mut tested = 0;
    for ((config, machine, branch), runs_of, _) in &series {
        let levels: Vec<f64> = runs_of.iter().map(|r| r.log_median).collect();
        let breaks: Vec<bool> = runs_of.iter().map(|r| !r.changes.is_empty()).collect();
        let calls = steps(&levels, &breaks, settings.alpha, settings.band);
        for (k, call) in calls.into_iter().enumerate() {
            let (from, to) = (&runs_of[k], &runs_of[k + 1]);
            tested += usize::from(matches!(call, StepCall::Flagged(_) | StepCall::Steady(_)));
            all_steps.push(history_step(config, machine, branch, from, to, call, direction));
        }
    }
    let method = format!(
        "A series is one config on one machine and branch. Each step compares the runs before it with the runs \
         from it on (up to {window} each, within the series and never across a changed config): a two-sample t-test \
         on the logs of each run's median, whose variance is the run-to-run variation those runs show. A step is \
         flagged when p < {alpha} and the 95% interval of the change lies outside the ±{band}% noise band; of \
         neighbouring candidates, only the most significant. Under identical code each step is flagged with \
         probability at most {alpha}: over the {tested} steps tested here, expect at most {expected} flagged by \
         chance. Speedups are oriented so that above 1 is better.",
        window = crate::stats::STEP_WINDOW,
        alpha = settings.alpha,
        band = format::trimmed(settings.band * 100.0),
        expected = format::trimmed(settings.alpha * tested as f64),
    );
    if machines.len() > 1 {
        notes.push(format!(
            "The runs ran on {} machines: each machine's runs form series of their own, never compared with another \
             machine's.",
            machines.len()
        ));
    }
    History {
        experiment: experiment.to_owned(),
        metric: metric.to_owned(),
        unit,
        direction,
        alpha: settings.alpha,
        band: settings.band,
        method,
        points,
        steps: all_steps,
        tested,
        notes,
    }
}

/// The step from `from` to `to` of the series of `config` on `machine` and `branch`, as the
/// history shows it.
fn history_step(
    config: &str,
    machine: &str,
    branch: &Option<String>,
    from: &SeriesRun,
    to: &SeriesRun,
    call: StepCall,
    direction: Direction,
) -> HistoryStep {
    let oriented = |r: f64| match direction {
        Direction::LowerIsBetter => 1.0 / r,
        Direction::HigherIsBetter => r,
    };
    let mut step = HistoryStep {
        config: config.to_owned(),
        machine: machine.to_owned(),
        branch: branch.clone(),
        from_run: from.run_id.clone(),
        to_run: to.run_id.clone(),
        to_index: to.index,
        speedup: oriented((to.log_median - from.log_median).exp()),
        speedup_ci: None,
        p: None,
        runs_before: 0,
        runs_after: 0,
        verdict: String::new(),
        flagged: false,
        changes: to.changes.clone(),
    };
    match call {
        StepCall::Flagged(t) | StepCall::Steady(t) => {
            let ci = (oriented(t.ratio_ci.0), oriented(t.ratio_ci.1));
            step.speedup = oriented(t.ratio);
            step.speedup_ci = Some((ci.0.min(ci.1), ci.0.max(ci.1)));
            step.p = Some(t.p);
            step.runs_before = t.before;
            step.runs_after = t.after;
            step.flagged = matches!(call, StepCall::Flagged(_));
            step.verdict = if step.flagged {
                if step.speedup > 1.0 {
                    "improved"
                } else {
                    "regressed"
                }
            } else {
                "steady"
            }
            .to_owned();
        }
        StepCall::Untested => step.verdict = "too few runs".to_owned(),
        StepCall::Break => step.verdict = "config changed".to_owned(),
    }
    step
}

fn short_commit(run: &RunData) -> String {
    commit_label(
        run.environment.get("git_commit").map(String::as_str).unwrap_or(""),
        run.environment.get("git_dirty").map(String::as_str) == Some("true"),
    )
}

/// A commit as charts and tables show it: its first 10 characters (`unknown` when empty), with
/// `+dirty` when the tree had changes.
pub(crate) fn commit_label(commit: &str, dirty: bool) -> String {
    let short: String = commit.chars().take(10).collect();
    let short = if short.is_empty() { "unknown".to_owned() } else { short };
    if dirty {
        format!("{short}+dirty")
    } else {
        short
    }
}
