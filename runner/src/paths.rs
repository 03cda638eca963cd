//! Where default locations resolve (cli -> **paths** -> commands): the results folder and the
//! default SQLite database belong to the project that holds the manifest, not to whichever
//! folder a command happens to be started from.
//!
//! The project root is the nearest folder holding `.git` above the manifest (for commands that
//! take one) or above the current directory (for the others, and for a manifest outside any
//! repository, so that `run` and `runs` started in one place agree); without one it is the
//! current directory. Only defaults move: a path the user wrote stays relative to the current
//! directory.

use std::path::{Component, Path, PathBuf};

/// `s` with every character other than ASCII letters, digits, `-` and `_` replaced by `_`: safe
/// as a file name or a job name, whatever a manifest or a command stage named things.
pub fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether `s` has the shape of a run id as measured makes them: `YYYYMMDD-HHMMSS-xxxx`, the
/// last part four lowercase hex digits.
pub fn is_valid_run_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 15 => c == b'-',
            16..=19 => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
            _ => c.is_ascii_digit(),
        })
}

/// A name read back from a database that cannot become a path: an experiment name or a run id
/// someone edited there.
#[derive(Debug, thiserror::Error)]
#[error(
    "the database names {what} {name:?}, which is not a valid {what}; \
     refusing to make it a path under {results} (was the database edited by hand?)"
)]
pub struct UnsafeName {
    what: &'static str,
    name: String,
    results: String,
}

/// Checks an experiment name and a run id read back from a database before they name files.
pub fn check_stored(results_dir: &Path, experiment: &str, run_id: &str) -> Result<(), UnsafeName> {
    experiment_dir(results_dir, experiment)?;
    if !is_valid_run_id(run_id) {
        return Err(unsafe_name(results_dir, "run id", run_id));
    }
    Ok(())
}

/// `results_dir/<experiment>`, for a name read from a database or typed by a user: refused
/// unless it is a valid experiment name and the folder stays under `results_dir`.
pub fn experiment_dir(results_dir: &Path, experiment: &str) -> Result<PathBuf, UnsafeName> {
    let dir = results_dir.join(experiment);
    let stays = dir.strip_prefix(results_dir).is_ok_and(|rel| {
        rel.components().count() == 1 && matches!(rel.components().next(), Some(Component::Normal(_)))
    });
    if !is_valid_name(experiment) || !stays {
        return Err(unsafe_name(results_dir, "experiment name", experiment));
    }
    Ok(dir)
}

/// `results_dir/<experiment>/<run_id>`, the folder of a stored run's report: both names checked
/// as by [`check_stored`].
pub fn run_dir(results_dir: &Path, experiment: &str, run_id: &str) -> Result<PathBuf, UnsafeName> {
    check_stored(results_dir, experiment, run_id)?;
    Ok(experiment_dir(results_dir, experiment)?.join(run_id))
}

fn unsafe_name(results_dir: &Path, what: &'static str, name: &str) -> UnsafeName {
    UnsafeName {
        what,
        name: name.to_owned(),
        results: results_dir.display().to_string(),
    }
}

/// The folder under the project root that holds reports, journals and the default database.
pub const RESULTS_DIR: &str = "results";

/// The nearest folder at or above `start` that holds `.git`: a folder in a clone, a file in a
/// linked worktree or a submodule. `start` should be absolute, or the walk stops early.
pub fn git_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// The folder default locations resolve against, as a path usable from the current directory:
/// empty when it is the current directory (paths read as they always did, `results/...`),
/// absolute otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root(PathBuf);

impl Root {
    /// The git root of the current directory, else the current directory.
    pub fn of_cwd() -> Root {
        Self::resolve(None)
    }

    /// The git root of the folder holding `manifest`, else as [`Root::of_cwd`] (also when that
    /// folder is not there: a stored manifest path read from elsewhere).
    pub fn of_manifest(manifest: &Path) -> Root {
        Self::resolve(Some(manifest))
    }

    fn resolve(manifest: Option<&Path>) -> Root {
        match std::env::current_dir() {
            Ok(cwd) => Self::resolve_in(&cwd, manifest),
            Err(_) => Root(PathBuf::new()),
        }
    }

    /// [`Root::resolve`] from the current directory `cwd` (absolute).
    fn resolve_in(cwd: &Path, manifest: Option<&Path>) -> Root {
        // Canonical paths on both sides: a manifest reached through `..` or a symlink must find
        // the same root as the current directory it lies under.
        let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let of_manifest = manifest
            .and_then(|m| cwd.join(m).parent().map(Path::to_path_buf))
            .and_then(|dir| std::fs::canonicalize(dir).ok())
            .and_then(|dir| git_root(&dir));
        match of_manifest.or_else(|| git_root(&cwd)) {
            Some(root) if root != cwd => Root(root),
            _ => Root(PathBuf::new()),
        }
    }

    /// The results folder: `given` as written, else `results/` under the root.
    pub fn results_dir(&self, given: Option<&Path>) -> PathBuf {
        match given {
            Some(p) => p.to_path_buf(),
            None => self.0.join(RESULTS_DIR),
        }
    }

    /// The results database: `given` as written, else the SQLite file under the root.
    pub fn database(&self, given: Option<&str>) -> String {
        match given {
            Some(url) => url.to_owned(),
            None => self.0.join(crate::db::DEFAULT_SQLITE_PATH).display().to_string(),
        }
    }
}

/// `path` as seen from the current directory: for links in text read elsewhere (a pull-request
/// comment), where an absolute path of this machine means nothing. Relative paths stay as they
/// are; an absolute one gets `..` segments where it lies outside the current directory.
pub fn relative_to_cwd(path: &Path) -> PathBuf {
    match std::env::current_dir() {
        Ok(cwd) => relative_to(path, &cwd),
        Err(_) => path.to_owned(),
    }
}

fn relative_to(path: &Path, base: &Path) -> PathBuf {
    if !path.is_absolute() || !base.is_absolute() {
        return path.to_owned();
    }
    let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out: PathBuf = std::iter::repeat_n("..", b.len() - common).collect();
    out.extend(&p[common..]);
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// A name that may become part of a path: an experiment, stage or variant name.
/// At most 64 ASCII letters, digits, `_` and `-`.
pub fn is_valid_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A new run's id: its UTC start time and 16 random bits (`20261125-114200-3fa2`).
pub(crate) fn new_run_id() -> String {
    format!(
        "{}-{:04x}",
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        rand::random::<u16>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_have_the_shape_measured_gives_them() {
        assert!(is_valid_run_id(&new_run_id()));
        assert!(is_valid_run_id("20261124-183300-f224"));
        for bad in [
            "",
            "r1",
            "../20261124-183300-f224",
            "20261124-183300-F224",
            "20261124-183300-f22/",
            "20261124_183300-f224",
        ] {
            assert!(!is_valid_run_id(bad), "{bad}");
        }
    }

    #[test]
    fn names_read_from_a_database_stay_under_the_results_folder() {
        let results = Path::new("results");
        assert_eq!(
            run_dir(results, "exp", "20261124-183300-f224").unwrap(),
            PathBuf::from("results/exp/20261124-183300-f224")
        );
        for exp in ["../../x", "/etc", "a/b", "..", ".", ""] {
            let e = run_dir(results, exp, "20261124-183300-f224").unwrap_err().to_string();
            assert!(e.contains("experiment name") && e.contains("refusing"), "{exp}: {e}");
        }
        let e = run_dir(results, "exp", "../../r").unwrap_err().to_string();
        assert!(e.contains("run id \"../../r\""), "{e}");
    }

    #[test]
    fn paths_are_shown_relative_to_a_base() {
        let base = Path::new("/srv/repo");
        assert_eq!(
            relative_to(Path::new("/srv/repo/results/x"), base),
            PathBuf::from("results/x")
        );
        assert_eq!(
            relative_to(Path::new("/srv/other/r"), base),
            PathBuf::from("../other/r")
        );
        assert_eq!(relative_to(Path::new("/srv/repo"), base), PathBuf::from("."));
        assert_eq!(relative_to(Path::new("results/x"), base), PathBuf::from("results/x"));
    }

    #[test]
    fn the_git_root_is_the_nearest_folder_with_git_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let inner = top.join("a/b/c");
        std::fs::create_dir_all(&inner).unwrap();
        // Nothing inside: whatever lies above the temporary folder (usually nothing).
        assert_eq!(git_root(&inner), git_root(&top));
        std::fs::create_dir(top.join("a/.git")).unwrap();
        assert_eq!(git_root(&inner), Some(top.join("a")));
        assert_eq!(git_root(&top.join("a")), Some(top.join("a")));
        // A linked worktree or submodule has a `.git` file, and it is nearer.
        std::fs::write(top.join("a/b/.git"), "gitdir: elsewhere\n").unwrap();
        assert_eq!(git_root(&inner), Some(top.join("a/b")));
    }

    #[test]
    fn the_root_follows_the_manifest_else_the_current_directory() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let repo = top.join("repo");
        let outside = top.join("outside");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("experiments")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let manifest = repo.join("experiments/m.toml");
        std::fs::write(&manifest, "").unwrap();
        // From outside the repository: the manifest's repository, absolute.
        assert_eq!(Root::resolve_in(&outside, Some(&manifest)), Root(repo.clone()));
        // From a subfolder, with the manifest given relative to it.
        let sub = repo.join("experiments");
        assert_eq!(Root::resolve_in(&sub, Some(Path::new("m.toml"))), Root(repo.clone()));
        assert_eq!(Root::resolve_in(&sub, None), Root(repo.clone()));
        // At the root itself the paths stay relative, as they always read.
        assert_eq!(Root::resolve_in(&repo, None), Root(PathBuf::new()));
        assert_eq!(
            Root::resolve_in(&repo, Some(Path::new("experiments/../experiments/m.toml"))),
            Root(PathBuf::new())
        );
        // A manifest whose folder is gone: as for the current directory.
        assert_eq!(
            Root::resolve_in(&sub, Some(Path::new("gone/m.toml"))),
            Root::resolve_in(&sub, None)
        );
        // No repository (unless the temporary folder lies in one): a manifest outside any
        // goes with the current directory's repository, else the current directory.
        if git_root(&top).is_none() {
            assert_eq!(
                Root::resolve_in(&sub, Some(&outside.join("m.toml"))),
                Root(repo.clone())
            );
            assert_eq!(
                Root::resolve_in(&outside, Some(Path::new("m.toml"))),
                Root(PathBuf::new())
            );
            assert_eq!(Root::resolve_in(&outside, None), Root(PathBuf::new()));
        }
    }

    #[test]
    fn defaults_go_under_the_root_and_given_paths_stay_as_written() {
        let root = Root(PathBuf::from("/srv/repo"));
        assert_eq!(root.results_dir(None), PathBuf::from("/srv/repo/results"));
        assert_eq!(root.results_dir(Some(Path::new("out"))), PathBuf::from("out"));
        assert_eq!(root.database(None), "/srv/repo/results/measured.sqlite");
        assert_eq!(root.database(Some("x.sqlite")), "x.sqlite");
        let here = Root(PathBuf::new());
        assert_eq!(here.results_dir(None), PathBuf::from("results"));
        assert_eq!(here.database(None), crate::db::DEFAULT_SQLITE_PATH);
    }
}
