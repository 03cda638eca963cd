//! The queue's commands (cli -> **commands::queue** -> queue/store): `submit`, `worker`, `status`.

use super::{cancel_flag, experiment_env, reproduce_command};
use crate::cli::{SubmitArgs, WorkerArgs};
use crate::db;
use crate::db::Db;
use crate::error::{CommandError, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::globals::Globals;
use crate::plan;
use crate::queue::claim;
use crate::queue::slurm::{self, ScriptSpec};
use crate::queue::status as queue_status;
use crate::queue::worker::{self, WorkerOptions};
use crate::queue::{require_postgres, QueueError};
use crate::store;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

impl From<QueueError> for CommandError {
    fn from(e: QueueError) -> Self {
        match e {
            QueueError::NotPostgres(_)
            | QueueError::NoQueue(_)
            | QueueError::SlurmOption(_)
            | QueueError::UnsafeName(_)
            | QueueError::Tampered(_) => CommandError::BadInput(e.to_string()),
            QueueError::Store(s) => s.into(),
            other => CommandError::Runtime(other.into()),
        }
    }
}

/// A finite, positive number of seconds.
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn connect(url: &str) -> Result<(Db, sqlx::PgPool), CommandError> {
    let db = Db::open_with(url, 4)?;
    let pool = match &db {
        Db::Postgres(p) => p.clone(),
        Db::Sqlite(_) => return Err(QueueError::NotPostgres(db::redact_url(url)).into()),
    };
    Ok((db, pool))
}

/// `measured submit`: validates and plans the experiment, creates the run, enqueues one unit per
/// schedule block and, with `--slurm`, submits the worker array. Prints the run id (and job id).
pub fn submit(g: &Globals, o: &SubmitArgs, results_dir: &Path) -> Result<u8, CommandError> {
    require_postgres(&g.database)?;
    // Validate before touching the database: bad input writes nothing.
    let exp = crate::commands::load_manifest(g, &o.file, o.smoke)?;
    refuse_unqueueable(&exp, o)?;
    let seed = o
        .seed
        .or(exp.schedule.seed)
        .unwrap_or_else(|| rand::random::<u64>() >> 11);
    let trials = plan::schedule(exp.configs.len(), &exp.schedule, seed);
    let units = units_of(&trials);
    let run_id = crate::paths::new_run_id();
    let run_dir = absolute(&slurm::run_dir(results_dir, &exp.name, &run_id));
    let slurm = o.slurm_options();
    let script = slurm
        .as_ref()
        .map(|s| worker_script(s, &run_id, &exp.name, &run_dir))
        .transpose()?;
    if o.dry_run {
        let s = script.ok_or_else(|| CommandError::BadInput("--dry-run needs --slurm".into()))?;
        print!("{s}");
        eprintln!(
            "dry run: {} units ({} trials) of run {run_id} would be queued; nothing written, nothing submitted",
            units.len(),
            trials.len()
        );
        return Ok(EXIT_OK);
    }
    let (db, pool) = connect(&g.database)?;
    let identity = prepared_data(g, &exp)?;
    let env = experiment_env(&exp);
    let command = reproduce_command("submit", &exp, seed, g);
    // Workers read stock data from their own --stock-database; the run records the one it was
    // submitted with, which is what its reproduce line names.
    let stock = g.stock_url();
    db::wait(store::insert_run(
        &db,
        &store::NewRun {
            id: &run_id,
            experiment: &exp,
            seed,
            planned_trials: trials.len() as u32,
            env: &env,
            command: &command,
            started_at: chrono::Utc::now(),
            // Workers keep per-unit leases in the queue; the run row has no heartbeat.
            lease_seconds: None,
            stock_database: &stock,
            stock_data: identity.as_ref(),
        },
    ))?;
    db::wait(claim::enqueue(&pool, &run_id, o.lease_seconds, &units)).map_err(QueueError::from)?;
    println!("run: {run_id}");
    if !g.quiet {
        eprintln!(
            "queued {} units ({} trials, seed {seed}) of {} in {}",
            units.len(),
            trials.len(),
            exp.name,
            db::redact_url(&g.database)
        );
    }
    let code = match (slurm, script) {
        (Some(s), Some(text)) => submit_array(g, &pool, &s, &text, &run_id, &run_dir)?,
        _ => {
            if !g.quiet {
                eprintln!("start workers with: measured worker --run {run_id}");
            }
            EXIT_OK
        }
    };
    db.shut();
    Ok(code)
}

/// Prepares the declared data and checks every load stage against it before anything is
/// queued, as for a local run; the versions it found.
fn prepared_data(
    g: &Globals,
    exp: &crate::manifest::Experiment,
) -> Result<Option<crate::market::DataIdentity>, CommandError> {
    let prepared = crate::preflight::prepare(&super::stock_options(g), exp, true, None)?;
    let identity = prepared.as_ref().and_then(|p| p.identity.clone());
    if let Some(p) = prepared {
        p.db.shut();
    }
    Ok(identity)
}

/// The batch script of the worker array that serves run `run_id`.
fn worker_script(
    s: &slurm::SlurmOptions,
    run_id: &str,
    experiment: &str,
    run_dir: &Path,
) -> Result<String, CommandError> {
    let binary = std::env::current_exe().map_err(|e| CommandError::Runtime(e.into()))?;
    let workdir = absolute(Path::new("."));
    let spec = ScriptSpec {
        run_id,
        experiment,
        binary: &binary,
        workdir: &workdir,
        log_dir: run_dir,
    };
    Ok(slurm::script(s, &spec)?)
}

/// Refuses what a queue of workers cannot run: git revisions as variants, a sequential
/// design, a lease that is not positive.
fn refuse_unqueueable(exp: &crate::manifest::Experiment, o: &SubmitArgs) -> Result<(), CommandError> {
    // Workers on other machines would need the checkouts and builds `measured run` makes.
    if let Some(c) = exp.configs.iter().find(|c| c.revision.is_some()) {
        return Err(CommandError::BadInput(format!(
            "variant `{}` names a git revision (`git = ...`), which queued runs cannot check out yet\n\
             hint: run it on one machine with `measured run {}`",
            c.variant,
            o.file.display()
        )));
    }
    // Workers claim blocks from a queue filled up front; nothing there looks at the results
    // between blocks to decide whether more are needed.
    if let Some(plan) = exp.schedule.sequential {
        return Err(CommandError::BadInput(format!(
            "{}: `repetitions = {{ min = {}, max = {} }}` adds blocks until the comparisons are decided, which a \
             queue of workers cannot do: its blocks are all queued when it is submitted\n\
             hint: run it on one machine with `measured run {}`, or submit a fixed count such as `repetitions = {}`",
            o.file.display(),
            plan.min,
            plan.max,
            o.file.display(),
            plan.min.max(8)
        )));
    }
    if !positive(o.lease_seconds) {
        return Err(CommandError::BadInput("--lease-seconds must be positive".into()));
    }
    Ok(())
}

/// One unit per schedule block: `(block, trials in it)`, in block order.
fn units_of(trials: &[plan::ScheduledTrial]) -> Vec<(u32, u32)> {
    let mut units: BTreeMap<u32, u32> = BTreeMap::new();
    for t in trials {
        *units.entry(t.block).or_default() += 1;
    }
    units.into_iter().collect()
}

/// Submits the worker array of run `run_id` to Slurm; a failed submission leaves the run
/// queued for workers started by hand.
fn submit_array(
    g: &Globals,
    pool: &sqlx::PgPool,
    s: &slurm::SlurmOptions,
    text: &str,
    run_id: &str,
    run_dir: &Path,
) -> Result<u8, CommandError> {
    let path = run_dir.join("worker.sbatch");
    Ok(match slurm::submit(&path, text, s.workers, &g.database) {
        Ok(job) => {
            db::wait(claim::set_slurm_job(pool, run_id, &job)).map_err(QueueError::from)?;
            println!("slurm job: {job}");
            if !g.quiet {
                eprintln!(
                    "{} array tasks submitted ({}); follow with `measured status {run_id}`",
                    s.workers,
                    path.display()
                );
            }
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!("the run stays queued: start workers with `measured worker --run {run_id}`");
            EXIT_FAILED
        }
    })
}

/// `measured worker`: claims and runs units until none remain; exit 0 when every trial it ran
/// succeeded, 1 when some failed or the worker hit an error, 130 when interrupted.
pub fn worker(g: &Globals, a: &WorkerArgs, results_dir: &Path) -> Result<u8, CommandError> {
    require_postgres(&g.database)?;
    if a.lease_seconds.is_some_and(|l| !positive(l)) || a.max_idle_seconds.is_some_and(|m| !(m.is_finite() && m >= 0.0))
    {
        return Err(CommandError::BadInput(
            "--lease-seconds must be positive and --max-idle-seconds not negative".into(),
        ));
    }
    let (db, pool) = connect(&g.database)?;
    let run = match &a.run {
        Some(r) => {
            let id = db::wait(store::load_run(&db, r))?.id;
            if db::wait(claim::queue_run(&pool, &id))
                .map_err(QueueError::from)?
                .is_none()
            {
                return Err(QueueError::NoQueue(id).into());
            }
            Some(id)
        }
        None => None,
    };
    let o = WorkerOptions {
        run,
        lease_seconds: a.lease_seconds,
        max_idle: a.max_idle_seconds.map(Duration::from_secs_f64),
        quiet: g.quiet,
        results_dir: results_dir.to_path_buf(),
        db_wait: Duration::from_secs_f64(a.db_wait),
        stock_named: g.stock_database.is_some(),
        database: g.database.clone(),
    };
    let cancel = cancel_flag();
    let result = worker::serve(&pool, &db, g.stock_url(), &o, &cancel);
    db.shut();
    let sum = result.map_err(|e| match e {
        QueueError::Tampered(_) | QueueError::UnsafeName(_) => e.into(),
        e => CommandError::Runtime(anyhow::anyhow!(db::redact_text(&e.to_string(), &g.database))),
    })?;
    eprintln!("{sum}");
    Ok(if sum.interrupted {
        EXIT_INTERRUPTED
    } else if sum.failed_trials > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// `measured status`: the queue state of a submitted run (and its Slurm array).
pub fn status(g: &Globals, run: &str) -> Result<String, CommandError> {
    require_postgres(&g.database)?;
    let (db, pool) = connect(&g.database)?;
    let st = db::wait(queue_status::load(&db, &pool, run, queue_status::ask_squeue));
    db.shut();
    Ok(queue_status::render(&st?))
}
