//! The local journal of a run's results (exec -> **journal** -> store): every finished trial
//! is appended to a JSON-lines file and flushed to disk (fsync) *before* it is written to the
//! database, so a trial survives a database outage, a lost commit, a deleted results file, a
//! crash and a kill.
//!
//! The file lies beside the run's report directory: `<results>/<experiment>/<run>.journal.jsonl`.
//! Its first line holds the run row (so a database that lost the run can be given it again),
//! then one line per finished trial, then, once the run ended, its status. Replaying it
//! ([`flush`]) stores each trial exactly once (the primary key decides), in journal order. A
//! run deletes its journal once the database holds everything in it.

use crate::db;
use crate::db::Db;
use crate::record::TrialRecord;
use crate::store::{self, RunHeader, RunStatus, StoreError};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The journal format's version, written into every file.
const VERSION: u32 = 1;

/// Bounds on what is read back: a journal is local input, but still input.
const MAX_LINE_BYTES: usize = 256 << 20;

/// One line of a journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Entry {
    Run {
        version: u32,
        run: Box<RunHeader>,
    },
    Trial {
        trial: Box<TrialRecord>,
    },
    Status {
        status: RunStatus,
        finished_at: Option<DateTime<Utc>>,
        /// A sequential run that ended early: the trials it settled on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        planned: Option<u32>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("cannot write the journal {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error("cannot read the journal {path}: {message}")]
    Read { path: String, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the database does not hold trials {missing:?} of run {run} after writing them")]
    Incomplete { run: String, missing: Vec<u32> },
}

/// An open journal, appended to as trials finish.
pub struct Journal {
    path: PathBuf,
    file: File,
    /// Folders made for this journal, deepest first: removed again if the journal leaves
    /// them empty (a `--no-report` run leaves nothing behind).
    made_dirs: Vec<PathBuf>,
}

impl Journal {
    /// Where the journal of `run_id` of `experiment` lives under `results_dir`.
    pub fn path_for(results_dir: &Path, experiment: &str, run_id: &str) -> PathBuf {
        results_dir.join(experiment).join(format!("{run_id}.journal.jsonl"))
    }

    /// Creates the journal (it must not exist) and writes the run header, durably.
    pub fn create(path: &Path, header: &RunHeader) -> Result<Journal, JournalError> {
        let err = |source| JournalError::Write {
            path: path.display().to_string(),
            source,
        };
        let mut made_dirs = Vec::new();
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            made_dirs.push(d.to_owned());
            dir = d.parent();
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(err)?;
        }
        // The journal is written under a name `find` does not list, locked, given its header,
        // and only then linked under its own name: a replay in another process (a second
        // worker of the same folder) never sees a journal without its header, nor one it
        // could lock before this process does.
        let mut staging = path.as_os_str().to_owned();
        staging.push(".new");
        let staging = PathBuf::from(staging);
        // Append mode: every write lands at the end, whatever else wrote to the file.
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&staging)
            .map_err(err)?;
        // Held while this process lives: a replay elsewhere skips a journal still in use.
        file.lock().map_err(err)?;
        let mut j = Journal {
            path: staging.clone(),
            file,
            made_dirs,
        };
        let header_written = j.append(&Entry::Run {
            version: VERSION,
            run: Box::new(header.clone()),
        });
        // A journal of the same run left here was stored (and removed) before a resume, so
        // the name is new: linking fails rather than replacing a journal that exists.
        let linked = header_written.and_then(|()| match std::fs::hard_link(&staging, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(err(e)),
            // A file system without hard links: a rename, atomic as well.
            Err(_) if !path.exists() => std::fs::rename(&staging, path).map_err(err),
            Err(e) => Err(err(e)),
        });
        let _ = std::fs::remove_file(&staging);
        linked?;
        j.path = path.to_owned();
        // The file's directory entry must survive a crash too.
        if let Some(parent) = path.parent() {
            File::open(parent).and_then(|d| d.sync_all()).map_err(err)?;
        }
        Ok(j)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Deletes the journal once the database holds all of it, and the folders made for it
    /// if nothing else is in them.
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
        for d in &self.made_dirs {
            if std::fs::remove_dir(d).is_err() {
                break;
            }
        }
    }

    /// Appends a finished trial; returns once it is on disk.
    pub fn append_trial(&mut self, trial: &TrialRecord) -> Result<(), JournalError> {
        self.writer()?.write_trial(trial)?;
        self.sync()
    }

    /// Another handle that appends trial lines to this journal (from another thread).
    pub fn writer(&self) -> Result<JournalWriter, JournalError> {
        let file = self.file.try_clone().map_err(|source| JournalError::Write {
            path: self.path.display().to_string(),
            source,
        })?;
        Ok(JournalWriter {
            path: self.path.clone(),
            file,
        })
    }

    /// Flushes every line written so far, by any writer, to disk.
    pub fn sync(&self) -> Result<(), JournalError> {
        self.file.sync_data().map_err(|source| JournalError::Write {
            path: self.path.display().to_string(),
            source,
        })
    }

    /// Appends how the run ended (and, for a sequential run that ended early, how many trials
    /// it planned in the end).
    pub fn append_status(
        &mut self,
        status: &RunStatus,
        finished_at: Option<DateTime<Utc>>,
        planned: Option<u32>,
    ) -> Result<(), JournalError> {
        self.append(&Entry::Status {
            status: status.clone(),
            finished_at,
            planned,
        })
    }

    fn append(&mut self, entry: &Entry) -> Result<(), JournalError> {
        write_line(&mut self.file, &self.path, entry)?;
        self.sync()
    }
}

/// Appends trial lines to a journal without waiting for the disk: once a line is written, a
/// crash or kill of this process cannot lose it (the kernel holds it); [`Journal::sync`] puts
/// it on disk.
pub struct JournalWriter {
    path: PathBuf,
    file: File,
}

impl JournalWriter {
    pub fn write_trial(&mut self, trial: &TrialRecord) -> Result<(), JournalError> {
        write_line(
            &mut self.file,
            &self.path,
            &Entry::Trial {
                trial: Box::new(trial.clone()),
            },
        )
    }
}

/// Writes `entry` as one line, in one `write` (the file is opened for appending).
fn write_line(file: &mut File, path: &Path, entry: &Entry) -> Result<(), JournalError> {
    let mut line = serde_json::to_vec(entry).map_err(|e| JournalError::Write {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    line.push(b'\n');
    file.write_all(&line).map_err(|source| JournalError::Write {
        path: path.display().to_string(),
        source,
    })
}

/// What a journal holds.
#[derive(Debug)]
pub struct Contents {
    pub header: RunHeader,
    pub trials: Vec<TrialRecord>,
    /// How the run ended, when it got that far.
    pub status: Option<(RunStatus, Option<DateTime<Utc>>)>,
    /// The trial count a sequential run that ended early settled on.
    pub planned: Option<u32>,
}

/// Reads a journal back. A torn last line (the process died while writing it) is ignored:
/// that trial was never acknowledged, and will run again.
pub fn read(path: &Path) -> Result<Contents, JournalError> {
    let err = |message: String| JournalError::Read {
        path: path.display().to_string(),
        message,
    };
    let file = File::open(path).map_err(|e| err(e.to_string()))?;
    let mut lines = Vec::new();
    let mut reader = BufReader::new(file);
    loop {
        let mut buf = Vec::new();
        let n = reader
            .by_ref()
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(e.to_string()))?;
        if n == 0 {
            break;
        }
        if buf.len() > MAX_LINE_BYTES {
            return Err(err(format!(
                "line {} is longer than {MAX_LINE_BYTES} bytes",
                lines.len() + 1
            )));
        }
        lines.push(buf);
    }
    let mut header = None;
    let mut trials = Vec::new();
    let mut status = None;
    let mut planned = None;
    let last = lines.len();
    for (i, line) in lines.iter().enumerate() {
        let complete = line.ends_with(b"\n");
        match serde_json::from_slice::<Entry>(line) {
            Ok(Entry::Run { version, run }) if i == 0 => {
                if version != VERSION {
                    return Err(err(format!(
                        "journal format version {version}; this measured reads version {VERSION}"
                    )));
                }
                header = Some(*run);
            }
            Ok(Entry::Run { .. }) => return Err(err(format!("line {}: a second run header", i + 1))),
            Ok(Entry::Trial { trial }) => trials.push(*trial),
            Ok(Entry::Status {
                status: s,
                finished_at,
                planned: p,
            }) => {
                status = Some((s, finished_at));
                planned = p;
            }
            Err(_) if i + 1 == last && !complete => {}
            Err(e) => return Err(err(format!("line {}: {e}", i + 1))),
        }
    }
    let header = header.ok_or_else(|| err("no run header".into()))?;
    Ok(Contents {
        header,
        trials,
        status,
        planned,
    })
}

/// The journals under `results_dir` of the run `run` (an id or a unique prefix; `None`: all).
/// Looks one folder down (`<results>/<experiment>/<run>.journal.jsonl`), so it needs no
/// database.
pub fn find(results_dir: &Path, run: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(experiments) = std::fs::read_dir(results_dir) else {
        return out;
    };
    for e in experiments.flatten() {
        let Ok(files) = std::fs::read_dir(e.path()) else {
            continue;
        };
        for f in files.flatten() {
            let name = f.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".journal.jsonl")) else {
                continue;
            };
            if run.is_none_or(|r| id.starts_with(r)) {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

/// A journal taken over for replay: its writer is gone (the lock was free) and no other
/// replay holds it. Dropping it releases the lock.
struct Claimed {
    _lock: File,
}

/// Takes `path` for replay, or `None` when a live process still writes it or another replay
/// holds it (or it is gone: someone else stored and removed it).
fn claim(path: &Path) -> Option<Claimed> {
    let f = File::open(path).ok()?;
    f.try_lock().ok()?;
    // Another replay may have removed it between our open and our lock.
    path.exists().then_some(Claimed { _lock: f })
}

/// Whether a live process holds the journal (it is running the run now).
fn in_use(path: &Path) -> bool {
    File::open(path).is_ok_and(|f| f.try_lock().is_err())
}

/// What a replay did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flushed {
    /// The run row was missing (a new or replaced database) and was written again.
    pub run_restored: bool,
    /// Trials written now.
    pub inserted: usize,
    /// Trials the database already held.
    pub already: usize,
}

/// Replays a journal into `db`: the run row when missing, every trial not yet stored (in
/// journal order, each exactly once), and the final status when the journal has one. Then
/// reads back which trials the database holds: a journal counts as stored only when all of
/// its trials are there.
pub async fn flush(db: &Db, c: &Contents) -> Result<Flushed, JournalError> {
    let mut out = Flushed::default();
    let id = &c.header.id;
    if !store::run_exists(db, id).await? {
        store::insert_run_header(db, &c.header).await?;
        out.run_restored = true;
    }
    // The journal's trials were run by the process that wrote it; its fingerprint is the
    // header's, stored first so the trials can refer to it.
    store::upsert_environment(db, &c.header.env).await?;
    let stored: HashSet<u32> = store::stored_trial_indices(db, id).await?.into_iter().collect();
    for t in &c.trials {
        if stored.contains(&t.index) {
            out.already += 1;
            continue;
        }
        if store::insert_trial_once(db, id, t).await? {
            out.inserted += 1;
        } else {
            out.already += 1;
        }
    }
    if let Some(planned) = c.planned {
        store::set_planned_trials(db, id, planned).await?;
    }
    if let Some((status, finished_at)) = &c.status {
        store::set_run_status(db, id, status, *finished_at).await?;
    }
    let missing = missing(db, c).await?;
    if !missing.is_empty() {
        return Err(JournalError::Incomplete {
            run: id.clone(),
            missing,
        });
    }
    Ok(out)
}

/// What [`store_left`] did with a journal found on disk.
#[derive(Debug)]
pub enum Left {
    /// Written into the database, checked, and removed.
    Stored {
        run: String,
        path: PathBuf,
        flushed: Flushed,
    },
    /// A live process still writes it (or another replay holds it): left alone.
    InUse(PathBuf),
    /// It belongs to another database (the identity it records): left alone.
    Foreign {
        run: String,
        path: PathBuf,
        database: String,
    },
    /// Another replay stored and removed it meanwhile.
    Gone,
}

impl std::fmt::Display for Left {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Left::Stored { run, path, flushed } => write!(
                f,
                "run {run}: stored {} trials from the journal {} ({} were already stored{})",
                flushed.inserted,
                path.display(),
                flushed.already,
                if flushed.run_restored {
                    "; the run row was written again"
                } else {
                    ""
                }
            ),
            Left::InUse(path) => write!(f, "the journal {} is in use by a live process", path.display()),
            Left::Foreign { run, path, database } => write!(
                f,
                "the journal {} holds results of run {run} for the database {}",
                path.display(),
                db::redact_url(database)
            ),
            Left::Gone => write!(f, "the journal was stored by another process"),
        }
    }
}

/// Stores a journal left on disk (its run ended with the database unreachable, or its
/// process died) into `db`, the database at `url`, and removes it: only when no live
/// process holds it and it belongs to that database. The claim is held throughout, so two
/// replays of one journal never race.
pub async fn store_left(db: &Db, path: &Path, url: &str) -> Result<Left, JournalError> {
    let Some(_claimed) = claim(path) else {
        return Ok(if in_use(path) {
            Left::InUse(path.to_owned())
        } else {
            Left::Gone
        });
    };
    let contents = read(path)?;
    if !belongs_to(&contents, url) {
        return Ok(Left::Foreign {
            run: contents.header.id,
            path: path.to_owned(),
            database: contents.header.database,
        });
    }
    let flushed = flush(db, &contents).await?;
    std::fs::remove_file(path).map_err(|source| JournalError::Write {
        path: path.display().to_string(),
        source,
    })?;
    Ok(Left::Stored {
        run: contents.header.id,
        path: path.to_owned(),
        flushed,
    })
}

/// Whether the journal's results belong in the database at `url` (journals written before
/// the identity was recorded are taken to).
fn belongs_to(c: &Contents, url: &str) -> bool {
    c.header.database.is_empty() || c.header.database == db::database_identity(url)
}

/// Trial indices in the journal that `db` does not hold.
async fn missing(db: &Db, c: &Contents) -> Result<Vec<u32>, StoreError> {
    let stored: HashSet<u32> = store::stored_trial_indices(db, &c.header.id)
        .await?
        .into_iter()
        .collect();
    Ok(c.trials
        .iter()
        .map(|t| t.index)
        .filter(|i| !stored.contains(i))
        .collect())
}

#[cfg(test)]
pub(crate) mod tests;
