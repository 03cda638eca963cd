//! Writing runs and trials (exec -> **store**), and the rows they are read back as. One transaction per
//! trial: a trial is stored whole or not at all, so an interrupted run keeps every finished
//! trial and a resumed run never duplicates one (primary keys enforce it).

use super::RunStatus;
use crate::db::Db;
use crate::measure::Fingerprint;
use crate::metrics::Metric;
use crate::on_pool;
use crate::record::{StageRecord, TrialRecord};
use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Row};

/// Rows per multi-row INSERT: keeps bind parameters far below SQLite's limit.
const METRIC_CHUNK: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The driver's message is the whole story: it is not also chained as a source, so an
    /// error report prints it once.
    #[error("database error: {0}")]
    Sql(sqlx::Error),
    #[error("no run matches `{0}`")]
    NoSuchRun(String),
    #[error("`{0}` matches several runs: {1}")]
    Ambiguous(String, String),
    /// A stored manifest whose text is not the text its hash was taken of.
    #[error(
        "the stored manifest of run {run} does not match its recorded sha256 {hash}: it was changed after the run \
         started; refusing to run it"
    )]
    Tampered { run: String, hash: String },
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Sql(e)
    }
}

impl StoreError {
    /// True when the database could not be reached or answered too late (as opposed to a
    /// statement it rejected): the write may succeed when retried later.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, StoreError::Sql(e) if is_unreachable(e))
    }
}

/// True when a driver error means the database could not be reached or went away (a
/// retry may succeed), rather than that it rejected the statement.
pub fn is_unreachable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        // The server shutting down or restarting (class 57P: admin_shutdown, crash_shutdown,
        // cannot_connect_now).
        sqlx::Error::Database(d) => d.code().is_some_and(|c| c.starts_with("57P")),
        _ => false,
    }
}

/// A run as stored, read back. One of the run row's two shapes that remain (with
/// [`RunHeader`]); it exists because the database adds what no process that writes a run
/// holds: its status and error, its heartbeat, and the trials stored so far.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunRow {
    pub id: String,
    pub experiment: String,
    pub description: String,
    pub manifest_path: String,
    pub manifest_text: String,
    pub manifest_hash: String,
    pub smoke: bool,
    pub seed: u64,
    pub status: RunStatus,
    /// Why a run stopped on an error after it was stored (password redacted); `None` for any
    /// other ending, and for runs stored before it was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub planned_trials: u32,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub git_commit: String,
    pub git_dirty: bool,
    /// The branch checked out when the run started (`None`: detached HEAD, no repository, or
    /// a run stored before branches were recorded).
    pub git_branch: Option<String>,
    pub environment_hash: String,
    pub command: String,
    /// Last sign of life of the process running it (`None`: queued runs, older versions).
    pub heartbeat_at: Option<DateTime<Utc>>,
    /// A `running` run whose heartbeat is older than this many seconds is abandoned.
    pub lease_seconds: f64,
    /// The stock database the run was created with, password redacted (`None`: older versions).
    pub stock_database: Option<String>,
    /// The run's [`crate::store::spec::StoredSpec`] as JSON (`None`: runs stored before specs).
    pub spec: Option<String>,
    /// The stock data it read, a [`crate::market::DataIdentity`] as JSON (`None`: runs stored
    /// before it was recorded, and runs without a load stage).
    pub stock_data: Option<String>,
    /// Trials stored so far (filled by `list_runs` and `load_run`).
    pub stored_trials: u32,
    pub failed_trials: u32,
}

impl RunRow {
    /// Refuses a stored manifest whose text is not the text its hash was taken of when the run
    /// started (the same sha256 over the same text): one edited in the database never runs.
    pub fn verify_manifest(&self) -> Result<(), StoreError> {
        if crate::digest::hex_sha256(self.manifest_text.as_bytes()) == self.manifest_hash {
            Ok(())
        } else {
            Err(StoreError::Tampered {
                run: self.id.clone(),
                hash: self.manifest_hash.clone(),
            })
        }
    }

    /// The status to show: a `running` run whose heartbeat is older than its lease is
    /// `abandoned` (its process died without saying so).
    pub fn shown_status(&self, now: DateTime<Utc>) -> &str {
        if self.abandoned(now) {
            super::status::ABANDONED
        } else {
            self.status.as_str()
        }
    }

    pub fn abandoned(&self, now: DateTime<Utc>) -> bool {
        self.status == RunStatus::Running
            && self
                .heartbeat_at
                .is_some_and(|h| (now - h).num_milliseconds() as f64 / 1e3 > self.lease_seconds)
    }
}

/// The arguments of a new run, borrowed from the process that starts it, from which its
/// [`RunHeader`] is made ([`NewRun::header`]): not a third shape of the row, only the
/// values a header is computed from (its manifest's text and hash, its spec, its redacted
/// stock database) without copying the experiment first.
pub struct NewRun<'a> {
    pub id: &'a str,
    pub experiment: &'a crate::manifest::Experiment,
    pub seed: u64,
    pub planned_trials: u32,
    pub env: &'a Fingerprint,
    pub command: &'a str,
    pub started_at: DateTime<Utc>,
    /// `Some`: the run beats (a local `measured run`); `None`: no heartbeat (queued runs).
    pub lease_seconds: Option<f64>,
    /// Where the run's stages read stock data from (the results database unless one was named).
    pub stock_database: &'a str,
    /// What stock data they read, known once it was prepared.
    pub stock_data: Option<&'a crate::market::DataIdentity>,
}

/// Everything a `runs` row is made of when it is written, in a form that can be written to a
/// journal and replayed into a database that lost the run (see `crate::store::journal`): the
/// shape of a run row on its way in, as [`RunRow`] is on its way out. It exists because a
/// journal must be able to store the run again whole, while a row read back holds what only
/// the database knows.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RunHeader {
    pub id: String,
    pub experiment: String,
    pub description: String,
    pub manifest_path: String,
    pub manifest_text: String,
    pub manifest_hash: String,
    pub smoke: bool,
    pub seed: u64,
    pub planned_trials: u32,
    pub started_at: DateTime<Utc>,
    pub env: Fingerprint,
    pub command: String,
    pub lease_seconds: Option<f64>,
    /// Which database the run's results belong in ([`crate::db::database_identity`]); a journal
    /// is written back only there.
    #[serde(default)]
    pub database: String,
    /// The stock database the run was created with, password redacted.
    #[serde(default)]
    pub stock_database: Option<String>,
    /// The run's [`crate::store::spec::StoredSpec`] as JSON.
    #[serde(default)]
    pub spec: Option<String>,
    /// The stock data it read ([`crate::market::DataIdentity`] as JSON).
    #[serde(default)]
    pub stock_data: Option<String>,
}

impl RunHeader {
    /// The header of a stored run, for a process that continues it (a resume, a queue
    /// worker): `env` is that process's fingerprint, `database` the URL it writes to.
    pub fn of_stored(row: &RunRow, env: &Fingerprint, lease_seconds: Option<f64>, database: &str) -> RunHeader {
        RunHeader {
            id: row.id.clone(),
            experiment: row.experiment.clone(),
            description: row.description.clone(),
            manifest_path: row.manifest_path.clone(),
            manifest_text: row.manifest_text.clone(),
            manifest_hash: row.manifest_hash.clone(),
            smoke: row.smoke,
            seed: row.seed,
            planned_trials: row.planned_trials,
            started_at: row.started_at,
            env: env.clone(),
            command: row.command.clone(),
            lease_seconds,
            database: crate::db::database_identity(database),
            stock_database: row.stock_database.clone(),
            spec: row.spec.clone(),
            stock_data: row.stock_data.clone(),
        }
    }
}

impl NewRun<'_> {
    /// The run's header (with `database` left empty for the caller that knows the URL).
    pub fn header(&self) -> RunHeader {
        let e = self.experiment;
        RunHeader {
            id: self.id.to_owned(),
            experiment: e.name.clone(),
            description: e.description.clone(),
            manifest_path: e.path.display().to_string(),
            manifest_text: e.text.clone(),
            manifest_hash: e.hash.clone(),
            smoke: e.smoke,
            seed: self.seed,
            planned_trials: self.planned_trials,
            started_at: self.started_at,
            env: self.env.clone(),
            command: self.command.to_owned(),
            lease_seconds: self.lease_seconds,
            database: String::new(),
            stock_database: Some(crate::db::redact_url(self.stock_database)),
            spec: Some(crate::store::spec::StoredSpec::of(e, self.seed).to_json()),
            stock_data: self.stock_data.map(crate::market::DataIdentity::to_json),
        }
    }
}

/// Stores a host fingerprint once (trials refer to it by hash).
pub async fn upsert_environment(db: &Db, env: &Fingerprint) -> Result<(), StoreError> {
    let details = serde_json::to_string(env).unwrap_or_default();
    on_pool!(db, |pool| {
        sqlx::query(
            "INSERT INTO environments (hash, host, cpu, cores, os, gpu, measured_version, rustc, details) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (hash) DO NOTHING",
        )
        .bind(&env.hash)
        .bind(&env.host)
        .bind(&env.cpu)
        .bind(env.cores as i64)
        .bind(&env.os)
        .bind(&env.gpu)
        .bind(&env.measured_version)
        .bind(&env.rustc)
        .bind(details)
        .execute(pool)
        .await?;
        Ok(())
    })
}

pub async fn insert_run(db: &Db, run: &NewRun<'_>) -> Result<(), StoreError> {
    insert_run_header(db, &run.header()).await
}

/// Inserts the run row (status `running`) with its environment.
pub async fn insert_run_header(db: &Db, h: &RunHeader) -> Result<(), StoreError> {
    upsert_environment(db, &h.env).await?;
    let heartbeat = h.lease_seconds.map(|_| h.started_at);
    on_pool!(db, |pool| {
        sqlx::query(
            "INSERT INTO runs (id, experiment, description, manifest_path, manifest_text, manifest_hash, smoke, seed, \
             status, planned_trials, started_at, finished_at, git_commit, git_dirty, environment_hash, command, \
             heartbeat_at, lease_seconds, stock_database, spec, stock_data, git_branch) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9, $10, NULL, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
        )
        .bind(&h.id)
        .bind(&h.experiment)
        .bind(&h.description)
        .bind(&h.manifest_path)
        .bind(&h.manifest_text)
        .bind(&h.manifest_hash)
        .bind(h.smoke)
        .bind(h.seed.to_string())
        .bind(i64::from(h.planned_trials))
        .bind(h.started_at)
        .bind(&h.env.git_commit)
        .bind(h.env.git_dirty)
        .bind(&h.env.hash)
        .bind(&h.command)
        .bind(heartbeat)
        .bind(h.lease_seconds.unwrap_or(DEFAULT_LEASE_SECONDS))
        // Redacted again here: a password must never reach the database, whoever built `h`.
        .bind(h.stock_database.as_deref().map(crate::db::redact_url))
        .bind(&h.spec)
        .bind(&h.stock_data)
        .bind(&h.env.git_branch)
        .execute(pool)
        .await?;
        Ok(())
    })
}

/// The lease stored for runs without a heartbeat (never consulted for them).
const DEFAULT_LEASE_SECONDS: f64 = 60.0;

/// Whether a run with this id is stored.
pub async fn run_exists(db: &Db, id: &str) -> Result<bool, StoreError> {
    on_pool!(db, |pool| {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM runs WHERE id = $1")
            .bind(id)
            .fetch_one(pool)
            .await?;
        Ok(n > 0)
    })
}

/// Refreshes a running run's heartbeat (and, with `lease_seconds`, its lease).
pub async fn beat(db: &Db, id: &str, at: DateTime<Utc>, lease_seconds: Option<f64>) -> Result<(), StoreError> {
    on_pool!(db, |pool| {
        sqlx::query(
            "UPDATE runs SET heartbeat_at = $1, lease_seconds = COALESCE($2, lease_seconds) WHERE id = $3 AND status = 'running'",
        )
        .bind(at)
        .bind(lease_seconds)
        .bind(id)
        .execute(pool)
        .await?;
        Ok(())
    })
}

/// Records how a run ended (or that it runs again), clearing any error an earlier stop
/// recorded.
pub async fn set_run_status(
    db: &Db,
    id: &str,
    status: &RunStatus,
    finished_at: Option<DateTime<Utc>>,
) -> Result<(), StoreError> {
    on_pool!(db, |pool| {
        sqlx::query("UPDATE runs SET status = $1, finished_at = $2, error = NULL WHERE id = $3")
            .bind(status.as_str())
            .bind(finished_at)
            .bind(id)
            .execute(pool)
            .await?;
        Ok(())
    })
}

/// Records that a run's process stopped on `error` (its text with any password already
/// removed): the run is `stopped` with the error, no longer `running`. `--resume` continues it.
pub async fn set_run_stopped(db: &Db, id: &str, error: &str) -> Result<(), StoreError> {
    on_pool!(db, |pool| {
        sqlx::query("UPDATE runs SET status = $1, finished_at = $2, error = $3 WHERE id = $4")
            .bind(RunStatus::Stopped.as_str())
            .bind(Utc::now())
            .bind(error)
            .bind(id)
            .execute(pool)
            .await?;
        Ok(())
    })
}

/// A tick count as a database integer (no counter reaches `i64::MAX` ticks; saturate if one
/// ever did).
fn ticks_column(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Records the trial count a sequential run settled on when it ended before its plan's
/// maximum, so that `finished` still means every planned trial is stored.
pub async fn set_planned_trials(db: &Db, id: &str, planned: u32) -> Result<(), StoreError> {
    on_pool!(db, |pool| {
        sqlx::query("UPDATE runs SET planned_trials = $1 WHERE id = $2")
            .bind(i64::from(planned))
            .bind(id)
            .execute(pool)
            .await?;
        Ok(())
    })
}

/// Stores one finished trial with its stage results and metrics, atomically.
/// The trial's environment (`t.environment_hash`) must already be stored: see
/// [`upsert_environment`], done once per worker rather than once per trial.
pub async fn insert_trial(db: &Db, run_id: &str, t: &TrialRecord) -> Result<(), StoreError> {
    let sweep = serde_json::to_string(&t.sweep).unwrap_or_else(|_| "[]".into());
    let metrics: Vec<(&StageRecord, usize, &Metric)> = t
        .stages
        .iter()
        .flat_map(|s| s.metrics.iter().enumerate().map(move |(i, m)| (s, i, m)))
        .collect();
    on_pool!(db, |pool| {
        let mut tx = pool.begin().await?;
        sqlx::query(
            "INSERT INTO trials (run_id, trial_index, config, variant, sweep, repetition, block, warmup, status, error, \
             seconds, started_at, finished_at, environment_hash, worker, git_commit, git_dirty, \
             load_before, load_after, cpu_other, cpu_cores, cpu_mhz, cpu_busy_ticks, cpu_own_ticks, cpu_total_ticks, \
             cpu_tick_cpus) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, \
             $23, $24, $25, $26)",
        )
        .bind(run_id)
        .bind(i64::from(t.index))
        .bind(&t.config)
        .bind(&t.variant)
        .bind(&sweep)
        .bind(i64::from(t.repetition))
        .bind(i64::from(t.block))
        .bind(t.warmup)
        .bind(if t.ok { "ok" } else { "failed" })
        .bind(&t.error)
        .bind(t.seconds)
        .bind(t.started_at)
        .bind(t.finished_at)
        .bind(&t.environment_hash)
        .bind(&t.worker)
        .bind(&t.git_commit)
        // Dirty or clean says something only about a known commit.
        .bind(t.git_commit.as_ref().map(|_| t.git_dirty))
        .bind(t.load.load_before)
        .bind(t.load.load_after)
        .bind(t.load.other_cpu)
        .bind(t.load.cores.map(i64::from))
        .bind(t.load.cpu_mhz)
        .bind(t.load.ticks.map(|d| ticks_column(d.busy)))
        .bind(t.load.ticks.map(|d| ticks_column(d.own)))
        .bind(t.load.ticks.map(|d| ticks_column(d.total)))
        .bind(t.load.ticks.map(|d| i64::from(d.cpus)))
        .execute(&mut *tx)
        .await?;
        if !t.stages.is_empty() {
            let mut qb = QueryBuilder::new(
                "INSERT INTO stage_results (run_id, trial_index, position, stage, kind, status, cache_hit, seconds, peak_rss_bytes, error, content_hash, notes, facts) ",
            );
            qb.push_values(&t.stages, |mut b, s| {
                b.push_bind(run_id)
                    .push_bind(i64::from(t.index))
                    .push_bind(i64::from(s.position))
                    .push_bind(&s.name)
                    .push_bind(&s.kind)
                    .push_bind(s.status.as_str())
                    .push_bind(s.cache_hit)
                    .push_bind(s.seconds)
                    .push_bind(s.peak_rss_bytes.map(|b| b as i64))
                    .push_bind(&s.error)
                    .push_bind(&s.content_hash)
                    .push_bind(notes_json(&s.notes))
                    .push_bind(facts_json(&s.facts));
            });
            qb.build().execute(&mut *tx).await?;
        }
        for chunk in metrics.chunks(METRIC_CHUNK) {
            let mut qb =
                QueryBuilder::new("INSERT INTO metrics (run_id, trial_index, stage, seq, name, value, unit, step) ");
            qb.push_values(chunk, |mut b, (s, i, m)| {
                b.push_bind(run_id)
                    .push_bind(i64::from(t.index))
                    .push_bind(&s.name)
                    .push_bind(*i as i64)
                    .push_bind(&m.name)
                    .push_bind(m.value)
                    .push_bind(&m.unit)
                    .push_bind(m.step);
            });
            qb.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    })
}

/// A stage's notes as the JSON array the `notes` column holds; NULL when it has none.
fn notes_json(notes: &[String]) -> Option<String> {
    (!notes.is_empty()).then(|| serde_json::to_string(notes).unwrap_or_else(|_| "[]".into()))
}

/// A stage's facts as the JSON object the `facts` column holds; NULL when it has none.
fn facts_json(facts: &crate::metrics::Facts) -> Option<String> {
    (!facts.is_empty()).then(|| serde_json::to_string(facts).unwrap_or_else(|_| "{}".into()))
}

/// Stores a trial unless one with its index is already stored (by this or an earlier
/// attempt whose answer was lost): exactly once, by the primary key. Returns whether it
/// was written now.
pub async fn insert_trial_once(db: &Db, run_id: &str, t: &TrialRecord) -> Result<bool, StoreError> {
    match insert_trial(db, run_id, t).await {
        Ok(()) => Ok(true),
        Err(StoreError::Sql(sqlx::Error::Database(e))) if e.is_unique_violation() => Ok(false),
        Err(e) => Err(e),
    }
}

/// Indices of the trials a run has stored (finished, ok or failed).
pub async fn stored_trial_indices(db: &Db, run_id: &str) -> Result<Vec<u32>, StoreError> {
    on_pool!(db, |pool| {
        let rows = sqlx::query("SELECT trial_index FROM trials WHERE run_id = $1 ORDER BY trial_index")
            .bind(run_id)
            .fetch_all(pool)
            .await?;
        rows.iter()
            .map(|r| Ok(r.try_get::<i64, _>(0)? as u32))
            .collect::<Result<Vec<_>, sqlx::Error>>()
            .map_err(StoreError::from)
    })
}
