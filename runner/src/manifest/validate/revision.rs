//! A variant's git revision, checked (manifest::validate -> **revision**): the `git` and `build`
//! keys of a variant table become a located `Revision`.

use super::Validator;
use crate::manifest::diag::ManifestError;
use crate::manifest::revisions::{check_rev, Revision, WORKTREE};

impl Validator {
    /// The revision a variant table names with `git` (and `build`), checked and located.
    pub(super) fn revision(&mut self, variant: &str, table: &toml::Table) -> Option<Revision> {
        let string = |this: &mut Self, key: &str| -> Option<String> {
            match table.get(key)? {
                toml::Value::String(s) => Some(s.clone()),
                other => {
                    let span = this.value_span(&["variants", variant, key]);
                    this.err(
                        ManifestError::new(format!("`{key}` must be a string, found {}", other.type_str()), span).hint(
                            if key == "git" {
                                "name a revision in quotes, e.g. git = \"main\""
                            } else {
                                "write the command in quotes, e.g. build = \"cargo build --release\""
                            },
                        ),
                    );
                    None
                }
            }
        };
        let rev = string(self, "git");
        let build = string(self, "build");
        if let Some((message, hint)) = rev.as_deref().and_then(check_rev) {
            let span = self.value_span(&["variants", variant, "git"]);
            self.err(ManifestError::new(message, span).label("not a revision").hint(hint));
            return None;
        }
        if let Some(b) = &build {
            let span = self.value_span(&["variants", variant, "build"]);
            if b.trim().is_empty() {
                self.err(
                    ManifestError::new("`build` is empty", span)
                        .hint("give the command that builds the revision, or remove `build`"),
                );
            } else if rev.is_none() && !table.contains_key("git") {
                self.err(
                    ManifestError::new(
                        format!("variant `{variant}` has `build` but no `git`: there is no checkout to build"),
                        span,
                    )
                    .label("needs `git`")
                    .hint(format!(
                        "name the revision it builds, e.g. git = \"HEAD\" (or \"{WORKTREE}\" for the working tree)"
                    )),
                );
            }
        }
        Some(Revision {
            rev: rev?,
            build: build.filter(|b| !b.trim().is_empty()),
            resolved: None,
        })
    }
}
