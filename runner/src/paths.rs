//! Where default locations resolve (cli -> **paths** -> commands): the results folder and the
//! default SQLite database belong to the project that holds the manifest, not to whichever
//! folder a command happens to be started from.
//!
//! The project root is the nearest folder holding `.git` above the manifest (for commands that
//! take one) or above the current directory (for the others, and for a manifest outside any
//! repository, so that `run` and `runs` started in one place agree); without one it is the
//! current directory. Only defaults move: a path the user wrote stays relative to the current
//! directory.

use std::path::{Path, PathBuf};

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
            None => self.0.join(crate::store::DEFAULT_SQLITE_PATH).display().to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(here.database(None), crate::store::DEFAULT_SQLITE_PATH);
    }
}
