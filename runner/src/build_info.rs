//! The commit this binary was built from, and whether its tree had uncommitted changes then.
//!
//! `git describe` runs at compile time (the `git-version` crate), so the answer is fixed in
//! the binary: `measured --version` prints it and every run stores it with its environment.
//! Built outside a git checkout (a crate tarball, a source archive), the commit is unknown and
//! says so.

use std::sync::OnceLock;

/// `git describe` of the build tree: an abbreviated commit with `-dirty` appended when
/// tracked files differed from it; empty when the build had no git checkout or no `git`.
const DESCRIBE: &str = git_version::git_version!(
    args = ["--always", "--dirty=-dirty", "--abbrev=12", "--exclude=*"],
    fallback = ""
);

/// The build's commit as `--version` and reports show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildCommit {
    /// Abbreviated commit; `None` when the build had no git checkout.
    pub commit: Option<String>,
    /// Tracked files differed from `commit` when the binary was built.
    pub dirty: bool,
}

impl BuildCommit {
    /// Reads a `git describe --always --dirty=-dirty` output (empty: unknown).
    pub fn parse(describe: &str) -> Self {
        let describe = describe.trim();
        let (commit, dirty) = match describe.strip_suffix("-dirty") {
            Some(c) => (c, true),
            None => (describe, false),
        };
        BuildCommit {
            commit: (!commit.is_empty()).then(|| commit.to_owned()),
            dirty,
        }
    }

    /// The commit of this binary.
    pub fn current() -> Self {
        Self::parse(DESCRIBE)
    }

    /// `abc1234`, `abc1234-dirty`, or `unknown` (built outside a git checkout).
    pub fn label(&self) -> String {
        match &self.commit {
            Some(c) if self.dirty => format!("{c}-dirty"),
            Some(c) => c.clone(),
            None => "unknown".to_owned(),
        }
    }

    /// What `measured --version` prints after the name: `0.1.0 (abc1234)`,
    /// `0.1.0 (abc1234-dirty)`, or `0.1.0 (commit unknown: built outside a git checkout)`.
    pub fn version_line(&self, version: &str) -> String {
        match &self.commit {
            Some(_) => format!("{version} ({})", self.label()),
            None => format!("{version} (commit unknown: built outside a git checkout)"),
        }
    }
}

/// `measured --version`'s text after the name.
pub fn version() -> &'static str {
    static LINE: OnceLock<String> = OnceLock::new();
    LINE.get_or_init(|| BuildCommit::current().version_line(env!("CARGO_PKG_VERSION")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_output_becomes_the_version_line() {
        let clean = BuildCommit::parse("abc1234def56\n");
        assert_eq!(
            clean,
            BuildCommit {
                commit: Some("abc1234def56".into()),
                dirty: false
            }
        );
        assert_eq!(clean.version_line("0.1.0"), "0.1.0 (abc1234def56)");
        let dirty = BuildCommit::parse("abc1234def56-dirty");
        assert!(dirty.dirty);
        assert_eq!(dirty.label(), "abc1234def56-dirty");
        assert_eq!(dirty.version_line("0.1.0"), "0.1.0 (abc1234def56-dirty)");
        let unknown = BuildCommit::parse("");
        assert_eq!(unknown.label(), "unknown");
        assert!(!unknown.dirty);
        assert_eq!(
            unknown.version_line("0.2.0"),
            "0.2.0 (commit unknown: built outside a git checkout)"
        );
    }

    #[test]
    fn this_binary_names_a_commit_or_says_it_is_unknown() {
        let line = version();
        assert!(line.starts_with(env!("CARGO_PKG_VERSION")), "{line}");
        let current = BuildCommit::current();
        assert!(line.contains(&current.label()) || current.commit.is_none(), "{line}");
    }
}
