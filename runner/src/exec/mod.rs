//! The executor (plan -> **exec** -> events -> reporters): runs each trial's stages in
//! topological order, passes artifacts along edges, times every stage, and emits events.
//!
//! A failing stage fails its trial (downstream stages are skipped) and the run goes on, unless
//! the first trial of every config failed with the same error: then repeating it would only
//! measure the failure again, so the run stops (`[schedule] keep_going = true` runs on). A
//! cancelled trial (Ctrl-C) is dropped whole, so the store only ever holds finished trials.

mod events;
mod reporters;
mod trial;

pub use events::{ExecError, Reporter, RunEvent};
pub use reporters::{failure_text, ConsoleReporter, JsonReporter};
pub use trial::{run_trial, Execution, StageCache};

use crate::plan::ScheduledTrial;
use crate::record::TrialRecord;
use crate::stage::Services;
use events::emit;
use std::sync::atomic::{AtomicBool, Ordering};

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

// Long because: the trial loop with its three ways to end early (cancelled, every first trial
// failed alike, a sequential run decided), each commented where it happens.
/// Runs every trial of `spec` not in `spec.skip`, in plan order. With a `judge`, the run may
/// end after any complete measured block.
pub fn execute(
    spec: &Execution<'_>,
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
