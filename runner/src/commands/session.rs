//! A run as `measured run` holds it (run -> **session** -> exec, store): what a fresh run
//! ([`RunSession::start`]) or a resumed one ([`RunSession::resume`]) needs before its first
//! trial runs, built in one place: the validated experiment, its schedule and seed, the trials
//! already stored, the fingerprint, the results folder, the trial sink and the stage services.

use super::{experiment_env, prepare_revisions, reproduce_command};
use crate::cli::RunArgs;
use crate::db::{self, Db};
use crate::error::CommandError;
use crate::exec::{ExecError, Execution, Reporter, RunEvent};
use crate::globals::Globals;
use crate::manifest::Experiment;
use crate::measure::Fingerprint;
use crate::paths::Root;
use crate::plan::{self, ScheduledTrial};
use crate::preflight::{Pin, Prepared};
use crate::stage::Services;
use crate::store::journal::{self, Journal};
use crate::store::{self, BackgroundSink, TrialSink};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything one run needs to execute, fresh or resumed.
pub(super) struct RunSession {
    pub exp: Experiment,
    pub run_id: String,
    pub seed: u64,
    pub trials: Vec<ScheduledTrial>,
    /// Trials already stored (resume): not run again.
    pub skip: HashSet<u32>,
    pub env: Fingerprint,
    pub results_dir: PathBuf,
    pub services: Services,
    /// Where each finished trial goes: the journal, then (on the sink's own thread) the
    /// database.
    pub sink: BackgroundSink,
}

impl RunSession {
    /// Stores a new run of `exp` (validated, its revisions built and its data `prepared`) and
    /// opens its journal.
    pub fn start(
        g: &Globals,
        o: &RunArgs,
        exp: Experiment,
        prepared: Option<Prepared>,
        db: &Db,
    ) -> Result<RunSession, CommandError> {
        let results_dir = Root::of_manifest(&exp.path).results_dir(o.results_dir.as_deref());
        let seed = o
            .seed
            .or(exp.schedule.seed)
            .unwrap_or_else(|| rand::random::<u64>() >> 11);
        let env = experiment_env(&exp);
        let run_id = crate::paths::new_run_id();
        let trials = plan::schedule(exp.configs.len(), &exp.schedule, seed);
        let command = reproduce_line(g, o, &exp, seed, prepared.as_ref());
        let stock = g.stock_url();
        let new = store::NewRun {
            id: &run_id,
            experiment: &exp,
            seed,
            planned_trials: trials.len() as u32,
            env: &env,
            command: &command,
            started_at: chrono::Utc::now(),
            lease_seconds: Some(o.lease_seconds),
            stock_database: &stock,
            stock_data: prepared.as_ref().and_then(|p| p.identity.as_ref()),
        };
        let mut header = new.header();
        header.database = db::database_identity(&g.database);
        let journal = Journal::create(&Journal::path_for(&results_dir, &exp.name, &run_id), &header)
            .map_err(|e| CommandError::Runtime(e.into()))?;
        db::wait(store::insert_run(db, &new))?;
        let sink = TrialSink::new(db.clone(), &g.database, &run_id, journal, g.quiet);
        let session = Parts {
            exp,
            run_id: run_id.clone(),
            seed,
            trials,
            skip: HashSet::new(),
            env,
            results_dir,
            sink,
        };
        session.open(g, o, prepared).map_err(|e| record_stop(g, db, &run_id, e))
    }

    /// Takes up run `--resume ID` where it stopped: stores what its journals hold, reads its
    /// manifest back (its hash verified), pins the revisions and data versions its first trials
    /// read, and skips the trials already stored.
    pub fn resume(g: &Globals, o: &RunArgs, db: &Db) -> Result<RunSession, CommandError> {
        let id = o.resume.as_deref().unwrap_or_default();
        let given_results = o.results_dir.as_deref();
        // Trials a run could not store before it ended wait in its journal: write them first
        // (this also gives back a run row that a replaced database lost). Before the run is
        // loaded its manifest is unknown: look under this directory's project.
        if id != "latest" {
            let here = Root::of_cwd().results_dir(given_results);
            flush_journals(db, &here, id, &g.database, g.quiet)?;
        }
        let mut run = db::wait(store::Reopened::load(db, id))?;
        let row = &run.row;
        // The run's results belong to the project of its manifest, as when it started.
        let results_dir = Root::of_manifest(Path::new(&row.manifest_path)).results_dir(given_results);
        flush_journals(db, &results_dir, &row.id, &g.database, g.quiet)?;
        if run.exp.has_revisions() {
            // The rest of the trials run the commits the first ones ran, wherever the branches
            // point now.
            let stored = db::wait(store::load_trials(db, &run.row.id))?;
            let pinned = crate::gitrev::pinned(&run.exp, &stored);
            prepare_revisions(&mut run.exp, &pinned, g.quiet, &mut Default::default())?;
        }
        // The rest of the trials read the dataset versions the first ones read; a run stored
        // before versions reads the declared data (prepared again if it is gone).
        let pin = run.versions.clone().map(Pin::Stored);
        let prepared = crate::preflight::prepare(&super::stock_options(g), &run.exp, false, pin.as_ref())?;
        let env = experiment_env(&run.exp);
        let skip: HashSet<u32> = db::wait(store::stored_trial_indices(db, &run.row.id))?
            .into_iter()
            .collect();
        let target = store::SinkTarget {
            db,
            url: &g.database,
            results_dir: &results_dir,
            journal_name: &run.row.id,
            quiet: g.quiet,
        };
        let sink = run.sink(target, &env, Some(o.lease_seconds))?;
        // Running again only once its journal is open: a resume that cannot start leaves the
        // run as it found it.
        db::wait(store::set_run_status(db, &run.row.id, &store::RunStatus::Running, None))?;
        db::wait(store::beat(db, &run.row.id, chrono::Utc::now(), Some(o.lease_seconds)))?;
        let trials = plan::schedule(run.exp.configs.len(), &run.exp.schedule, run.row.seed);
        let session = Parts {
            exp: run.exp,
            run_id: run.row.id,
            seed: run.row.seed,
            trials,
            skip,
            env,
            results_dir,
            sink,
        };
        session.open(g, o, prepared)
    }

    /// What the executor runs, the services its stages use, and the sink its trials go to.
    pub fn parts(&mut self) -> (Execution<'_>, &Services, &mut BackgroundSink) {
        let execution = Execution {
            run_id: &self.run_id,
            exp: &self.exp,
            trials: &self.trials,
            seed: self.seed,
            skip: &self.skip,
            env: &self.env,
            worker: format!("{}:{}", self.env.host, std::process::id()),
        };
        (execution, &self.services, &mut self.sink)
    }

    /// Ends a session whose run stopped on `error` once its row was stored: what its sink was
    /// given is still kept (the sink's thread finishes, the journal stays for `--resume`), and
    /// the run is recorded `stopped` with the error instead of staying `running` until its
    /// lease runs out. Returns `error`, for the command to end with.
    pub fn stop_on(self, g: &Globals, db: &Db, error: CommandError) -> CommandError {
        let run_id = self.run_id.clone();
        // Joins the sink's thread and stops the heartbeat before the status is written.
        drop(self);
        record_stop(g, db, &run_id, error)
    }

    /// The line `measured run` prints as the run starts.
    pub fn announce(&self, g: &Globals) {
        if g.quiet {
            return;
        }
        let up_to = if self.exp.schedule.sequential.is_some() {
            "up to "
        } else {
            ""
        };
        eprintln!(
            "run {}: {} ({} configs, {up_to}{} trials, seed {}) -> {}",
            self.run_id,
            self.exp.name,
            self.exp.configs.len(),
            self.trials.len(),
            self.seed,
            db::redact_url(&g.database)
        );
    }
}

/// A session's own parts (its schedule made once, by whoever knows the seed), before its
/// services and sink are made from them.
struct Parts {
    exp: Experiment,
    run_id: String,
    seed: u64,
    trials: Vec<ScheduledTrial>,
    skip: HashSet<u32>,
    env: Fingerprint,
    results_dir: PathBuf,
    /// Its trial sink, before it beats and moves to a thread of its own.
    sink: TrialSink,
}

impl Parts {
    fn open(self, g: &Globals, o: &RunArgs, prepared: Option<Prepared>) -> Result<RunSession, CommandError> {
        let mut services = Services::new(g.stock_url(), g.stock_database.is_some());
        if let Some(p) = prepared {
            services = services.prepared(p.db, &self.exp.data, p.view);
        }
        let sink = self
            .sink
            .storing_environment(&self.env)
            .beating(Duration::from_secs_f64(o.lease_seconds));
        let sink = BackgroundSink::start(sink).map_err(|e| CommandError::Runtime(e.into()))?;
        Ok(RunSession {
            exp: self.exp,
            run_id: self.run_id,
            seed: self.seed,
            trials: self.trials,
            skip: self.skip,
            env: self.env,
            results_dir: self.results_dir,
            services,
            sink,
        })
    }
}

/// Records that run `run_id` stopped on `error` (its text, with the passwords of the results
/// and stock databases removed), and returns the error. Should the database not take it, the
/// run is shown abandoned once its lease runs out, as for a killed process.
fn record_stop(g: &Globals, db: &Db, run_id: &str, error: CommandError) -> CommandError {
    // The words `measured run` ends with on stderr.
    let text = crate::printable::error_chain(&error);
    let text = db::redact_text(&db::redact_text(&text, &g.database), &g.stock_url());
    if let Err(e) = db::wait(store::set_run_stopped(db, run_id, &text)) {
        eprintln!(
            "warning: run {run_id}: cannot record that it stopped: {}",
            db::redact_text(&e.to_string(), &g.database)
        );
    }
    error
}

/// The run's trial sink as one of its reporters: each finished trial is kept as it finishes.
pub(super) struct Keeper<'a>(pub &'a mut BackgroundSink);

impl Reporter for Keeper<'_> {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<(), ExecError> {
        if let RunEvent::TrialFinished { trial, .. } = event {
            self.0.keep(trial).map_err(|e| ExecError::Keep(e.into()))?;
        }
        Ok(())
    }
}

/// The command that runs this experiment again: the seed, the data versions it read (so the
/// line reads them again whatever is stored since) and any `--rev`/`--build`.
fn reproduce_line(g: &Globals, o: &RunArgs, exp: &Experiment, seed: u64, prepared: Option<&Prepared>) -> String {
    let mut command = reproduce_command("run", exp, seed, g);
    if let Some(identity) = prepared.and_then(|p| p.identity.as_ref()) {
        // Labels are dataset names (letters, digits, `_`, `-`, `.`), `@` and a number, which a
        // shell reads as they are; anything else read from the database is quoted.
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
    command
}

/// Writes the journals of run `run` (an id or prefix) found under `results_dir` into `db`,
/// then deletes each one the database now holds whole. A journal still in use (the run is
/// running) or of another database stops the resume, and is kept.
fn flush_journals(db: &Db, results_dir: &Path, run: &str, url: &str, quiet: bool) -> Result<(), CommandError> {
    for path in journal::find(results_dir, Some(run)) {
        let left = db::wait(journal::store_left(db, &path, url)).map_err(|e| {
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
