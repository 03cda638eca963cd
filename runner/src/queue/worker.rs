//! The worker loop (queue -> **worker** -> exec -> store): claims a unit, keeps its lease alive
//! from a background task, runs the unit's trials with `exec::run_trial` and stores each one in
//! its own transaction, exactly as a local run does; repeats until no unit remains.

use super::claim::{self, Claimed};
use super::QueueError;
use crate::db;
use crate::exec::{self, Execution, StageCache};
use crate::manifest::Experiment;
use crate::measure::Fingerprint;
use crate::plan::{self, ScheduledTrial};
use crate::stage::Services;
use crate::store;
use crate::store::journal;
use crate::store::retry::{self, GaveUp, Progress};
use crate::store::{Kept, TrialSink};
use sqlx::PgPool;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a worker serves and how long it waits for work.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// One run, or every queued run when `None`.
    pub run: Option<String>,
    /// Overrides the lease length stored with the run.
    pub lease_seconds: Option<f64>,
    /// Exit after this long without claiming a unit, even if other workers still hold some.
    pub max_idle: Option<Duration>,
    pub quiet: bool,
    /// Where the journal of finished trials is kept.
    pub results_dir: PathBuf,
    /// How long to retry storing a finished trial in an unreachable database.
    pub db_wait: Duration,
    /// The stock database was named apart from the results database (it must exist).
    pub stock_named: bool,
    /// The results database's URL (journals are written back only into it).
    pub database: String,
}

/// What one worker did, and where its time went.
#[derive(Debug, Clone, Default)]
pub struct WorkerSummary {
    pub worker: String,
    pub units: u32,
    pub trials: u32,
    pub failed_trials: u32,
    /// Trials of a re-claimed unit that an earlier holder had already stored.
    pub already_stored: u32,
    /// Trials another worker stored first (after this one lost its lease); dropped.
    pub duplicates: u32,
    /// Units whose lease this worker lost before completing them.
    pub lost_units: u32,
    pub interrupted: bool,
    /// Running trials (`exec::run_trial`).
    pub run_seconds: f64,
    /// Storing trials (`store::insert_trial`), as a local run does too.
    pub store_seconds: f64,
    /// Claiming, completing and skip look-ups: the queue's own cost, on the worker's path.
    pub claim_seconds: f64,
    /// Lease renewals, done in the background while trials run.
    pub heartbeat_seconds: f64,
}

impl WorkerSummary {
    /// Queue overhead per trial run: claiming plus heartbeating, in milliseconds.
    pub fn overhead_ms_per_trial(&self) -> f64 {
        if self.trials == 0 {
            return 0.0;
        }
        (self.claim_seconds + self.heartbeat_seconds) * 1e3 / f64::from(self.trials)
    }
}

impl fmt::Display for WorkerSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "worker {}: units={} trials={} failed={} already_stored={} duplicates={} lost_units={} \
             run_s={:.3} store_s={:.3} claim_s={:.4} heartbeat_s={:.4} overhead_ms_per_trial={:.3}",
            self.worker,
            self.units,
            self.trials,
            self.failed_trials,
            self.already_stored,
            self.duplicates,
            self.lost_units,
            self.run_seconds,
            self.store_seconds,
            self.claim_seconds,
            self.heartbeat_seconds,
            self.overhead_ms_per_trial()
        )
    }
}

/// A run as a worker needs it: validated manifest, schedule, and the cache of `cache = true`
/// stages (reused across this worker's units of the run).
struct RunState {
    exp: Experiment,
    trials: Vec<ScheduledTrial>,
    seed: u64,
    lease: f64,
    cache: StageCache,
    /// Keeps this worker's finished trials of the run: its journal, then the database.
    sink: TrialSink,
}

/// The worker's identity in leases and trial rows: `host:pid`, plus the Slurm array task when
/// there is one (the host comes first: reports group trials by it).
pub fn worker_id(env: &Fingerprint) -> String {
    let mut id = format!("{}:{}", env.host, std::process::id());
    if let (Ok(job), Ok(task)) = (
        std::env::var("SLURM_ARRAY_JOB_ID"),
        std::env::var("SLURM_ARRAY_TASK_ID"),
    ) {
        id.push_str(&format!(":slurm-{job}_{task}"));
    }
    id
}

/// Serves units until none remain (or the idle limit passes, or `cancel` is set).
pub fn serve(
    rt: &tokio::runtime::Runtime,
    pool: &PgPool,
    db: &db::Db,
    stock_url: String,
    o: &WorkerOptions,
    cancel: &Arc<AtomicBool>,
) -> Result<WorkerSummary, QueueError> {
    let env = Fingerprint::collect(Path::new("."));
    rt.block_on(store::upsert_environment(db, &env))?;
    flush_left_journals(rt, db, o)?;
    let me = worker_id(&env);
    let w = Worker {
        rt,
        pool,
        services: Services::new(stock_url, o.stock_named),
        env,
        me: me.clone(),
        cancel,
        quiet: o.quiet,
        db_wait: o.db_wait,
        database: o.database.clone(),
    };
    let mut runs: HashMap<String, RunState> = HashMap::new();
    let mut sum = WorkerSummary {
        worker: me.clone(),
        ..WorkerSummary::default()
    };
    // Poll for expired leases a few times per lease, so a dead worker's unit moves on soon.
    let lease = match (&o.run, o.lease_seconds) {
        (_, Some(l)) => l,
        (Some(r), None) => rt
            .block_on(claim::queue_run(pool, r))?
            .map_or(super::DEFAULT_LEASE_SECONDS, |q| q.0),
        (None, None) => super::DEFAULT_LEASE_SECONDS,
    };
    let poll = Duration::from_secs_f64((lease / 4.0).clamp(0.1, 1.0));
    let mut idle_since = Instant::now();
    loop {
        if cancel.load(Ordering::SeqCst) {
            sum.interrupted = true;
            break;
        }
        let t = Instant::now();
        let claimed = w.call("claim a unit", || {
            claim::claim(pool, o.run.as_deref(), &me, o.lease_seconds)
        })?;
        sum.claim_seconds += t.elapsed().as_secs_f64();
        let Some(c) = claimed else {
            if drained(&w, o.run.as_deref())? {
                break;
            }
            if o.max_idle.is_some_and(|m| idle_since.elapsed() >= m) {
                if !o.quiet {
                    eprintln!(
                        "worker {me}: idle for {:?}, exiting while other workers hold units",
                        o.max_idle.unwrap_or_default()
                    );
                }
                break;
            }
            std::thread::sleep(poll);
            continue;
        };
        if !runs.contains_key(&c.run_id) {
            match load_run_state(rt, pool, db, &c.run_id, o, &w.env) {
                Ok(state) => {
                    runs.insert(c.run_id.clone(), state);
                }
                Err(e) => {
                    let _ = rt.block_on(claim::release(pool, &c, &me, Some(&e.to_string())));
                    return Err(e);
                }
            }
        }
        let state = runs.get_mut(&c.run_id).expect("inserted above");
        let result = run_unit(&w, &c, state, &mut sum);
        if let Err(e) = result {
            let msg = e.to_string();
            let _ = rt.block_on(claim::release(pool, &c, &me, Some(&msg)));
            return Err(e);
        }
        idle_since = Instant::now();
    }
    // Every trial this worker finished is in the database: the journals have done their work.
    for state in runs.into_values() {
        state.sink.close();
    }
    Ok(sum)
}

/// Stores the journals a worker of this folder left behind (its database was unreachable),
/// for the run it serves or, with `--any`, for every run; deletes each once stored. Journals
/// of live workers and of other databases are left alone.
fn flush_left_journals(rt: &tokio::runtime::Runtime, db: &db::Db, o: &WorkerOptions) -> Result<(), QueueError> {
    for path in journal::find(&o.results_dir, o.run.as_deref()) {
        let left = rt.block_on(journal::store_left(db, &path, &o.database))?;
        if matches!(left, journal::Left::Stored { .. }) && !o.quiet {
            eprintln!("{left}");
        }
    }
    Ok(())
}

/// True when no unit remains to wait for; closes runs whose last units failed by lease expiry.
fn drained(w: &Worker<'_>, run: Option<&str>) -> Result<bool, QueueError> {
    let pool = w.pool;
    for id in w.call("fail exhausted units", || claim::fail_exhausted(pool, run))? {
        w.call("close a run", || claim::close_run_if_drained(pool, &id))?;
    }
    if let Some(r) = run {
        // Covers a run whose units were all done before this worker started.
        w.call("close a run", || claim::close_run_if_drained(pool, r))?;
    }
    Ok(w.call("count the remaining units", || claim::remaining(pool, run))? == 0)
}

fn load_run_state(
    rt: &tokio::runtime::Runtime,
    pool: &PgPool,
    db: &db::Db,
    run_id: &str,
    o: &WorkerOptions,
    env: &Fingerprint,
) -> Result<RunState, QueueError> {
    let lease_override = o.lease_seconds;
    let run = rt.block_on(store::Reopened::load(db, run_id))?;
    let target = store::SinkTarget {
        db,
        url: &o.database,
        results_dir: &o.results_dir,
        journal_name: &format!("{}.worker-{}", run.row.id, std::process::id()),
        quiet: o.quiet,
    };
    let sink = run.sink(target, env, None)?;
    let mut exp = run.exp;
    // Every unit reads the dataset versions the run was submitted with.
    exp.data.pinned = run.versions;
    let (lease, _) = rt
        .block_on(claim::queue_run(pool, run_id))?
        .ok_or_else(|| QueueError::NoQueue(run_id.to_owned()))?;
    let trials = plan::schedule(exp.configs.len(), &exp.schedule, run.row.seed);
    // A worker that picks up an interrupted run (`scancel`, then a worker by hand) revives it.
    rt.block_on(claim::reopen_run(pool, run_id))?;
    Ok(RunState {
        exp,
        trials,
        seed: run.row.seed,
        lease: lease_override.unwrap_or(lease),
        cache: StageCache::default(),
        sink,
    })
}

/// Keeps one unit's lease alive until dropped; `lost` is set when the renewal finds that
/// another worker holds the unit now.
struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
    lost: Arc<AtomicBool>,
    busy_micros: Arc<AtomicU64>,
}

impl Heartbeat {
    fn start(rt: &tokio::runtime::Runtime, pool: &PgPool, c: &Claimed, worker: &str, lease: f64) -> Self {
        let lost = Arc::new(AtomicBool::new(false));
        let busy_micros = Arc::new(AtomicU64::new(0));
        let (pool, c, worker) = (pool.clone(), c.clone(), worker.to_owned());
        let (lost2, busy2) = (lost.clone(), busy_micros.clone());
        // Three renewals per lease: one slow or failed renewal does not lose the unit.
        let every = Duration::from_secs_f64((lease / 3.0).max(0.05));
        let task = rt.spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                tick.tick().await;
                let t = Instant::now();
                let held = claim::renew(&pool, &c, &worker, lease).await;
                busy2.fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                match held {
                    Ok(true) => {}
                    Ok(false) => {
                        lost2.store(true, Ordering::SeqCst);
                        return;
                    }
                    Err(e) => tracing::warn!("lease renewal of unit {} failed: {e}", c.unit),
                }
            }
        });
        Self {
            task,
            lost,
            busy_micros,
        }
    }

    fn stop(self) -> f64 {
        self.task.abort();
        self.busy_micros.load(Ordering::Relaxed) as f64 / 1e6
    }
}

/// What stays the same for every unit one worker runs.
struct Worker<'a> {
    rt: &'a tokio::runtime::Runtime,
    pool: &'a PgPool,
    services: Services,
    env: Fingerprint,
    me: String,
    cancel: &'a AtomicBool,
    quiet: bool,
    db_wait: Duration,
    /// The results database's URL, for redacting its password from errors.
    database: String,
}

impl Worker<'_> {
    /// Runs one queue statement, retrying while the database is unreachable (a restart, a
    /// network blip), for up to `db_wait`. Other errors return at once.
    fn call<T, Fut>(&self, what: &str, f: impl FnMut() -> Fut) -> Result<T, QueueError>
    where
        Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
    {
        let told = |p: Progress<'_>| match p {
            _ if self.quiet => {}
            Progress::Failing(e) => eprintln!("worker {}: cannot {what} ({e}); retrying", self.me),
            Progress::Answers => eprintln!("worker {}: the database answers again", self.me),
        };
        retry::retry(&self.database, self.db_wait, store::is_unreachable, told, f).map_err(|r| match r {
            GaveUp::Fatal(e) => e.into(),
            GaveUp::Waited(error) => QueueError::Unreachable {
                what: what.to_owned(),
                wait_seconds: self.db_wait.as_secs_f64(),
                error,
            },
        })
    }
}

fn run_unit(w: &Worker<'_>, c: &Claimed, state: &mut RunState, sum: &mut WorkerSummary) -> Result<(), QueueError> {
    let Worker {
        rt,
        pool,
        cancel,
        quiet,
        ..
    } = *w;
    let me = w.me.as_str();
    let heartbeat = Heartbeat::start(rt, pool, c, me, state.lease);
    let result = run_unit_trials(w, c, state, sum, &heartbeat.lost);
    let lost = heartbeat.lost.load(Ordering::SeqCst);
    sum.heartbeat_seconds += heartbeat.stop();
    result?;
    if cancel.load(Ordering::SeqCst) {
        // Back to the queue at once: the next worker need not wait for the lease to expire.
        w.call("release a unit", || claim::release(pool, c, me, None))?;
        sum.interrupted = true;
        return Ok(());
    }
    let t = Instant::now();
    let completed = !lost && w.call("complete a unit", || claim::complete(pool, c, me))?;
    if completed {
        sum.units += 1;
        if let Some(status) = w.call("close a run", || claim::close_run_if_drained(pool, &c.run_id))? {
            if !quiet {
                eprintln!("run {}: last unit done, run {status}", c.run_id);
            }
        }
    } else {
        sum.lost_units += 1;
        if !quiet {
            eprintln!("worker {me}: lost the lease of unit {} of run {}", c.unit, c.run_id);
        }
    }
    sum.claim_seconds += t.elapsed().as_secs_f64();
    Ok(())
}

fn run_unit_trials(
    w: &Worker<'_>,
    c: &Claimed,
    state: &mut RunState,
    sum: &mut WorkerSummary,
    lost: &AtomicBool,
) -> Result<(), QueueError> {
    let Worker {
        pool, cancel, quiet, ..
    } = *w;
    let (me, env, services) = (w.me.as_str(), &w.env, &w.services);
    // Only a re-claimed unit can have stored trials: skip the look-up on the first claim.
    let skip: HashSet<u32> = if c.attempts > 1 {
        let t = Instant::now();
        let s = w.call("read a unit's stored trials", || {
            claim::stored_in_unit(pool, &c.run_id, c.unit)
        })?;
        sum.claim_seconds += t.elapsed().as_secs_f64();
        s.into_iter().collect()
    } else {
        HashSet::new()
    };
    let spec = Execution {
        run_id: &c.run_id,
        exp: &state.exp,
        trials: &state.trials,
        seed: state.seed,
        skip: &skip,
        env,
        worker: me.to_owned(),
    };
    let unit_trials = state.trials.iter().filter(|t| t.block == c.unit);
    for trial in unit_trials {
        if skip.contains(&trial.index) {
            sum.already_stored += 1;
            continue;
        }
        if cancel.load(Ordering::SeqCst) || lost.load(Ordering::SeqCst) {
            return Ok(());
        }
        let t = Instant::now();
        let record = exec::run_trial(&spec, trial, services, cancel, &mut state.cache, &mut [])
            .map_err(|e| QueueError::Exec(e.to_string()))?;
        sum.run_seconds += t.elapsed().as_secs_f64();
        let Some(record) = record else {
            return Ok(()); // cancelled mid-trial: nothing of it is kept
        };
        if !record.ok && stopped_by_cancel(&record, cancel) {
            return Ok(());
        }
        let t = Instant::now();
        // On disk before the database is asked: a finished unit is not lost when its store fails.
        let kept = state
            .sink
            .keep_now(&record, w.db_wait)
            .map_err(|u| QueueError::Unstored {
                run: u.run_id,
                journal: u.journal,
                error: u.error,
            })?;
        match kept {
            Kept::Stored => {
                sum.trials += 1;
                if !record.ok {
                    sum.failed_trials += 1;
                    if !quiet {
                        let text = crate::exec::failure_text(record.error.as_deref().unwrap_or_default());
                        eprintln!("trial {} ({}) failed: {text}", record.index, record.config);
                    }
                }
            }
            // Unique keys: a trial is stored once. Another worker that took over this unit
            // after our lease lapsed stored it first; its result stands.
            Kept::AlreadyHeld => sum.duplicates += 1,
        }
        sum.store_seconds += t.elapsed().as_secs_f64();
    }
    if !quiet {
        eprintln!(
            "worker {me}: unit {} of run {} done (attempt {})",
            c.unit, c.run_id, c.attempts
        );
    }
    Ok(())
}

/// `scancel` signals every process of the task, the stage's program too: it may die of the
/// signal a moment before the worker's handler sets the cancel flag. Such a failure is the
/// cancellation, not a result, so it is dropped like any cancelled trial (and re-run later).
fn stopped_by_cancel(record: &crate::record::TrialRecord, cancel: &AtomicBool) -> bool {
    if cancel.load(Ordering::SeqCst) {
        return true;
    }
    if record.error.as_deref().is_some_and(|e| e.contains("killed by signal")) {
        std::thread::sleep(Duration::from_millis(100));
        return cancel.load(Ordering::SeqCst);
    }
    false
}
