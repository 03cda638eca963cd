//! The worker loop (queue -> **worker** -> exec -> store): claims a unit, keeps its lease alive
//! from a background task, runs the unit's trials through the executor's trial loop
//! (`exec::execute_with`, the loop of a local run, with its events and first-failure stop) and
//! keeps each finished trial at once, as a local run does; repeats until no unit remains.

use super::claim::{self, Claimed};
use super::QueueError;
use crate::db;
use crate::exec::{self, ExecError, ExecSummary, Execution, LoopHooks, Outcome, Reporter, RunEvent, StageCache};
use crate::manifest::Experiment;
use crate::measure::Fingerprint;
use crate::plan::{self, ScheduledTrial};
use crate::stage::Services;
use crate::store;
use crate::store::journal;
use crate::store::retry::{self, GaveUp, Progress};
use crate::store::{Kept, TrialSink, Unstored};
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
    /// Running trials (the executor's loop, storing left out).
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
///
/// A unit whose trials stop on an error (the first trial of every config failed alike) is
/// failed at once with that error, as `measured run` records such a run stopped: running it
/// again would only measure the failure again. A worker that itself stops on an error (a
/// finished trial it cannot store, a run it cannot open, a database that does not answer)
/// gives its unit back with the error `measured run` would record, its causes on one line and
/// the databases' passwords removed, and returns the error: the unit is queued again for
/// another worker, or failed once it has used its attempts (`measured status` shows the error).
/// Either way the run's own status is left to the queue: it stays running while units remain,
/// and is failed when the last one ends with a failed unit among them; a worker never records
/// a run that other workers still serve as stopped.
pub fn serve(
    pool: &PgPool,
    db: &db::Db,
    stock_url: String,
    o: &WorkerOptions,
    cancel: &Arc<AtomicBool>,
) -> Result<WorkerSummary, QueueError> {
    let env = Fingerprint::collect(Path::new("."));
    db::wait(store::upsert_environment(db, &env))?;
    flush_left_journals(db, o)?;
    let me = worker_id(&env);
    let w = Worker {
        pool,
        services: Services::new(stock_url.clone(), o.stock_named),
        stock_url,
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
        (Some(r), None) => db::wait(claim::queue_run(pool, r))?.map_or(super::DEFAULT_LEASE_SECONDS, |q| q.0),
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
            match load_run_state(pool, db, &c.run_id, o, &w.env) {
                Ok(state) => {
                    runs.insert(c.run_id.clone(), state);
                }
                Err(e) => return Err(w.give_back(&c, e)),
            }
        }
        let state = runs.get_mut(&c.run_id).expect("inserted above");
        if let Err(e) = run_unit(&w, &c, state, &mut sum) {
            return Err(w.give_back(&c, e));
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
fn flush_left_journals(db: &db::Db, o: &WorkerOptions) -> Result<(), QueueError> {
    for path in journal::find(&o.results_dir, o.run.as_deref()) {
        let left = db::wait(journal::store_left(db, &path, &o.database))?;
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
    pool: &PgPool,
    db: &db::Db,
    run_id: &str,
    o: &WorkerOptions,
    env: &Fingerprint,
) -> Result<RunState, QueueError> {
    let lease_override = o.lease_seconds;
    let run = db::wait(store::Reopened::load(db, run_id))?;
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
    let (lease, _) = db::wait(claim::queue_run(pool, run_id))?.ok_or_else(|| QueueError::NoQueue(run_id.to_owned()))?;
    let trials = plan::schedule(exp.configs.len(), &exp.schedule, run.row.seed);
    // A worker that picks up an interrupted run (`scancel`, then a worker by hand) revives it.
    db::wait(claim::reopen_run(pool, run_id))?;
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
    fn start(pool: &PgPool, c: &Claimed, worker: &str, lease: f64) -> Self {
        let lost = Arc::new(AtomicBool::new(false));
        let busy_micros = Arc::new(AtomicU64::new(0));
        let (pool, c, worker) = (pool.clone(), c.clone(), worker.to_owned());
        let (lost2, busy2) = (lost.clone(), busy_micros.clone());
        // Three renewals per lease: one slow or failed renewal does not lose the unit.
        let every = Duration::from_secs_f64((lease / 3.0).max(0.05));
        let task = db::spawn(async move {
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
    pool: &'a PgPool,
    services: Services,
    /// The stock database's URL, for redacting its password from errors.
    stock_url: String,
    env: Fingerprint,
    me: String,
    cancel: &'a AtomicBool,
    quiet: bool,
    db_wait: Duration,
    /// The results database's URL, for redacting its password from errors.
    database: String,
}

impl Worker<'_> {
    /// Gives unit `c` back after this worker stopped on `e`, with the error's text as `measured
    /// run` records it (see [`serve`]); returns `e`. Should the database not take it, the unit
    /// is claimed again once its lease expires.
    fn give_back(&self, c: &Claimed, e: QueueError) -> QueueError {
        let text = crate::printable::error_chain(&e);
        let text = db::redact_text(&db::redact_text(&text, &self.database), &self.stock_url);
        let _ = db::wait(claim::release(self.pool, c, &self.me, Some(&text)));
        e
    }

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

/// Runs claimed unit `c` while a heartbeat keeps its lease, then completes it, fails it (its
/// trials stopped on an error), gives it back (cancelled) or leaves it to its new holder.
fn run_unit(w: &Worker<'_>, c: &Claimed, state: &mut RunState, sum: &mut WorkerSummary) -> Result<(), QueueError> {
    let Worker {
        pool, cancel, quiet, ..
    } = *w;
    let me = w.me.as_str();
    let heartbeat = Heartbeat::start(pool, c, me, state.lease);
    let result = unit_loop(w, c, state, sum, &heartbeat.lost);
    let lost = heartbeat.lost.load(Ordering::SeqCst);
    sum.heartbeat_seconds += heartbeat.stop();
    let ran = result?;
    if cancel.load(Ordering::SeqCst) {
        // Back to the queue at once: the next worker need not wait for the lease to expire.
        w.call("release a unit", || claim::release(pool, c, me, None))?;
        sum.interrupted = true;
        return Ok(());
    }
    let t = Instant::now();
    let ended = match (lost, &ran.stopped) {
        (true, _) => false,
        (false, Some(error)) => {
            if !quiet {
                eprintln!(
                    "worker {me}: unit {} of run {} stopped: the first trial of every config failed with: {}",
                    c.unit,
                    c.run_id,
                    exec::failure_text(error)
                );
            }
            w.call("fail a unit", || claim::fail(pool, c, me, error))?;
            true
        }
        (false, None) => {
            let completed = w.call("complete a unit", || claim::complete(pool, c, me))?;
            sum.units += u32::from(completed);
            completed
        }
    };
    if ended {
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

/// Runs the trials of unit `c` not stored yet through the executor's loop, keeping each at
/// once; the loop ends early when `cancel` is set, when `lost` is (the lease went to another
/// worker), or when the first trial of every config failed alike.
fn unit_loop(
    w: &Worker<'_>,
    c: &Claimed,
    state: &mut RunState,
    sum: &mut WorkerSummary,
    lost: &AtomicBool,
) -> Result<ExecSummary, QueueError> {
    let me = w.me.as_str();
    // Only a re-claimed unit can have stored trials: skip the look-up on the first claim.
    let skip: HashSet<u32> = if c.attempts > 1 {
        let t = Instant::now();
        let s = w.call("read a unit's stored trials", || {
            claim::stored_in_unit(w.pool, &c.run_id, c.unit)
        })?;
        sum.claim_seconds += t.elapsed().as_secs_f64();
        s.into_iter().collect()
    } else {
        HashSet::new()
    };
    let trials: Vec<ScheduledTrial> = state.trials.iter().filter(|t| t.block == c.unit).copied().collect();
    sum.already_stored += trials.iter().filter(|t| skip.contains(&t.index)).count() as u32;
    let spec = Execution {
        run_id: &c.run_id,
        exp: &state.exp,
        trials: &trials,
        seed: state.seed,
        skip: &skip,
        env: &w.env,
        worker: me.to_owned(),
    };
    let hooks = LoopHooks {
        cache: Some(&mut state.cache),
        halt: Some(lost),
        signal_cancels: true,
    };
    let mut keeper = UnitKeeper {
        sink: &mut state.sink,
        db_wait: w.db_wait,
        quiet: w.quiet,
        sum,
        store_seconds: 0.0,
        unstored: None,
    };
    let t = Instant::now();
    let result = exec::execute_with(&spec, &w.services, w.cancel, &mut [&mut keeper], None, hooks);
    let (store_seconds, unstored) = (keeper.store_seconds, keeper.unstored.take());
    sum.run_seconds += t.elapsed().as_secs_f64() - store_seconds;
    let ran = result.map_err(|e| match unstored {
        Some(u) => QueueError::Unstored {
            run: u.run_id,
            journal: u.journal,
            error: u.error,
        },
        None => QueueError::Exec(e.to_string()),
    })?;
    if ran.outcome == Outcome::Finished && !w.quiet {
        eprintln!(
            "worker {me}: unit {} of run {} done (attempt {})",
            c.unit, c.run_id, c.attempts
        );
    }
    Ok(ran)
}

/// A worker's one reporter: keeps each finished trial at once, on disk and then in the
/// database (waiting up to `db_wait` for it), and counts it.
struct UnitKeeper<'a> {
    sink: &'a mut TrialSink,
    db_wait: Duration,
    quiet: bool,
    sum: &'a mut WorkerSummary,
    /// Time spent storing this unit's trials.
    store_seconds: f64,
    /// Why a finished trial could not be stored: the worker's error.
    unstored: Option<Unstored>,
}

impl Reporter for UnitKeeper<'_> {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError> {
        let RunEvent::TrialFinished { trial: record, .. } = event else {
            return Ok(());
        };
        let t = Instant::now();
        // On disk before the database is asked: a finished unit is not lost when its store fails.
        let kept = self.sink.keep_now(record, self.db_wait).map_err(|u| {
            let error = ExecError::Keep(u.error.clone().into());
            self.unstored = Some(u);
            error
        })?;
        match kept {
            Kept::Stored => {
                self.sum.trials += 1;
                if !record.ok {
                    self.sum.failed_trials += 1;
                    if !self.quiet {
                        let text = exec::failure_text(record.error.as_deref().unwrap_or_default());
                        eprintln!("trial {} ({}) failed: {text}", record.index, record.config);
                    }
                }
            }
            // Unique keys: a trial is stored once. Another worker that took over this unit
            // after our lease lapsed stored it first; its result stands.
            Kept::AlreadyHeld => self.sum.duplicates += 1,
        }
        let seconds = t.elapsed().as_secs_f64();
        self.store_seconds += seconds;
        self.sum.store_seconds += seconds;
        Ok(())
    }
}
