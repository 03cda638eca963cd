//! The executor (plan -> **exec** -> events -> reporters): runs each trial's stages in
//! topological order, passes artifacts along edges, times every stage, and emits events.
//!
//! A failing stage fails its trial (downstream stages are skipped) and the run goes on, unless
//! the first trial of every config failed with the same error: then repeating it would only
//! measure the failure again, so the run stops (`[schedule] keep_going = true` runs on). A
//! cancelled trial (Ctrl-C) is dropped whole, so the store only ever holds finished trials.
//!
//! `measured run` and the queue worker run the same loop; the worker adds [`LoopHooks`]: a
//! stage cache kept across its units, a lost lease that ends the loop, and a trial killed by
//! `scancel`'s signal taken for the cancellation.

mod events;
mod reporters;
mod trial;

pub use events::{ExecError, Reporter, RunEvent};
pub use reporters::{failure_text, ConsoleReporter, JsonReporter};
pub use trial::{run_trial, Execution, StageCache};

use crate::plan::ScheduledTrial;
use crate::record::TrialRecord;
use crate::stage::Services;
use crate::store::RunStatus;
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

    /// Whether later looks still read the trials run: when not, the executor stops keeping a
    /// copy of each (a long fixed run would otherwise hold every trial in memory).
    fn wants_trials(&self) -> bool {
        true
    }
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
    /// The status a run that ended this way is stored with.
    pub fn status(self) -> RunStatus {
        match self {
            Outcome::Finished => RunStatus::Finished,
            Outcome::Interrupted => RunStatus::Interrupted,
            Outcome::Stopped => RunStatus::Stopped,
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

impl ExecSummary {
    /// A run that ended as `outcome` with no trial run.
    pub fn new(outcome: Outcome) -> Self {
        Self {
            outcome,
            ran: 0,
            failed: 0,
            stopped: None,
            ended_early: None,
        }
    }
}

/// What a caller adds to [`execute_with`]'s loop; a local run uses the defaults.
#[derive(Default)]
pub struct LoopHooks<'a> {
    /// The stage cache to use and keep filling (a queue worker keeps one across the units of a
    /// run); a fresh one for this call when `None`.
    pub cache: Option<&'a mut StageCache>,
    /// Once set, the loop ends before its next trial, interrupted (a queue worker that lost its
    /// unit's lease: the unit's new holder runs the rest).
    pub halt: Option<&'a AtomicBool>,
    /// A failed trial whose stage was killed by a signal waits a moment for `cancel`: when it
    /// comes, the failure was the cancellation (`scancel` signals every process of the task,
    /// the stage's program too, a moment before the handler sets the flag), and the trial is
    /// dropped like any cancelled one.
    pub signal_cancels: bool,
}

/// Runs every trial of `spec` not in `spec.skip`, in plan order. With a `judge`, the run may
/// end after any complete measured block.
pub fn execute(
    spec: &Execution<'_>,
    services: &Services,
    cancel: &AtomicBool,
    reporters: &mut [&mut dyn Reporter],
    judge: Option<&mut dyn BlockJudge>,
) -> Result<ExecSummary, ExecError> {
    execute_with(spec, services, cancel, reporters, judge, LoopHooks::default())
}

/// [`execute`], with what a caller adds to the loop.
pub fn execute_with(
    spec: &Execution<'_>,
    services: &Services,
    cancel: &AtomicBool,
    reporters: &mut [&mut dyn Reporter],
    mut judge: Option<&mut dyn BlockJudge>,
    hooks: LoopHooks<'_>,
) -> Result<ExecSummary, ExecError> {
    let run_id = spec.run_id;
    let to_run: Vec<&ScheduledTrial> = spec.trials.iter().filter(|t| !spec.skip.contains(&t.index)).collect();
    emit(
        reporters,
        &RunEvent::RunStarted {
            run_id,
            experiment: &spec.exp.name,
            planned: spec.trials.len(),
            to_run: to_run.len(),
            seed: spec.seed,
        },
    )?;
    let mut own_cache = StageCache::default();
    let cache = hooks.cache.unwrap_or(&mut own_cache);
    let mut summary = ExecSummary::new(Outcome::Finished);
    let mut ran: Vec<TrialRecord> = Vec::new();
    let mut firsts = FirstTrials::new(spec.exp.configs.len(), spec.exp.schedule.keep_going);
    let total = to_run.len();
    for (n, &trial) in to_run.iter().enumerate() {
        if cancel.load(Ordering::SeqCst) || hooks.halt.is_some_and(|h| h.load(Ordering::SeqCst)) {
            summary.outcome = Outcome::Interrupted;
            break;
        }
        let config = &spec.exp.configs[trial.config].name;
        emit(reporters, &RunEvent::TrialStarted { run_id, trial, config })?;
        let record = run_trial(spec, trial, services, cancel, cache, reporters)?;
        let Some(record) = record.filter(|r| !(hooks.signal_cancels && killed_by_cancel(r, cancel))) else {
            summary.outcome = Outcome::Interrupted;
            break;
        };
        summary.ran += 1;
        if !record.ok {
            summary.failed += 1;
        }
        emit(reporters, &RunEvent::TrialFinished { run_id, trial: &record })?;
        // A measured block is complete when the next trial to run belongs to another one.
        let block_done = !trial.warmup && to_run.get(n + 1).is_none_or(|next| next.block != trial.block);
        if judge.as_deref().is_some_and(|j| j.wants_trials()) {
            ran.push(record.clone());
        }
        if let (true, Some(j)) = (block_done, judge.as_deref_mut()) {
            if let Some(ended) = look(j, trial.block, &ran, run_id, reporters)? {
                summary.ended_early = Some(ended);
                break;
            }
        }
        if let Some(error) = firsts.common_failure(trial.config, record).filter(|_| n + 1 < total) {
            summary.outcome = Outcome::Stopped;
            summary.stopped = Some(error);
            break;
        }
    }
    emit(
        reporters,
        &RunEvent::RunFinished {
            run_id,
            status: summary.outcome.status(),
            trials_run: summary.ran,
            failed: summary.failed,
        },
    )?;
    Ok(summary)
}

/// Whether failed trial `record` died of the signal that cancels the run: its stage's program
/// was killed by a signal, and `cancel` is set at once or a moment later.
fn killed_by_cancel(record: &TrialRecord, cancel: &AtomicBool) -> bool {
    if record.ok {
        return false;
    }
    if cancel.load(Ordering::SeqCst) {
        return true;
    }
    if record.error.as_deref().is_some_and(|e| e.contains("killed by signal")) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        return cancel.load(Ordering::SeqCst);
    }
    false
}

/// A sequential run's look after measured block `block`; `Some((blocks, why))` ends the run.
fn look(
    judge: &mut dyn BlockJudge,
    block: u32,
    ran: &[TrialRecord],
    run_id: &str,
    reporters: &mut [&mut dyn Reporter],
) -> Result<Option<(u32, String)>, ExecError> {
    let judged = judge.after_block(block, ran);
    if let Some(look) = &judged.look {
        let blocks = judged.blocks;
        emit(
            reporters,
            &RunEvent::Look {
                run_id,
                blocks,
                summary: look,
            },
        )?;
    }
    let Some(reason) = judged.stop else { return Ok(None) };
    emit(
        reporters,
        &RunEvent::EndedEarly {
            run_id,
            blocks: judged.blocks,
            reason: &reason,
        },
    )?;
    Ok(Some((judged.blocks, reason)))
}

/// Each config's first trial run here, until every config has had one: when all of them
/// failed with the same error, repeating them would only measure the failure again.
struct FirstTrials {
    firsts: Vec<Option<TrialRecord>>,
    /// Decided already (or `keep_going`): nothing more to look at.
    judged: bool,
}

impl FirstTrials {
    fn new(configs: usize, keep_going: bool) -> Self {
        Self {
            firsts: vec![None; configs],
            judged: keep_going,
        }
    }

    /// Takes the trial of `config` that just finished; once every config has its first, the
    /// error they all failed with, if they did.
    fn common_failure(&mut self, config: usize, record: TrialRecord) -> Option<String> {
        if self.judged {
            return None;
        }
        if let Some(slot) = self.firsts.get_mut(config) {
            slot.get_or_insert(record);
        }
        if !self.firsts.iter().all(Option::is_some) {
            return None;
        }
        self.judged = true;
        let seen: Vec<TrialRecord> = self.firsts.iter().flatten().cloned().collect();
        crate::record::common_first_failure(&seen, self.firsts.len())
    }
}
