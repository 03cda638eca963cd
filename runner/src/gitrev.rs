//! Git revisions as variants, made ready before any trial runs (manifest -> **gitrev** -> exec).
//!
//! Each revision a variant names (`git = "main"`, `--rev main`) is resolved to a commit of the
//! repository holding the manifest, checked out into a cached `git worktree` under
//! `<repository root>/.measured/worktrees/<sha>` (reused by later runs, excluded from the
//! user's `git status`), and built once with the variant's `build` command, its output logged
//! beside the checkout. The manifest itself is always the one given: a checkout only supplies
//! the code its stages run.
//!
//! Only the `git` command line is used, always with explicit arguments; the build command is
//! the one shell string, and it is the user's own.

use crate::manifest::{same_code_twice, short_commit, Experiment, Resolved, Revision};
use crate::measure::NO_REPO_COMMANDS;
use crate::record::TrialRecord;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

/// Why revisions could not be made ready: the manifest or command line names one that cannot
/// serve (bad input, exit 2), or git, the file system or a build failed (exit 1). `commands`
/// maps it to the exit code.
#[derive(Debug, thiserror::Error)]
pub enum GitRevError {
    #[error("{0}")]
    BadInput(String),
    #[error(transparent)]
    Runtime(#[from] anyhow::Error),
}

/// The folder under the repository root that holds the checkouts and their build logs.
pub const CACHE_DIR: &str = ".measured";

/// How many lines of a failed build's output its error shows.
const BUILD_TAIL_LINES: usize = 20;

/// The repository holding a manifest.
struct Repo {
    /// Its top-level folder, absolute.
    root: PathBuf,
    /// The manifest's folder relative to `root` (empty at the root).
    rel: PathBuf,
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.args(NO_REPO_COMMANDS).arg("-C").arg(dir).stdin(Stdio::null());
    c
}

/// Runs a git command to its end, its output captured.
fn output(cmd: &mut Command) -> Result<Output, GitRevError> {
    cmd.output().map_err(|e| {
        GitRevError::BadInput(format!(
            "cannot run git: {e}\nhint: variants with `git` need the git command line installed and on PATH"
        ))
    })
}

/// The first line of a successful git command's output.
fn line(cmd: &mut Command) -> Result<Option<String>, GitRevError> {
    let out = output(cmd)?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty()))
}

/// The variants that name a revision, each once, in manifest order.
fn revisions(exp: &Experiment) -> Vec<(String, Revision)> {
    let mut out: Vec<(String, Revision)> = Vec::new();
    for c in &exp.configs {
        if let Some(r) = &c.revision {
            if !out.iter().any(|(v, _)| *v == c.variant) {
                out.push((c.variant.clone(), r.clone()));
            }
        }
    }
    out
}

impl Repo {
    fn of(exp: &Experiment, variant: &str, rev: &str) -> Result<Repo, GitRevError> {
        Repo::holding(exp)?.ok_or_else(|| {
            GitRevError::BadInput(format!(
                "variant `{variant}` names the git revision `{rev}`, but the manifest {} is not inside a git repository\n\
                 hint: keep the manifest in the repository whose revisions it compares (`git init` makes one there); \
                 variants without `git` need no repository",
                exp.path.display()
            ))
        })
    }

    /// The repository holding the manifest of `exp`, if there is one.
    fn holding(exp: &Experiment) -> Result<Option<Repo>, GitRevError> {
        let dir = exp.dir();
        let root = if dir.is_dir() {
            line(git(dir).args(["rev-parse", "--show-toplevel"]))?
        } else {
            None
        };
        let Some(root) = root.map(PathBuf::from) else {
            return Ok(None);
        };
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let rel = canonical(dir)
            .strip_prefix(canonical(&root))
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok(Some(Repo { root, rel }))
    }

    fn checkout(&self, commit: &str) -> PathBuf {
        self.root.join(CACHE_DIR).join("worktrees").join(commit)
    }

    /// The manifest's folder inside a checkout (or inside the working tree at `top`).
    fn manifest_dir(&self, top: &Path) -> PathBuf {
        if self.rel.as_os_str().is_empty() {
            top.to_path_buf()
        } else {
            top.join(&self.rel)
        }
    }

    /// The full sha of the commit `rev` names, if it names one.
    fn commit(&self, rev: &str) -> Result<Option<String>, GitRevError> {
        line(
            git(&self.root)
                .args(["rev-parse", "--verify", "--quiet"])
                .arg(format!("{rev}^{{commit}}")),
        )
    }

    /// Whether tracked files in `dir` differ from its commit (untracked files, such as build
    /// outputs, do not count, as for the run's own commit).
    fn dirty(dir: &Path) -> Result<Option<String>, GitRevError> {
        let out = output(git(dir).args(["status", "--porcelain", "--untracked-files=no"]))?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Ok((!text.is_empty()).then_some(text))
    }
}

/// Commits the stored trials of a run ran, per variant naming a revision: a resumed run runs
/// the rest of its trials on them, whatever its branches point at now.
pub fn pinned(exp: &Experiment, stored: &[TrialRecord]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for t in stored {
        let is_commit = exp
            .configs
            .iter()
            .any(|c| c.variant == t.variant && c.revision.as_ref().is_some_and(|r| !r.is_worktree()));
        if let (true, Some(commit)) = (is_commit, &t.git_commit) {
            out.entry(t.variant.clone()).or_insert_with(|| commit.clone());
        }
    }
    out
}

/// Resolves every revision of `exp` to a commit and says where its checkout is (nothing is
/// checked out or built: `plan` shows this much). `pinned` holds commits a resumed run keeps.
/// Returns notes for the user.
pub fn resolve(exp: &mut Experiment, pinned: &HashMap<String, String>) -> Result<Vec<String>, GitRevError> {
    let revs = revisions(exp);
    let Some((first_variant, first)) = revs.first() else {
        return Ok(Vec::new());
    };
    let repo = Repo::of(exp, first_variant, &first.rev)?;
    let mut notes = Vec::new();
    let mut resolved: HashMap<String, Resolved> = HashMap::new();
    for (variant, rev) in &revs {
        let r = if rev.is_worktree() {
            let commit = repo.commit("HEAD")?.ok_or_else(|| {
                GitRevError::BadInput(format!(
                    "variant `{variant}` is the working tree (`{}`), but the repository {} has no commit yet\n\
                     hint: commit once (`git commit`), so the working tree's changes are relative to a commit",
                    rev.rev,
                    repo.root.display()
                ))
            })?;
            Resolved {
                dirty: Repo::dirty(&repo.root)?.is_some(),
                commit,
                checkout: repo.root.clone(),
                dir: repo.manifest_dir(&repo.root),
            }
        } else {
            let wanted = pinned.get(variant).unwrap_or(&rev.rev);
            let Some(commit) = repo.commit(wanted)? else {
                let why = if pinned.contains_key(variant) {
                    format!(
                        "variant `{variant}` ran commit {wanted} (revision `{}`) when the run started, and the repository {} no longer has it",
                        rev.rev,
                        repo.root.display()
                    )
                } else {
                    format!(
                        "variant `{variant}`: `{}` is not a commit in the repository {}",
                        rev.rev,
                        repo.root.display()
                    )
                };
                return Err(GitRevError::BadInput(format!(
                    "{why}\nhint: `git branch -a` lists branches and tags, `git log --oneline` lists commits"
                )));
            };
            let checkout = repo.checkout(&commit);
            Resolved {
                dir: repo.manifest_dir(&checkout),
                dirty: false,
                commit,
                checkout,
            }
        };
        resolved.insert(variant.clone(), r);
    }
    // One checkout per commit: two builds of it would overwrite each other's outputs.
    for (i, (a, ra)) in revs.iter().enumerate() {
        for (b, rb) in &revs[i + 1..] {
            let (x, y) = (&resolved[a], &resolved[b]);
            if !ra.is_worktree() && !rb.is_worktree() && x.commit == y.commit && ra.build != rb.build {
                return Err(GitRevError::BadInput(format!(
                    "variants `{a}` and `{b}` are both commit {} but build it differently ({} vs {}): they would share one checkout\n\
                     hint: give them the same `build`, and vary what differs through stage parameters",
                    short_commit(&x.commit),
                    shown_build(ra.build.as_deref()),
                    shown_build(rb.build.as_deref())
                )));
            }
        }
    }
    for c in &mut exp.configs {
        if let Some(r) = &mut c.revision {
            r.resolved = resolved.get(&c.variant).cloned();
        }
    }
    if let Some((a, b, commit)) = same_code_twice(exp) {
        return Err(GitRevError::BadInput(format!(
            "variants `{a}` and `{b}` run the same code: both are commit {} with the same build and parameters, \
             so the comparison would measure noise\n\
             hint: name two different revisions (`git log --oneline --all` lists them), or set allow_identical = true \
             in [compare] for an A/A run",
            short_commit(&commit)
        )));
    }
    if revs.iter().any(|(_, r)| !r.is_worktree()) {
        let path = std::fs::canonicalize(&exp.path).unwrap_or_else(|_| exp.path.clone());
        let status = output(git(&repo.root).args(["status", "--porcelain", "--"]).arg(&path))?;
        if !status.stdout.is_empty() {
            notes.push(format!(
                "note: {} has uncommitted changes; every variant runs with this manifest as it is now, \
                 not as committed at its revision (checkouts only supply the code)",
                exp.path.display()
            ));
        }
    }
    Ok(notes)
}

/// A commit on the line `measured bisect` searches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineCommit {
    pub sha: String,
    /// An abbreviation of at least 12 hex digits that git reads as this commit alone.
    pub short: String,
    /// The first line of its message.
    pub subject: String,
}

/// `good`, then the commits of `bad`'s first-parent line after it, oldest first, ending with
/// `bad`: what `measured bisect` searches, in the manifest's repository. Bad input when
/// either is not a commit there, or `good` is not an ancestor of `bad`.
pub fn first_parent_line(exp: &Experiment, good: &str, bad: &str) -> Result<Vec<LineCommit>, GitRevError> {
    for (flag, rev) in [("--good", good), ("--bad", bad)] {
        if let Some((message, hint)) = crate::manifest::check_rev(rev) {
            return Err(GitRevError::BadInput(format!("{flag}: {message}\nhint: {hint}")));
        }
    }
    let repo = Repo::holding(exp)?.ok_or_else(|| {
        GitRevError::BadInput(format!(
            "the manifest {} is not inside a git repository, so there are no commits to search\n\
             hint: keep the manifest in the repository whose history it bisects",
            exp.path.display()
        ))
    })?;
    let mut ends = Vec::new();
    for (flag, rev) in [("--good", good), ("--bad", bad)] {
        let commit = repo.commit(rev)?.ok_or_else(|| {
            GitRevError::BadInput(format!(
                "{flag} `{rev}` is not a commit in the repository {}\n\
                 hint: `git log --oneline` lists commits, `git branch -a` branches and tags",
                repo.root.display()
            ))
        })?;
        ends.push(commit);
    }
    let (good_sha, bad_sha) = (&ends[0], &ends[1]);
    let ancestor = output(git(&repo.root).args(["merge-base", "--is-ancestor", good_sha, bad_sha]))?;
    if good_sha == bad_sha || !ancestor.status.success() {
        return Err(GitRevError::BadInput(format!(
            "--good `{good}` is not an earlier commit than --bad `{bad}` ({} and {}): bisect searches the commits after \
             the good one up to the bad one\n\
             hint: --good names the older commit where the metric was good, --bad a later one where it is worse",
            short_commit(good_sha),
            short_commit(bad_sha)
        )));
    }
    let log = |range: &[&str]| -> Result<Vec<LineCommit>, GitRevError> {
        let out = output(
            git(&repo.root)
                .args([
                    "log",
                    "--first-parent",
                    "--reverse",
                    "--abbrev=12",
                    "--format=%H%x09%h%x09%s",
                ])
                .args(range),
        )?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut parts = l.splitn(3, '\t');
                Some(LineCommit {
                    sha: parts.next()?.to_owned(),
                    short: parts.next()?.to_owned(),
                    subject: parts.next().unwrap_or_default().to_owned(),
                })
            })
            .collect())
    };
    let mut line = log(&["-1", good_sha.as_str()])?;
    line.extend(log(&[&format!("{good_sha}..{bad_sha}")])?);
    if line.len() < 2 || line.last().map(|c| &c.sha) != Some(bad_sha) {
        return Err(GitRevError::Runtime(anyhow::anyhow!(
            "git did not list the commits from {} to {}",
            short_commit(good_sha),
            short_commit(bad_sha)
        )));
    }
    Ok(line)
}

fn shown_build(build: Option<&str>) -> String {
    match build {
        Some(b) => format!("`{b}`"),
        None => "no build".into(),
    }
}

/// The checkouts made ready so far, each with its build, and whether a build changed their
/// tracked files. A run starts with none; `measured bisect` keeps one over its steps, so that
/// each commit is checked out and built once however many steps compare it.
#[derive(Debug, Default)]
pub struct Builds {
    built: Vec<(PathBuf, Option<String>)>,
    changed: HashMap<PathBuf, bool>,
}

/// Checks out every resolved revision of `exp` (reusing a checkout already at its commit) and
/// runs each distinct build once, skipping those `builds` holds. Progress and notes go to
/// stderr unless `quiet`.
pub fn prepare(exp: &mut Experiment, quiet: bool, builds: &mut Builds) -> Result<(), GitRevError> {
    let revs = revisions(exp);
    let Some((first_variant, first)) = revs.first() else {
        return Ok(());
    };
    let root = Repo::of(exp, first_variant, &first.rev)?.root;
    let say = |s: String| {
        if !quiet {
            eprintln!("{s}");
        }
    };
    if revs.iter().any(|(_, r)| !r.is_worktree()) {
        exclude_cache(&root)?;
    }
    // (checkout, build) pairs already done, and the checkouts whose tracked files changed.
    let Builds { built, changed } = builds;
    for (variant, rev) in &revs {
        let Some(r) = &rev.resolved else { continue };
        if !rev.is_worktree() && !built.iter().any(|(c, _)| *c == r.checkout) {
            let reused = ensure_checkout(&root, &r.checkout, &r.commit)?;
            say(format!(
                "variant `{variant}`: {} {} {}",
                rev.shown(&r.commit),
                if reused {
                    "reuses its checkout"
                } else {
                    "checked out into"
                },
                r.checkout.display()
            ));
        }
        // The manifest's folder may be new since this commit: paths relative to it must
        // still resolve in the checkout.
        std::fs::create_dir_all(&r.dir)
            .map_err(|e| GitRevError::Runtime(anyhow::anyhow!("cannot create {}: {e}", r.dir.display())))?;
        let key = (r.checkout.clone(), rev.build.clone());
        if built.contains(&key) {
            continue;
        }
        built.push(key);
        if let Some(cmd) = &rev.build {
            build(variant, rev, r, cmd, &root, &say)?;
        }
        // A build may change tracked files (a lock file, generated sources): then the code is
        // no longer exactly the commit, and the trials say so.
        if !changed.contains_key(&r.checkout) {
            let dirty = Repo::dirty(&r.checkout)?;
            if let (Some(files), false) = (&dirty, rev.is_worktree()) {
                say(format!(
                    "note: tracked files differ from commit {} in the checkout {} ({}): its trials are recorded as dirty",
                    short_commit(&r.commit),
                    r.checkout.display(),
                    files.lines().take(3).map(str::trim).collect::<Vec<_>>().join(", ")
                ));
            }
            changed.insert(r.checkout.clone(), dirty.is_some());
        }
    }
    for c in &mut exp.configs {
        if let Some(r) = c.revision.as_mut().and_then(|r| r.resolved.as_mut()) {
            if changed.get(&r.checkout).copied().unwrap_or(false) {
                r.dirty = true;
            }
        }
    }
    Ok(())
}

/// Keeps the cache folder out of the user's `git status` (for every worktree of the
/// repository), without touching any tracked file such as `.gitignore`.
fn exclude_cache(root: &Path) -> Result<(), GitRevError> {
    let Some(common) = line(git(root).args(["rev-parse", "--git-common-dir"]))? else {
        return Ok(());
    };
    let info = root.join(common).join("info");
    let path = info.join("exclude");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let entry = format!("/{CACHE_DIR}/");
    if text.lines().any(|l| {
        let l = l.trim();
        l == entry || l.trim_matches('/') == CACHE_DIR
    }) {
        return Ok(());
    }
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(&info)?;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        let sep = if text.is_empty() || text.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        write!(f, "{sep}# checkouts of git revisions made by measured\n{entry}\n")
    };
    write().map_err(|e| GitRevError::Runtime(anyhow::anyhow!("cannot write {}: {e}", path.display())))
}

/// Makes `path` a checkout of `commit`; `true` when one was there already.
fn ensure_checkout(root: &Path, path: &Path, commit: &str) -> Result<bool, GitRevError> {
    if path.exists() {
        // Its own top level (not merely a folder of the enclosing repository) at the commit.
        let top = line(git(path).args(["rev-parse", "--show-toplevel"]))?;
        let same_top = top.is_some_and(|t| std::fs::canonicalize(t).ok() == std::fs::canonicalize(path).ok());
        if same_top && line(git(path).args(["rev-parse", "HEAD"]))?.as_deref() == Some(commit) {
            return Ok(true);
        }
        // A broken or moved checkout in the cache: made again from scratch.
        let _ = output(git(root).args(["worktree", "remove", "--force"]).arg(path))?;
        if path.exists() {
            std::fs::remove_dir_all(path).map_err(|e| {
                GitRevError::Runtime(anyhow::anyhow!(
                    "cannot remove the stale checkout {}: {e}",
                    path.display()
                ))
            })?;
        }
    }
    // A checkout deleted by hand is still registered; git refuses to add it again until pruned.
    let _ = output(git(root).args(["worktree", "prune"]))?;
    let out = output(
        git(root)
            .args(["worktree", "add", "--detach", "--quiet"])
            .arg(path)
            .arg(commit),
    )?;
    if !out.status.success() {
        return Err(GitRevError::Runtime(anyhow::anyhow!(
            "cannot check out commit {} into {}: {}",
            short_commit(commit),
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(false)
}

/// Runs a variant's build command in the manifest's folder of its checkout, output logged
/// beside the checkout; a failure is an error with the log's last lines.
fn build(
    variant: &str,
    rev: &Revision,
    r: &Resolved,
    cmd: &str,
    root: &Path,
    say: &dyn Fn(String),
) -> Result<(), GitRevError> {
    let log = if rev.is_worktree() {
        root.join(CACHE_DIR).join("worktree.build.log")
    } else {
        r.checkout.with_extension("build.log")
    };
    say(format!("variant `{variant}`: building in {}: {cmd}", r.dir.display()));
    let started = Instant::now();
    let status = (|| -> std::io::Result<std::process::ExitStatus> {
        if let Some(parent) = log.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = File::create(&log)?;
        Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(&r.dir)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .status()
    })()
    .map_err(|e| GitRevError::Runtime(anyhow::anyhow!("cannot run the build of variant `{variant}`: {e}")))?;
    if status.success() {
        say(format!(
            "variant `{variant}`: built in {:.1} s (log: {})",
            started.elapsed().as_secs_f64(),
            log.display()
        ));
        return Ok(());
    }
    let how = match status.code() {
        Some(code) => format!("exited with code {code}"),
        None => "was killed by a signal".to_owned(),
    };
    let tail = tail_lines(&log, BUILD_TAIL_LINES);
    let shown = if tail.is_empty() {
        "(no output)".to_owned()
    } else {
        tail.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
    };
    Err(GitRevError::BadInput(format!(
        "the build of variant `{variant}` ({}) {how}: {cmd}\n\
         log: {}\nlast lines of its output:\n{shown}\n\
         hint: run the command in {} to see why; no trial ran and nothing was stored",
        rev.shown(&r.commit),
        log.display(),
        r.dir.display()
    )))
}

fn tail_lines(path: &Path, n: usize) -> Vec<String> {
    let Ok(f) = File::open(path) else { return Vec::new() };
    let mut lines = VecDeque::with_capacity(n + 1);
    for l in BufReader::new(f).split(b'\n').map_while(Result::ok) {
        lines.push_back(String::from_utf8_lossy(&l).trim_end().to_owned());
        if lines.len() > n {
            lines.pop_front();
        }
    }
    lines.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_log_keeps_its_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.log");
        std::fs::write(&p, (1..=30).map(|i| format!("line {i}\n")).collect::<String>()).unwrap();
        let tail = tail_lines(&p, 3);
        assert_eq!(tail, ["line 28", "line 29", "line 30"]);
        assert!(tail_lines(&dir.path().join("none"), 3).is_empty());
    }
}
