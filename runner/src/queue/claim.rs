//! The queue's SQL (submit/worker/status -> **queue::claim** -> Postgres): enqueue a run's
//! units, claim one with `FOR UPDATE SKIP LOCKED`, renew and release leases, complete units and
//! close the run when the last one is done.
//!
//! A unit's status is a [`UnitStatus`], bound into each statement: its text is the store's.
//!
//! Lease times use the database clock (`now()`), so workers on machines with skewed clocks still
//! agree on when a lease has expired.

use crate::store::{RunStatus, UnitStatus};
use sqlx::{PgPool, Row};

/// How many times a unit may be claimed before a lost lease marks it failed: a unit that kills
/// its worker every time (out of memory, node crash) must not be retried forever.
pub const MAX_ATTEMPTS: i64 = 3;

/// A unit this worker holds a lease on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub run_id: String,
    /// The block number of the run's schedule.
    pub unit: u32,
    /// 1 on the first claim; more when an earlier holder lost its lease.
    pub attempts: u32,
}

/// Registers a run's units (block number, trial count) in one transaction.
pub async fn enqueue(pool: &PgPool, run_id: &str, lease_seconds: f64, units: &[(u32, u32)]) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("INSERT INTO queue_runs (run_id, lease_seconds) VALUES ($1, $2)")
        .bind(run_id)
        .bind(lease_seconds)
        .execute(&mut *tx)
        .await?;
    let blocks: Vec<i64> = units.iter().map(|u| i64::from(u.0)).collect();
    let counts: Vec<i64> = units.iter().map(|u| i64::from(u.1)).collect();
    sqlx::query("INSERT INTO queue_units (run_id, unit, trials) SELECT $1, u, n FROM UNNEST($2::BIGINT[], $3::BIGINT[]) AS t(u, n)")
        .bind(run_id)
        .bind(&blocks)
        .bind(&counts)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

pub async fn set_slurm_job(pool: &PgPool, run_id: &str, job: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE queue_runs SET slurm_job_id = $2 WHERE run_id = $1")
        .bind(run_id)
        .bind(job)
        .execute(pool)
        .await?;
    Ok(())
}

/// The run's lease length and Slurm job, or `None` when the run has no queue.
pub async fn queue_run(pool: &PgPool, run_id: &str) -> Result<Option<(f64, Option<String>)>, sqlx::Error> {
    let row = sqlx::query("SELECT lease_seconds, slurm_job_id FROM queue_runs WHERE run_id = $1")
        .bind(run_id)
        .fetch_optional(pool)
        .await?;
    row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose()
}

/// Claims the next free unit (of `run`, or of any run when `None`): a queued one, or one whose
/// lease expired with attempts left. The lease is the run's (from `submit`) unless overridden.
/// Locked rows are skipped, so concurrent workers never wait
/// on each other and never get the same unit.
pub async fn claim(
    pool: &PgPool,
    run: Option<&str>,
    worker: &str,
    lease_override: Option<f64>,
) -> Result<Option<Claimed>, sqlx::Error> {
    let row = sqlx::query(
        "WITH next AS ( \
           SELECT q.run_id, q.unit FROM queue_units q \
           WHERE ($1::TEXT IS NULL OR q.run_id = $1) \
             AND (q.status = $5 OR (q.status = $6 AND q.lease_expires_at < now() AND q.attempts < $4)) \
           ORDER BY q.run_id, q.unit LIMIT 1 FOR UPDATE SKIP LOCKED) \
         UPDATE queue_units u SET status = $6, worker = $2, attempts = u.attempts + 1, claimed_at = now(), \
           lease_expires_at = now() + make_interval(secs => COALESCE($3::DOUBLE PRECISION, \
           (SELECT r.lease_seconds FROM queue_runs r WHERE r.run_id = next.run_id))) \
         FROM next WHERE u.run_id = next.run_id AND u.unit = next.unit \
         RETURNING u.run_id, u.unit, u.attempts",
    )
    .bind(run)
    .bind(worker)
    .bind(lease_override)
    .bind(MAX_ATTEMPTS)
    .bind(UnitStatus::Queued.as_str())
    .bind(UnitStatus::Running.as_str())
    .fetch_optional(pool)
    .await?;
    row.map(|r| {
        Ok(Claimed {
            run_id: r.try_get(0)?,
            unit: r.try_get::<i64, _>(1)? as u32,
            attempts: r.try_get::<i64, _>(2)? as u32,
        })
    })
    .transpose()
}

/// Extends the lease; `false` when this worker no longer holds the unit (it expired and another
/// worker claimed it).
pub async fn renew(pool: &PgPool, c: &Claimed, worker: &str, lease_seconds: f64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE queue_units SET lease_expires_at = now() + make_interval(secs => $4) \
         WHERE run_id = $1 AND unit = $2 AND worker = $3 AND status = $5",
    )
    .bind(&c.run_id)
    .bind(i64::from(c.unit))
    .bind(worker)
    .bind(lease_seconds)
    .bind(UnitStatus::Running.as_str())
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks the unit done; `false` when the lease was lost meanwhile (the new holder completes it).
pub async fn complete(pool: &PgPool, c: &Claimed, worker: &str) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE queue_units SET status = $4, finished_at = now(), lease_expires_at = NULL, error = NULL \
         WHERE run_id = $1 AND unit = $2 AND worker = $3 AND status = $5",
    )
    .bind(&c.run_id)
    .bind(i64::from(c.unit))
    .bind(worker)
    .bind(UnitStatus::Done.as_str())
    .bind(UnitStatus::Running.as_str())
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Gives a unit back: queued again (claimable at once, no lease to wait out), or failed when
/// it used up its attempts. `error` says why (kept for `measured status`).
pub async fn release(pool: &PgPool, c: &Claimed, worker: &str, error: Option<&str>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE queue_units SET status = CASE WHEN $4::TEXT IS NOT NULL AND attempts >= $5 THEN $6 ELSE $7 END, \
           worker = NULL, lease_expires_at = NULL, error = $4 \
         WHERE run_id = $1 AND unit = $2 AND worker = $3 AND status = $8",
    )
    .bind(&c.run_id)
    .bind(i64::from(c.unit))
    .bind(worker)
    .bind(error)
    .bind(MAX_ATTEMPTS)
    .bind(UnitStatus::Failed.as_str())
    .bind(UnitStatus::Queued.as_str())
    .bind(UnitStatus::Running.as_str())
    .execute(pool)
    .await?;
    Ok(())
}

/// Marks a unit failed at once, with `error`: its trials stopped on an error every config's
/// first trial failed with, which running it again would only measure again. Nothing happens
/// when the lease was lost meanwhile (the new holder decides).
pub async fn fail(pool: &PgPool, c: &Claimed, worker: &str, error: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE queue_units SET status = $5, finished_at = now(), lease_expires_at = NULL, error = $4 \
         WHERE run_id = $1 AND unit = $2 AND worker = $3 AND status = $6",
    )
    .bind(&c.run_id)
    .bind(i64::from(c.unit))
    .bind(worker)
    .bind(error)
    .bind(UnitStatus::Failed.as_str())
    .bind(UnitStatus::Running.as_str())
    .execute(pool)
    .await?;
    Ok(())
}

/// Units whose lease expired on their last allowed attempt become failed; returns the runs
/// they belong to (each may now be drained).
pub async fn fail_exhausted(pool: &PgPool, run: Option<&str>) -> Result<Vec<String>, sqlx::Error> {
    let mut runs: Vec<String> = sqlx::query_scalar(
        "UPDATE queue_units SET status = $3, \
           error = 'lease of ' || worker || ' expired on attempt ' || attempts || ' of ' || $2 \
         WHERE ($1::TEXT IS NULL OR run_id = $1) AND status = $4 AND lease_expires_at < now() AND attempts >= $2 \
         RETURNING run_id",
    )
    .bind(run)
    .bind(MAX_ATTEMPTS)
    .bind(UnitStatus::Failed.as_str())
    .bind(UnitStatus::Running.as_str())
    .fetch_all(pool)
    .await?;
    runs.sort();
    runs.dedup();
    Ok(runs)
}

/// Units not yet done or failed (of `run`, or of every run).
pub async fn remaining(pool: &PgPool, run: Option<&str>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM queue_units WHERE ($1::TEXT IS NULL OR run_id = $1) AND status IN ($2, $3)",
    )
    .bind(run)
    .bind(UnitStatus::Queued.as_str())
    .bind(UnitStatus::Running.as_str())
    .fetch_one(pool)
    .await
}

/// Marks the run finished (or failed, when a unit failed) once no unit is queued or running.
/// Concurrent callers are harmless: the status only changes once. Returns the new status.
pub async fn close_run_if_drained(pool: &PgPool, run_id: &str) -> Result<Option<RunStatus>, sqlx::Error> {
    let status: Option<String> = sqlx::query_scalar(
        "UPDATE runs SET status = CASE WHEN EXISTS (SELECT 1 FROM queue_units WHERE run_id = $1 AND status = $4) \
           THEN $2 ELSE $3 END, finished_at = now() \
         WHERE id = $1 AND status NOT IN ($3, $2) \
           AND EXISTS (SELECT 1 FROM queue_runs WHERE run_id = $1) \
           AND NOT EXISTS (SELECT 1 FROM queue_units WHERE run_id = $1 AND status IN ($5, $6)) \
         RETURNING status",
    )
    .bind(run_id)
    .bind(RunStatus::Failed.as_str())
    .bind(RunStatus::Finished.as_str())
    .bind(UnitStatus::Failed.as_str())
    .bind(UnitStatus::Queued.as_str())
    .bind(UnitStatus::Running.as_str())
    .fetch_optional(pool)
    .await?;
    Ok(status.as_deref().map(RunStatus::parse))
}

/// A worker picked up an interrupted run again: it is running once more.
pub async fn reopen_run(pool: &PgPool, run_id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE runs SET status = $2, finished_at = NULL WHERE id = $1 AND status = $3")
        .bind(run_id)
        .bind(RunStatus::Running.as_str())
        .bind(RunStatus::Interrupted.as_str())
        .execute(pool)
        .await?;
    Ok(())
}

/// Marks the run interrupted (its workers are gone and units remain).
pub async fn mark_interrupted(pool: &PgPool, run_id: &str) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("UPDATE runs SET status = $2 WHERE id = $1 AND status = $3")
        .bind(run_id)
        .bind(RunStatus::Interrupted.as_str())
        .bind(RunStatus::Running.as_str())
        .execute(pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Trials of one unit (block) already stored, by an earlier holder of its lease.
pub async fn stored_in_unit(pool: &PgPool, run_id: &str, unit: u32) -> Result<Vec<u32>, sqlx::Error> {
    let v: Vec<i64> = sqlx::query_scalar("SELECT trial_index FROM trials WHERE run_id = $1 AND block = $2")
        .bind(run_id)
        .bind(i64::from(unit))
        .fetch_all(pool)
        .await?;
    Ok(v.into_iter().map(|i| i as u32).collect())
}

/// One unit's queue state, as `measured status` shows it.
#[derive(Debug, Clone)]
pub struct UnitRow {
    pub unit: u32,
    pub trials: u32,
    pub status: UnitStatus,
    pub worker: Option<String>,
    /// Seconds until the lease expires (negative: expired), for running units.
    pub lease_left: Option<f64>,
    pub attempts: u32,
    pub error: Option<String>,
}

pub async fn units(pool: &PgPool, run_id: &str) -> Result<Vec<UnitRow>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT unit, trials, status, worker, EXTRACT(EPOCH FROM (lease_expires_at - now()))::DOUBLE PRECISION, \
         attempts, error FROM queue_units WHERE run_id = $1 ORDER BY unit",
    )
    .bind(run_id)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(UnitRow {
                unit: r.try_get::<i64, _>(0)? as u32,
                trials: r.try_get::<i64, _>(1)? as u32,
                status: UnitStatus::parse(r.try_get::<&str, _>(2)?),
                worker: r.try_get(3)?,
                lease_left: r.try_get(4)?,
                attempts: r.try_get::<i64, _>(5)? as u32,
                error: r.try_get(6)?,
            })
        })
        .collect()
}
