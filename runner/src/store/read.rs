//! Reading runs and trials back (store -> rundata -> report): run rows, their trials with
//! stage results and metrics, and stored environments.

use super::results::{RunRow, StoreError};
use crate::db::Db;
use crate::measure::{Fingerprint, TickDelta, TrialLoad};
use crate::metrics::Metric;
use crate::on_pool;
use crate::record::{StageRecord, StageStatus, TrialRecord};
use sqlx::Row;

const RUN_COLUMNS: &str = "r.id, r.experiment, r.description, r.manifest_path, r.manifest_text, r.manifest_hash, r.smoke, r.seed, \
     r.status, r.planned_trials, r.started_at, r.finished_at, r.git_commit, r.git_dirty, r.environment_hash, r.command, \
     r.heartbeat_at, r.lease_seconds, r.stock_database, r.spec, r.stock_data, r.git_branch, r.error, (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id) AS stored, \
     (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id AND t.status <> 'ok') AS failed";

macro_rules! run_row {
    ($r:expr) => {{
        let r = $r;
        RunRow {
            id: r.try_get("id")?,
            experiment: r.try_get("experiment")?,
            description: r.try_get("description")?,
            manifest_path: r.try_get("manifest_path")?,
            manifest_text: r.try_get("manifest_text")?,
            manifest_hash: r.try_get("manifest_hash")?,
            smoke: r.try_get("smoke")?,
            seed: r.try_get::<String, _>("seed")?.parse().unwrap_or(0),
            status: super::RunStatus::parse(&r.try_get::<String, _>("status")?),
            error: r.try_get("error")?,
            planned_trials: r.try_get::<i64, _>("planned_trials")? as u32,
            started_at: r.try_get("started_at")?,
            finished_at: r.try_get("finished_at")?,
            git_commit: r.try_get("git_commit")?,
            git_dirty: r.try_get("git_dirty")?,
            git_branch: r.try_get("git_branch")?,
            environment_hash: r.try_get("environment_hash")?,
            command: r.try_get("command")?,
            heartbeat_at: r.try_get("heartbeat_at")?,
            lease_seconds: r.try_get("lease_seconds")?,
            stock_database: r.try_get("stock_database")?,
            spec: r.try_get("spec")?,
            stock_data: r.try_get("stock_data")?,
            stored_trials: r.try_get::<i64, _>("stored")? as u32,
            failed_trials: r.try_get::<i64, _>("failed")? as u32,
        }
    }};
}

/// Stored runs, newest first, optionally of one experiment.
pub async fn list_runs(db: &Db, experiment: Option<&str>, limit: u32) -> Result<Vec<RunRow>, StoreError> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs r WHERE ($1 IS NULL OR r.experiment = $1) ORDER BY r.started_at DESC, r.id DESC LIMIT $2"
    );
    on_pool!(db, |pool| {
        let rows = sqlx::query(&sql)
            .bind(experiment)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(run_row!(r));
        }
        Ok(out)
    })
}

/// One run by id or unique id prefix (`latest` picks the newest run).
pub async fn load_run(db: &Db, id: &str) -> Result<RunRow, StoreError> {
    let (sql, arg) = if id == "latest" {
        (
            format!("SELECT {RUN_COLUMNS} FROM runs r ORDER BY r.started_at DESC, r.id DESC LIMIT 2"),
            String::new(),
        )
    } else {
        (
            format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.id LIKE $1 ORDER BY r.id LIMIT 6"),
            format!("{}%", escape_like(id)),
        )
    };
    let rows: Vec<RunRow> = on_pool!(db, |pool| {
        let mut q = sqlx::query(&sql);
        if id != "latest" {
            q = q.bind(&arg);
        }
        let rows = q.fetch_all(pool).await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(run_row!(r));
        }
        Ok::<_, StoreError>(out)
    })?;
    if id == "latest" {
        return rows
            .into_iter()
            .next()
            .ok_or_else(|| StoreError::NoSuchRun(id.to_owned()));
    }
    if let Some(exact) = rows.iter().find(|r| r.id == id) {
        return Ok(exact.clone());
    }
    match rows.len() {
        0 => Err(StoreError::NoSuchRun(id.to_owned())),
        1 => Ok(rows.into_iter().next().expect("one row")),
        _ => Err(StoreError::Ambiguous(
            id.to_owned(),
            rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>().join(", "),
        )),
    }
}

fn escape_like(s: &str) -> String {
    // Run ids are [0-9a-z-]; anything else cannot match, so drop LIKE wildcards outright.
    s.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect()
}

/// A trial's stored tick counts, when all four are there and none is negative (database
/// content is input).
fn tick_delta(busy: Option<i64>, own: Option<i64>, total: Option<i64>, cpus: Option<i64>) -> Option<TickDelta> {
    Some(TickDelta {
        busy: u64::try_from(busy?).ok()?,
        own: u64::try_from(own?).ok()?,
        total: u64::try_from(total?).ok()?,
        cpus: u32::try_from(cpus?).ok().filter(|c| *c > 0)?,
    })
}

/// A stage's stored notes (a JSON array of sentences; none when the column is NULL or not one).
fn stored_notes(json: Option<String>) -> Vec<String> {
    json.and_then(|j| serde_json::from_str(&j).ok()).unwrap_or_default()
}

/// A stage's stored facts: database content, so read back within the bounds a stage records
/// them in (names of fact characters, values cut), and none when the column is not a JSON
/// object of strings.
fn stored_facts(json: Option<String>) -> crate::metrics::Facts {
    let Some(map) = json.and_then(|j| serde_json::from_str::<crate::metrics::Facts>(&j).ok()) else {
        return Default::default();
    };
    let mut rec = crate::metrics::Recorder::new();
    for (name, value) in map {
        rec.fact(&name, value);
    }
    rec.take_facts()
}

/// Every stored trial of a run, with stages and metrics, in trial order.
pub async fn load_trials(db: &Db, run_id: &str) -> Result<Vec<TrialRecord>, StoreError> {
    on_pool!(db, |pool| {
        let trial_rows = sqlx::query(
            "SELECT trial_index, config, variant, sweep, repetition, block, warmup, status, error, seconds, started_at, \
             finished_at, environment_hash, worker, git_commit, git_dirty, load_before, load_after, cpu_other, cpu_cores, \
             cpu_mhz, cpu_busy_ticks, cpu_own_ticks, cpu_total_ticks, cpu_tick_cpus FROM trials WHERE run_id = $1 \
             ORDER BY trial_index",
        )
        .bind(run_id)
        .fetch_all(pool)
        .await?;
        let stage_rows = sqlx::query(
            "SELECT trial_index, position, stage, kind, status, cache_hit, seconds, peak_rss_bytes, error, content_hash, \
             notes, facts FROM stage_results WHERE run_id = $1 ORDER BY trial_index, position",
        )
        .bind(run_id)
        .fetch_all(pool)
        .await?;
        let metric_rows = sqlx::query(
            "SELECT trial_index, stage, seq, name, value, unit, step FROM metrics WHERE run_id = $1 ORDER BY trial_index, stage, seq",
        )
        .bind(run_id)
        .fetch_all(pool)
        .await?;
        let mut trials = Vec::with_capacity(trial_rows.len());
        for r in &trial_rows {
            let sweep: String = r.try_get("sweep")?;
            trials.push(TrialRecord {
                index: r.try_get::<i64, _>("trial_index")? as u32,
                config: r.try_get("config")?,
                variant: r.try_get("variant")?,
                sweep: serde_json::from_str(&sweep).unwrap_or_default(),
                repetition: r.try_get::<i64, _>("repetition")? as u32,
                block: r.try_get::<i64, _>("block")? as u32,
                warmup: r.try_get("warmup")?,
                ok: r.try_get::<String, _>("status")? == "ok",
                error: r.try_get("error")?,
                seconds: r.try_get("seconds")?,
                started_at: r.try_get("started_at")?,
                finished_at: r.try_get("finished_at")?,
                environment_hash: r.try_get("environment_hash")?,
                worker: r.try_get("worker")?,
                git_commit: r.try_get("git_commit")?,
                git_dirty: r.try_get::<Option<bool>, _>("git_dirty")?.unwrap_or(false),
                load: TrialLoad {
                    load_before: r.try_get("load_before")?,
                    load_after: r.try_get("load_after")?,
                    other_cpu: r.try_get("cpu_other")?,
                    cores: r
                        .try_get::<Option<i64>, _>("cpu_cores")?
                        .and_then(|c| u32::try_from(c).ok()),
                    cpu_mhz: r.try_get("cpu_mhz")?,
                    ticks: tick_delta(
                        r.try_get("cpu_busy_ticks")?,
                        r.try_get("cpu_own_ticks")?,
                        r.try_get("cpu_total_ticks")?,
                        r.try_get("cpu_tick_cpus")?,
                    ),
                },
                stages: Vec::new(),
            });
        }
        let pos = |trials: &[TrialRecord], idx: u32| trials.binary_search_by_key(&idx, |t| t.index).ok();
        for r in &stage_rows {
            let idx = r.try_get::<i64, _>("trial_index")? as u32;
            let Some(i) = pos(&trials, idx) else { continue };
            trials[i].stages.push(StageRecord {
                name: r.try_get("stage")?,
                kind: r.try_get("kind")?,
                position: r.try_get::<i64, _>("position")? as u32,
                status: StageStatus::parse(&r.try_get::<String, _>("status")?),
                cache_hit: r.try_get("cache_hit")?,
                seconds: r.try_get("seconds")?,
                peak_rss_bytes: r.try_get::<Option<i64>, _>("peak_rss_bytes")?.map(|b| b as u64),
                error: r.try_get("error")?,
                content_hash: r.try_get("content_hash")?,
                metrics: Vec::new(),
                notes: stored_notes(r.try_get("notes")?),
                facts: stored_facts(r.try_get("facts")?),
            });
        }
        for r in &metric_rows {
            let idx = r.try_get::<i64, _>("trial_index")? as u32;
            let Some(i) = pos(&trials, idx) else { continue };
            let stage: String = r.try_get("stage")?;
            let Some(s) = trials[i].stages.iter_mut().find(|s| s.name == stage) else {
                continue;
            };
            s.metrics.push(Metric {
                name: r.try_get("name")?,
                value: r.try_get("value")?,
                unit: r.try_get("unit")?,
                step: r.try_get("step")?,
            });
        }
        Ok(trials)
    })
}

/// The stored environment fingerprint with this hash.
pub async fn environment(db: &Db, hash: &str) -> Result<Option<Fingerprint>, StoreError> {
    on_pool!(db, |pool| {
        let row = sqlx::query("SELECT details FROM environments WHERE hash = $1")
            .bind(hash)
            .fetch_optional(pool)
            .await?;
        Ok(match row {
            Some(r) => serde_json::from_str(&r.try_get::<String, _>(0)?).ok(),
            None => None,
        })
    })
}
