//! Every committed experiment runs end to end in its reduced `--smoke` mode, on SQLite and on
//! Postgres, so no manifest in experiments/ can rot.

use crate::common::{bin, pg_url, run, scalar, text};
use std::path::{Path, PathBuf};

fn experiments() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    assert!(v.len() >= 8, "expected the committed experiments, found {v:?}");
    v
}

fn smoke_all(database: &str, results: &Path) {
    for exp in experiments() {
        let out = run(bin()
            .env("DATABASE_URL", database)
            .args(["--quiet", "run", "--smoke", "--results-dir"])
            .arg(results)
            .arg(&exp));
        assert_eq!(out.status.code(), Some(0), "{}:\n{}", exp.display(), text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let report = stdout
            .lines()
            .find_map(|l| l.strip_prefix("report: "))
            .unwrap_or_else(|| panic!("{}: no report path printed:\n{stdout}", exp.display()));
        let md = std::fs::read_to_string(report).unwrap();
        assert!(
            md.contains("## Reproduce") && md.contains("--smoke"),
            "{}",
            exp.display()
        );
    }
}

#[test]
fn every_experiment_smoke_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    smoke_all(db.to_str().unwrap(), &dir.path().join("results"));
    assert_eq!(
        scalar(
            db.to_str().unwrap(),
            "SELECT COUNT(*) FROM runs WHERE status = 'finished'"
        ),
        experiments().len() as i64
    );
    assert_eq!(
        scalar(db.to_str().unwrap(), "SELECT COUNT(*) FROM trials WHERE status <> 'ok'"),
        0
    );
}

#[test]
fn every_experiment_smoke_runs_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let url = pg_url();
    smoke_all(&url, &dir.path().join("results"));
    assert_eq!(
        scalar(&url, "SELECT COUNT(*) FROM runs WHERE status = 'finished'"),
        experiments().len() as i64
    );
    assert_eq!(scalar(&url, "SELECT COUNT(*) FROM trials WHERE status <> 'ok'"), 0);
}
