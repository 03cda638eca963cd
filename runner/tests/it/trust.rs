//! Nothing read back from a database is trusted: names edited there never become paths outside
//! the results folder.

use crate::common::{bin, fixture, run, run_cmd, strings, text};
use crate::stored::sqlite_exec;
use std::path::{Path, PathBuf};

/// Every file and folder under `dir`, relative to it, sorted; the database's own files (its
/// write-ahead log comes and goes) left out.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            if !p.file_name().unwrap().to_string_lossy().starts_with("r.sqlite") {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// A stored run of the minimal fixture in `dir/r.sqlite`, results under `dir/a/results`.
fn stored_run(dir: &Path) -> (PathBuf, PathBuf, String) {
    let db = dir.join("r.sqlite");
    let results = dir.join("a/results");
    std::fs::create_dir_all(&results).unwrap();
    let out = run(run_cmd(&db, &results, &[]).arg(fixture("valid/minimal.toml")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = strings(db.to_str().unwrap(), "SELECT id FROM runs").remove(0);
    (db, results, id)
}

fn report(db: &Path, results: &Path, id: &str) -> std::process::Output {
    run(bin()
        .arg("--database")
        .arg(db)
        .args(["report", id, "--results-dir"])
        .arg(results))
}

#[test]
fn an_experiment_name_edited_in_the_database_is_refused_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let (db, results, id) = stored_run(dir.path());
    sqlite_exec(&db, &["UPDATE runs SET experiment = '../../x'"]);
    let before = tree(dir.path());
    let out = report(&db, &results, &id);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let msg = text(&out);
    assert!(
        msg.contains("experiment name \"../../x\"") && msg.contains("refusing"),
        "{msg}"
    );
    assert_eq!(tree(dir.path()), before, "nothing is written anywhere");
    assert!(!dir.path().join("x").exists());
}

#[test]
fn a_run_id_edited_in_the_database_is_refused_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let (db, results, id) = stored_run(dir.path());
    // Still found by its old id as a prefix; as a path it climbs out of the results folder.
    let bad = format!("{id}/../../../y");
    sqlite_exec(
        &db,
        // One statement list on one connection: the pragma holds for both updates.
        &[&format!(
            "PRAGMA foreign_keys = OFF; \
             UPDATE trials SET run_id = '{bad}' WHERE run_id = '{id}'; \
             UPDATE runs SET id = '{bad}' WHERE id = '{id}'"
        )],
    );
    let before = tree(dir.path());
    let out = report(&db, &results, &id);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(&format!("run id {bad:?}")), "{}", text(&out));
    assert_eq!(tree(dir.path()), before, "nothing is written anywhere");
}

/// A manifest whose one stage is `true`, and the same text edited to touch `marker` instead.
fn innocent_and_edited(dir: &Path) -> (PathBuf, PathBuf, String) {
    let m = crate::common::write(
        dir,
        "innocent.toml",
        "[experiment]\nname = \"innocent\"\n[schedule]\nwarmup = 0\nrepetitions = 2\n\
         [stages.work]\nkind = \"command\"\nargv = [\"true\"]\n",
    );
    let marker = dir.join("marker");
    let edit = format!(
        "UPDATE runs SET manifest_text = replace(manifest_text, '[\"true\"]', '[\"touch\", \"{}\"]')",
        marker.display()
    );
    (m, marker, edit)
}

#[test]
fn resuming_a_run_whose_stored_manifest_was_edited_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (m, marker, edit) = innocent_and_edited(dir.path());
    let db = dir.path().join("r.sqlite");
    let out = run(run_cmd(&db, dir.path(), &[]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = strings(db.to_str().unwrap(), "SELECT id FROM runs").remove(0);
    // The trials are gone and the manifest now runs something else: a resume would run it.
    sqlite_exec(
        &db,
        &[
            "DELETE FROM metrics",
            "DELETE FROM stage_results",
            "DELETE FROM trials",
            &edit,
        ],
    );
    let out = run(&mut run_cmd(&db, dir.path(), &["--resume", &id]));
    assert_refused_unrun(&out, &id, &marker, db.to_str().unwrap());
}

/// `out` refused run `id` for its edited manifest, with exit 2, and nothing of it ran or was
/// stored in `database`.
fn assert_refused_unrun(out: &std::process::Output, id: &str, marker: &std::path::Path, database: &str) {
    assert_eq!(out.status.code(), Some(2), "{}", text(out));
    let msg = text(out);
    assert!(
        msg.contains(&format!("the stored manifest of run {id} does not match")),
        "{msg}"
    );
    assert!(!marker.exists(), "the edited manifest ran");
    assert_eq!(crate::common::scalar(database, "SELECT COUNT(*) FROM trials"), 0);
}

#[test]
fn a_queue_worker_refuses_a_stored_manifest_edited_after_submit() {
    let url = crate::common::pg_url();
    let dir = tempfile::tempdir().unwrap();
    let (m, marker, edit) = innocent_and_edited(dir.path());
    let out = run(bin()
        .env("DATABASE_URL", &url)
        .current_dir(dir.path())
        .arg("submit")
        .arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let id = strings(&url, "SELECT id FROM runs").remove(0);
    // An UPDATE that returns a row count, through the helper that reads one integer.
    let edited = crate::common::scalar(&url, &format!("WITH u AS ({edit} RETURNING 1) SELECT COUNT(*) FROM u"));
    assert_eq!(edited, 1);
    let out = run(bin()
        .env("DATABASE_URL", &url)
        .args(["worker", "--run", &id, "--results-dir"])
        .arg(dir.path().join("results")));
    assert_refused_unrun(&out, &id, &marker, &url);
}

#[test]
fn a_connection_error_never_shows_a_password_with_raw_url_delimiters() {
    let password = "p#a/s?s";
    let url = format!("postgres://u:{password}@127.0.0.1:1/db");
    let out = run(bin().arg("--database").arg(&url).args(["runs"]));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let msg = text(&out);
    assert!(msg.contains("u:***@127.0.0.1"), "{msg}");
    for part in [password, "#a/s", "a/s?s"] {
        assert!(!msg.contains(part), "{part} in {msg}");
    }
}
