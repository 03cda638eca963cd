//! `measured status` (store + queue + squeue -> **status** -> terminal): unit counts, the
//! leases workers hold, the Slurm array's state, and detection of runs whose workers are gone.

use super::claim::{self, UnitRow};
use super::slurm;
use super::QueueError;
use crate::db::Db;
use crate::store::{self, RunStatus, UnitStatus};
use sqlx::PgPool;
use std::fmt::Write as _;

/// What Slurm says about the run's array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArrayState {
    /// No Slurm job is recorded (workers were started by hand).
    NoJob,
    /// Tasks still known to squeue: (task id, state).
    Queued(Vec<(String, String)>),
    /// The array left the queue (finished or cancelled).
    Gone,
    /// squeue could not be asked; nothing is concluded from it.
    Unknown(String),
}

/// A snapshot of one queued run.
#[derive(Debug, Clone)]
pub struct QueueStatus {
    pub run: store::RunRow,
    pub units: Vec<UnitRow>,
    pub slurm_job: Option<String>,
    pub lease_seconds: f64,
    pub array: ArrayState,
    /// This call found the workers gone with units left and marked the run interrupted.
    pub marked_interrupted: bool,
}

impl QueueStatus {
    pub fn count(&self, status: &UnitStatus) -> usize {
        self.units.iter().filter(|u| u.status == *status).count()
    }

    /// Running units whose lease has not expired: some worker is (probably) alive on them.
    pub fn live_leases(&self) -> usize {
        self.units
            .iter()
            .filter(|u| u.status == UnitStatus::Running && u.lease_left.is_some_and(|l| l > 0.0))
            .count()
    }
}

/// Loads the queue state of `run` (id, prefix or `latest`); marks the run interrupted when its
/// Slurm array is gone, no lease is live and units remain (`measured worker --run` revives it).
pub async fn load(
    db: &Db,
    pool: &PgPool,
    run: &str,
    ask_slurm: impl Fn(&str) -> ArrayState,
) -> Result<QueueStatus, QueueError> {
    let row = store::load_run(db, run).await?;
    let (lease_seconds, slurm_job) = claim::queue_run(pool, &row.id)
        .await?
        .ok_or_else(|| QueueError::NoQueue(row.id.clone()))?;
    let units = claim::units(pool, &row.id).await?;
    let array = match &slurm_job {
        None => ArrayState::NoJob,
        Some(j) => ask_slurm(j),
    };
    let mut st = QueueStatus {
        run: row,
        units,
        slurm_job,
        lease_seconds,
        array,
        marked_interrupted: false,
    };
    let remaining = st.count(&UnitStatus::Queued) + st.count(&UnitStatus::Running);
    if st.run.status == RunStatus::Running && remaining > 0 && st.live_leases() == 0 && st.array == ArrayState::Gone {
        st.marked_interrupted = claim::mark_interrupted(pool, &st.run.id).await?;
        if st.marked_interrupted {
            st.run.status = RunStatus::Interrupted;
        }
    }
    Ok(st)
}

/// Asks squeue about a job array.
pub fn ask_squeue(job: &str) -> ArrayState {
    match slurm::squeue(job) {
        Ok(tasks) if tasks.is_empty() => ArrayState::Gone,
        Ok(tasks) => ArrayState::Queued(tasks),
        Err(e) => ArrayState::Unknown(e),
    }
}

/// The text `measured status` prints.
pub fn render(st: &QueueStatus) -> String {
    let mut out = String::new();
    let r = &st.run;
    let _ = writeln!(out, "run {}  experiment {}  status {}", r.id, r.experiment, r.status);
    let _ = writeln!(
        out,
        "units: {} queued, {} running, {} done, {} failed (of {}; lease {} s)",
        st.count(&UnitStatus::Queued),
        st.count(&UnitStatus::Running),
        st.count(&UnitStatus::Done),
        st.count(&UnitStatus::Failed),
        st.units.len(),
        st.lease_seconds
    );
    let _ = writeln!(
        out,
        "trials: {} of {} stored, {} failed",
        r.stored_trials, r.planned_trials, r.failed_trials
    );
    let running: Vec<&UnitRow> = st.units.iter().filter(|u| u.status == UnitStatus::Running).collect();
    if running.is_empty() {
        out.push_str("leases: none\n");
    } else {
        out.push_str("leases:\n");
        for u in running {
            let left = u.lease_left.unwrap_or(0.0);
            let _ = writeln!(
                out,
                "  unit {:>4}  worker {}  attempt {}  lease {}",
                u.unit,
                u.worker.as_deref().unwrap_or("?"),
                u.attempts,
                if left > 0.0 {
                    format!("expires in {left:.1} s")
                } else {
                    format!("expired {:.1} s ago (claimable again)", -left)
                }
            );
        }
    }
    for u in st.units.iter().filter(|u| u.status == UnitStatus::Failed) {
        let _ = writeln!(
            out,
            "failed unit {} ({} trials): {}",
            u.unit,
            u.trials,
            u.error.as_deref().unwrap_or("no reason recorded")
        );
    }
    match (&st.slurm_job, &st.array) {
        (_, ArrayState::NoJob) => out.push_str("slurm: no job (workers started by hand)\n"),
        (Some(j), ArrayState::Gone) => {
            let _ = writeln!(out, "slurm job {j}: not in squeue");
        }
        (Some(j), ArrayState::Queued(tasks)) => {
            let list: Vec<String> = tasks.iter().map(|(id, s)| format!("{id} {s}")).collect();
            let _ = writeln!(out, "slurm job {j}: {}", list.join(", "));
        }
        (j, ArrayState::Unknown(e)) => {
            let _ = writeln!(out, "slurm job {}: state unknown ({e})", j.as_deref().unwrap_or("?"));
        }
        (None, _) => {}
    }
    let remaining = st.count(&UnitStatus::Queued) + st.count(&UnitStatus::Running);
    if st.marked_interrupted {
        let _ = writeln!(
            out,
            "the Slurm array is gone and no worker holds a lease: run marked interrupted; finish it with `measured worker --run {}`",
            r.id
        );
    } else if remaining > 0 && st.live_leases() == 0 && st.array == ArrayState::NoJob {
        let _ = writeln!(
            out,
            "no worker holds a lease: start one with `measured worker --run {}`",
            r.id
        );
    } else if remaining == 0 {
        let _ = writeln!(out, "queue drained: `measured report {}` renders the report", r.id);
    }
    out
}
