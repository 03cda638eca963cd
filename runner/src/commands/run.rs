//! `measured run`: executes (or resumes) a run, stores every finished trial, journals what the database could not take, and prints a summary.

use super::looks::{planned_through, SequentialJudge};
use super::{
    cancel_flag, experiment_env, load_with_revs, prepare_revisions, reproduce_command, runtime, stored_run,
    summary_table, templates_dir, RevOptions,
};
use crate::db;
use crate::db::Db;
use crate::error::{CommandError, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::exec::{self, BlockJudgement, ConsoleReporter, JsonReporter, Outcome, Reporter, RunSpec, StoreReporter};
use crate::globals::Globals;
use crate::journal::{self, Journal};
use crate::manifest::{self, Experiment};
use crate::measure::Fingerprint;
use crate::paths::Root;
use crate::plan;
use crate::rundata::StoredRun;
use crate::stage::Services;
use crate::store;
use anyhow::Context;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options of `measured run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub file: Option<PathBuf>,
    pub resume: Option<String>,
    pub seed: Option<u64>,
    pub smoke: bool,
    pub json_events: Option<PathBuf>,
    pub report: bool,
    pub fail_on_regression: bool,
    /// `--results-dir` as given; `None`: `results/` under the project root of the manifest
    /// (of the stored manifest when resuming).
    pub results_dir: Option<PathBuf>,
    /// A `running` run whose heartbeat is older than this is shown as abandoned.
    pub lease_seconds: f64,
    /// At the end of a run, how long to wait for an unreachable results database before
    /// leaving the unstored trials in the journal.
    pub db_wait_seconds: f64,
    /// `--rev`/`--build`: git revisions as the variants.
    pub revs: RevOptions,
    /// Prepare the declared data and check every load stage against it, then stop: no trial
    /// runs and nothing is stored.
    pub preflight_only: bool,
    /// `--data`: the dataset versions to read instead of the declared data.
    pub data: Vec<String>,
}

/// Defaults of `measured run --lease-seconds` and `--db-wait`.
pub const DEFAULT_LEASE_SECONDS: f64 = 60.0;

pub const DEFAULT_DB_WAIT_SECONDS: f64 = 120.0;

fn worker_id(env: &Fingerprint) -> String {
    format!("{}:{}", env.host, std::process::id())
}

/// `measured run`: executes (or resumes) a run, stores it, prints a summary.
pub fn run(g: &Globals, o: &RunOptions) -> Result<u8, CommandError> {
    // Validate before touching any database: bad input writes nothing.
    let mut fresh = match (&o.file, &o.resume) {
        (Some(f), None) => Some(load_with_revs(g, f, o.smoke, &o.revs)?),
        (None, Some(_)) => None,
        (Some(_), Some(_)) => {
            return Err(CommandError::BadInput(
                "give either a manifest or --resume RUN, not both".into(),
            ))
        }
        (None, None) => return Err(CommandError::BadInput("give a manifest to run, or --resume RUN".into())),
    };
    // A named stock database that does not exist is bad input: refuse before a run is stored.
    if let (Some(stock), Some(exp)) = (&g.stock_database, &fresh) {
        if exp.stages.iter().any(|s| s.kind == "load") {
            if let Some(missing) = crate::stage::missing_named_stock(stock) {
                return Err(CommandError::BadInput(missing.to_string()));
            }
        }
    }
    // Checkouts and builds happen before the run is stored: a revision that does not resolve
    // or build leaves nothing behind in the database.
    if let Some(exp) = fresh.as_mut() {
        prepare_revisions(exp, &Default::default(), g.quiet)?;
    }
    let rt = runtime()?;
    // The declared data is made ready and every load stage checked against it before the run
    // is stored: a run that cannot get its data stores nothing and runs no trial.
    let pin = (!o.data.is_empty()).then(|| crate::preflight::Pin::Named(o.data.clone()));
    let prepared = match &fresh {
        Some(exp) => crate::preflight::prepare(g, exp, &rt, true, pin.as_ref())?,
        None => None,
    };
    if o.preflight_only {
        if let Some(p) = prepared {
            rt.block_on(p.db.close());
        }
        println!("preflight: ok: the stock data serves every load stage; nothing was run or stored");
        return Ok(EXIT_OK);
    }
    let db = rt.block_on(Db::connect(&g.database))?;
    let result = run_with(g, o, fresh, prepared, &rt, &db);
    rt.block_on(db.close());
    result
}

// Long because: a run's steps in order (start or resume, execute, store, then say what was stored
// and judged); they share the run's state, and each step is short and commented.
fn run_with(
    g: &Globals,
    o: &RunOptions,
    fresh: Option<Experiment>,
    mut prepared: Option<crate::preflight::Prepared>,
    rt: &tokio::runtime::Runtime,
    db: &Db,
) -> Result<u8, CommandError> {
    let lease = o.lease_seconds;
    let given_results = o.results_dir.as_deref();
    let (exp, run_id, seed, skip, env, journal, results_dir) = match fresh {
        Some(exp) => {
            let results_dir = Root::of_manifest(&exp.path).results_dir(given_results);
            let seed = o
                .seed
                .or(exp.schedule.seed)
                .unwrap_or_else(|| rand::random::<u64>() >> 11);
            let env = experiment_env(&exp);
            let run_id = crate::paths::new_run_id();
            let trials = plan::schedule(exp.configs.len(), &exp.schedule, seed);
            let mut command = reproduce_command("run", &exp, seed, g);
            // The versions it read, so the line reads them again whatever is stored since.
            if let Some(identity) = prepared.as_ref().and_then(|p| p.identity.as_ref()) {
                // Labels are dataset names (letters, digits, `_`, `-`, `.`), `@` and a number,
                // which a shell reads as they are; anything else read from the database is quoted.
                for v in &identity.versions {
                    let plain = v
                        .label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'));
                    command.push_str(" --data ");
                    if plain {
                        command.push_str(&v.label);
                    } else {
                        command.push_str(&shlex::try_quote(&v.label).unwrap_or_default());
                    }
                }
            }
            let rev_words = o.revs.words();
            if !rev_words.is_empty() {
                command.push(' ');
                // Quoting fails only on a NUL byte, which no command-line argument holds.
                command.push_str(&shlex::try_join(rev_words.iter().map(String::as_str)).unwrap_or_default());
            }
            let stock = g.stock_url();
            let new = store::NewRun {
                id: &run_id,
                experiment: &exp,
                seed,
                planned_trials: trials.len() as u32,
                env: &env,
                command: &command,
                started_at: chrono::Utc::now(),
                lease_seconds: Some(lease),
                stock_database: &stock,
                stock_data: prepared.as_ref().and_then(|p| p.identity.as_ref()),
            };
            let mut header = new.header();
            header.database = db::database_identity(&g.database);
            let journal = Journal::create(&Journal::path_for(&results_dir, &exp.name, &run_id), &header)
                .map_err(|e| CommandError::Runtime(e.into()))?;
            rt.block_on(store::insert_run(db, &new))?;
            (exp, run_id, seed, HashSet::new(), env, journal, results_dir)
        }
        None => {
            let id = o.resume.as_deref().unwrap_or_default();
            // Trials a run could not store before it ended wait in its journal: write them
            // first (this also gives back a run row that a replaced database lost). Before the
            // run is loaded its manifest is unknown: look under this directory's project.
            if id != "latest" {
                let here = Root::of_cwd().results_dir(given_results);
                flush_journals(rt, db, &here, id, &g.database, g.quiet)?;
            }
            let row = rt.block_on(store::load_run(db, id))?;
            row.verify_manifest()?;
            // The run's results belong to the project of its manifest, as when it started.
            let results_dir = Root::of_manifest(Path::new(&row.manifest_path)).results_dir(given_results);
            flush_journals(rt, db, &results_dir, &row.id, &g.database, g.quiet)?;
            let mut exp = manifest::parse_str(Path::new(&row.manifest_path), &row.manifest_text, row.smoke)?;
            if exp.has_revisions() {
                // The rest of the trials run the commits the first ones ran, wherever the
                // branches point now.
                let stored = rt.block_on(store::load_trials(db, &row.id))?;
                let pinned = crate::gitrev::pinned(&exp, &stored);
                prepare_revisions(&mut exp, &pinned, g.quiet)?;
            }
            // The rest of the trials read the dataset versions the first ones read; a run stored
            // before versions reads the declared data (prepared again if it is gone).
            let stored = crate::market::DataIdentity::from_json(row.stock_data.as_deref())
                .map(|d| d.versions)
                .filter(|v| !v.is_empty())
                .map(crate::preflight::Pin::Stored);
            prepared = crate::preflight::prepare(g, &exp, rt, false, stored.as_ref())?;
            let env = experiment_env(&exp);
            let skip: HashSet<u32> = rt
                .block_on(store::stored_trial_indices(db, &row.id))?
                .into_iter()
                .collect();
            rt.block_on(store::set_run_status(db, &row.id, "running", None))?;
            rt.block_on(store::beat(db, &row.id, chrono::Utc::now(), Some(lease)))?;
            let header = store::RunHeader::of_stored(&row, &env, Some(lease), &g.database);
            crate::paths::check_stored(&results_dir, &row.experiment, &row.id)?;
            let journal = Journal::create(&Journal::path_for(&results_dir, &row.experiment, &row.id), &header)
                .map_err(|e| CommandError::Runtime(e.into()))?;
            (exp, row.id, row.seed, skip, env, journal, results_dir)
        }
    };
    let trials = plan::schedule(exp.configs.len(), &exp.schedule, seed);
    let mut services = Services::new(rt.handle().clone(), g.stock_url(), g.stock_database.is_some());
    if let Some(p) = prepared {
        services = services.prepared(p.db, &exp.data, p.view);
    }
    let cancel = cancel_flag();
    let spec = RunSpec {
        run_id: &run_id,
        exp: &exp,
        trials: &trials,
        seed,
        skip: &skip,
        env: &env,
        worker: worker_id(&env),
    };
    if !g.quiet {
        eprintln!(
            "run {run_id}: {} ({} configs, {}{} trials, seed {seed}) -> {}",
            exp.name,
            exp.configs.len(),
            if exp.schedule.sequential.is_some() {
                "up to "
            } else {
                ""
            },
            trials.len(),
            db::redact_url(&g.database)
        );
    }
    let mut console = ConsoleReporter::new(g.quiet);
    let mut storer = StoreReporter::new(
        db.clone(),
        &g.database,
        rt.handle().clone(),
        &env,
        &run_id,
        journal,
        Some(Duration::from_secs_f64(lease)),
        g.quiet,
    );
    let mut json = o
        .json_events
        .as_deref()
        .map(JsonReporter::create)
        .transpose()
        .context("cannot create the events file")?;
    let mut judge = sequential_judge(rt, db, g, &run_id, &env, skip.is_empty())?;
    let summary = {
        let mut reporters: Vec<&mut dyn Reporter> = vec![&mut console, &mut storer];
        if let Some(j) = json.as_mut() {
            reporters.push(j);
        }
        match judge.as_ref().map(SequentialJudge::before_resuming) {
            Some(BlockJudgement {
                blocks,
                stop: Some(reason),
                ..
            }) if !skip.is_empty() => exec::ExecSummary {
                outcome: Outcome::Finished,
                ran: 0,
                failed: 0,
                stopped: None,
                ended_early: Some((blocks, reason)),
            },
            _ => exec::execute(
                &spec,
                &services,
                &cancel,
                &mut reporters,
                judge.as_mut().map(|j| j as &mut dyn exec::BlockJudge),
            )
            .map_err(|e| CommandError::Runtime(e.into()))?,
        }
    };
    // A sequential run that ended early planned the trials of the blocks it ran.
    let planned = summary
        .ended_early
        .as_ref()
        .map_or(trials.len() as u32, |(blocks, _)| planned_through(&trials, *blocks));
    let settled = summary.ended_early.is_some().then_some(planned);
    let db = match storer.finish(
        summary.outcome.as_str(),
        settled,
        Duration::from_secs_f64(o.db_wait_seconds),
    ) {
        Ok(db) => db,
        Err(u) => {
            // `--resume` started here opens the database a plain resume finds: name any other.
            let database = (db::is_sqlite_url(&g.database) && g.database != Root::of_cwd().database(None))
                .then_some(g.database.as_str());
            eprintln!("{}", unstored_message(&u, given_results, database));
            return Ok(EXIT_FAILED);
        }
    };
    let db = &db;
    let stored = rt.block_on(store::load_trials(db, &run_id))?;
    println!("{}", summary_table(&exp, &stored));
    let failed = stored.iter().filter(|t| !t.ok).count();
    let n_stored = stored.len();
    let status = final_status(summary.outcome, stored.len(), planned as usize);
    if status != summary.outcome.as_str() {
        rt.block_on(store::set_run_status(db, &run_id, status, None))?;
    }
    println!(
        "run {run_id} {status}: {} of {planned} trials stored, {failed} failed",
        stored.len(),
    );
    if let Some((blocks, reason)) = &summary.ended_early {
        println!("run {run_id} ended after {blocks} blocks: {reason}");
    }
    for warning in crate::rundata::machine_load(&stored).warnings() {
        eprintln!("warning: {warning}");
    }
    if status == INCOMPLETE {
        eprintln!(
            "error: run {run_id} ran every trial but the database holds only {} of {}; \
             the missing ones run again with: measured run --resume {run_id}",
            stored.len(),
            planned
        );
        return Ok(EXIT_FAILED);
    }
    // A name in [compare] that no trial produced is a typo, not an inconclusive result.
    let unproduced = crate::produced::unproduced(&exp, &stored);
    for u in &unproduced {
        eprintln!("error: {u}");
    }
    let mut regressed = false;
    if o.report {
        let row = rt.block_on(store::load_run(db, &run_id))?;
        let run = stored_run(row, stored)?;
        let written = write_run_report(rt, db, &g.database, &run, &results_dir)?;
        for line in &written.report.summary {
            println!("  {line}");
        }
        if let Some(seq) = &written.report.method.sequential {
            println!("  {}", seq.stop_sentence());
        }
        for warning in written.report.stability.iter().flat_map(|s| s.warnings()) {
            eprintln!("warning: {warning}");
        }
        println!("report: {}", written.paths.markdown.display());
        regressed = crate::report::regression(&written.report);
    }
    if summary.outcome == Outcome::Interrupted {
        eprintln!("resume with: measured run --resume {run_id}");
        return Ok(EXIT_INTERRUPTED);
    }
    if let Some(error) = &summary.stopped {
        eprintln!("{}", stopped_message(&run_id, error, n_stored, planned as usize));
        return Ok(EXIT_FAILED);
    }
    if o.fail_on_regression && regressed {
        eprintln!(
            "regression: the primary metric got slower, or a guard failed or could not be evaluated (--fail-on-regression)"
        );
        return Ok(EXIT_FAILED);
    }
    Ok(if failed > 0 || !unproduced.is_empty() {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// The judge of a sequential run (`None` for a fixed design): its stored row, spec and, for
/// a resumed run, the trials already stored, read before any trial runs.
fn sequential_judge(
    rt: &tokio::runtime::Runtime,
    db: &Db,
    g: &Globals,
    run_id: &str,
    env: &Fingerprint,
    fresh: bool,
) -> Result<Option<SequentialJudge>, CommandError> {
    let row = rt.block_on(store::load_run(db, run_id))?;
    let stored = if fresh {
        Vec::new()
    } else {
        rt.block_on(store::load_trials(db, run_id))?
    };
    let spec = stored_run(row.clone(), Vec::new())?.spec;
    Ok(SequentialJudge::of(row, spec, env.clone(), &g.database, stored))
}

/// Why a run stopped early, and what to do.
pub fn stopped_message(run_id: &str, error: &str, stored: usize, planned: usize) -> String {
    format!(
        "error: run {run_id} stopped: the first trial of every config failed with the same error, so the \
         other trials would only repeat it ({stored} of {planned} trials ran and are stored):\n  {}\n\
         hint: fix the cause and run again; `keep_going = true` in [schedule] runs every trial anyway",
        crate::exec::failure_text(error).trim_end().replace('\n', "\n  ")
    )
}

/// The status of a run that ran to its end but whose database holds fewer trials than
/// planned: it must never read `finished`.
pub const INCOMPLETE: &str = "incomplete";

/// The status a run ends with, from how execution ended and what the database holds.
pub fn final_status(outcome: Outcome, stored: usize, planned: usize) -> &'static str {
    match outcome {
        Outcome::Finished if stored < planned => INCOMPLETE,
        other => other.as_str(),
    }
}

/// The command that stores what a journal holds, with the `--results-dir` the run was given
/// and the SQLite `--database` a resume would not find by default.
fn resume_command(run_id: &str, results_dir: Option<&Path>, database: Option<&str>) -> String {
    let mut cmd = format!("measured run --resume {run_id}");
    if let Some(dir) = results_dir {
        let _ = write!(cmd, " --results-dir {}", dir.display());
    }
    if let Some(db) = database {
        let _ = write!(cmd, " --database {}", db::redact_url(db));
    }
    cmd
}

/// What to tell the user when a run ended with trials only in its journal.
pub fn unstored_message(u: &crate::exec::Unstored, results_dir: Option<&Path>, database: Option<&str>) -> String {
    format!(
        "error: run {}: the results database {} did not take the finished trials before the run ended ({}).\n\
         Nothing is lost: all {} finished trials are kept in {}.\n\
         hint: when the database answers again, store them (and run any trials still missing) with:\n  {}",
        u.run_id,
        u.url,
        u.error,
        u.trials,
        u.journal.display(),
        resume_command(&u.run_id, results_dir, database)
    )
}

/// Writes the journals of run `run` (an id or prefix) found under `results_dir` into `db`,
/// then deletes each one the database now holds whole. A journal still in use (the run is
/// running) or of another database stops the resume, and is kept.
fn flush_journals(
    rt: &tokio::runtime::Runtime,
    db: &Db,
    results_dir: &Path,
    run: &str,
    url: &str,
    quiet: bool,
) -> Result<(), CommandError> {
    for path in journal::find(results_dir, Some(run)) {
        let left = rt.block_on(journal::store_left(db, &path, url)).map_err(|e| {
            CommandError::Runtime(anyhow::anyhow!(
                "cannot store the journal {} in {}: {} (the journal is kept)",
                path.display(),
                db::redact_url(url),
                db::redact_text(&e.to_string(), url)
            ))
        })?;
        match left {
            journal::Left::Stored { .. } if !quiet => eprintln!("{left}"),
            journal::Left::Stored { .. } | journal::Left::Gone => {}
            journal::Left::InUse(path) => {
                return Err(CommandError::BadInput(format!(
                    "run {run} is still running in another process (it holds the journal {}); \
                     wait for it to end, or stop it, before resuming",
                    path.display()
                )))
            }
            journal::Left::Foreign { .. } => {
                return Err(CommandError::BadInput(format!(
                    "{left}, not {}\nhint: resume it with --database pointing there (the journal is kept)",
                    db::redact_url(&db::database_identity(url))
                )))
            }
        }
    }
    Ok(())
}

/// Renders the report of a run stored in `db` (reached at `database`) into its results folder.
pub(super) fn write_run_report(
    rt: &tokio::runtime::Runtime,
    db: &Db,
    database: &str,
    stored: &StoredRun,
    results_dir: &Path,
) -> Result<crate::report::WrittenReport, CommandError> {
    let data = rt.block_on(stored.data_with_hosts(db, database))?;
    let out = crate::paths::run_dir(results_dir, &stored.row.experiment, &stored.row.id)?;
    Ok(crate::report::write_report(&data, &out, templates_dir()).context("cannot write the report")?)
}
