//! Where things go: the default results folder and database belong to the repository holding
//! the manifest, paths the user wrote stay relative to the current directory, and a command
//! stage's `cwd` is relative to the manifest's folder.

use crate::common::{bin, run, scalar, strings, text, write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh git repository with `experiments/`, in its own temporary folder (canonical, so
/// paths in messages compare equal). Returns the guard and the repository's path.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("repo");
    std::fs::create_dir_all(root.join("experiments")).unwrap();
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "git init: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    (dir, root)
}

/// A tiny manifest of one command stage (`extra` adds lines to the stage table).
fn manifest(dir: &Path, name: &str, argv: &str, extra: &str) -> PathBuf {
    write(
        dir,
        &format!("{name}.toml"),
        &format!(
            "[experiment]\nname = \"{name}\"\n[schedule]\nwarmup = 0\nrepetitions = 1\n\
             [stages.work]\nkind = \"command\"\nargv = {argv}\n{extra}"
        ),
    )
}

fn at(cwd: &Path) -> Command {
    let mut c = bin();
    c.current_dir(cwd);
    c
}

fn sqlite(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

#[test]
fn runs_from_a_subfolder_finds_the_runs_stored_from_the_root_and_creates_nothing() {
    let (_dir, root) = repo();
    manifest(&root.join("experiments"), "sub", r#"["true"]"#, "");
    let ran = run(at(&root).args(["run", "--no-report", "experiments/sub.toml"]));
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    assert!(root.join("results/measured.sqlite").is_file(), "{}", text(&ran));

    let sub = root.join("experiments");
    let listed = run(at(&sub).arg("runs"));
    let t = text(&listed);
    assert_eq!(listed.status.code(), Some(0), "{t}");
    assert!(t.lines().any(|l| l.contains(" sub ") && l.contains("finished")), "{t}");
    assert!(
        !sub.join("results").exists(),
        "a second results folder was created:\n{t}"
    );

    // `show` and a resume from the subfolder find the run too; the resumed run's report goes
    // to the repository's results folder, and says so with its full path.
    let shown = run(at(&sub).args(["show", "latest"]));
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown));
    let resumed = run(at(&sub).args(["run", "--resume", "latest"]));
    let t = text(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{t}");
    let report = format!("report: {}/", root.join("results/sub").display());
    assert!(t.contains(&report), "{t}");
    assert!(!sub.join("results").exists(), "{t}");
}

#[test]
fn a_run_started_outside_the_repository_stores_under_the_manifests_repository() {
    let (dir, root) = repo();
    let elsewhere = dir.path().canonicalize().unwrap().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let m = manifest(&root.join("experiments"), "away", r#"["true"]"#, "");
    let out = run(at(&elsewhere).arg("run").arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let db = root.join("results/measured.sqlite");
    assert_eq!(scalar(&sqlite(&db), "SELECT COUNT(*) FROM trials"), 1, "{t}");
    assert!(!elsewhere.join("results").exists(), "{t}");
    // Where the run and its report went, in full.
    assert!(t.contains(&format!("-> {}", db.display())), "{t}");
    assert!(
        t.contains(&format!("report: {}/", root.join("results/away").display())),
        "{t}"
    );
}

#[test]
fn paths_the_user_gives_stay_relative_to_the_current_directory() {
    let (_dir, root) = repo();
    let sub = root.join("experiments");
    manifest(&sub, "given", r#"["true"]"#, "");
    // A database given, the results folder defaulted: only the default moves to the root.
    let out = run(at(&sub).args(["--database", "mine.sqlite", "run", "given.toml"]));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(
        scalar(&sqlite(&sub.join("mine.sqlite")), "SELECT COUNT(*) FROM runs"),
        1
    );
    assert!(root.join("results/given").is_dir(), "{t}");
    assert!(!root.join("results/measured.sqlite").exists(), "{t}");

    // A results folder given, the database defaulted.
    let out = run(at(&sub).args(["run", "given.toml", "--results-dir", "out"]));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("report: out/given/"), "{t}");
    assert!(sub.join("out/given").is_dir(), "{t}");
    assert_eq!(
        scalar(
            &sqlite(&root.join("results/measured.sqlite")),
            "SELECT COUNT(*) FROM runs"
        ),
        1
    );
    assert!(!sub.join("results").exists(), "{t}");

    // DATABASE_URL as written, for writing and for reading.
    let env = run(at(&sub)
        .env("DATABASE_URL", "env.sqlite")
        .args(["run", "--no-report", "given.toml"]));
    assert_eq!(env.status.code(), Some(0), "{}", text(&env));
    assert_eq!(scalar(&sqlite(&sub.join("env.sqlite")), "SELECT COUNT(*) FROM runs"), 1);
    let listed = run(at(&sub).env("DATABASE_URL", "env.sqlite").arg("runs"));
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed));
    assert_eq!(text(&listed).matches(" given ").count(), 1, "{}", text(&listed));
}

#[test]
fn runs_and_show_on_a_missing_database_name_it_and_create_nothing() {
    let (_dir, root) = repo();
    let sub = root.join("experiments");
    let db = root.join("results/measured.sqlite");
    let listed = run(at(&sub).arg("runs"));
    let t = text(&listed);
    assert_eq!(listed.status.code(), Some(0), "{t}");
    assert!(t.contains(&format!("no runs stored yet in {}", db.display())), "{t}");
    let shown = run(at(&sub).args(["show", "latest"]));
    let s = text(&shown);
    assert_eq!(shown.status.code(), Some(2), "{s}");
    assert!(s.contains(&format!("no runs stored yet in {}", db.display())), "{s}");
    assert!(
        !root.join("results").exists() && !sub.join("results").exists(),
        "{t}{s}"
    );
}

const WHERE: &str = r#"["sh", "-c", "pwd > where.txt"]"#;

#[test]
fn a_relative_cwd_is_relative_to_the_manifests_folder() {
    let (dir, root) = repo();
    let sub = root.join("experiments");
    std::fs::create_dir(sub.join("data")).unwrap();
    let m = manifest(&sub, "incwd", WHERE, "cwd = \"data\"\n");
    // Started from elsewhere: `data` is looked up beside the manifest, not here.
    let db = dir.path().join("r.sqlite");
    let out = run(at(dir.path())
        .arg("--database")
        .arg(&db)
        .args(["run", "--no-report"])
        .arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ran_in = std::fs::read_to_string(sub.join("data/where.txt")).unwrap();
    assert_eq!(Path::new(ran_in.trim()), sub.join("data"));

    let plan = run(at(dir.path()).args(["plan", "--show-commands"]).arg(&m));
    let p = text(&plan);
    assert_eq!(plan.status.code(), Some(0), "{p}");
    assert!(p.contains(&format!("(in {}) sh -c", sub.join("data").display())), "{p}");
}

#[test]
fn a_missing_cwd_fails_the_trial_naming_the_folder() {
    let (dir, root) = repo();
    let sub = root.join("experiments");
    let m = manifest(&sub, "nocwd", WHERE, "cwd = \"data\"\n");
    let db = dir.path().join("r.sqlite");
    let out = run(at(&root)
        .arg("--database")
        .arg(&db)
        .args(["run", "--no-report"])
        .arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let expected = format!(
        "working directory `{}` does not exist (cwd = \"data\", relative to the manifest's directory {})",
        sub.join("data").display(),
        sub.display()
    );
    assert!(t.contains(&expected), "{t}");
    assert!(!t.contains("cannot start"), "the program is not to blame:\n{t}");
    let stored = strings(&sqlite(&db), "SELECT error FROM trials");
    assert!(stored.iter().all(|e| e.contains(&expected)), "{stored:?}");
}
