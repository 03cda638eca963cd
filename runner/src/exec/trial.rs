//! One trial (exec -> **trial** -> stages): runs the trial's stages in topological order,
//! passes artifacts along edges, times every stage, and reports each as it finishes.

use super::events::{emit_stage, ExecError, Reporter};
use crate::artifact::Artifact;
use crate::manifest::Experiment;
use crate::measure::{peak_rss_bytes, reset_peak_rss, Fingerprint, LoadProbe, PeakScope, PROCESS_PEAK_NOTE};
use crate::plan::{stage_seed, ScheduledTrial};
use crate::record::{StageRecord, StageStatus, TrialRecord};
use crate::stage::{Inputs, Services, Stage, StageCtx, StageError, TrialInfo};
use chrono::Utc;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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

/// What a run reuses across its trials: the artifacts of `cache = true` stages, and each
/// config's stages, built from their validated parameters the first time they run, with
/// their cache identities.
#[derive(Default)]
pub struct StageCache {
    /// Cached artifacts, with the facts of the stage run that made each.
    entries: HashMap<String, (Artifact, crate::metrics::Facts)>,
    built: HashMap<(usize, usize), Arc<dyn Stage>>,
    /// Each config's stages' cache identities, made once per run.
    keys: HashMap<(usize, usize), String>,
}

impl StageCache {
    /// Stage `si` of config `config`, built once per run.
    fn stage(&mut self, config: usize, si: usize, params: &crate::kinds::StageParams) -> Arc<dyn Stage> {
        self.built
            .entry((config, si))
            .or_insert_with(|| crate::stage::build(params))
            .clone()
    }
}

/// Runs one trial; `None` when it was cancelled (nothing of it is kept).
pub fn run_trial(
    spec: &Execution<'_>,
    trial: &ScheduledTrial,
    services: &Services,
    cancel: &AtomicBool,
    cache: &mut StageCache,
    reporters: &mut [&mut dyn Reporter],
) -> Result<Option<TrialRecord>, ExecError> {
    let config = &spec.exp.configs[trial.config];
    let started_at = Utc::now();
    // Read outside the stages' timers, so the readings never count in a measured time.
    let probe = LoadProbe::start();
    let n = spec.exp.stages.len();
    let mut run = TrialRun {
        spec,
        trial,
        services,
        cancel,
        info: TrialInfo {
            run_id: spec.run_id.to_owned(),
            trial_index: trial.index,
            config: config.name.clone(),
            variant: config.variant.clone(),
            repetition: trial.repetition,
            warmup: trial.warmup,
        },
        artifacts: vec![None; n],
        cache_keys: vec![String::new(); n],
        first_error: None,
    };
    let mut records: Vec<StageRecord> = Vec::with_capacity(n);
    for (position, &si) in spec.exp.order.iter().enumerate() {
        let Some(record) = run.stage(position, si, cache) else {
            return Ok(None);
        };
        emit_stage(reporters, spec.run_id, trial.index, &record)?;
        records.push(record);
    }
    Ok(Some(run.record(records, started_at, probe)))
}

/// One trial as it runs: the artifacts its stages made so far, their cache keys, and the
/// first error.
struct TrialRun<'a, 'b> {
    spec: &'a Execution<'b>,
    trial: &'a ScheduledTrial,
    services: &'a Services,
    cancel: &'a AtomicBool,
    info: TrialInfo,
    artifacts: Vec<Option<Artifact>>,
    cache_keys: Vec<String>,
    first_error: Option<String>,
}

impl TrialRun<'_, '_> {
    /// Runs stage `si` (at `position` in topological order), or takes it from the cache, or
    /// skips it when a stage it needs did not finish; `None` when the trial was cancelled.
    fn stage(&mut self, position: usize, si: usize, cache: &mut StageCache) -> Option<StageRecord> {
        let exp = self.spec.exp;
        let def = &exp.stages[si];
        let mut record = StageRecord {
            name: def.name.clone(),
            kind: def.kind.as_str().to_owned(),
            position: position as u32,
            status: StageStatus::Ok,
            cache_hit: false,
            seconds: 0.0,
            peak_rss_bytes: None,
            error: None,
            content_hash: None,
            metrics: Vec::new(),
            notes: Vec::new(),
            facts: Default::default(),
        };
        let blocked: Vec<&str> = def
            .needs
            .iter()
            .filter(|&&d| self.artifacts[d].is_none())
            .map(|&d| exp.stages[d].name.as_str())
            .collect();
        if !blocked.is_empty() {
            record.status = StageStatus::Skipped;
            record.error = Some(format!("skipped: needs {} which did not finish", blocked.join(", ")));
            return Some(record);
        }
        // Cache identity: this stage's checked parameters, written canonically, plus its
        // inputs' identities, the same in every trial of the config.
        let resolved = &exp.configs[self.trial.config].stages[si];
        let upstream = &self.cache_keys;
        let key = cache
            .keys
            .entry((self.trial.config, si))
            .or_insert_with(|| {
                let mut key = format!("{}|{}", def.name, resolved.params.canonical());
                for &d in &def.needs {
                    key.push('|');
                    key.push_str(&upstream[d]);
                }
                key
            })
            .clone();
        self.cache_keys[si] = key.clone();
        if def.cache {
            if let Some((a, facts)) = cache.entries.get(&key) {
                record.cache_hit = true;
                record.facts = facts.clone();
                self.artifacts[si] = Some(a.clone());
                return Some(record);
            }
        }
        // Built from the validated parameters before any clock starts.
        let stage = cache.stage(self.trial.config, si, &resolved.params);
        match self.measure(stage.as_ref(), si, &mut record) {
            Ok(artifact) => {
                if def.cache {
                    cache.entries.insert(key, (artifact.clone(), record.facts.clone()));
                }
                self.artifacts[si] = Some(artifact);
            }
            Err(e) if e.is_cancelled() || self.cancel.load(Ordering::SeqCst) => return None,
            Err(e) => {
                let message = e.to_string();
                record.status = StageStatus::Failed;
                self.first_error
                    .get_or_insert_with(|| format!("stage `{}` failed: {message}", def.name));
                record.error = Some(message);
            }
        }
        Some(record)
    }

    /// Runs stage `si` on its inputs and times it; its memory peak, GPU telemetry, metrics
    /// and notes go into `record`.
    fn measure(&self, stage: &dyn Stage, si: usize, record: &mut StageRecord) -> Result<Artifact, StageError> {
        let exp = self.spec.exp;
        let def = &exp.stages[si];
        let config = &exp.configs[self.trial.config];
        let inputs = Inputs {
            artifacts: def
                .needs
                .iter()
                .map(|&d| {
                    (
                        exp.stages[d].name.clone(),
                        self.artifacts[d].clone().unwrap_or_default(),
                    )
                })
                .collect(),
        };
        let mut ctx = StageCtx {
            rec: crate::metrics::Recorder::new(),
            seed: stage_seed(self.spec.seed, self.trial, &def.name),
            cancel: self.cancel,
            services: self.services,
            data: &exp.data,
            trial: &self.info,
            stage: &def.name,
            manifest_dir: config.checkout_dir().unwrap_or(exp.dir()),
            peak_rss_child: None,
            content_hash: None,
        };
        let peak_scope = reset_peak_rss();
        // GPU telemetry runs on its own thread, outside the stage's clock; without NVML the
        // stage runs unmonitored and says so once.
        let monitor = match stage.gpu_monitor().map(|hz| crate::measure::gpu::monitor_gpu(0, hz)) {
            Some(Ok(monitor)) => Some(monitor),
            Some(Err(why)) => {
                ctx.rec.note(format!("no GPU telemetry: {why}"));
                None
            }
            None => None,
        };
        let start = Instant::now();
        let result = stage.run(&mut ctx, &inputs);
        record.seconds = start.elapsed().as_secs_f64() / f64::from(stage.runs_per_trial().max(1));
        if let Some(monitor) = monitor {
            monitor.stop().record(&mut ctx.rec);
        }
        record.peak_rss_bytes = match (peak_rss_bytes(), ctx.peak_rss_child) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        record.content_hash = ctx.content_hash.take();
        record.facts = ctx.rec.take_facts();
        (record.metrics, record.notes) = ctx.rec.into_parts();
        if peak_scope == PeakScope::Process && record.peak_rss_bytes.is_some() {
            record.notes.push(PROCESS_PEAK_NOTE.to_owned());
        }
        result
    }

    /// The finished trial's record: its stages, its time (stages that ran, cached stages
    /// left out) and the code it ran.
    fn record(self, records: Vec<StageRecord>, started_at: chrono::DateTime<Utc>, probe: LoadProbe) -> TrialRecord {
        let (spec, exp) = (self.spec, self.spec.exp);
        let config = &exp.configs[self.trial.config];
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
        TrialRecord {
            index: self.trial.index,
            config: config.name.clone(),
            variant: config.variant.clone(),
            sweep: config.sweep_point.clone(),
            repetition: self.trial.repetition,
            block: self.trial.block,
            warmup: self.trial.warmup,
            ok: self.first_error.is_none(),
            error: self.first_error,
            seconds,
            started_at,
            finished_at: Utc::now(),
            environment_hash: spec.env.hash.clone(),
            worker: spec.worker.clone(),
            git_commit,
            git_dirty,
            load,
            stages: records,
        }
    }
}
