//! The executor (plan -> **exec** -> events -> reporters): runs each trial's stages in
//! topological order, passes artifacts along edges, times every stage, and emits events.
//!
//! A failing stage fails its trial (downstream stages are skipped) and the run goes on, unless
//! the first trial of every config failed with the same error: then repeating it would only
//! measure the failure again, so the run stops (`[schedule] keep_going = true` runs on). A
//! cancelled trial (Ctrl-C) is dropped whole, so the store only ever holds finished trials.

mod reporters;

use crate::record::{StageRecord, StageStatus, TrialRecord};
pub use reporters::{failure_text, ConsoleReporter, JsonReporter, StoreReporter, Unstored};

use crate::artifact::Artifact;
use crate::manifest::Experiment;
use crate::measure::{peak_rss_bytes, reset_peak_rss, Fingerprint, LoadProbe, PeakScope, PROCESS_PEAK_NOTE};
use crate::plan::{stage_seed, ScheduledTrial};
use crate::stage::{Inputs, Services, StageCtx, TrialInfo};
use chrono::Utc;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What happens during a run, in order; reporters consume these.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent<'a> {
    RunStarted {
        run_id: &'a str,
        experiment: &'a str,
        planned: usize,
        to_run: usize,
        seed: u64,
    },
    TrialStarted {
        run_id: &'a str,
        trial: &'a ScheduledTrial,
        config: &'a str,
    },
    StageFinished {
        run_id: &'a str,
        trial_index: u32,
        stage: &'a StageRecord,
    },
    TrialFinished {
        run_id: &'a str,
        trial: &'a TrialRecord,
    },
    /// A sequential run looked at its questions after `blocks` measured blocks.
    Look {
        run_id: &'a str,
        blocks: u32,
        /// What the look found: the questions decided and those still open.
        summary: &'a str,
    },
    /// The run ends before its planned trials: every question is decided, or its time
    /// budget is spent.
    EndedEarly {
        run_id: &'a str,
        blocks: u32,
        reason: &'a str,
    },
    RunFinished {
        run_id: &'a str,
        status: &'a str,
        trials_run: usize,
        failed: usize,
    },
}

/// What a [`BlockJudge`] makes of a completed block.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BlockJudgement {
    /// Complete measured blocks so far.
    pub blocks: u32,
    /// A look's findings, for the console and the events file.
    pub look: Option<String>,
    /// Why the run ends here (decided, out of time); `None` goes on.
    pub stop: Option<String>,
}

/// Decides after each measured block whether a sequential run goes on
/// (`repetitions = { min, max }`).
pub trait BlockJudge {
    /// Called once measured block `block` is complete, with the trials this process has run
    /// so far (warm-ups included, in order).
    fn after_block(&mut self, block: u32, ran: &[TrialRecord]) -> BlockJudgement;
}

/// A consumer of run events (console, store, JSON lines).
pub trait Reporter {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError>;
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("cannot write events: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Finished,
    Interrupted,
    /// The first trial of every config failed with the same error; the rest were not run.
    Stopped,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Finished => "finished",
            Outcome::Interrupted => "interrupted",
            Outcome::Stopped => crate::record::STOPPED,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ExecSummary {
    pub outcome: Outcome,
    pub ran: usize,
    pub failed: usize,
    /// Why the run stopped early (the error every config's first trial failed with).
    pub stopped: Option<String>,
    /// A sequential run that ended before its planned trials: its complete blocks and why.
    pub ended_early: Option<(u32, String)>,
}

/// Everything fixed for one run.
pub struct RunSpec<'a> {
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

// Long because: the trial loop with its three ways to end early (cancelled, every first trial
// failed alike, a sequential run decided), each commented where it happens.
/// Runs every trial of `spec` not in `spec.skip`, in plan order. With a `judge`, the run may
/// end after any complete measured block.
pub fn execute(
    spec: &RunSpec<'_>,
    services: &Services,
    cancel: &AtomicBool,
    reporters: &mut [&mut dyn Reporter],
    mut judge: Option<&mut dyn BlockJudge>,
) -> Result<ExecSummary, ExecError> {
    let to_run: Vec<&ScheduledTrial> = spec.trials.iter().filter(|t| !spec.skip.contains(&t.index)).collect();
    emit(
        reporters,
        &RunEvent::RunStarted {
            run_id: spec.run_id,
            experiment: &spec.exp.name,
            planned: spec.trials.len(),
            to_run: to_run.len(),
            seed: spec.seed,
        },
    )?;
    let mut cache = StageCache::default();
    let mut summary = ExecSummary {
        outcome: Outcome::Finished,
        ran: 0,
        failed: 0,
        stopped: None,
        ended_early: None,
    };
    let mut ran: Vec<TrialRecord> = Vec::new();
    let configs = spec.exp.configs.len();
    // Each config's first trial run here, until every config has had one.
    let mut firsts: Vec<Option<TrialRecord>> = vec![None; configs];
    let mut judged = spec.exp.schedule.keep_going;
    let total = to_run.len();
    for (n, &trial) in to_run.iter().enumerate() {
        if cancel.load(Ordering::SeqCst) {
            summary.outcome = Outcome::Interrupted;
            break;
        }
        let config = &spec.exp.configs[trial.config].name;
        emit(
            reporters,
            &RunEvent::TrialStarted {
                run_id: spec.run_id,
                trial,
                config,
            },
        )?;
        let Some(record) = run_trial(spec, trial, services, cancel, &mut cache, reporters)? else {
            summary.outcome = Outcome::Interrupted;
            break;
        };
        summary.ran += 1;
        if !record.ok {
            summary.failed += 1;
        }
        emit(
            reporters,
            &RunEvent::TrialFinished {
                run_id: spec.run_id,
                trial: &record,
            },
        )?;
        // A measured block is complete when the next trial to run belongs to another one.
        let block_done = !trial.warmup && to_run.get(n + 1).is_none_or(|next| next.block != trial.block);
        if judge.is_some() {
            ran.push(record.clone());
        }
        if let (true, Some(j)) = (block_done, judge.as_deref_mut()) {
            let judged_block = j.after_block(trial.block, &ran);
            if let Some(look) = &judged_block.look {
                emit(
                    reporters,
                    &RunEvent::Look {
                        run_id: spec.run_id,
                        blocks: judged_block.blocks,
                        summary: look,
                    },
                )?;
            }
            if let Some(reason) = judged_block.stop {
                emit(
                    reporters,
                    &RunEvent::EndedEarly {
                        run_id: spec.run_id,
                        blocks: judged_block.blocks,
                        reason: &reason,
                    },
                )?;
                summary.ended_early = Some((judged_block.blocks, reason));
                break;
            }
        }
        if !judged {
            if let Some(slot) = firsts.get_mut(trial.config) {
                slot.get_or_insert(record);
            }
            if firsts.iter().all(Option::is_some) {
                judged = true;
                let seen: Vec<TrialRecord> = firsts.iter().flatten().cloned().collect();
                if let Some(error) = crate::record::common_first_failure(&seen, configs).filter(|_| n + 1 < total) {
                    summary.outcome = Outcome::Stopped;
                    summary.stopped = Some(error);
                    break;
                }
            }
        }
    }
    emit(
        reporters,
        &RunEvent::RunFinished {
            run_id: spec.run_id,
            status: summary.outcome.as_str(),
            trials_run: summary.ran,
            failed: summary.failed,
        },
    )?;
    Ok(summary)
}

fn emit(reporters: &mut [&mut dyn Reporter], event: &RunEvent<'_>) -> Result<(), ExecError> {
    for r in reporters.iter_mut() {
        r.on_event(event)?;
    }
    Ok(())
}

// Long because: the stage loop owns the trial's artifacts, cache keys and records, which each of
// its steps reads and writes; the steps are commented in order.
/// Runs one trial; `None` when it was cancelled (nothing of it is kept).
pub fn run_trial(
    spec: &RunSpec<'_>,
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

fn emit_stage(
    reporters: &mut [&mut dyn Reporter],
    run_id: &str,
    trial_index: u32,
    stage: &StageRecord,
) -> Result<(), ExecError> {
    emit(
        reporters,
        &RunEvent::StageFinished {
            run_id,
            trial_index,
            stage,
        },
    )
}
