//! What each CLI command does (cli -> **commands** -> manifest/plan/exec/store/report).
//! The CLI only parses arguments; everything testable lives here.

mod ab;
mod bisect;
mod check;
mod data;
mod dispatch;
mod looks;
mod queue;
mod report;
mod run;
mod runs;
mod session;
mod summary;

pub use ab::ab;
pub use bisect::bisect;
pub use check::{check, plan};
pub use data::{data_import, data_ls, data_rm, data_show, data_synth};
pub use dispatch::main;
pub use queue::{status, submit, worker};
pub use report::{compare, history, publish, report};
pub use run::run;
pub use runs::{runs, show};
pub use summary::{evidence, fmt_secs, summary_table};

use crate::cli::RevArgs;
use crate::db;
use crate::db::Db;
use crate::error::{CommandError, EXIT_INTERRUPTED};
use crate::globals::Globals;
use crate::manifest::{self, Experiment};
use crate::measure::Fingerprint;
use crate::record::TrialRecord;
use crate::store;
use crate::store::StoredRun;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The stock database of these options, as the preflight needs it: its URL, whether it was
/// named apart, the `measured` options that reach it, and whether to speak.
pub(crate) fn stock_options(g: &Globals) -> crate::preflight::StockOptions {
    let url = g.stock_url();
    let shown = db::redact_url(&url);
    let named = g.stock_database.is_some();
    let mut words = vec!["measured".to_owned()];
    if named {
        words.extend(["--stock-database".to_owned(), shown]);
    } else if g.database != crate::paths::Root::of_cwd().database(None) {
        words.extend(["--database".to_owned(), shown]);
    }
    crate::preflight::StockOptions {
        url,
        named,
        // Quoting fails only on a NUL byte, which no URL given on a command line holds.
        command: shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" ")),
        quiet: g.quiet,
    }
}

/// Reads and validates a manifest, including the stage options that depend on the stock
/// database this invocation would read (`strategy = "copy"` needs PostgreSQL).
pub fn load_manifest(g: &Globals, file: &Path, smoke: bool) -> Result<Experiment, manifest::ManifestErrors> {
    let exp = manifest::parse_file(file, smoke)?;
    manifest::check_stock_backend(&exp, !db::is_sqlite_url(&g.stock_url()))?;
    Ok(exp)
}

/// Reads and validates a manifest as [`load_manifest`] does, then, with `--rev`, again with its
/// variants replaced by the revisions: the experiment's text is then the manifest as run.
pub fn load_with_revs(g: &Globals, file: &Path, smoke: bool, revs: &RevArgs) -> Result<Experiment, CommandError> {
    let exp = load_manifest(g, file, smoke)?;
    if revs.revs.is_empty() {
        return Ok(exp);
    }
    let text =
        manifest::with_revisions(&exp.text, &revs.revs, revs.build.as_deref()).map_err(CommandError::BadInput)?;
    Ok(manifest::parse_str(file, &text, smoke)?)
}

/// Resolves the git revisions of `exp`, checks them out and builds them (those `builds` does
/// not hold): everything a git variant needs before its first trial. `pinned`: commits a
/// resumed run keeps.
fn prepare_revisions(
    exp: &mut Experiment,
    pinned: &std::collections::HashMap<String, String>,
    quiet: bool,
    builds: &mut crate::gitrev::Builds,
) -> Result<(), CommandError> {
    if !exp.has_revisions() {
        return Ok(());
    }
    for note in crate::gitrev::resolve(exp, pinned)? {
        if !quiet {
            eprintln!("{note}");
        }
    }
    Ok(crate::gitrev::prepare(exp, quiet, builds)?)
}

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

/// The templates folder next to where measured runs, if there is one (else built-in copies).
pub fn templates_dir() -> Option<&'static Path> {
    let p = Path::new("templates");
    p.join("report.md.j2").is_file().then_some(p)
}

/// Loads a stored run with its validated manifest and trials.
fn load_stored(db: &Db, id: &str) -> Result<StoredRun, CommandError> {
    let row = db::wait(store::load_run(db, id))?;
    let trials = db::wait(store::load_trials(db, &row.id))?;
    stored_run(row, trials)
}

fn stored_run(row: store::RunRow, trials: Vec<TrialRecord>) -> Result<StoredRun, CommandError> {
    StoredRun::new(row, trials).map_err(|e| CommandError::BadInput(e.to_string()))
}

/// The command line that runs the same experiment again: `measured <verb> <manifest> --seed
/// ...`, plus the databases where they are not the defaults (so a run that read a stock
/// database of its own says which), passwords redacted and every word shell-quoted.
pub(crate) fn reproduce_command(verb: &str, exp: &Experiment, seed: u64, g: &Globals) -> String {
    let mut words = vec![
        "measured".to_owned(),
        verb.to_owned(),
        from_repository_root(&exp.path).display().to_string(),
        "--seed".to_owned(),
        seed.to_string(),
    ];
    if exp.smoke {
        words.push("--smoke".to_owned());
    }
    // The default database of the manifest's project is the default from its root too.
    let default = crate::paths::Root::of_manifest(&exp.path).database(None);
    if g.database != db::DEFAULT_SQLITE_PATH && g.database != default {
        words.extend(["--database".to_owned(), db::redact_url(&g.database)]);
    }
    if let Some(stock) = &g.stock_database {
        words.extend(["--stock-database".to_owned(), db::redact_url(stock)]);
    }
    // Quoting fails only on a NUL byte, which no path or URL given on a command line holds.
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
}

/// `manifest` relative to the root of the git repository holding it, where a reproduce line
/// runs from (`experiments/x.toml`, however the manifest was named when the run started); as
/// given outside a repository, or when it cannot be found.
fn from_repository_root(manifest: &Path) -> std::path::PathBuf {
    let found = std::fs::canonicalize(manifest).ok().and_then(|file| {
        let root = crate::paths::git_root(file.parent()?)?;
        Some(file.strip_prefix(root).ok()?.to_path_buf())
    });
    found.unwrap_or_else(|| manifest.to_path_buf())
}

/// The environment a run of `exp` is recorded with, read from the manifest's directory (its git
/// state belongs to the experiment, not to wherever the command was started).
pub(crate) fn experiment_env(exp: &Experiment) -> Fingerprint {
    Fingerprint::collect(exp.dir())
}

/// Opens the results database to read from it; `None` when it is a SQLite file that does not
/// exist (reading creates neither the file nor its folder).
fn open_existing(url: &str) -> Result<Option<Db>, CommandError> {
    if db::is_sqlite_url(url) && db::sqlite_file_id(url).is_none() {
        return Ok(None);
    }
    Ok(Some(Db::open(url)?))
}

/// Opens the results database to read run `run` from it; an error naming the database when it
/// does not exist.
fn open_for_run(url: &str, run: &str) -> Result<Db, CommandError> {
    open_existing(url)?.ok_or_else(|| {
        CommandError::BadInput(format!(
            "no run matches `{run}`: no runs stored yet in {}\n\
             hint: `measured run MANIFEST` stores runs there (results/ under the manifest's git root by default); \
             to read another database, pass --database or set DATABASE_URL",
            db::redact_url(url)
        ))
    })
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
                other => eprintln!("error: {}", crate::printable::error_chain(other)),
            }
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests;
