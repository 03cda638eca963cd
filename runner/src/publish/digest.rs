//! One run reduced to what the site shows about it (run data + its report -> **digest**):
//! its verdicts as badges, its claims, the machine's noise state, and per metric and config
//! the median with its 95% CI, which the step tests read.
//!
//! A digest is written beside the site (`data/runs/<slug>.json`) under a key that changes
//! whenever the run, the site format or the binary does, so a re-publish reads it back instead
//! of loading and summarizing the run again.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::report::{Interval, Report, RunData};
use crate::stats::{bootstrap_median_ci, median, CompareSettings, Direction, GuardVerdict};
use crate::store::RunStatus;

/// Metrics one run contributes to the site, at most: the primary metric first, then stage
/// times and scalar metrics in order of first appearance.
pub const MAX_METRICS: usize = 64;
/// Samples summarized per config and metric, at most (the first ones, in trial order).
pub const MAX_SAMPLES: usize = 2_000;

/// A run as the site sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunDigest {
    /// Changes when the run or the way it is rendered changes (see `super::digest_key`).
    pub key: String,
    pub id: String,
    /// The run's folder under `runs/`: the id when it is a safe name, else a hash of it.
    pub slug: String,
    pub experiment: String,
    pub description: String,
    pub status: String,
    pub smoke: bool,
    pub started_at: DateTime<Utc>,
    /// Full commit of the measured code; `None` when unknown.
    pub commit: Option<String>,
    pub dirty: bool,
    /// Branch the run was started on; `None` when unknown (detached, or stored before
    /// branches were recorded).
    pub branch: Option<String>,
    /// Hash of the machine fingerprint (host, CPU, cores, OS, GPU, versions).
    pub environment: String,
    /// The machine in words.
    pub machine: String,
    /// The machine as a series key: host, CPU, cores, OS and GPU (not the versions in
    /// `environment`, which change with every build).
    pub machine_key: String,
    /// Each config's parameters, as a hash: where it changes, a series breaks.
    pub config_params: Vec<(String, String)>,
    pub primary: String,
    /// Stopped, or no measured trial succeeded: shown with a `stopped` badge, never as the
    /// experiment's latest verdict, and left out of its charts and steps.
    #[serde(default)]
    pub measured_nothing: bool,
    pub badges: Vec<Badge>,
    pub claims: Vec<ClaimBadge>,
    /// Warnings about a busy machine or a dropping clock during the measured trials; empty
    /// when none, or when the run did not record the load.
    pub noise: Vec<String>,
    /// Whether the run recorded the machine's load at all.
    pub load_recorded: bool,
    /// What data the run read, when it recorded it: stage -> content hash, and the stock data.
    pub data: Vec<(String, String)>,
    pub settings: Settings,
    pub metrics: Vec<MetricDigest>,
}

/// The run's `[compare]` statistics settings, which its steps are tested with.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Settings {
    pub alpha: f64,
    pub band: f64,
    pub resamples: usize,
    pub seed: u64,
}

impl From<Settings> for CompareSettings {
    fn from(s: Settings) -> CompareSettings {
        CompareSettings {
            alpha: s.alpha,
            band: s.band,
            resamples: s.resamples,
            seed: s.seed,
            sequential: None,
        }
    }
}

/// A verdict shown as a badge: a CSS class and the text that says the same without colour.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Badge {
    /// `faster`, `slower`, `no-change`, `inconclusive`, `guard-failed`, `guard-inconclusive`, or
    /// `stopped` (a run stopped, or all its trials failed).
    pub kind: String,
    /// The verdict in words, e.g. `faster`.
    pub label: String,
    /// What it is about, e.g. `reuse vs baseline, 1.31x [1.25, 1.38]`.
    pub detail: String,
}

/// A claim with its verdict.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClaimBadge {
    pub claim: String,
    pub source: Option<String>,
    pub config: String,
    /// `supported`, `refuted`, `untestable`, `not-reproduced` or `not-this-experiment`.
    pub kind: String,
    pub label: String,
}

/// One metric of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricDigest {
    pub name: String,
    pub unit: String,
    pub direction: Direction,
    pub configs: Vec<ConfigPoint>,
}

/// One config's summary of a metric.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigPoint {
    pub config: String,
    pub n: usize,
    pub median: Option<f64>,
    pub ci: Option<(f64, f64)>,
}

/// The machine fingerprint in words.
fn machine(env: &std::collections::BTreeMap<String, String>) -> String {
    let get = |k: &str| env.get(k).map(String::as_str).filter(|v| !v.is_empty());
    match (get("host"), get("cpu"), get("cores")) {
        (Some(h), Some(c), Some(n)) => format!("{h} · {c} · {n} cores"),
        (Some(h), _, _) => h.to_owned(),
        _ => "unknown machine".to_owned(),
    }
}

/// Metric names the run recorded: the primary first, then `trial.seconds`, stage times and
/// scalar metrics, in order of first appearance (series such as per-epoch losses are left to
/// the run's own report).
fn metric_names(run: &RunData) -> Vec<String> {
    let mut names = vec![run.compare.primary.clone()];
    let mut push = |n: String| {
        if names.len() < MAX_METRICS && !names.contains(&n) {
            names.push(n);
        }
    };
    push("trial.seconds".to_owned());
    for trial in run.configs.iter().flat_map(|c| &c.trials).filter(|t| t.ok) {
        for stage in &trial.stages {
            push(format!("{}.seconds", stage.name));
            for m in stage.metrics.iter().filter(|m| m.step.is_none()) {
                push(format!("{}.{}", stage.name, m.name));
            }
        }
    }
    names
}

/// The report's n, median and CI of `metric` in `config`, where it has them.
fn summarized(report: &Report, metric: &str, config: &str) -> Option<(usize, Option<f64>, Option<Interval>)> {
    if metric == report.primary.metric {
        return report
            .results
            .iter()
            .find(|r| r.config == config)
            .map(|r| (r.n, r.median, r.median_ci));
    }
    report
        .other_metrics
        .iter()
        .find(|o| o.metric == metric && o.config == config && !o.series)
        .map(|o| (o.n, o.median, o.median_ci))
}

// Long because: it fills the digest's fields one after another, each computed beside it.
/// Summarizes `run` (whose report is `report`, started on the machine `environment`) under
/// `key`, for the folder `slug`.
pub fn digest(run: &RunData, report: &Report, key: String, slug: String, smoke: bool, environment: &str) -> RunDigest {
    let settings = crate::report::settings_of(run);
    // Metrics with the same samples (a one-stage trial's `trial.seconds` and its stage's
    // seconds) share one bootstrap.
    let mut known: std::collections::HashMap<Vec<u64>, Option<(f64, f64)>> = std::collections::HashMap::new();
    let metrics = metric_names(run)
        .into_iter()
        .filter_map(|name| {
            let mut unit = None;
            let configs: Vec<ConfigPoint> = run
                .configs
                .iter()
                .map(|c| {
                    let s = crate::report::metric_samples(c, &name);
                    if unit.is_none() {
                        unit.clone_from(&s.unit);
                    }
                    let mut values = s.values;
                    values.retain(|v| v.is_finite());
                    values.truncate(MAX_SAMPLES);
                    // The report already bootstrapped the primary and the other metrics, with
                    // the same samples and seed: only what it did not summarize is computed.
                    let (m, ci) = match summarized(report, &name, &c.name) {
                        Some((n, m, ci)) if n == values.len() => (m, ci),
                        _ => {
                            let m = median(&values);
                            let ci = *known
                                .entry(values.iter().map(|v| v.to_bits()).collect())
                                .or_insert_with(|| bootstrap_median_ci(&values, settings.resamples, settings.seed));
                            (m.is_finite().then_some(m), ci)
                        }
                    };
                    ConfigPoint {
                        config: c.name.clone(),
                        n: values.len(),
                        median: m,
                        ci,
                    }
                })
                .collect();
            let unit = unit?;
            let direction = crate::report::direction_of(run, &name, Some(&unit));
            Some(MetricDigest {
                name,
                unit,
                direction,
                configs,
            })
        })
        .collect();
    let mut data: Vec<(String, String)> = run
        .data_hashes
        .iter()
        .map(|(stage, hash)| (stage.clone(), hash.clone()))
        .collect();
    if let Some(stock) = &run.stock_data {
        data.push((
            "stock data".to_owned(),
            if stock.versions.is_empty() {
                format!("{}; {}", stock.extent(), stock.origin())
            } else {
                format!(
                    "{}; {}; dataset versions {}",
                    stock.extent(),
                    stock.origin(),
                    stock.version_labels()
                )
            },
        ));
    }
    let measured_nothing =
        run.status == RunStatus::Stopped.as_str() || !run.configs.iter().flat_map(|c| &c.trials).any(|t| t.ok);
    let commit = run
        .environment
        .get("git_commit")
        .filter(|c| !c.is_empty() && c.as_str() != "unknown")
        .cloned();
    RunDigest {
        key,
        id: run.run_id.clone(),
        slug,
        experiment: run.experiment.clone(),
        description: run.description.clone(),
        status: report.status.clone(),
        smoke,
        started_at: run.started_at,
        commit,
        dirty: run.environment.get("git_dirty").map(String::as_str) == Some("true"),
        branch: run.environment.get("git_branch").cloned(),
        environment: environment.to_owned(),
        machine: machine(&run.environment),
        machine_key: crate::report::machine_key(run),
        config_params: run
            .configs
            .iter()
            .map(|c| {
                let text = serde_json::to_string(&c.params).unwrap_or_default();
                (
                    c.name.clone(),
                    crate::digest::hex_sha256(text.as_bytes())[..16].to_owned(),
                )
            })
            .collect(),
        primary: run.compare.primary.clone(),
        measured_nothing,
        badges: match measured_nothing {
            true => vec![stopped_badge(run)],
            false => badges(report),
        },
        claims: report
            .claims
            .iter()
            .map(|c| ClaimBadge {
                claim: c.claim.clone(),
                source: c.source.clone(),
                config: c.config.clone(),
                kind: c
                    .verdict
                    .as_str()
                    .replace(' ', "-")
                    .replace("'s", "")
                    .replace("-here", ""),
                label: c.verdict.as_str().to_owned(),
            })
            .collect(),
        noise: run.machine.warnings(),
        load_recorded: run.machine.load.is_some(),
        data,
        settings: Settings {
            alpha: settings.alpha,
            band: settings.band,
            resamples: settings.resamples,
            seed: settings.seed,
        },
        metrics,
    }
}

/// The one badge of a run that measured nothing, with why in words.
fn stopped_badge(run: &RunData) -> Badge {
    let trials: Vec<_> = run.configs.iter().flat_map(|c| &c.trials).collect();
    let failed = trials.iter().filter(|t| !t.ok).count();
    let why = match run.notes.iter().find(|n| n.starts_with("It stopped")) {
        Some(note) => crate::record::one_line(note),
        None => format!("{failed} of {} measured trials failed", trials.len()),
    };
    Badge {
        // A stopped run's badge is named after its status.
        kind: RunStatus::Stopped.as_str().to_owned(),
        label: if run.status == RunStatus::Stopped.as_str() {
            RunStatus::Stopped.to_string()
        } else {
            "all failed".to_owned()
        },
        detail: why,
    }
}

/// The run's verdicts on its primary metric, then its failed and undecided guards.
fn badges(report: &Report) -> Vec<Badge> {
    use crate::report::format;
    let mut out: Vec<Badge> = report
        .results
        .iter()
        .filter_map(|r| {
            let verdict = r.verdict?;
            let against = r.against.as_deref().unwrap_or(&report.baseline);
            Some(Badge {
                kind: verdict.as_str().replace(' ', "-"),
                label: verdict.as_str().to_owned(),
                detail: format!(
                    "{} vs {}, {} {}",
                    r.config,
                    against,
                    r.speedup.map_or("—".to_owned(), format::factor),
                    format::factor_interval(r.speedup_ci)
                ),
            })
        })
        .collect();
    for g in &report.guards {
        let quality = g.against == crate::report::QUALITY_AGAINST;
        let (kind, label) = match g.result.verdict {
            GuardVerdict::Pass => continue,
            // The report's words for a model that is not shown better than predicting zero.
            GuardVerdict::Fail if quality => ("guard-failed", "not shown better than zero"),
            GuardVerdict::Fail => ("guard-failed", "guard failed"),
            GuardVerdict::Inconclusive => ("guard-inconclusive", "guard inconclusive"),
        };
        out.push(Badge {
            kind: kind.to_owned(),
            label: label.to_owned(),
            detail: format!("{} in {} vs {}", g.metric, g.config, g.against),
        });
    }
    out
}
