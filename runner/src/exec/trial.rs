//! One trial (exec -> **trial** -> stages): runs the trial's stages in topological order,
//! passes artifacts along edges, times every stage, and reports each as it finishes.

use super::events::{emit_stage, ExecError, Reporter};
use crate::artifact::Artifact;
use crate::manifest::Experiment;
use crate::measure::{peak_rss_bytes, reset_peak_rss, Fingerprint, LoadProbe, PeakScope, PROCESS_PEAK_NOTE};
use crate::plan::{stage_seed, ScheduledTrial};
use crate::record::{StageRecord, StageStatus, TrialRecord};
use crate::stage::{Inputs, Services, StageCtx, TrialInfo};
use chrono::Utc;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Everything fixed for one run's execution: what runs, and what it skips.
pub struct Execution<'a> {
    pub run_id: &'a str,
    pub exp: &'a Experiment,
    pub trials: &'a [ScheduledTrial],
    pub seed: u64,
    /// Trials already stored (resume): not run again.
    pub skip: &'a HashSet<u32>,
    pub env: &'a Fingerprint,
    pub worker: String,
}

/// Artifacts of `cache = true` stages, reused within a run.
#[derive(Default)]
pub struct StageCache {
    entries: HashMap<String, Artifact>,
}

// Long because: the stage loop owns the trial's artifacts, cache keys and records, which each of
// its steps reads and writes; the steps are commented in order.
/// Runs one trial; `None` when it was cancelled (nothing of it is kept).
pub fn run_trial(
    spec: &Execution<'_>,
    trial: &ScheduledTrial,
    services: &Services,
    cancel: &AtomicBool,
    cache: &mut StageCache,
    reporters: &mut [&mut dyn Reporter],
) -> Result<Option<TrialRecord>, ExecError> {
    let exp = spec.exp;
    let config = &exp.configs[trial.config];
    let info = TrialInfo {
        run_id: spec.run_id.to_owned(),
        trial_index: trial.index,
        config: config.name.clone(),
        variant: config.variant.clone(),
        repetition: trial.repetition,
        warmup: trial.warmup,
    };
    let started_at = Utc::now();
    // Read outside the stages' timers, so the readings never count in a measured time.
    let probe = LoadProbe::start();
    let n = exp.stages.len();
    let mut artifacts: Vec<Option<Artifact>> = vec![None; n];
    let mut cache_keys: Vec<String> = vec![String::new(); n];
    let mut records: Vec<StageRecord> = Vec::with_capacity(n);
    let mut first_error: Option<String> = None;
    for (position, &si) in exp.order.iter().enumerate() {
        let def = &exp.stages[si];
        let resolved = &config.stages[si];
        let mut record = StageRecord {
            name: def.name.clone(),
            kind: def.kind.clone(),
            position: position as u32,
            status: StageStatus::Ok,
            cache_hit: false,
            seconds: 0.0,
            peak_rss_bytes: None,
            error: None,
            content_hash: None,
            metrics: Vec::new(),
            notes: Vec::new(),
        };
        let blocked: Vec<&str> = def
            .needs
            .iter()
            .filter(|&&d| artifacts[d].is_none())
            .map(|&d| exp.stages[d].name.as_str())
            .collect();
        if !blocked.is_empty() {
            record.status = StageStatus::Skipped;
            record.error = Some(format!("skipped: needs {} which did not finish", blocked.join(", ")));
        } else {
            let inputs = Inputs {
                artifacts: def
                    .needs
                    .iter()
                    .map(|&d| (exp.stages[d].name.clone(), artifacts[d].clone().unwrap_or_default()))
                    .collect(),
            };
            // Cache identity: this stage's resolved parameters plus its inputs' identities.
            let key = {
                let mut k = format!("{}|{}", def.name, toml::Value::Table(resolved.params.clone()));
                for &d in &def.needs {
                    k.push('|');
                    k.push_str(&cache_keys[d]);
                }
                k
            };
            cache_keys[si] = key.clone();
            if def.cache {
                if let Some(a) = cache.entries.get(&key) {
                    record.cache_hit = true;
                    artifacts[si] = Some(a.clone());
                    emit_stage(reporters, spec.run_id, trial.index, &record)?;
                    records.push(record);
                    continue;
                }
            }
            let mut ctx = StageCtx {
                rec: crate::metrics::Recorder::new(),
                seed: stage_seed(spec.seed, trial, &def.name),
                cancel,
                services,
                data: &exp.data,
                trial: &info,
                stage: &def.name,
                manifest_dir: config.checkout_dir().unwrap_or(exp.dir()),
                checkout_dir: config.checkout_dir(),
                peak_rss_child: None,
                content_hash: None,
            };
            let peak_scope = reset_peak_rss();
            // GPU telemetry runs on its own thread, outside the stage's clock; without NVML the
            // stage runs unmonitored and says so once.
            let monitor = match resolved
                .stage
                .gpu_monitor()
                .map(|hz| crate::measure::gpu::monitor_gpu(0, hz))
            {
                Some(Ok(monitor)) => Some(monitor),
                Some(Err(why)) => {
                    ctx.rec.note(format!("no GPU telemetry: {why}"));
                    None
                }
                None => None,
            };
            let start = Instant::now();
            let result = resolved.stage.run(&mut ctx, &inputs);
            record.seconds = start.elapsed().as_secs_f64();
            if let Some(monitor) = monitor {
                monitor.stop().record(&mut ctx.rec);
            }
            record.peak_rss_bytes = match (peak_rss_bytes(), ctx.peak_rss_child) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            record.content_hash = ctx.content_hash.take();
            (record.metrics, record.notes) = ctx.rec.into_parts();
            if peak_scope == PeakScope::Process && record.peak_rss_bytes.is_some() {
                record.notes.push(PROCESS_PEAK_NOTE.to_owned());
            }
            match result {
                Ok(artifact) => {
                    if def.cache {
                        cache.entries.insert(key, artifact.clone());
                    }
                    artifacts[si] = Some(artifact);
                }
                Err(e) if e.is_cancelled() || cancel.load(Ordering::SeqCst) => return Ok(None),
                Err(e) => {
                    let message = e.to_string();
                    record.status = StageStatus::Failed;
                    first_error.get_or_insert_with(|| format!("stage `{}` failed: {message}", def.name));
                    record.error = Some(message);
                }
            }
        }
        emit_stage(reporters, spec.run_id, trial.index, &record)?;
        records.push(record);
    }
    let load = probe.finish();
    let seconds = records
        .iter()
        .filter(|r| r.status != StageStatus::Skipped && !exp.stages.iter().any(|s| s.name == r.name && s.cache))
        .map(|r| r.seconds)
        .sum();
    // The code the trial ran: its variant's revision, else the run's own working tree.
    let (git_commit, git_dirty) = match config.revision.as_ref().and_then(|r| r.resolved.as_ref()) {
        Some(r) => (Some(r.commit.clone()), r.dirty),
        None if spec.env.git_commit != "unknown" && !spec.env.git_commit.is_empty() => {
            (Some(spec.env.git_commit.clone()), spec.env.git_dirty)
        }
        None => (None, false),
    };
    Ok(Some(TrialRecord {
        index: trial.index,
        config: config.name.clone(),
        variant: config.variant.clone(),
        sweep: config.sweep_point.clone(),
        repetition: trial.repetition,
        block: trial.block,
        warmup: trial.warmup,
        ok: first_error.is_none(),
        error: first_error,
        seconds,
        started_at,
        finished_at: Utc::now(),
        environment_hash: spec.env.hash.clone(),
        worker: spec.worker.clone(),
        git_commit,
        git_dirty,
        load,
        stages: records,
    }))
}
