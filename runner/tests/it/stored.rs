//! Stored runs stay readable: `report` and `compare` read the spec stored with a run, never the
//! manifest validated again by the binary at hand; runs stored before specs still render.

use crate::common::{bin, run, run_cmd, strings, text, write};
use std::path::Path;

/// Two variants that emit known values (not timings), so the verdict is fixed by the data.
const KNOWN: &str = r#"
[experiment]
name = "stored"
[schedule]
warmup = 0
repetitions = 8
seed = 9
[stages.work]
kind = "command"
shell = true
argv = ["echo '{\"metric\": \"latency\", \"value\": {{ secs * (1 + 0.01 * (repetition % 5)) }}, \"unit\": \"s\"}'"]
vars = { secs = 0.10 }
[variants.before]
[variants.after]
change = "half the work"
"stages.work.vars.secs" = 0.12
[compare]
primary = "work.latency"
guards = [{ metric = "work.latency", within = "50%" }]
claims = [{ metric = "work.latency", variant = "after", speedup = "~2x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work" }]
"#;

/// Runs statements on a SQLite file directly, without the migrations a `Db` would apply.
pub(crate) fn sqlite_exec(db: &Path, statements: &[&str]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        for s in statements {
            sqlx::query(s).execute(&pool).await.expect(s);
        }
        pool.close().await;
    });
}

fn two_runs(dir: &Path) -> (std::path::PathBuf, Vec<String>) {
    let m = write(dir, "stored.toml", KNOWN);
    let db = dir.join("r.sqlite");
    for _ in 0..2 {
        let out = run(run_cmd(&db, dir, &[]).arg(&m));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let ids = strings(db.to_str().unwrap(), "SELECT id FROM runs ORDER BY started_at, id");
    (db, ids)
}

fn report(db: &Path, dir: &Path, id: &str) -> std::process::Output {
    run(bin()
        .arg("--database")
        .arg(db)
        .args(["report", id, "--results-dir"])
        .arg(dir))
}

fn compare(db: &Path, dir: &Path, a: &str, b: &str) -> std::process::Output {
    run(bin()
        .arg("--database")
        .arg(db)
        .args(["compare", a, b, "--results-dir"])
        .arg(dir))
}

/// The stored manifest with a stage parameter that no version of measured knows.
const RENAMED: &str = "UPDATE runs SET manifest_text = replace(manifest_text, 'shell = true', \
                       'shell = true\nparameter_from_another_version = 1')";

#[test]
fn a_run_whose_manifest_this_binary_rejects_still_reports_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let (db, ids) = two_runs(dir.path());
    sqlite_exec(&db, &[RENAMED]);
    let stored = strings(db.to_str().unwrap(), "SELECT manifest_text FROM runs");
    assert!(stored.iter().all(|t| t.contains("parameter_from_another_version")));
    // The manifest itself no longer validates...
    let m = write(dir.path(), "renamed.toml", &stored[0]);
    assert_eq!(run(bin().arg("check").arg(&m)).status.code(), Some(2));
    // ...but the runs read from their stored spec, with the verdict the data gives.
    let out = report(&db, dir.path(), &ids[1]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("stored").join(&ids[1]).join("report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["results"][1]["verdict"], "slower", "{json}");
    assert_eq!(json["guards"].as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(json["claims"].as_array().map(Vec::len), Some(1), "{json}");
    let out = compare(&db, dir.path(), &ids[0], &ids[1]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn runs_stored_by_the_previous_schema_still_render() {
    let dir = tempfile::tempdir().unwrap();
    let (db, ids) = two_runs(dir.path());
    // Take the database back to the schema before specs: no column, no migration record.
    sqlite_exec(
        &db,
        &[
            "ALTER TABLE runs DROP COLUMN spec",
            "DELETE FROM _sqlx_migrations WHERE description = 'run spec'",
        ],
    );
    // A manifest this binary still accepts: read from it again, and the report says so.
    let out = report(&db, dir.path(), &ids[0]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = std::fs::read_to_string(dir.path().join("stored").join(&ids[0]).join("report.md")).unwrap();
    assert!(md.contains("stored before runs carried their own spec"), "{md}");
    assert!(md.contains("read from its stored manifest"), "{md}");
    // A manifest it rejects, with a guard it cannot read: best effort, and the guard is named
    // in a note rather than dropped without a word.
    sqlite_exec(
        &db,
        &[
            RENAMED,
            "UPDATE runs SET manifest_text = replace(manifest_text, 'within = \"50%\"', 'within = \"lots\"')",
        ],
    );
    let out = report(&db, dir.path(), &ids[1]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = std::fs::read_to_string(dir.path().join("stored").join(&ids[1]).join("report.md")).unwrap();
    assert!(md.contains("no longer accepts its manifest"), "{md}");
    assert!(
        md.contains("A guard") && md.contains("lots") && md.contains("is not evaluated"),
        "{md}"
    );
    assert!(md.contains("after") && md.contains("slower"), "{md}");
    let out = compare(&db, dir.path(), &ids[0], &ids[1]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A database as the version before paired analysis left it: run specs of version 1, and no
/// tick counters on trials (columns and migration record gone). `report` analyses its
/// interleaved runs in their blocks, says so, and loses no trial.
#[test]
fn runs_stored_before_paired_analysis_are_reported_paired_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let (db, ids) = two_runs(dir.path());
    sqlite_exec(
        &db,
        &[
            "UPDATE runs SET spec = replace(spec, '\"version\":2', '\"version\":1')",
            "ALTER TABLE trials DROP COLUMN cpu_busy_ticks",
            "ALTER TABLE trials DROP COLUMN cpu_own_ticks",
            "ALTER TABLE trials DROP COLUMN cpu_total_ticks",
            "ALTER TABLE trials DROP COLUMN cpu_tick_cpus",
            "DELETE FROM _sqlx_migrations WHERE description = 'trial ticks'",
        ],
    );
    let out = report(&db, dir.path(), &ids[0]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("stored").join(&ids[0]).join("report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["method"]["tests"][0]["test"], "wilcoxon_signed_rank", "{json:#}");
    let note = json["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.contains("stored by an earlier version of measured"))
        .unwrap_or_else(|| panic!("{:#}", json["notes"]));
    assert!(
        note.contains("compares them paired, within each of its 8 blocks"),
        "{note}"
    );
    // Every trial is there: 8 per config, all in the comparison.
    assert_eq!(json["results"][0]["n"], 8);
    assert_eq!(json["comparisons"][0]["comparison"]["n_baseline"], 8);
    // The migration ran again on the way: the columns are back for new trials.
    assert_eq!(
        crate::common::scalar(
            db.to_str().unwrap(),
            "SELECT COUNT(*) FROM _sqlx_migrations WHERE description = 'trial ticks'"
        ),
        1
    );
}

#[test]
fn a_spec_from_a_newer_version_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let (db, ids) = two_runs(dir.path());
    sqlite_exec(
        &db,
        &["UPDATE runs SET spec = replace(spec, '\"version\":2', '\"version\":99')"],
    );
    let out = report(&db, dir.path(), &ids[0]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("stored by a newer measured (run spec version 99"), "{t}");
}
