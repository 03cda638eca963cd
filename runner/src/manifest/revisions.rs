//! Git revisions as variants (validate -> **revisions**): the reserved `git` and `build` keys of a
//! variant, `--rev` turned into variants, and names made from revisions.
//!
//! Only the manifest is looked at here; resolving a revision to a commit, checking it out and
//! building it happen in `crate::gitrev`, before any trial runs.

use super::{Config, Experiment};
use std::path::PathBuf;

/// The value of `git` (and of `--rev`) that means the working tree as it is, uncommitted
/// changes included. It starts with `:`, which no branch or tag name can.
pub const WORKTREE: &str = ":worktree";

/// Keys of a variant table that are not parameter overrides.
pub(super) const RESERVED: [&str; 2] = ["git", "build"];

/// Where a variant's code comes from when it names a git revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// As written: a branch, tag, sha, `HEAD~3`, ... or [`WORKTREE`].
    pub rev: String,
    /// A shell command run once in the revision's checkout before any trial (not timed).
    pub build: Option<String>,
    /// Filled in by `crate::gitrev::resolve` before any trial runs.
    pub resolved: Option<Resolved>,
}

/// A revision resolved in the manifest's repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The full commit sha (for [`WORKTREE`]: the commit `HEAD` is at).
    pub commit: String,
    /// The code is not exactly `commit`: uncommitted changes of the working tree, or tracked
    /// files a build command changed in a checkout.
    pub dirty: bool,
    /// The folder of the checkout (for [`WORKTREE`]: the repository's own working tree).
    pub checkout: PathBuf,
    /// The manifest's folder inside the checkout: the variant's command stages resolve their
    /// `cwd` against it, and run in it when they have none.
    pub dir: PathBuf,
}

/// A commit as shown: its first 12 hex digits.
pub fn short_commit(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

impl Revision {
    pub fn is_worktree(&self) -> bool {
        self.rev == WORKTREE
    }

    /// `main at 0123456789ab`, or the sha alone when the revision is one.
    pub fn shown(&self, commit: &str) -> String {
        if commit.starts_with(&self.rev) {
            short_commit(commit).to_owned()
        } else {
            format!("{} at {}", self.rev, short_commit(commit))
        }
    }

    /// A git variant's revision for `plan`: `main at 0123456789ab`, or the working tree.
    pub fn summary(&self) -> String {
        match &self.resolved {
            Some(r) if self.is_worktree() => format!(
                "the working tree at {}{}",
                short_commit(&r.commit),
                if r.dirty { " with uncommitted changes" } else { "" }
            ),
            Some(r) => format!("git {}", self.shown(&r.commit)),
            None => format!("git {}", self.rev),
        }
    }

    /// What `plan --show-commands` prints under a config of a git variant: where its commands
    /// run and how its checkout is built.
    pub fn describe(&self) -> String {
        let dir = match &self.resolved {
            Some(r) if self.is_worktree() || r.checkout.exists() => format!("in {}", r.dir.display()),
            Some(r) => format!("in {} (checked out by `run`)", r.dir.display()),
            None => String::new(),
        };
        match &self.build {
            Some(b) => format!("{dir}; built with: {b}"),
            None => dir,
        }
    }
}

impl Config {
    /// The folder a command stage of this config resolves paths against, when it is not the
    /// manifest's own: the manifest's folder inside its revision's checkout.
    pub fn checkout_dir(&self) -> Option<&std::path::Path> {
        self.revision.as_ref()?.resolved.as_ref().map(|r| r.dir.as_path())
    }
}

impl Experiment {
    /// Whether some variant names a git revision.
    pub fn has_revisions(&self) -> bool {
        self.configs.iter().any(|c| c.revision.is_some())
    }
}

/// Why `rev` cannot name a revision, with a hint; `None` when it may (git decides later).
pub fn check_rev(rev: &str) -> Option<(String, String)> {
    if rev.trim().is_empty() {
        return Some((
            "the git revision is empty".into(),
            "name a branch, tag or commit, e.g. \"main\" or \"HEAD~1\"".into(),
        ));
    }
    if rev.starts_with('-') {
        return Some((
            format!("`{rev}` is not a git revision: git would read it as an option"),
            "name a branch, tag or commit, e.g. \"main\"".into(),
        ));
    }
    if rev.starts_with(':') && rev != WORKTREE {
        return Some((
            format!("`{rev}` is not a git revision"),
            format!("`{WORKTREE}` (the working tree with its uncommitted changes) is the only value starting with `:`"),
        ));
    }
    if rev.chars().any(char::is_control) {
        return Some((
            format!("{rev:?} is not a git revision: it holds control characters"),
            "name a branch, tag or commit".into(),
        ));
    }
    None
}

/// A variant name for revision `rev`: letters, digits, `_` and `-`, at most 64 characters
/// (`HEAD~3` -> `HEAD-3`, `origin/main` -> `origin-main`, `:worktree` -> `worktree`).
pub fn variant_name(rev: &str) -> String {
    let mut out = String::new();
    for c in rev.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '-'
        };
        if !(c == '-' && (out.is_empty() || out.ends_with('-'))) {
            out.push(c);
        }
    }
    let mut out: String = out.trim_end_matches('-').chars().take(64).collect();
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        "rev".into()
    } else {
        out
    }
}

/// Variant names for `revs`, in order: each revision's [`variant_name`], numbered when two
/// would collide (`HEAD^` and `HEAD` -> `HEAD`, `HEAD-2`). A revision given twice is an error.
pub fn variant_names(revs: &[String]) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = Vec::with_capacity(revs.len());
    for (i, rev) in revs.iter().enumerate() {
        if let Some((message, hint)) = check_rev(rev) {
            return Err(format!("--rev: {message}\nhint: {hint}"));
        }
        if revs[..i].contains(rev) {
            return Err(format!(
                "--rev `{rev}` is given twice\nhint: give each revision once; \
                 `allow_identical = true` in [compare] is the way to measure noise (an A/A run)"
            ));
        }
        names.push(unused_name(&variant_name(rev), &names));
    }
    Ok(names)
}

/// `base`, or when `taken` holds it already, `base` numbered from 2 (`base-2`, `base-3`, ...),
/// within 64 characters.
pub fn unused_name(base: &str, taken: &[String]) -> String {
    let mut name = base.to_owned();
    let mut n = 2;
    while taken.contains(&name) {
        let suffix = format!("-{n}");
        let keep: String = base.chars().take(64 - suffix.len()).collect();
        name = format!("{keep}{suffix}");
        n += 1;
    }
    name
}

/// The manifest `text` with its `[variants]` replaced by one variant per revision in `revs`
/// (named by [`variant_names`]; the first is the baseline), each built with `build`, else with
/// the build command the manifest's variants share (the manifest says how its code is built,
/// the command line which revisions). The result is what the run stores, so that a resume
/// finds the same variants.
pub fn with_revisions(text: &str, revs: &[String], build: Option<&str>) -> Result<String, String> {
    use toml_edit::{value, DocumentMut, Item, Table};
    let names = variant_names(revs)?;
    if let Some(b) = build.filter(|b| b.trim().is_empty()) {
        return Err(format!("--build {b:?} is empty\nhint: give the command that builds a revision, e.g. --build \"cargo build --release\""));
    }
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("cannot read the manifest: {e}"))?;
    let shared = shared_build(&doc);
    let build = build.or(shared.as_deref());
    let mut variants = Table::new();
    variants.set_implicit(true);
    for (i, (name, rev)) in names.iter().zip(revs).enumerate() {
        let mut t = Table::new();
        t["git"] = value(rev.as_str());
        if let Some(b) = build {
            t["build"] = value(b);
        }
        if i == 0 {
            // Says, in the stored manifest, where these variants came from.
            t.decor_mut().set_prefix("\n# variants from the command line (--rev)\n");
        }
        variants.insert(name, Item::Table(t));
    }
    doc.insert("variants", Item::Table(variants));
    // A baseline named after a variant that is gone would be an error; the first revision
    // is the baseline then, as it is without one.
    if let Some(compare) = doc.get_mut("compare").and_then(Item::as_table_like_mut) {
        let stale = compare
            .get("baseline")
            .and_then(Item::as_str)
            .is_some_and(|b| !names.iter().any(|n| n == b));
        if stale {
            compare.remove("baseline");
        }
    }
    Ok(doc.to_string())
}

/// The `build` every variant of the manifest that has one gives, when they agree.
fn shared_build(doc: &toml_edit::DocumentMut) -> Option<String> {
    let variants = doc.get("variants")?.as_table_like()?;
    let mut builds = variants
        .iter()
        .filter_map(|(_, v)| v.as_table_like()?.get("build")?.as_str().map(str::to_owned));
    let first = builds.next()?;
    builds.all(|b| b == first).then_some(first)
}

/// Two variants that run the same commit with the same build and identical stage parameters:
/// the comparison would measure noise. `None` when there are none, or the design allows it.
pub fn same_code_twice(exp: &Experiment) -> Option<(String, String, String)> {
    if exp.compare.allow_identical {
        return None;
    }
    // A command stage that renders `{{ variant }}` or `{{ config }}` differs by name alone.
    let by_name = exp.configs.iter().flat_map(|c| &c.stages).any(|s| {
        crate::kinds::template_variables(&s.table).is_none_or(|v| v.contains("variant") || v.contains("config"))
    });
    if by_name {
        return None;
    }
    let code = |c: &Config| {
        let r = c.revision.as_ref()?;
        let res = r.resolved.as_ref().filter(|res| !res.dirty)?;
        Some((res.commit.clone(), r.build.clone()))
    };
    let of = |v: &str| exp.configs.iter().filter(|c| c.variant == v).collect::<Vec<_>>();
    for (i, a) in exp.variants.iter().enumerate() {
        for b in &exp.variants[i + 1..] {
            let (ca, cb) = (of(a), of(b));
            let same = ca.len() == cb.len()
                && ca.iter().zip(&cb).all(|(x, y)| {
                    code(x).is_some()
                        && code(x) == code(y)
                        && x.stages
                            .iter()
                            .zip(&y.stages)
                            .all(|(p, q)| same_table(&p.table, &q.table))
                });
            if same {
                let commit = ca.first().and_then(|c| code(c)).map(|(c, _)| c).unwrap_or_default();
                return Some((a.clone(), b.clone(), commit));
            }
        }
    }
    None
}

/// Parameter tables equal as a stage reads them: `5` and `5.0` are one number.
pub(super) fn same_table(a: &toml::Table, b: &toml::Table) -> bool {
    a.len() == b.len() && a.iter().all(|(k, x)| b.get(k).is_some_and(|y| same_value(x, y)))
}

fn same_value(a: &toml::Value, b: &toml::Value) -> bool {
    use toml::Value as V;
    match (a, b) {
        (V::Integer(i), V::Float(f)) | (V::Float(f), V::Integer(i)) => *i as f64 == *f,
        (V::Array(x), V::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y)),
        (V::Table(x), V::Table(y)) => same_table(x, y),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_become_valid_variant_names() {
        assert_eq!(variant_name("main"), "main");
        assert_eq!(variant_name("HEAD~3"), "HEAD-3");
        assert_eq!(variant_name("HEAD^"), "HEAD");
        assert_eq!(variant_name("origin/feature/x"), "origin-feature-x");
        assert_eq!(variant_name("v1.2.0"), "v1-2-0");
        assert_eq!(variant_name(WORKTREE), "worktree");
        assert_eq!(variant_name("main@{2 days ago}"), "main-2-days-ago");
        assert_eq!(variant_name("~^"), "rev");
        assert_eq!(variant_name("été"), "t");
        let long = "a".repeat(100);
        assert_eq!(variant_name(&long).len(), 64);
    }

    #[test]
    fn colliding_names_are_numbered_and_a_revision_given_twice_is_an_error() {
        let revs = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            variant_names(&revs(&["HEAD^", "HEAD", "HEAD~"])).unwrap(),
            ["HEAD", "HEAD-2", "HEAD-3"]
        );
        let twice = variant_names(&revs(&["main", "main"])).unwrap_err();
        assert!(twice.contains("`main` is given twice"), "{twice}");
        let option = variant_names(&revs(&["--all"])).unwrap_err();
        assert!(option.contains("read it as an option"), "{option}");
        let colon = variant_names(&revs(&[":wroktree"])).unwrap_err();
        assert!(colon.contains(WORKTREE), "{colon}");
    }

    const TWO: &str = "[experiment]\nname = \"x\"\n[schedule]\nrepetitions = 8\n\
                       [stages.s]\nkind = \"command\"\nargv = [\"true\"]\n\
                       [variants.before]\ngit = \"main\"\nbuild = \"make\"\n\
                       [variants.after]\ngit = \"HEAD\"\nbuild = \"make\"\n";

    #[test]
    fn git_and_build_are_reserved_keys_carried_by_every_config_of_the_variant() {
        let exp = crate::manifest::parse_str(std::path::Path::new("x.toml"), TWO, false).unwrap();
        let revs: Vec<(&str, &str, Option<&str>)> = exp
            .configs
            .iter()
            .map(|c| {
                let r = c.revision.as_ref().unwrap();
                (c.variant.as_str(), r.rev.as_str(), r.build.as_deref())
            })
            .collect();
        assert_eq!(
            revs,
            [("before", "main", Some("make")), ("after", "HEAD", Some("make"))]
        );
        // Nothing else differs, yet the configs are not identical: their code is not the same.
        assert!(exp.configs.iter().all(|c| c.stages[0].table.get("git").is_none()));
    }

    #[test]
    fn two_revisions_at_one_commit_with_one_build_are_the_same_code() {
        let resolve = |exp: &mut Experiment, commits: [&str; 2]| {
            for (c, commit) in exp.configs.iter_mut().zip(commits) {
                c.revision.as_mut().unwrap().resolved = Some(Resolved {
                    commit: commit.into(),
                    dirty: false,
                    checkout: PathBuf::from("/r"),
                    dir: PathBuf::from("/r"),
                });
            }
        };
        let mut exp = crate::manifest::parse_str(std::path::Path::new("x.toml"), TWO, false).unwrap();
        resolve(&mut exp, ["abc", "abc"]);
        assert_eq!(
            same_code_twice(&exp),
            Some(("before".into(), "after".into(), "abc".into()))
        );
        resolve(&mut exp, ["abc", "def"]);
        assert_eq!(same_code_twice(&exp), None);
        // The working tree with uncommitted changes is not its commit.
        resolve(&mut exp, ["abc", "abc"]);
        exp.configs[1]
            .revision
            .as_mut()
            .unwrap()
            .resolved
            .as_mut()
            .unwrap()
            .dirty = true;
        assert_eq!(same_code_twice(&exp), None);
        let aa = TWO.replace(
            "[variants.before]",
            "[compare]\nallow_identical = true\n[variants.before]",
        );
        let mut exp = crate::manifest::parse_str(std::path::Path::new("x.toml"), &aa, false).unwrap();
        resolve(&mut exp, ["abc", "abc"]);
        assert_eq!(same_code_twice(&exp), None);
    }

    #[test]
    fn rev_arguments_replace_the_variants_and_a_stale_baseline() {
        let text = "[experiment]\nname = \"x\"\n[stages.s]\nkind = \"command\"\nargv = [\"true\"]\n\
                    [variants.a]\n\"stages.s.timeout\" = 1.0\n[variants.b]\n[compare]\nbaseline = \"b\"\nalpha = 0.05\n";
        let out = with_revisions(text, &["main".into(), "HEAD~1".into()], Some("make")).unwrap();
        let doc: toml::Table = toml::from_str(&out).unwrap();
        let variants = doc["variants"].as_table().unwrap();
        assert_eq!(variants.keys().collect::<Vec<_>>(), ["main", "HEAD-1"]);
        assert_eq!(variants["HEAD-1"]["git"].as_str(), Some("HEAD~1"));
        assert_eq!(variants["main"]["build"].as_str(), Some("make"));
        let compare = doc["compare"].as_table().unwrap();
        assert!(!compare.contains_key("baseline"), "{out}");
        assert_eq!(compare["alpha"].as_float(), Some(0.05));
        assert!(out.contains("# variants from the command line (--rev)"), "{out}");
        // Without --build, the build the manifest's variants share.
        let shared = text.replace("[variants.b]\n", "[variants.b]\nbuild = \"cargo build\"\n");
        let out = with_revisions(&shared, &["main".into()], None).unwrap();
        assert!(out.contains("build = \"cargo build\""), "{out}");
        let differ = shared.replace("[variants.a]\n", "[variants.a]\nbuild = \"make\"\n");
        let out = with_revisions(&differ, &["main".into()], None).unwrap();
        assert!(!out.contains("build ="), "{out}");
        // A baseline that names one of the new variants stays.
        let kept = with_revisions(
            text.replace("\"b\"", "\"main\"").as_str(),
            &["x".into(), "main".into()],
            None,
        )
        .unwrap();
        assert!(kept.contains("baseline = \"main\""), "{kept}");
    }
}
