//! What each CLI command does (cli -> **commands** -> manifest/plan/exec/store/report).
//! The CLI only parses arguments; everything testable lives here.

use crate::error::{CommandError, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::exec::{
    self, ConsoleReporter, JsonReporter, Outcome, Reporter, RunSpec, Services, StoreReporter, TrialRecord,
};
use crate::journal::{self, Journal};
use crate::manifest::{self, Experiment};
use crate::measure::Fingerprint;
use crate::paths::Root;
use crate::plan;
use crate::report::OutputFormat;
use crate::rundata::StoredRun;
use crate::store::{self, Db};
use anyhow::Context;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Where results go; shared by every command that touches the database.
#[derive(Debug, Clone)]
pub struct Globals {
    /// The results database: as given, or the default under the command's project root.
    pub database: String,
    /// Stock data; the results database when `None`.
    pub stock_database: Option<String>,
    pub quiet: bool,
}

impl Globals {
    /// The global options with the default database resolved against `root`; a database the
    /// user named (`--database`, `DATABASE_URL`) stays as written, relative to the current
    /// directory.
    pub fn resolve(database: Option<&str>, stock_database: Option<String>, quiet: bool, root: &Root) -> Globals {
        Globals {
            database: root.database(database),
            stock_database,
            quiet,
        }
    }

    pub fn stock_url(&self) -> String {
        self.stock_database.clone().unwrap_or_else(|| self.database.clone())
    }
}

pub fn runtime() -> Result<tokio::runtime::Runtime, CommandError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(CommandError::Runtime)
}

/// Reads and validates a manifest, including the stage options that depend on the stock
/// database this invocation would read (`strategy = "copy"` needs PostgreSQL).
pub fn load_manifest(g: &Globals, file: &Path, smoke: bool) -> Result<Experiment, manifest::ManifestErrors> {
    let exp = manifest::parse_file(file, smoke)?;
    manifest::check_stock_backend(&exp, !store::is_sqlite_url(&g.stock_url()))?;
    Ok(exp)
}

/// `--rev` and `--build`: git revisions that replace a manifest's variants.
#[derive(Debug, Clone, Default)]
pub struct RevOptions {
    pub revs: Vec<String>,
    pub build: Option<String>,
}

impl RevOptions {
    /// The words that give these options on a command line (for the reproduce line).
    fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        for r in &self.revs {
            w.extend(["--rev".to_owned(), r.clone()]);
        }
        if let Some(b) = &self.build {
            w.extend(["--build".to_owned(), b.clone()]);
        }
        w
    }
}

/// Reads and validates a manifest as [`load_manifest`] does, then, with `--rev`, again with its
/// variants replaced by the revisions: the experiment's text is then the manifest as run.
pub fn load_with_revs(g: &Globals, file: &Path, smoke: bool, revs: &RevOptions) -> Result<Experiment, CommandError> {
    let exp = load_manifest(g, file, smoke)?;
    if revs.revs.is_empty() {
        return Ok(exp);
    }
    let text =
        manifest::with_revisions(&exp.text, &revs.revs, revs.build.as_deref()).map_err(CommandError::BadInput)?;
    Ok(manifest::parse_str(file, &text, smoke)?)
}

/// Resolves the git revisions of `exp`, checks them out and builds them: everything a git
/// variant needs before its first trial. `pinned`: commits a resumed run keeps.
fn prepare_revisions(
    exp: &mut Experiment,
    pinned: &std::collections::HashMap<String, String>,
    quiet: bool,
) -> Result<(), CommandError> {
    if !exp.has_revisions() {
        return Ok(());
    }
    for note in crate::gitrev::resolve(exp, pinned)? {
        if !quiet {
            eprintln!("{note}");
        }
    }
    crate::gitrev::prepare(exp, quiet)
}

/// `measured check`: validates manifests; prints each file's verdict.
pub fn check(g: &Globals, files: &[PathBuf], smoke: bool) -> u8 {
    let mut code = EXIT_OK;
    for f in files {
        match load_manifest(g, f, smoke) {
            Ok(exp) => {
                let trials = exp.configs.len() as u32 * (exp.schedule.warmup + exp.schedule.repetitions);
                println!(
                    "ok: {} ({}, {}, {})",
                    f.display(),
                    plural(exp.configs.len(), "config"),
                    plural(exp.stages.len(), "stage"),
                    plural(trials as usize, "trial")
                );
            }
            Err(e) => {
                eprint!("{}", e.render_for_stderr(crate::color::stderr()));
                code = EXIT_BAD_INPUT;
            }
        }
    }
    code
}

/// `n thing` or `n things`.
pub fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// `measured plan`: prints configs, stage order, and every trial in time order.
pub fn plan(
    g: &Globals,
    file: &Path,
    seed: Option<u64>,
    smoke: bool,
    show_commands: bool,
    revs: &RevOptions,
) -> Result<String, CommandError> {
    let mut exp = load_with_revs(g, file, smoke, revs)?;
    // Resolved only: `plan` checks nothing out and builds nothing.
    for note in crate::gitrev::resolve(&mut exp, &Default::default())? {
        if !g.quiet {
            eprintln!("{note}");
        }
    }
    let (seed, random) = match seed.or(exp.schedule.seed) {
        Some(s) => (s, false),
        None => (rand::random::<u64>() >> 11, true),
    };
    let trials = plan::schedule(exp.configs.len(), &exp.schedule, seed);
    let mut out = plan::describe(&exp, seed, random, &trials, show_commands);
    // What the data preparation would do, and the preflight when the data is there already.
    if crate::preflight::reads_stock(&exp) || exp.data.restricts() {
        let rt = runtime()?;
        for line in crate::preflight::plan_lines(g, &exp, &rt)? {
            out.push_str(&line);
            out.push('\n');
        }
    }
    Ok(out)
}

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
}

/// Defaults of `measured run --lease-seconds` and `--db-wait`.
pub const DEFAULT_LEASE_SECONDS: f64 = 60.0;
pub const DEFAULT_DB_WAIT_SECONDS: f64 = 120.0;

/// The cancel flag, set by Ctrl-C. One per process: signal handlers are process-wide.
pub fn cancel_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        let _ = ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                // Second Ctrl-C: the user does not want to wait for the current trial.
                std::process::exit(i32::from(EXIT_INTERRUPTED));
            }
            eprintln!("\ninterrupted: stopping after cancelling the current trial (Ctrl-C again to quit now)");
        });
        flag
    })
    .clone()
}

pub(crate) fn new_run_id() -> String {
    format!(
        "{}-{:04x}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        rand::random::<u16>()
    )
}

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
            if let Some(missing) = exec::missing_named_stock(stock) {
                return Err(CommandError::BadInput(missing));
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
    let prepared = match &fresh {
        Some(exp) => crate::preflight::prepare(g, exp, &rt, true)?,
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
            let run_id = new_run_id();
            let trials = plan::schedule(exp.configs.len(), &exp.schedule, seed);
            let mut command = reproduce_command("run", &exp, seed, g);
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
            header.database = store::database_identity(&g.database);
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
            row.verify_manifest().map_err(CommandError::BadInput)?;
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
            // The rest of the trials read the declared data too (prepared again if it is gone).
            prepared = crate::preflight::prepare(g, &exp, rt, false)?;
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
        services = services.prepared(p.db, &exp.data, p.universe);
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
            "run {run_id}: {} ({} configs, {} trials, seed {seed}) -> {}",
            exp.name,
            exp.configs.len(),
            trials.len(),
            store::redact_url(&g.database)
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
    let summary = {
        let mut reporters: Vec<&mut dyn Reporter> = vec![&mut console, &mut storer];
        if let Some(j) = json.as_mut() {
            reporters.push(j);
        }
        exec::execute(&spec, &services, &cancel, &mut reporters).map_err(|e| CommandError::Runtime(e.into()))?
    };
    let db = match storer.finish(summary.outcome.as_str(), Duration::from_secs_f64(o.db_wait_seconds)) {
        Ok(db) => db,
        Err(u) => {
            // `--resume` started here opens the database a plain resume finds: name any other.
            let database = (store::is_sqlite_url(&g.database) && g.database != Root::of_cwd().database(None))
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
    let status = final_status(summary.outcome, stored.len(), trials.len());
    if status != summary.outcome.as_str() {
        rt.block_on(store::set_run_status(db, &run_id, status, None))?;
    }
    println!(
        "run {run_id} {status}: {} of {} trials stored, {failed} failed",
        stored.len(),
        trials.len()
    );
    for warning in crate::rundata::machine_load(&stored).warnings() {
        eprintln!("warning: {warning}");
    }
    if status == INCOMPLETE {
        eprintln!(
            "error: run {run_id} ran every trial but the database holds only {} of {}; \
             the missing ones run again with: measured run --resume {run_id}",
            stored.len(),
            trials.len()
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
        println!("report: {}", written.paths.markdown.display());
        regressed = crate::report::regression(&written.report);
    }
    if summary.outcome == Outcome::Interrupted {
        eprintln!("resume with: measured run --resume {run_id}");
        return Ok(EXIT_INTERRUPTED);
    }
    if let Some(error) = &summary.stopped {
        eprintln!("{}", stopped_message(&run_id, error, n_stored, trials.len()));
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
        let _ = write!(cmd, " --database {}", store::redact_url(db));
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
                store::redact_url(url),
                store::redact_text(&e.to_string(), url)
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
                    store::redact_url(&store::database_identity(url))
                )))
            }
        }
    }
    Ok(())
}

/// The templates folder next to where measured runs, if there is one (else built-in copies).
pub fn templates_dir() -> Option<&'static Path> {
    let p = Path::new("templates");
    p.join("report.md.j2").is_file().then_some(p)
}

/// Renders the report of a run stored in `db` (reached at `database`) into its results folder.
fn write_run_report(
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

/// Loads a stored run with its validated manifest and trials.
fn load_stored(rt: &tokio::runtime::Runtime, db: &Db, id: &str) -> Result<StoredRun, CommandError> {
    let row = rt.block_on(store::load_run(db, id))?;
    let trials = rt.block_on(store::load_trials(db, &row.id))?;
    stored_run(row, trials)
}

fn stored_run(row: store::RunRow, trials: Vec<TrialRecord>) -> Result<StoredRun, CommandError> {
    StoredRun::new(row, trials).map_err(|e| CommandError::BadInput(e.to_string()))
}

/// `measured report`: renders a stored run's report; returns the exit code. With `format`,
/// stdout gets that form of the report instead of the summary lines.
pub fn report(
    g: &Globals,
    run: &str,
    results_dir: &Path,
    fail_on_regression: bool,
    format: Option<OutputFormat>,
) -> Result<u8, CommandError> {
    let rt = runtime()?;
    let db = open_for_run(&rt, &g.database, run)?;
    let stored = load_stored(&rt, &db, run)?;
    let written = write_run_report(&rt, &db, &g.database, &stored, results_dir)?;
    rt.block_on(db.close());
    if let Some(format) = format {
        let out =
            crate::report::report_output(format, &written, templates_dir()).context("cannot render the report")?;
        print!("{out}");
    } else {
        for line in &written.report.summary {
            println!("{line}");
        }
        println!("report: {}", written.paths.markdown.display());
    }
    Ok(if fail_on_regression && crate::report::regression(&written.report) {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// `measured compare`: before/after across two stored runs of one experiment. With `format`,
/// stdout gets that form of the comparison instead of the summary lines.
pub fn compare(
    g: &Globals,
    before: &str,
    after: &str,
    allow_different_data: bool,
    results_dir: &Path,
    fail_on_regression: bool,
    format: Option<OutputFormat>,
) -> Result<u8, CommandError> {
    let rt = runtime()?;
    let db = open_for_run(&rt, &g.database, before)?;
    let run_a = load_stored(&rt, &db, before)?;
    let run_b = load_stored(&rt, &db, after)?;
    let (row_a, row_b) = (&run_a.row, &run_b.row);
    if row_a.id == row_b.id {
        return Err(CommandError::BadInput(format!(
            "`{before}` and `{after}` are the same run ({}); compare needs two different runs\n\
             (hint: `measured runs --experiment {}` lists its runs; a run's own variants are compared in `measured report {}`)",
            row_a.id, row_a.experiment, row_a.id
        )));
    }
    if row_a.experiment != row_b.experiment {
        return Err(CommandError::BadInput(format!(
            "run {} is of experiment `{}` but run {} is of `{}`; compare runs of one experiment",
            row_a.id, row_a.experiment, row_b.id, row_b.experiment
        )));
    }
    let env_a = rt.block_on(store::environment(&db, &row_a.environment_hash))?;
    let env_b = rt.block_on(store::environment(&db, &row_b.environment_hash))?;
    rt.block_on(db.close());
    let a = run_a.data(env_a.as_ref(), &g.database);
    let b = run_b.data(env_b.as_ref(), &g.database);
    let model = match crate::report::compare_runs(&a, &b, allow_different_data) {
        Ok(m) => m,
        Err(e @ crate::report::ReportError::DataMismatch { .. }) => {
            return Err(CommandError::BadInput(format!(
                "{e}\n(hint: pass --allow-different-data to compare anyway)"
            )))
        }
        Err(e) => return Err(CommandError::BadInput(e.to_string())),
    };
    let cmp = crate::report::compare_view(&model);
    let md = crate::report::render_compare_markdown(&cmp, templates_dir()).context("cannot render the comparison")?;
    crate::paths::check_stored(results_dir, &row_a.experiment, &row_a.id)?;
    crate::paths::check_stored(results_dir, &row_b.experiment, &row_b.id)?;
    let out = crate::paths::experiment_dir(results_dir, &row_a.experiment)?
        .join(format!("compare-{}-vs-{}", row_a.id, row_b.id));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let path = out.join("compare.md");
    std::fs::write(&path, md).with_context(|| format!("cannot write {}", path.display()))?;
    if let Some(format) = format {
        let out = crate::report::compare_output(format, &model, &path, templates_dir())
            .context("cannot render the comparison")?;
        print!("{out}");
    } else {
        for line in &model.summary {
            println!("{line}");
        }
        println!("comparison: {}", path.display());
    }
    Ok(if fail_on_regression && model.regression {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// The command line that runs the same experiment again: `measured <verb> <manifest> --seed
/// ...`, plus the databases where they are not the defaults (so a run that read a stock
/// database of its own says which), passwords redacted and every word shell-quoted.
pub(crate) fn reproduce_command(verb: &str, exp: &Experiment, seed: u64, g: &Globals) -> String {
    let mut words = vec![
        "measured".to_owned(),
        verb.to_owned(),
        exp.path.display().to_string(),
        "--seed".to_owned(),
        seed.to_string(),
    ];
    if exp.smoke {
        words.push("--smoke".to_owned());
    }
    if g.database != store::DEFAULT_SQLITE_PATH {
        words.extend(["--database".to_owned(), store::redact_url(&g.database)]);
    }
    if let Some(stock) = &g.stock_database {
        words.extend(["--stock-database".to_owned(), store::redact_url(stock)]);
    }
    // Quoting fails only on a NUL byte, which no path or URL given on a command line holds.
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
}

/// The environment a run of `exp` is recorded with, read from the manifest's directory (its git
/// state belongs to the experiment, not to wherever the command was started).
pub(crate) fn experiment_env(exp: &Experiment) -> Fingerprint {
    Fingerprint::collect(exp.dir())
}

/// The median, or `None` for no values (shown as `-`).
fn median_of(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| crate::stats::median(v))
}

/// Median seconds per config and stage over measured (non-warm-up), successful trials.
pub fn summary_table(exp: &Experiment, trials: &[TrialRecord]) -> String {
    let stage_names: Vec<&str> = exp.order.iter().map(|&i| exp.stages[i].name.as_str()).collect();
    let mut out = String::new();
    let width = exp.configs.iter().map(|c| c.name.len()).max().unwrap_or(6).max(6);
    let _ = write!(out, "{:<width$}  {:>3}  {:>12}", "config", "n", "trial");
    for s in &stage_names {
        let _ = write!(out, "  {:>12}", truncate(s, 12));
    }
    out.push('\n');
    for c in &exp.configs {
        let ok: Vec<&TrialRecord> = trials
            .iter()
            .filter(|t| t.config == c.name && !t.warmup && t.ok)
            .collect();
        let totals: Vec<f64> = ok.iter().map(|t| t.seconds).collect();
        let _ = write!(
            out,
            "{:<width$}  {:>3}  {:>12}",
            c.name,
            ok.len(),
            fmt_secs(median_of(&totals))
        );
        for s in &stage_names {
            let v: Vec<f64> = ok
                .iter()
                .filter_map(|t| {
                    t.stages
                        .iter()
                        .find(|r| r.name == *s && !r.cache_hit)
                        .map(|r| r.seconds)
                })
                .collect();
            let _ = write!(out, "  {:>12}", fmt_secs(median_of(&v)));
        }
        out.push('\n');
    }
    out.push_str("(median wall time per config and stage over measured trials)");
    out
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Seconds with a unit that keeps 3-4 significant digits.
pub fn fmt_secs(s: Option<f64>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s >= 100.0 => format!("{s:.1} s"),
        Some(s) if s >= 1.0 => format!("{s:.3} s"),
        Some(s) if s >= 1e-3 => format!("{:.3} ms", s * 1e3),
        Some(s) => format!("{:.1} µs", s * 1e6),
    }
}

/// `measured data synth`: a synthetic market into the stock database.
pub fn data_synth(g: &Globals, opts: crate::market::SynthOptions) -> Result<u8, CommandError> {
    let rt = runtime()?;
    let url = g.stock_url();
    let db = rt.block_on(Db::connect(&url))?;
    let bar = if g.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(0)
    };
    // Recorded with its parameters, so a manifest declaring this market finds it here.
    let result = rt.block_on(crate::market::catalog::synth_recorded(&db, &opts, &bar));
    bar.finish_and_clear();
    rt.block_on(db.close());
    match result {
        Ok(report) => {
            println!("{report} into {}", store::redact_url(&url));
            Ok(EXIT_OK)
        }
        Err(e @ crate::market::MarketError::Options(_))
        | Err(e @ crate::market::MarketError::WouldOverwrite { .. }) => Err(CommandError::BadInput(e.to_string())),
        Err(e) => Err(CommandError::Runtime(anyhow::Error::msg(store::redact_text(
            &e.to_string(),
            &url,
        )))),
    }
}

/// `measured data import`: OHLCV files into the stock database; all or nothing by default.
/// `--dry-run` only reads and checks the files and prints what would be imported.
pub fn data_import(g: &Globals, opts: crate::market::ImportOptions) -> Result<u8, CommandError> {
    let url = g.stock_url();
    if opts.dry_run {
        // Checks the files only: the database is not even opened, so nothing can be written.
        return match crate::market::prepare(&opts) {
            Ok(plan) => {
                println!("{plan}");
                println!("dry run: nothing was written to {}", store::redact_url(&url));
                Ok(EXIT_OK)
            }
            Err(e) => Err(CommandError::BadInput(store::redact_text(&e.to_string(), &url))),
        };
    }
    let rt = runtime()?;
    // A SQLite file this import creates is removed again when the import fails.
    let created = store::sqlite_path(&url).filter(|p| !p.exists());
    let db = rt.block_on(Db::connect(&url))?;
    let result = rt.block_on(crate::market::import(&db, &opts));
    rt.block_on(db.close());
    if let (Err(_), Some(file)) = (&result, &created) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = file.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
    match result {
        Ok(r) => {
            println!(
                "imported {} of {} from {} ({} read, {} skipped) into {}",
                plural(r.rows_written as usize, "row"),
                plural(r.symbols, "symbol"),
                plural(r.files, "file"),
                plural(r.rows_read as usize, "row"),
                plural(r.skipped, "bad row"),
                store::redact_url(&url)
            );
            for b in &r.bad {
                println!("  skipped {b}");
            }
            Ok(EXIT_OK)
        }
        Err(e) => Err(CommandError::BadInput(store::redact_text(&e.to_string(), &url))),
    }
}

/// Opens the results database to read from it; `None` when it is a SQLite file that does not
/// exist (reading creates neither the file nor its folder).
fn open_existing(rt: &tokio::runtime::Runtime, url: &str) -> Result<Option<Db>, CommandError> {
    if store::is_sqlite_url(url) && store::sqlite_file_id(url).is_none() {
        return Ok(None);
    }
    Ok(Some(rt.block_on(Db::connect(url))?))
}

/// Opens the results database to read run `run` from it; an error naming the database when it
/// does not exist.
fn open_for_run(rt: &tokio::runtime::Runtime, url: &str, run: &str) -> Result<Db, CommandError> {
    open_existing(rt, url)?.ok_or_else(|| {
        CommandError::BadInput(format!(
            "no run matches `{run}`: no runs stored yet in {}\n\
             hint: `measured run MANIFEST` stores runs there (results/ under the manifest's git root by default); \
             to read another database, pass --database or set DATABASE_URL",
            store::redact_url(url)
        ))
    })
}

/// What `measured history` reads and where it writes.
pub struct HistoryOptions {
    pub experiment: String,
    pub metric: Option<String>,
    pub limit: u32,
    pub include_smoke: bool,
    pub results_dir: PathBuf,
}

/// `measured history`: a metric over every stored run of an experiment, with the significant
/// steps between consecutive runs flagged; prints the Markdown and writes it with its chart.
pub fn history(g: &Globals, o: &HistoryOptions) -> Result<u8, CommandError> {
    // The name becomes a path: only a valid experiment name gets that far.
    if !manifest::is_valid_name(&o.experiment) {
        return Err(CommandError::BadInput(format!(
            "`{}` is not an experiment name (1-64 letters, digits, `_` or `-`)",
            o.experiment
        )));
    }
    let rt = runtime()?;
    let none_stored = || {
        CommandError::BadInput(format!(
            "no runs of experiment `{}` stored in {}\nhint: `measured runs` lists the stored runs",
            o.experiment,
            store::redact_url(&g.database)
        ))
    };
    let db = open_existing(&rt, &g.database)?.ok_or_else(none_stored)?;
    let mut rows = rt.block_on(store::list_runs(&db, Some(&o.experiment), o.limit))?;
    rows.reverse();
    let smoke = rows.iter().filter(|r| r.smoke).count();
    rows.retain(|r| o.include_smoke || !r.smoke);
    if rows.is_empty() {
        rt.block_on(db.close());
        return Err(none_stored());
    }
    let mut runs = Vec::with_capacity(rows.len());
    let mut notes = Vec::new();
    let mut latest = None;
    // Runs of one machine share a fingerprint: read each once.
    let mut envs: BTreeMap<String, Option<Fingerprint>> = BTreeMap::new();
    for row in rows {
        let trials = rt.block_on(store::load_trials(&db, &row.id))?;
        if !envs.contains_key(&row.environment_hash) {
            let env = rt.block_on(store::environment(&db, &row.environment_hash))?;
            envs.insert(row.environment_hash.clone(), env);
        }
        let env = envs.get(&row.environment_hash).and_then(Option::as_ref);
        let stored = stored_run(row, trials)?;
        notes.extend(stored.notes.iter().cloned());
        let mut data = stored.data(env, &g.database);
        data.notes.clear();
        runs.push(data);
        latest = Some(stored.spec.compare);
    }
    rt.block_on(db.close());
    let latest = latest.ok_or_else(none_stored)?;
    let metric = o.metric.clone().unwrap_or_else(|| latest.primary.clone());
    let direction = (metric == latest.primary).then_some(latest.direction).flatten();
    let mut h = crate::report::build_history(&o.experiment, &metric, direction, &runs);
    if h.points.iter().all(|p| p.n == 0) {
        let mut known: Vec<String> = runs
            .iter()
            .flat_map(|r| &r.configs)
            .flat_map(|c| &c.trials)
            .flat_map(|t| {
                t.stages
                    .iter()
                    .flat_map(|s| s.metrics.iter().map(move |m| format!("{}.{}", s.name, m.name)))
            })
            .collect();
        known.sort();
        known.dedup();
        return Err(CommandError::BadInput(format!(
            "no stored run of `{}` recorded `{metric}`\nhint: metrics they recorded: {}; stage times are `<stage>.seconds`",
            o.experiment,
            if known.is_empty() { "none".to_owned() } else { known.join(", ") }
        )));
    }
    if smoke > 0 && !o.include_smoke {
        h.notes.push(format!(
            "{} left out: smoke runs are not measurements (--include-smoke shows them).",
            plural(smoke, "smoke run")
        ));
    }
    h.notes.extend(notes);
    let dir = crate::paths::experiment_dir(&o.results_dir, &o.experiment)?.join("history");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let stem = crate::paths::file_safe(&metric);
    let svg_name = format!("{stem}.svg");
    let svg = crate::report::history_svg(&h).context("cannot draw the history chart")?;
    std::fs::write(dir.join(&svg_name), svg)
        .with_context(|| format!("cannot write {}", dir.join(&svg_name).display()))?;
    let md = crate::report::render_history_markdown(&h, Some(&svg_name), templates_dir())
        .context("cannot render the history")?;
    let md_path = dir.join(format!("{stem}.md"));
    std::fs::write(&md_path, &md).with_context(|| format!("cannot write {}", md_path.display()))?;
    std::fs::write(
        dir.join(format!("{stem}.json")),
        serde_json::to_string_pretty(&h).unwrap_or_default(),
    )
    .with_context(|| format!("cannot write the history JSON in {}", dir.display()))?;
    print!("{md}");
    eprintln!("history: {}", md_path.display());
    Ok(EXIT_OK)
}

/// `measured publish`: every stored run as a static site.
pub fn publish(g: &Globals, o: &crate::publish::PublishOptions) -> Result<u8, CommandError> {
    let rt = runtime()?;
    let db = open_existing(&rt, &g.database)?.ok_or_else(|| {
        CommandError::BadInput(format!(
            "no results database at {}\nhint: `measured run <manifest>` stores runs there",
            store::redact_url(&g.database)
        ))
    })?;
    let started = std::time::Instant::now();
    let result = crate::publish::publish(&rt, &db, &g.database, o);
    rt.block_on(db.close());
    let p = result.map_err(|e| match e {
        crate::publish::PublishError::NotASite(_) => CommandError::BadInput(e.to_string()),
        e => CommandError::Runtime(e.into()),
    })?;
    for s in &p.skipped {
        eprintln!("warning: left out {s}");
    }
    if !g.quiet {
        eprintln!(
            "published {} of {} to {} in {:.2} s: {} rendered, {} reused; {} written, {} unchanged{}",
            plural(p.runs, "run"),
            plural(p.experiments, "experiment"),
            o.out.display(),
            started.elapsed().as_secs_f64(),
            p.rendered,
            p.reused,
            plural(p.written, "file"),
            p.unchanged,
            if p.smoke_left_out > 0 {
                format!("; {} left out", plural(p.smoke_left_out, "smoke run"))
            } else {
                String::new()
            }
        );
    }
    println!("{}", o.out.join("index.html").display());
    Ok(if p.skipped.is_empty() { EXIT_OK } else { EXIT_FAILED })
}

/// `measured runs`: stored runs, newest first.
pub fn runs(g: &Globals, experiment: Option<&str>, limit: u32) -> Result<String, CommandError> {
    let rt = runtime()?;
    let db = open_existing(&rt, &g.database)?;
    let rows = match &db {
        Some(db) => rt.block_on(store::list_runs(db, experiment, limit))?,
        None => Vec::new(),
    };
    let now = chrono::Utc::now();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<22}  {:<24}  {:<19}  {:>13}  {:<19}  commit",
        "run", "experiment", "status", "trials (fail)", "started (UTC)"
    );
    for r in &rows {
        let _ = writeln!(
            out,
            "{:<22}  {:<24}  {:<19}  {:>13}  {:<19}  {}{}",
            r.id,
            truncate(&r.experiment, 24),
            if r.smoke {
                format!("{} (smoke)", r.shown_status(now))
            } else {
                r.shown_status(now).to_owned()
            },
            format!("{}/{} ({})", r.stored_trials, r.planned_trials, r.failed_trials),
            r.started_at.format("%Y-%m-%d %H:%M:%S"),
            truncate(&r.git_commit, 10),
            if r.git_dirty { "+dirty" } else { "" }
        );
    }
    if rows.is_empty() {
        let shown = store::redact_url(&g.database);
        let _ = match experiment {
            Some(e) => writeln!(out, "(no runs of experiment `{e}` stored in {shown})"),
            None => writeln!(
                out,
                "(no runs stored yet in {shown}: try `measured run experiments/quickstart.toml`)"
            ),
        };
    }
    for r in rows.iter().filter(|r| r.abandoned(now)) {
        let _ = writeln!(out, "{}", abandoned_note(r, now));
    }
    if let Some(db) = db {
        rt.block_on(db.close());
    }
    Ok(out)
}

/// Why a run is shown as abandoned, and how to finish it.
fn abandoned_note(r: &store::RunRow, now: chrono::DateTime<chrono::Utc>) -> String {
    let silent = r.heartbeat_at.map_or(0, |h| (now - h).num_seconds().max(0));
    format!(
        "abandoned: run {} has not beaten for {silent} s (lease {} s): its process is gone; finish it with: measured run --resume {}",
        r.id, r.lease_seconds, r.id
    )
}

/// `measured show`: one run's trials with stage timings.
pub fn show(g: &Globals, run: &str) -> Result<String, CommandError> {
    let rt = runtime()?;
    let db = open_for_run(&rt, &g.database, run)?;
    let row = rt.block_on(store::load_run(&db, run))?;
    let trials = rt.block_on(store::load_trials(&db, &row.id))?;
    let env = rt.block_on(store::environment(&db, &row.environment_hash))?;
    rt.block_on(db.close());
    let mut out = String::new();
    let now = chrono::Utc::now();
    let _ = writeln!(
        out,
        "run {}  experiment {}  status {}",
        row.id,
        row.experiment,
        row.shown_status(now)
    );
    if row.abandoned(now) {
        let _ = writeln!(out, "{}", abandoned_note(&row, now));
    }
    out.push_str(&data_lines(&row, &trials));
    if row.status == crate::exec::STOPPED {
        let configs: HashSet<&str> = trials.iter().map(|t| t.config.as_str()).collect();
        if let Some(error) = crate::exec::common_first_failure(&trials, configs.len()) {
            let _ = writeln!(
                out,
                "stopped: the first trial of every config failed with the same error, so the rest were not run: {}",
                crate::exec::one_line(&error)
            );
        }
    }
    let _ = writeln!(
        out,
        "manifest {} (sha256 {})",
        row.manifest_path,
        &row.manifest_hash[..12.min(row.manifest_hash.len())]
    );
    let _ = writeln!(
        out,
        "started {}  seed {}  commit {}{}{}",
        row.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
        row.seed,
        row.git_commit,
        if row.git_dirty { " (dirty)" } else { "" },
        row.git_branch
            .as_ref()
            .map(|b| format!("  branch {b}"))
            .unwrap_or_default()
    );
    if let Some(e) = env {
        let _ = writeln!(
            out,
            "host {}  cpu {} ({} cores)  os {}  gpu {}",
            e.host, e.cpu, e.cores, e.os, e.gpu
        );
    }
    let _ = writeln!(out, "reproduce: {}", row.command);
    let commits = commits_by_config(&trials);
    if !commits.is_empty() {
        let _ = writeln!(out, "code per config:");
        let width = commits.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
        for (config, list) in &commits {
            let _ = writeln!(out, "  {config:<width$}  commit {}", list.join(", "));
        }
    }
    let _ = writeln!(out, "trials: {} of {} stored", trials.len(), row.planned_trials);
    show_machine_and_notes(&mut out, &trials);
    out.push('\n');
    let mut by_stage: BTreeMap<u32, ()> = BTreeMap::new();
    for t in &trials {
        for s in &t.stages {
            by_stage.insert(s.position, ());
        }
    }
    for t in &trials {
        let _ = write!(
            out,
            "{:>4}  {:<24} {:<8} {:<6} {:>11}",
            t.index,
            truncate(&t.config, 24),
            if t.warmup {
                "warm-up".to_owned()
            } else {
                format!("rep {}", t.repetition)
            },
            if t.ok { "ok" } else { "FAILED" },
            fmt_secs(Some(t.seconds))
        );
        for s in &t.stages {
            let mark = match (s.status, s.cache_hit) {
                (exec::StageStatus::Ok, true) => " (cached)".to_owned(),
                (exec::StageStatus::Ok, false) => String::new(),
                (st, _) => format!(" ({})", st.as_str()),
            };
            let _ = write!(out, "  {}={}{}", s.name, fmt_secs(Some(s.seconds)), mark);
        }
        out.push('\n');
        if let Some(e) = &t.error {
            for line in e.lines() {
                let _ = writeln!(out, "        {line}");
            }
        }
    }
    Ok(out)
}

/// How busy the machine was (figures, then any warning) and the stages' distinct notes.
fn show_machine_and_notes(out: &mut String, trials: &[TrialRecord]) {
    let machine = crate::rundata::machine_load(trials);
    if let Some(l) = &machine.load {
        let _ = write!(
            out,
            "machine load over {}: 1-minute load mean {:.1} (max {:.1}) on {}",
            crate::metrics::count(l.trials, "measured trial"),
            l.mean,
            l.max,
            crate::metrics::count(l.cores as usize, "core")
        );
        if let Some(o) = l.other_cpu_mean {
            let _ = write!(out, "; other processes used {o:.1} cores on average");
        }
        if let Some(f) = &machine.frequency {
            let _ = write!(out, "; CPU clock {:.0}-{:.0} MHz", f.min_mhz, f.max_mhz);
        }
        out.push('\n');
    }
    for w in machine.warnings() {
        let _ = writeln!(out, "warning: {w}");
    }
    let (notes, left_out) = crate::rundata::stage_notes(trials);
    if !notes.is_empty() {
        let _ = writeln!(out, "notes from stages:");
    }
    for n in &notes {
        let _ = writeln!(
            out,
            "  {} ({} of {}): {}",
            n.stage,
            crate::metrics::count(n.trials, "trial"),
            crate::metrics::named_list(&n.configs),
            n.note
        );
    }
    if left_out > 0 {
        let _ = writeln!(out, "  ({left_out} more distinct notes not listed)");
    }
}

/// What `show` prints first: the stock data the run read, and the content hashes of what its
/// stages loaded from it.
fn data_lines(row: &store::RunRow, trials: &[TrialRecord]) -> String {
    let hashes = crate::rundata::data_hashes(trials);
    let reads = trials.iter().any(|t| t.stages.iter().any(|s| s.kind == "load"));
    let mut out = String::new();
    match crate::market::DataIdentity::from_json(row.stock_data.as_deref()) {
        Some(d) => {
            let _ = writeln!(out, "data: {}", d.extent());
            let _ = writeln!(out, "  source: {}", d.origin());
        }
        None if reads || !hashes.is_empty() => {
            let _ = writeln!(
                out,
                "data: unknown (not recorded with the run: it was stored before runs named their data)"
            );
        }
        None => {}
    }
    for (stage, hash) in &hashes {
        let _ = writeln!(out, "  content hash of `{stage}`: {hash}");
    }
    out
}

/// Per config (in the order first stored), the commits its trials ran, `(dirty)` marked;
/// empty when no trial recorded one.
fn commits_by_config(trials: &[TrialRecord]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for t in trials {
        let Some(commit) = &t.git_commit else { continue };
        let shown = if t.git_dirty {
            format!("{commit} (dirty)")
        } else {
            commit.clone()
        };
        match out.iter_mut().find(|(c, _)| *c == t.config) {
            Some((_, list)) if list.contains(&shown) => {}
            Some((_, list)) => list.push(shown),
            None => out.push((t.config.clone(), vec![shown])),
        }
    }
    out
}

/// Maps a command result to the process exit code, printing the error.
pub fn finish(result: Result<u8, CommandError>) -> u8 {
    match result {
        Ok(code) => code,
        Err(e) => {
            match &e {
                CommandError::Manifest(m) | CommandError::Data(m) => {
                    eprint!("{}", m.render_for_stderr(crate::color::stderr()))
                }
                other => eprintln!("error: {other:#}"),
            }
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_ran_everything_but_stored_less_is_never_finished() {
        assert_eq!(final_status(Outcome::Finished, 20, 20), "finished");
        assert_eq!(final_status(Outcome::Finished, 19, 20), INCOMPLETE);
        assert_eq!(final_status(Outcome::Interrupted, 5, 20), "interrupted");
    }

    #[test]
    fn the_reproduce_line_names_databases_that_are_not_the_defaults_without_passwords() {
        let exp = manifest::parse_str(
            Path::new("experiments/a b.toml"),
            "[experiment]\nname = \"x\"\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\n",
            false,
        )
        .unwrap();
        let mut g = Globals {
            database: store::DEFAULT_SQLITE_PATH.into(),
            stock_database: None,
            quiet: true,
        };
        assert_eq!(
            reproduce_command("run", &exp, 7, &g),
            "measured run 'experiments/a b.toml' --seed 7"
        );
        g.database = "postgres://alice:s3cret@db/results".into();
        g.stock_database = Some("postgres://bob:hunter2@db/stock".into());
        assert_eq!(
            reproduce_command("submit", &exp, 7, &g),
            "measured submit 'experiments/a b.toml' --seed 7 --database 'postgres://alice:***@db/results' \
             --stock-database 'postgres://bob:***@db/stock'"
        );
    }

    #[test]
    fn the_unstored_message_names_the_run_the_journal_and_the_command() {
        let u = crate::exec::Unstored {
            run_id: "20261124-120000-abcd".into(),
            url: "postgres://u:***@db/results".into(),
            journal: PathBuf::from("out/exp/20261124-120000-abcd.journal.jsonl"),
            trials: 7,
            error: "connection refused".into(),
        };
        let m = unstored_message(&u, Some(Path::new("out")), None);
        assert!(m.contains("run 20261124-120000-abcd"), "{m}");
        assert!(m.contains("postgres://u:***@db/results"), "{m}");
        assert!(
            m.contains("all 7 finished trials are kept in out/exp/20261124-120000-abcd.journal.jsonl"),
            "{m}"
        );
        assert!(
            m.ends_with("measured run --resume 20261124-120000-abcd --results-dir out"),
            "{m}"
        );
        assert_eq!(m.matches("connection refused").count(), 1, "the cause once: {m}");
        let default = unstored_message(&u, None, None);
        assert!(
            default.ends_with("measured run --resume 20261124-120000-abcd"),
            "{default}"
        );
        let elsewhere = unstored_message(&u, None, Some("/srv/repo/results/measured.sqlite"));
        assert!(
            elsewhere
                .ends_with("measured run --resume 20261124-120000-abcd --database /srv/repo/results/measured.sqlite"),
            "{elsewhere}"
        );
    }
}
