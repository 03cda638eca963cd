//! `measured run`: executes (or resumes) a run, stores every finished trial, journals what the database could not take, and prints a summary.

use super::looks::{planned_through, primary_error, PrimaryCheck, SequentialJudge};
use super::session::{Keeper, RunSession};
use super::{cancel_flag, load_with_revs, prepare_revisions, stored_run, summary_table, templates_dir};
use crate::cli::RunArgs;
use crate::db;
use crate::db::Db;
use crate::error::{CommandError, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::exec::{self, BlockJudgement, ConsoleReporter, ExecSummary, JsonReporter, Outcome, Reporter};
use crate::gitrev::Builds;
use crate::globals::Globals;
use crate::manifest::Experiment;
use crate::measure::Fingerprint;
use crate::paths::Root;
use crate::store;
use crate::store::{RunStatus, StoredRun};
use anyhow::Context;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `measured run`: executes (or resumes) a run, stores it, prints a summary.
pub fn run(g: &Globals, o: &RunArgs) -> Result<u8, CommandError> {
    // Validate before touching any database: bad input writes nothing.
    let fresh = match (&o.file, &o.resume) {
        (Some(f), None) => Some(load_with_revs(g, f, o.smoke, &o.revs)?),
        (None, Some(_)) => None,
        (Some(_), Some(_)) => {
            return Err(CommandError::BadInput(
                "give either a manifest or --resume RUN, not both".into(),
            ))
        }
        (None, None) => return Err(CommandError::BadInput("give a manifest to run, or --resume RUN".into())),
    };
    Ok(run_experiment(g, o, fresh, Voice::Full, &mut Builds::default())?.code)
}

/// How much a run says on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Voice {
    /// `measured run`: the summary table, what was stored, the report's verdicts and path.
    Full,
    /// A command that says what it found in its own words (`ab`, `bisect`): warnings and
    /// errors only.
    Brief,
}

/// What a run came to.
pub(super) struct Concluded {
    /// The exit code `measured run` would give.
    pub code: u8,
    /// The run's id, once one was stored.
    pub run_id: Option<String>,
    /// Its report, when one was written.
    pub report: Option<crate::report::WrittenReport>,
    /// The trials the database holds.
    pub stored: Vec<crate::record::TrialRecord>,
}

impl Concluded {
    fn code(code: u8) -> Concluded {
        Concluded {
            code,
            run_id: None,
            report: None,
            stored: Vec::new(),
        }
    }
}

/// Runs a validated experiment (`fresh`), or resumes the run `o.resume` names: its revisions
/// built (each once per `builds`), its data prepared, its trials run and stored, its report
/// written.
pub(super) fn run_experiment(
    g: &Globals,
    o: &RunArgs,
    mut fresh: Option<Experiment>,
    voice: Voice,
    builds: &mut Builds,
) -> Result<Concluded, CommandError> {
    // A named stock database that does not exist is bad input: refuse before a run is stored.
    if let (Some(stock), Some(exp)) = (&g.stock_database, &fresh) {
        if exp.stages.iter().any(|s| s.kind == crate::kinds::StageKind::Load) {
            if let Some(missing) = crate::stage::missing_named_stock(stock) {
                return Err(CommandError::BadInput(missing.to_string()));
            }
        }
    }
    // Checkouts and builds happen before the run is stored: a revision that does not resolve
    // or build leaves nothing behind in the database.
    if let Some(exp) = fresh.as_mut() {
        prepare_revisions(exp, &Default::default(), g.quiet, builds)?;
    }
    // The declared data is made ready and every load stage checked against it before the run
    // is stored: a run that cannot get its data stores nothing and runs no trial.
    let pin = (!o.data.is_empty()).then(|| crate::preflight::Pin::Named(o.data.clone()));
    let prepared = match &fresh {
        Some(exp) => crate::preflight::prepare(&super::stock_options(g), exp, true, pin.as_ref())?,
        None => None,
    };
    if o.preflight_only {
        if let Some(p) = prepared {
            p.db.shut();
        }
        println!("preflight: ok: the stock data serves every load stage; nothing was run or stored");
        return Ok(Concluded::code(EXIT_OK));
    }
    let db = Db::open(&g.database)?;
    let result = run_with(g, o, fresh, prepared, &db, voice);
    db.shut();
    result
}

/// A run from its session to its exit code: execute, store, then say what was stored and judged.
fn run_with(
    g: &Globals,
    o: &RunArgs,
    fresh: Option<Experiment>,
    prepared: Option<crate::preflight::Prepared>,
    db: &Db,
    voice: Voice,
) -> Result<Concluded, CommandError> {
    let mut session = match fresh {
        Some(exp) => RunSession::start(g, o, exp, prepared, db)?,
        None => RunSession::resume(g, o, db)?,
    };
    session.announce(g);
    let (mut summary, primary_missing) = match execute(g, o, db, &mut session) {
        Ok(executed) => executed,
        Err(e) => return Err(session.stop_on(g, db, e)),
    };
    if primary_missing.is_some() {
        // Not decided: stopped for a metric the manifest names that nothing produces.
        summary.outcome = exec::Outcome::Stopped;
    }
    // A sequential run that ended early planned the trials of the blocks it ran.
    let trials = &session.trials;
    let planned = summary
        .ended_early
        .as_ref()
        .map_or(trials.len() as u32, |(blocks, _)| planned_through(trials, *blocks));
    let settled = summary.ended_early.is_some().then_some(planned);
    let RunSession {
        exp,
        run_id,
        results_dir,
        sink,
        ..
    } = session;
    let wait = Duration::from_secs_f64(o.db_wait);
    let db = match sink.finish(&summary.outcome.status(), settled, wait) {
        Ok(db) => db,
        Err(u) => {
            // `--resume` started here opens the database a plain resume finds: name any other.
            let database = (db::is_sqlite_url(&g.database) && g.database != Root::of_cwd().database(None))
                .then_some(g.database.as_str());
            eprintln!("{}", unstored_message(&u, o.results_dir.as_deref(), database));
            let mut failed = Concluded::code(EXIT_FAILED);
            failed.run_id = Some(run_id);
            return Ok(failed);
        }
    };
    let ended = Ended {
        exp,
        run_id,
        results_dir,
        summary,
        planned: planned as usize,
        primary_missing,
    };
    conclude(g, o, &db, &ended, voice)
}

/// Runs the session's trials with the console, the trial sink and any events file listening,
/// and a sequential run's judge deciding after each block; with it the primary metric whose
/// absence after the first block stops the run (returned when it did).
fn execute(
    g: &Globals,
    o: &RunArgs,
    db: &Db,
    session: &mut RunSession,
) -> Result<(ExecSummary, Option<crate::produced::Unproduced>), CommandError> {
    let mut judge = sequential_judge(db, g, &session.run_id, &session.env, session.skip.is_empty())?;
    // A resumed sequential run may have been decided by the trials stored already.
    if !session.skip.is_empty() {
        if let Some(BlockJudgement {
            blocks,
            stop: Some(reason),
            ..
        }) = judge.as_ref().map(SequentialJudge::before_resuming)
        {
            let mut decided = ExecSummary::new(Outcome::Finished);
            decided.ended_early = Some((blocks, reason));
            return Ok((decided, None));
        }
    }
    let mut console = ConsoleReporter::new(g.quiet);
    let mut json = o
        .json_events
        .as_deref()
        .map(JsonReporter::create)
        .transpose()
        .context("cannot create the events file")?;
    let fresh = session.skip.is_empty();
    let (execution, services, sink) = session.parts();
    let mut keeper = Keeper(sink);
    let mut reporters: Vec<&mut dyn Reporter> = vec![&mut console, &mut keeper];
    if let Some(j) = json.as_mut() {
        reporters.push(j);
    }
    let inner = judge.as_mut().map(|j| j as &mut dyn exec::BlockJudge);
    let (mut primary, inner) = match fresh && PrimaryCheck::applies(execution.exp) {
        true => (Some(PrimaryCheck::new(execution.exp, inner)), None),
        false => (None, inner),
    };
    let cancel = cancel_flag();
    let summary = match primary.as_mut() {
        Some(p) => exec::execute(&execution, services, &cancel, &mut reporters, Some(p)),
        None => exec::execute(&execution, services, &cancel, &mut reporters, inner),
    }
    .map_err(|e| CommandError::Runtime(e.into()))?;
    Ok((summary, primary.and_then(|p| p.missing)))
}

/// A run whose execution ended and whose trials the database holds.
struct Ended {
    exp: Experiment,
    run_id: String,
    results_dir: PathBuf,
    summary: ExecSummary,
    planned: usize,
    /// The primary metric no trial of the first block produced, which stopped the run.
    primary_missing: Option<crate::produced::Unproduced>,
}

/// Reads back what the database holds, sets the run's final status, prints the summary and
/// the report, and decides the exit code.
fn conclude(g: &Globals, o: &RunArgs, db: &Db, ended: &Ended, voice: Voice) -> Result<Concluded, CommandError> {
    let Ended {
        exp,
        run_id,
        summary,
        planned,
        ..
    } = ended;
    let full = voice == Voice::Full;
    let stored = db::wait(store::load_trials(db, run_id))?;
    let failed = stored.iter().filter(|t| !t.ok).count();
    let status = final_status(summary.outcome, stored.len(), *planned);
    if status != summary.outcome.status() {
        db::wait(store::set_run_status(db, run_id, &status, None))?;
    }
    if full {
        println!("{}", summary_table(exp, &stored));
        println!(
            "run {run_id} {status}: {} of {planned} trials stored, {failed} failed",
            stored.len()
        );
        if let Some((blocks, reason)) = summary.ended_early.as_ref().filter(|_| ended.primary_missing.is_none()) {
            println!("run {run_id} ended after {blocks} blocks: {reason}");
        }
    }
    for warning in crate::rundata::machine_load(&stored).warnings() {
        eprintln!("warning: {warning}");
    }
    let mut out = Concluded {
        code: EXIT_FAILED,
        run_id: Some(run_id.clone()),
        report: None,
        stored: Vec::new(),
    };
    if status == RunStatus::Incomplete {
        eprintln!(
            "error: run {run_id} ran every trial but the database holds only {} of {planned}; \
             the missing ones run again with: measured run --resume {run_id}",
            stored.len(),
        );
        return Ok(out);
    }
    // A name in [compare] that no trial produced is a typo, not an inconclusive result.
    let unproduced = crate::produced::unproduced(exp, &stored);
    for u in unproduced.iter().filter(|u| Some(*u) != ended.primary_missing.as_ref()) {
        eprintln!("error: {u}");
    }
    let clean = failed == 0 && unproduced.is_empty();
    if !o.no_report {
        out.report = Some(print_report(g, db, ended, stored.clone(), voice)?);
    }
    let regressed = out
        .report
        .as_ref()
        .is_some_and(|w| crate::report::regression(&w.report));
    out.code = exit_code(o, ended, stored.len(), clean, regressed);
    out.stored = stored;
    Ok(out)
}

/// The exit code of a run that ended and was stored: interrupted, stopped early by failures, a
/// regression under `--fail-on-regression`, failed trials, or success.
fn exit_code(o: &RunArgs, ended: &Ended, n_stored: usize, clean: bool, regressed: bool) -> u8 {
    let run_id = &ended.run_id;
    if let Some(missing) = &ended.primary_missing {
        let error = primary_error(&ended.exp, missing, run_id, n_stored);
        eprint!("{}", error.render_for_stderr(crate::color::stderr()));
        return EXIT_BAD_INPUT;
    }
    if ended.summary.outcome == Outcome::Interrupted {
        eprintln!("resume with: measured run --resume {run_id}");
        return EXIT_INTERRUPTED;
    }
    if let Some(error) = &ended.summary.stopped {
        eprintln!("{}", stopped_message(run_id, error, n_stored, ended.planned));
        return EXIT_FAILED;
    }
    if o.fail_on_regression && regressed {
        eprintln!(
            "regression: the primary metric got slower, or a guard failed or could not be evaluated (--fail-on-regression)"
        );
        return EXIT_FAILED;
    }
    if clean {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

/// Writes the run's report and, in the full voice, prints its summary.
fn print_report(
    g: &Globals,
    db: &Db,
    ended: &Ended,
    stored: Vec<crate::record::TrialRecord>,
    voice: Voice,
) -> Result<crate::report::WrittenReport, CommandError> {
    let row = db::wait(store::load_run(db, &ended.run_id))?;
    let run = stored_run(row, stored)?;
    let written = write_run_report(db, &g.database, &run, &ended.results_dir)?;
    if voice == Voice::Full {
        for line in &written.report.summary {
            println!("  {line}");
        }
        if let Some(seq) = &written.report.method.sequential {
            println!("  {}", seq.stop_sentence());
        }
    }
    for warning in written.report.stability.iter().flat_map(|s| s.warnings()) {
        eprintln!("warning: {warning}");
    }
    if voice == Voice::Full {
        println!("report: {}", written.paths.markdown.display());
    }
    Ok(written)
}

/// The judge of a sequential run (`None` for a fixed design): its stored row, spec and, for
/// a resumed run, the trials already stored, read before any trial runs.
fn sequential_judge(
    db: &Db,
    g: &Globals,
    run_id: &str,
    env: &Fingerprint,
    fresh: bool,
) -> Result<Option<SequentialJudge>, CommandError> {
    let row = db::wait(store::load_run(db, run_id))?;
    let stored = if fresh {
        Vec::new()
    } else {
        db::wait(store::load_trials(db, run_id))?
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

/// The status a run ends with, from how execution ended and what the database holds: one that
/// ran to its end but whose database holds fewer trials than planned never reads `finished`.
pub fn final_status(outcome: Outcome, stored: usize, planned: usize) -> RunStatus {
    match outcome {
        Outcome::Finished if stored < planned => RunStatus::Incomplete,
        other => other.status(),
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
pub fn unstored_message(u: &crate::store::Unstored, results_dir: Option<&Path>, database: Option<&str>) -> String {
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

/// Renders the report of a run stored in `db` (reached at `database`) into its results folder.
pub(super) fn write_run_report(
    db: &Db,
    database: &str,
    stored: &StoredRun,
    results_dir: &Path,
) -> Result<crate::report::WrittenReport, CommandError> {
    let data = db::wait(crate::rundata::of_run_with_hosts(stored, db, database))?;
    let out = crate::paths::run_dir(results_dir, &stored.row.experiment, &stored.row.id)?;
    Ok(crate::report::write_report(&data, &out, templates_dir()).context("cannot write the report")?)
}
