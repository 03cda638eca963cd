//! The events of a run (exec -> **events** -> reporters): what happens, in order, and the
//! trait of those who listen. Each reporter consumes the same stream.

use crate::plan::ScheduledTrial;
use crate::record::{StageRecord, TrialRecord};
use crate::store::RunStatus;
use serde::Serialize;

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
        status: RunStatus,
        trials_run: usize,
        failed: usize,
    },
}

/// A consumer of run events (console, JSON lines, the trial sink).
pub trait Reporter {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError>;
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot write events: {0}")]
    Io(#[from] std::io::Error),
    /// A reporter that keeps finished trials (the journal, the database) could not.
    #[error(transparent)]
    Keep(Box<dyn std::error::Error + Send + Sync>),
}

pub(super) fn emit(reporters: &mut [&mut dyn Reporter], event: &RunEvent<'_>) -> Result<(), ExecError> {
    for r in reporters.iter_mut() {
        r.on_event(event)?;
    }
    Ok(())
}

pub(super) fn emit_stage(
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
