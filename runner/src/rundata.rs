//! From stored rows to the report's input (store -> **rundata** -> stats/report).

use crate::exec::{StageStatus, TrialRecord};
use crate::manifest::Experiment;
use crate::measure::Fingerprint;
use crate::report::{ClaimSpec, CompareSpec, ConfigData, GuardSpec, RunData, StageData, TrialData};
use crate::stats::{Claim, Direction, Tolerance};
use crate::store::RunRow;
use std::collections::{BTreeMap, BTreeSet};

/// The compare settings of a validated manifest, parsed for the statistics module.
pub fn compare_spec(exp: &Experiment, seed: u64) -> CompareSpec {
    let c = &exp.compare;
    CompareSpec {
        baseline: c.baseline.clone(),
        primary: c.primary.clone(),
        direction: c.higher_is_better.map(|h| {
            if h {
                Direction::HigherIsBetter
            } else {
                Direction::LowerIsBetter
            }
        }),
        alpha: c.alpha,
        band: c.band,
        resamples: c.resamples,
        seed,
        // Validation already parsed these; a failure here would mean the stored manifest
        // changed meaning between versions, and dropping the guard is then the honest choice.
        guards: c
            .guards
            .iter()
            .filter_map(|g| {
                Tolerance::parse(&g.within).ok().map(|tolerance| GuardSpec {
                    metric: g.metric.clone(),
                    tolerance,
                })
            })
            .collect(),
        claims: c
            .claims
            .iter()
            .filter_map(|cl| {
                Claim::parse(&cl.speedup).ok().map(|claim| ClaimSpec {
                    metric: cl.metric.clone(),
                    variant: cl.variant.clone(),
                    claim,
                    text: cl.speedup.clone(),
                    source: cl.source.clone(),
                })
            })
            .collect(),
    }
}

/// Builds the report input from a stored run, its validated manifest and its trials.
pub fn run_data(row: &RunRow, exp: &Experiment, trials: &[TrialRecord], env: Option<&Fingerprint>) -> RunData {
    let hosts: BTreeSet<&str> = trials
        .iter()
        .filter(|t| !t.warmup)
        .map(|t| t.environment_hash.as_str())
        .collect();
    // Paired (within-block) statistics only pay off when blocks ran on different hosts: on one
    // host, unpaired rank tests have the lower p-value floor at small repetition counts.
    let paired = hosts.len() > 1;
    let configs = exp
        .configs
        .iter()
        .map(|c| ConfigData {
            name: c.name.clone(),
            variant: c.variant.clone(),
            sweep: c.sweep_point.clone(),
            trials: trials
                .iter()
                .filter(|t| t.config == c.name && !t.warmup)
                .map(|t| TrialData {
                    repetition: t.repetition,
                    block: paired.then_some(t.block),
                    host: t.worker.split(':').next().unwrap_or_default().to_owned(),
                    ok: t.ok,
                    error: t.error.clone(),
                    stages: t
                        .stages
                        .iter()
                        .filter(|s| !s.cache_hit)
                        .map(|s| StageData {
                            name: s.name.clone(),
                            kind: s.kind.clone(),
                            ok: s.status == StageStatus::Ok,
                            seconds: s.seconds,
                            peak_rss_bytes: s.peak_rss_bytes,
                            metrics: s.metrics.clone(),
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let mut environment = BTreeMap::new();
    environment.insert("git_commit".into(), row.git_commit.clone());
    environment.insert("git_dirty".into(), row.git_dirty.to_string());
    if let Some(e) = env {
        environment.insert("host".into(), e.host.clone());
        environment.insert("cpu".into(), e.cpu.clone());
        environment.insert("cores".into(), e.cores.to_string());
        environment.insert("os".into(), e.os.clone());
        environment.insert("gpu".into(), e.gpu.clone());
        environment.insert("rustc".into(), e.rustc.clone());
        environment.insert("measured_version".into(), e.measured_version.clone());
    }
    environment.insert("seed".into(), row.seed.to_string());
    environment.insert("manifest_sha256".into(), row.manifest_hash.clone());
    let mut notes = Vec::new();
    if env.is_some_and(|e| e.gpu.starts_with("none")) {
        notes.push("CPU-only run: this binary was built without CUDA, so every stage ran on the CPU.".to_owned());
    }
    if row.smoke {
        notes.push(
            "Smoke run: reduced sizes and repetitions from the manifest's [smoke] section; not a measurement to quote."
                .to_owned(),
        );
    }
    if hosts.len() > 1 {
        notes.push(format!(
            "Trials ran on {} different hosts; comparisons are paired within blocks.",
            hosts.len()
        ));
    }
    if row.status != "finished" {
        notes.push(format!(
            "The run is {}: {} of {} planned trials are stored.",
            row.status, row.stored_trials, row.planned_trials
        ));
    }
    RunData {
        run_id: row.id.clone(),
        experiment: row.experiment.clone(),
        description: row.description.clone(),
        status: row.status.clone(),
        started_at: row.started_at,
        finished_at: row.finished_at,
        manifest_path: row.manifest_path.clone(),
        manifest_hash: row.manifest_hash.clone(),
        environment,
        data_hashes: data_hashes(trials),
        configs,
        compare: compare_spec(exp, row.seed),
        reproduce: row.command.clone(),
        notes,
    }
}

/// Stage -> content hash of its output; differing hashes across configs are listed.
fn data_hashes(trials: &[TrialRecord]) -> BTreeMap<String, String> {
    let mut per_stage: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for t in trials.iter().filter(|t| t.ok) {
        for s in &t.stages {
            if let Some(h) = &s.content_hash {
                per_stage.entry(s.name.clone()).or_default().insert(h.clone());
            }
        }
    }
    per_stage
        .into_iter()
        .map(|(stage, hashes)| {
            let v: Vec<String> = hashes.into_iter().collect();
            (stage, v.join(", "))
        })
        .collect()
}
