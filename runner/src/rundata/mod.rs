//! From stored rows to the report's input (store -> **rundata** -> stats/report).

use crate::db::Db;
use crate::kinds::StageKind;
use crate::manifest::Order;
use crate::measure::{Fingerprint, MachineLoad};
use crate::record::{StageStatus, TrialRecord};
use crate::report::{
    ConfigData, ConfigFacts, DifferingFact, FactValue, RunData, RunDesign, StageData, StageNoteRow, TrialData,
};
use crate::store::spec::{StoredSpec, PAIRED_SINCE};
use crate::store::{self, RunRow, RunStatus, StoreError, StoredRun};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The report input of a stored run, with `env` the fingerprint of the machine that started
/// it. (A function of `rundata`, not a method of [`StoredRun`]: the store knows nothing of
/// the report's input, and `StoredRun` is implemented in the store alone.)
pub fn of_run(run: &StoredRun, env: Option<&Fingerprint>, database: &str) -> RunData {
    let mut data = run_data(&run.row, &run.spec, &run.trials, env, database);
    data.notes.extend(run.notes.iter().cloned());
    data
}

/// The report input of a stored run with its fingerprint read from `db`, and a per-host
/// breakdown (with warnings when hosts differ) for runs served by several workers.
pub async fn of_run_with_hosts(run: &StoredRun, db: &Db, database: &str) -> Result<RunData, StoreError> {
    let env = store::environment(db, &run.row.environment_hash).await?;
    let mut data = of_run(run, env.as_ref(), database);
    let mut envs = BTreeMap::new();
    for hash in run
        .trials
        .iter()
        .map(|t| t.environment_hash.as_str())
        .collect::<HashSet<_>>()
    {
        if let Some(e) = store::environment(db, hash).await? {
            envs.insert(hash.to_owned(), e);
        }
    }
    data.notes.extend(host_notes(&run.trials, &envs));
    Ok(data)
}

// Long because: it converts the stored rows to the report's input in one pass, section by section.
/// Builds the report input from a stored run, its spec and its trials, read from the results
/// database at `database`. Nothing here validates a manifest or builds a stage.
pub fn run_data(
    row: &RunRow,
    spec: &StoredSpec,
    trials: &[TrialRecord],
    env: Option<&Fingerprint>,
    database: &str,
) -> RunData {
    let hosts: BTreeSet<&str> = trials
        .iter()
        .filter(|t| !t.warmup)
        .map(|t| t.environment_hash.as_str())
        .collect();
    // Each block of an interleaved schedule runs every config once, back to back, in shuffled
    // order: configs are compared within blocks, which cancels drift between blocks. Trials
    // spread over hosts are served in whole blocks, so they pair the same way. A sequential
    // order runs config 0 first in every block, on one host or many: its blocks are no pairs.
    let paired = spec.schedule.order == Order::Interleaved;
    let design = RunDesign {
        paired,
        blocks: complete_blocks(trials, spec.configs.len()),
        sequential: spec.schedule.sequential.filter(|_| paired),
        max_time_seconds: spec.schedule.max_time_seconds,
    };
    let configs = spec
        .configs
        .iter()
        .map(|c| ConfigData {
            name: c.name.clone(),
            variant: c.variant.clone(),
            sweep: c.sweep.clone(),
            params: c.params.clone(),
            trials: trials
                .iter()
                .filter(|t| t.config == c.name && !t.warmup)
                .map(|t| TrialData {
                    index: t.index,
                    repetition: t.repetition,
                    block: paired.then_some(t.block),
                    scheduled_block: t.block,
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
                            facts: s.facts.clone(),
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let mut environment = BTreeMap::new();
    environment.insert("git_commit".into(), row.git_commit.clone());
    environment.insert("git_dirty".into(), row.git_dirty.to_string());
    if let Some(branch) = &row.git_branch {
        environment.insert("git_branch".into(), branch.clone());
    }
    if let Some(e) = env {
        environment.insert("host".into(), e.host.clone());
        environment.insert("cpu".into(), e.cpu.clone());
        environment.insert("cores".into(), e.cores.to_string());
        environment.insert("os".into(), e.os.clone());
        environment.insert("gpu".into(), e.gpu.clone());
        environment.insert("rustc".into(), e.rustc.clone());
        environment.insert("measured_version".into(), e.measured_version.clone());
        if !e.build_commit.is_empty() {
            environment.insert("build_commit".into(), e.build_commit.clone());
            environment.insert("build_dirty".into(), e.build_dirty.to_string());
        }
    }
    environment.insert("seed".into(), row.seed.to_string());
    environment.insert("manifest_sha256".into(), row.manifest_hash.clone());
    let mut notes = Vec::new();
    if let Some(gpu) = env.map(|e| e.gpu.as_str()).filter(|g| g.starts_with("none")) {
        // `none (CPU build)`, or a CUDA build's `none (<why CUDA cannot be used here>)`.
        notes.push(if gpu == "none (CPU build)" {
            "CPU-only run: this binary was built without CUDA, so every stage ran on the CPU.".to_owned()
        } else {
            format!(
                "CPU-only run: no stage could use CUDA here {}.",
                gpu.trim_start_matches("none ")
            )
        });
    }
    if row.smoke {
        notes.push(
            "Smoke run: reduced sizes and repetitions from the manifest's [smoke] section; not a measurement to quote."
                .to_owned(),
        );
    }
    if hosts.len() > 1 && paired {
        notes.push(format!(
            "Trials ran on {} different hosts; comparisons are paired within blocks.",
            hosts.len()
        ));
    } else if hosts.len() > 1 {
        notes.push(format!(
            "Trials ran on {} different hosts in sequential order (config 0 first in every block), so their \
             blocks are no pairs: comparisons are unpaired.",
            hosts.len()
        ));
    } else if paired && spec.version < PAIRED_SINCE {
        notes.push(format!(
            "This run was stored by an earlier version of measured, whose report compared its configs \
             unpaired; its trials carry their blocks, so this report compares them paired, within each \
             of its {} blocks.",
            design.blocks
        ));
    }
    notes.extend(revision_note(spec, trials));
    notes.extend(short_command_notes(spec, trials));
    if row.status != RunStatus::Finished {
        notes.push(format!(
            "The run is {}: {} of {} planned trials are stored.",
            row.status, row.stored_trials, row.planned_trials
        ));
    }
    if row.status == RunStatus::Running {
        // A look the run did not plan: its levels are spent from the last planned look, so the
        // run's own decisions stay valid, but this report's verdicts are not among them.
        notes.push(
            "Interim report of a run still running: its verdicts are not decisions. The run decides at its own \
             looks; report it again when it has finished."
                .to_owned(),
        );
    }
    let machine = machine_load(trials);
    notes.extend(machine.warnings());
    let (stage_notes, left_out) = stage_notes(trials);
    if left_out > 0 {
        notes.push(format!(
            "The stages recorded {left_out} more distinct notes than the {MAX_STAGE_NOTES} listed under Notes from stages."
        ));
    }
    if row.status == RunStatus::Stopped {
        if let Some(error) = crate::record::common_first_failure(trials, spec.configs.len()) {
            notes.push(format!(
                "It stopped because the first trial of every config failed with the same error, which the \
                 other trials would only have repeated: {}",
                crate::record::one_line(&error)
            ));
        } else if trials.iter().any(|t| t.ok) && !crate::produced::produced(&spec.compare.primary, trials) {
            notes.push(format!(
                "It stopped after its first block because no trial produced \"{}\", the primary metric [compare] \
                 names: a typo, or a metric the stage does not print.",
                spec.compare.primary
            ));
        }
    }
    let config_names: Vec<&str> = spec.configs.iter().map(|c| c.name.as_str()).collect();
    RunData {
        facts: config_facts(&config_names, trials),
        run_id: row.id.clone(),
        experiment: row.experiment.clone(),
        description: row.description.clone(),
        status: row.status.to_string(),
        finished: row.status == RunStatus::Finished,
        started_at: row.started_at,
        finished_at: row.finished_at,
        manifest_path: row.manifest_path.clone(),
        manifest_hash: row.manifest_hash.clone(),
        environment,
        data_hashes: data_hashes(trials),
        stock_data: crate::market::DataIdentity::from_json(row.stock_data.as_deref()),
        configs,
        compare: spec.compare.clone(),
        reproduce: row.command.clone(),
        results_database: crate::db::redact_url(database),
        stock_database: row.stock_database.clone(),
        notes,
        machine,
        stage_notes,
        design,
    }
}

/// Measured blocks that hold a trial of each of `configs` configs (the last block of an
/// interrupted run may not).
pub fn complete_blocks(trials: &[TrialRecord], configs: usize) -> u32 {
    let mut per_block: BTreeMap<u32, BTreeSet<&str>> = BTreeMap::new();
    for t in trials.iter().filter(|t| !t.warmup) {
        per_block.entry(t.block).or_default().insert(t.config.as_str());
    }
    per_block.values().filter(|c| c.len() >= configs.max(1)).count() as u32
}

/// How busy the machine was during the measured (not warm-up) trials.
pub fn machine_load(trials: &[TrialRecord]) -> MachineLoad {
    MachineLoad::of(trials.iter().filter(|t| !t.warmup).map(|t| {
        let wall = (t.finished_at - t.started_at).num_milliseconds().max(0) as f64 / 1e3;
        (&t.load, wall)
    }))
}

/// Distinct stage notes a report or `measured show` lists; more are counted.
pub const MAX_STAGE_NOTES: usize = 100;

/// The distinct notes of every trial's stages (warm-up included: a cached stage runs only in
/// the first trial that needs it), in order of first appearance, with the configs and the
/// number of trials that recorded each; and how many distinct notes past
/// [`MAX_STAGE_NOTES`] were left out.
pub fn stage_notes(trials: &[TrialRecord]) -> (Vec<StageNoteRow>, usize) {
    let mut rows: Vec<StageNoteRow> = Vec::new();
    let mut index: HashMap<(&str, &str), usize> = HashMap::new();
    let mut left_out: HashSet<(&str, &str)> = HashSet::new();
    for t in trials {
        for s in &t.stages {
            for note in &s.notes {
                let key = (s.name.as_str(), note.as_str());
                let i = match index.get(&key) {
                    Some(&i) => i,
                    None if rows.len() < MAX_STAGE_NOTES => {
                        rows.push(StageNoteRow {
                            stage: s.name.clone(),
                            note: note.clone(),
                            configs: Vec::new(),
                            trials: 0,
                        });
                        index.insert(key, rows.len() - 1);
                        rows.len() - 1
                    }
                    None => {
                        left_out.insert(key);
                        continue;
                    }
                };
                let row = &mut rows[i];
                row.trials += 1;
                if !row.configs.contains(&t.config) {
                    row.configs.push(t.config.clone());
                }
            }
        }
    }
    (rows, left_out.len())
}

/// What the measured trials of each of `configs` ran on: the facts of their stages as
/// `<stage>.<fact>`, those every trial that recorded them agreed on, and those that differed,
/// each value with its trials (`None` for a trial that did not record it). A
/// stage taken from the run's cache carries the facts of the run that made it. Configs without
/// a measured trial that recorded a fact are left out.
pub fn config_facts(configs: &[&str], trials: &[TrialRecord]) -> Vec<ConfigFacts> {
    let mut out = Vec::new();
    for &config in configs {
        let measured: Vec<&TrialRecord> = trials.iter().filter(|t| t.config == config && !t.warmup).collect();
        // Per fact, the value each trial recorded (`None`: its stage ran without it).
        let mut seen: BTreeMap<String, Vec<Option<&str>>> = BTreeMap::new();
        for (i, t) in measured.iter().enumerate() {
            for s in t.stages.iter().filter(|s| s.status != StageStatus::Skipped) {
                for (name, value) in &s.facts {
                    let values = seen.entry(format!("{}.{name}", s.name)).or_default();
                    values.resize(i, None);
                    values.push(Some(value));
                }
            }
        }
        if seen.is_empty() {
            continue;
        }
        let mut facts = ConfigFacts {
            config: config.to_owned(),
            trials: measured.len(),
            agreed: BTreeMap::new(),
            differed: Vec::new(),
        };
        for (fact, mut values) in seen {
            values.resize(measured.len(), None);
            let distinct: BTreeSet<Option<&str>> = values.iter().copied().collect();
            if let [Some(only)] = distinct.iter().copied().collect::<Vec<_>>()[..] {
                facts.agreed.insert(fact, only.to_owned());
                continue;
            }
            let mut counted: Vec<FactValue> = distinct
                .into_iter()
                .map(|v| FactValue {
                    value: v.map(str::to_owned),
                    trials: values.iter().filter(|x| **x == v).count(),
                })
                .collect();
            counted.sort_by(|a, b| b.trials.cmp(&a.trials).then_with(|| a.value.cmp(&b.value)));
            facts.differed.push(DifferingFact { fact, values: counted });
        }
        out.push(facts);
    }
    out
}

/// Which commit each variant that names a git revision ran, as its trials recorded.
/// A command stage whose median time per trial is below this is mostly process start-up and
/// the clock's jitter: its report suggests `repeat`.
pub const SHORT_STAGE_SECONDS: f64 = 0.005;

/// For each command stage that runs once per trial, whose time the comparison reads (the primary
/// metric is its `seconds` or `trial.seconds`), and that takes a median under
/// [`SHORT_STAGE_SECONDS`]: the `repeat` that would time about 20 ms per trial.
fn short_command_notes(spec: &StoredSpec, trials: &[TrialRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for stage in spec
        .stages
        .iter()
        .filter(|s| s.kind.parse() == Ok(StageKind::Command) && !s.cache)
    {
        let repeats = spec.configs.iter().any(|c| {
            c.params
                .get(&stage.name)
                .and_then(|p| p.get("repeat"))
                .and_then(serde_json::Value::as_u64)
                .is_some_and(|n| n > 1)
        });
        let seconds: Vec<f64> = trials
            .iter()
            .filter(|t| !t.warmup)
            .flat_map(|t| &t.stages)
            .filter(|s| s.name == stage.name && s.status == StageStatus::Ok && !s.cache_hit)
            .map(|s| s.seconds)
            .collect();
        // Only where the comparison reads the stage's time: a program that prints its own
        // metric is not timed by its process.
        let primary = spec.compare.primary.as_str();
        let timed = primary == "trial.seconds" || primary == format!("{}.seconds", stage.name);
        if repeats || !timed || seconds.is_empty() {
            continue;
        }
        let median = crate::stats::median(&seconds);
        if !(median.is_finite() && median > 0.0 && median < SHORT_STAGE_SECONDS) {
            continue;
        }
        let n = [10u32, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000]
            .into_iter()
            .find(|&n| f64::from(n) * median >= 0.02)
            .unwrap_or(10_000);
        out.push(format!(
            "Stage \"{}\" took a median {:.2} ms per trial: in a program that short, process start-up and the \
             clock's jitter are a large share of each time. Setting repeat = {n} in [stages.{}] runs it {n} times \
             per trial and records the mean per run (about {:.0} ms a trial).",
            stage.name,
            median * 1e3,
            stage.name,
            f64::from(n) * median * 1e3
        ));
    }
    out
}

fn revision_note(spec: &StoredSpec, trials: &[TrialRecord]) -> Option<String> {
    let mut parts = Vec::new();
    for v in &spec.variants {
        let Some(rev) = spec
            .configs
            .iter()
            .find(|c| c.variant == *v)
            .and_then(|c| c.revision.as_ref())
        else {
            continue;
        };
        let mut commits: Vec<String> = Vec::new();
        for t in trials.iter().filter(|t| t.variant == *v) {
            if let Some(c) = &t.git_commit {
                let shown = format!("{}{}", &c[..c.len().min(12)], if t.git_dirty { " (dirty)" } else { "" });
                if !commits.contains(&shown) {
                    commits.push(shown);
                }
            }
        }
        if !commits.is_empty() {
            parts.push(format!("{v} ran {} (git = \"{rev}\")", commits.join(" and ")));
        }
    }
    (!parts.is_empty()).then(|| format!("Variants from git revisions: {}.", parts.join(", ")))
}

/// Per-host breakdown for runs served by more than one worker (`measured worker`, Slurm
/// arrays): one note per host with its trial counts and machine, then a warning per machine
/// property that differs between hosts, since a speedup measured on mixed hardware is only
/// fair when every block ran on one host (units are whole blocks, so paired statistics hold).
/// `envs` maps environment hashes to the stored fingerprints. Empty for single-worker runs.
pub fn host_notes(trials: &[TrialRecord], envs: &BTreeMap<String, Fingerprint>) -> Vec<String> {
    let workers: BTreeSet<&str> = trials.iter().map(|t| t.worker.as_str()).collect();
    if workers.len() < 2 {
        return Vec::new();
    }
    let mut by_env: BTreeMap<&str, Vec<&TrialRecord>> = BTreeMap::new();
    for t in trials {
        by_env.entry(t.environment_hash.as_str()).or_default().push(t);
    }
    let mut notes = Vec::new();
    for (hash, ts) in &by_env {
        let mut per_variant: BTreeMap<&str, usize> = BTreeMap::new();
        for t in ts.iter().filter(|t| !t.warmup) {
            *per_variant.entry(t.variant.as_str()).or_default() += 1;
        }
        let counts: Vec<String> = per_variant.iter().map(|(v, n)| format!("{n} {v}")).collect();
        let warm = ts.iter().filter(|t| t.warmup).count();
        let n_workers = ts.iter().map(|t| t.worker.as_str()).collect::<BTreeSet<_>>().len();
        let host = ts[0].worker.split(':').next().unwrap_or_default();
        let machine = match envs.get(*hash) {
            Some(e) => format!("CPU {} ({} cores); GPU {}; OS {}", e.cpu, e.cores, e.gpu, e.os),
            None => "machine details not stored".to_owned(),
        };
        notes.push(format!(
            "Host {host} (environment {hash}): {} measured trials ({}) and {warm} warm-up by {n_workers} worker{}; {machine}.",
            ts.len() - warm,
            counts.join(", "),
            if n_workers == 1 { "" } else { "s" }
        ));
    }
    let known: Vec<&Fingerprint> = by_env.keys().filter_map(|h| envs.get(*h)).collect();
    let differing = |what: &str, field: fn(&Fingerprint) -> String| -> Option<String> {
        let values: BTreeSet<String> = known.iter().map(|e| field(e)).collect();
        (values.len() > 1).then(|| {
            let list: Vec<String> = known.iter().map(|e| format!("{} on {}", field(e), e.host)).collect();
            format!(
                "Warning: hosts differ in {what} ({}); compare variants within blocks only, and do not pool absolute times across hosts.",
                list.join("; ")
            )
        })
    };
    notes.extend(differing("CPU model", |e| e.cpu.clone()));
    notes.extend(differing("core count", |e| e.cores.to_string()));
    notes.extend(differing("GPU model or driver", |e| e.gpu.clone()));
    notes.extend(differing("measured version", |e| e.measured_version.clone()));
    notes
}

/// Stage -> content hash of its output; differing hashes across configs are listed.
pub(crate) fn data_hashes(trials: &[TrialRecord]) -> BTreeMap<String, String> {
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

#[cfg(test)]
mod tests;
