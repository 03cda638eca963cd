//! Nothing read back from a database is trusted: names edited there never become paths outside
//! the results folder.

use crate::common::{bin, fixture, run, run_cmd, strings, text};
use crate::stored::sqlite_exec;
use std::path::{Path, PathBuf};

/// Every file and folder under `dir`, relative to it, sorted.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().to_path_buf());
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
