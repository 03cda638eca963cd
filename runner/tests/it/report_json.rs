//! `report.json` from real runs: typed values without Markdown, the metrics no other table
//! shows, and the databases a run used (passwords redacted).

use crate::common::{bin, run, strings, text, write};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Two variants of a command stage that prints its primary metric `latency` (known values,
/// not timings) and an extra metric `items` (40 for `a`, 50 for `b`), with a guard and a claim.
const EXTRA: &str = r#"
[experiment]
name = "extra"
description = "Known values, one metric more than [compare] names"
[schedule]
warmup = 0
repetitions = 8
seed = 3
[stages.work]
kind = "command"
shell = true
argv = ["echo '{\"metric\": \"latency\", \"value\": {{ secs * (1 + 0.01 * (repetition % 3)) }}, \"unit\": \"s\"}'; echo '{\"metric\": \"items\", \"value\": {{ items }}, \"unit\": \"count\"}'; echo '{\"metric\": \"score\", \"value\": 0.5, \"unit\": \"score\"}'"]
vars = { secs = 0.2, items = 40 }
[variants.a]
[variants.b]
change = "half the work"
"stages.work.vars.secs" = 0.1
"stages.work.vars.items" = 50
[compare]
primary = "work.latency"
guards = [{ metric = "work.score", within = "1%" }]
claims = [{ metric = "work.latency", variant = "b", speedup = "1.5x..3x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work" }]
"#;

/// The folder `measured run` printed its report into.
fn report_dir(stdout: &str) -> PathBuf {
    let md = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .expect("report path printed");
    Path::new(md).parent().unwrap().to_owned()
}

/// Runs `manifest` into the SQLite file `db` with `extra` arguments; returns the report folder.
fn run_manifest(dir: &Path, db: &Path, manifest: &str, extra: &[&str]) -> PathBuf {
    let m = write(dir, "m.toml", manifest);
    let out = run(bin()
        .arg("--database")
        .arg(db)
        .args(extra)
        .args(["run", "--results-dir"])
        .arg(dir)
        .arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    report_dir(&String::from_utf8_lossy(&out.stdout))
}

fn read_json(folder: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(folder.join("report.json")).unwrap()).unwrap()
}

/// Every string anywhere in `v`, with its JSON path.
fn all_strings(v: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((path.to_owned(), s.clone())),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| all_strings(x, &format!("{path}[{i}]"), out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| all_strings(x, &format!("{path}.{k}"), out)),
        _ => {}
    }
}

fn is_number_pair(v: &Value) -> bool {
    v.as_array()
        .is_some_and(|a| a.len() == 2 && a.iter().all(Value::is_f64))
}

#[test]
fn report_json_holds_numbers_units_and_plain_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let folder = run_manifest(dir.path(), &dir.path().join("r.sqlite"), EXTRA, &[]);
    let json = read_json(&folder);

    let mut texts = Vec::new();
    all_strings(&json, "", &mut texts);
    for (path, s) in &texts {
        assert!(!s.contains("**") && !s.contains('`'), "Markdown in {path}: {s}");
    }
    assert!(json["schema_version"].is_u64(), "{}", json["schema_version"]);
    assert!(json["duration_seconds"].is_i64());
    assert_eq!(json["primary"]["unit"], "s");
    assert_eq!(json["method"]["resamples"], 10_000);

    let words = ["faster", "slower", "no_change", "inconclusive"];
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for row in results {
        assert_eq!(row["n"], 8, "{row}");
        assert_eq!(row["unit"], "s");
        assert!(row["median"].is_f64() && is_number_pair(&row["median_ci"]), "{row}");
    }
    let (base, cand) = (&results[0], &results[1]);
    assert_eq!(
        (base["baseline"].as_bool(), base["verdict"].is_null()),
        (Some(true), true)
    );
    assert_eq!(cand["against"], "a");
    assert!(
        cand["speedup"].is_f64() && is_number_pair(&cand["speedup_ci"]),
        "{cand}"
    );
    assert!(cand["p"].as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)), "{cand}");
    assert!(words.contains(&cand["verdict"].as_str().unwrap()), "{cand}");
    assert_eq!(json["comparisons"][0]["comparison"]["verdict"], cand["verdict"]);

    let guard = &json["guards"][0];
    assert!(["pass", "fail", "inconclusive"].contains(&guard["verdict"].as_str().unwrap()));
    assert_eq!(
        (guard["unit"].as_str(), guard["baseline_mean"].as_f64()),
        (Some("score"), Some(0.5))
    );
    assert_eq!(guard["tolerance"]["relative"], 0.01);
    let claim = &json["claims"][0];
    assert!(["supported", "refuted", "untestable"].contains(&claim["verdict"].as_str().unwrap()));
    assert_eq!(
        (claim["source"].as_str(), claim["against"].as_str()),
        (Some("test-report, section \"Results\""), Some("a"))
    );
    assert!(
        is_number_pair(&claim["claimed"]) && claim["speedup"].is_f64(),
        "{claim}"
    );

    assert_eq!(json["stage_columns"], serde_json::json!(["work"]));
    let stage = &json["stages"][0];
    assert!(
        stage["median_seconds"][0].is_f64() && stage["total_seconds"].is_f64(),
        "{stage}"
    );
    assert!(json["environment"]["git_commit"].is_string());
}

#[test]
fn an_extra_metric_a_command_prints_is_in_both_reports() {
    let dir = tempfile::tempdir().unwrap();
    let folder = run_manifest(dir.path(), &dir.path().join("r.sqlite"), EXTRA, &[]);
    let json = read_json(&folder);
    let rows: Vec<&Value> = json["other_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["metric"] == "work.items")
        .collect();
    assert_eq!(rows.len(), 2, "{}", json["other_metrics"]);
    assert!(
        rows.iter().all(|r| r["median_ci"].is_array()),
        "{}",
        json["other_metrics"]
    );
    let (a, b) = (rows[0], rows[1]);
    assert_eq!((a["config"].as_str(), a["unit"].as_str()), (Some("a"), Some("count")));
    assert_eq!((a["n"].as_u64(), a["median"].as_f64()), (Some(8), Some(40.0)));
    assert_eq!((a["against"].is_null(), a["ratio"].is_null()), (true, true));
    assert_eq!((b["against"].as_str(), b["median"].as_f64()), (Some("a"), Some(50.0)));
    assert_eq!(b["series"], false);
    // 50 against 40 in every trial: the ratio and both ends of its interval are exact.
    let ratio = b["ratio"].as_f64().unwrap();
    assert!((ratio - 1.25).abs() < 1e-12, "{ratio}");
    for bound in b["ratio_ci"].as_array().unwrap() {
        assert!((bound.as_f64().unwrap() - 1.25).abs() < 1e-12, "{b}");
    }
    // The primary metric is not repeated there (Results has it); the guarded one is, with
    // its median's CI.
    let listed: Vec<&str> = json["other_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert!(
        !listed.contains(&"work.latency") && listed.contains(&"work.score"),
        "{listed:?}"
    );

    let md = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(md.contains("## Metrics"), "{md}");
    assert!(
        md.contains("| `work.items` | count | a | 8 | 40.00 | 40.00–40.00 | — | — | — |"),
        "{md}"
    );
    assert!(
        md.contains("| `work.items` | count | b | 8 | 50.00 | 50.00–50.00 | a | 1.25x | 1.25x–1.25x |"),
        "{md}"
    );
}

#[test]
fn the_report_and_its_reproduce_line_name_both_databases_without_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    // A stage that loads no bars never connects to the stock database, so a server that does
    // not exist is enough to see what the run records about it.
    let stock = "postgres://alice:s3cret@stock.invalid:5432/bars";
    let shown = "postgres://alice:***@stock.invalid:5432/bars";
    let folder = run_manifest(dir.path(), &db, EXTRA, &["--stock-database", stock]);
    let md = std::fs::read_to_string(folder.join("report.md")).unwrap();
    let results = db.display().to_string();
    assert!(
        md.contains(&format!("Results database `{results}`; stock database `{shown}`.")),
        "{md}"
    );
    assert!(md.contains(&format!("--stock-database '{shown}'")), "{md}");
    let json = read_json(&folder);
    assert_eq!(json["databases"]["results"], results.as_str());
    assert_eq!(json["databases"]["stock"], shown);
    assert!(json["reproduce"]
        .as_str()
        .unwrap()
        .contains(&format!("--stock-database '{shown}'")));
    let url = db.to_str().unwrap();
    assert_eq!(strings(url, "SELECT stock_database FROM runs"), [shown]);
    for f in std::fs::read_dir(&folder).unwrap() {
        let body = std::fs::read(f.unwrap().path()).unwrap();
        assert!(!String::from_utf8_lossy(&body).contains("s3cret"));
    }
    // The database file and its write-ahead log.
    for f in std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()) {
        if f.file_name().unwrap().to_string_lossy().starts_with("r.sqlite") {
            assert!(!String::from_utf8_lossy(&std::fs::read(&f).unwrap()).contains("s3cret"));
        }
    }

    // A run stored before the stock database was recorded says so.
    set_stock_null(url);
    let again = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["report", "latest", "--results-dir"])
        .arg(dir.path()));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let md = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(md.contains("; stock database not recorded."), "{md}");
    assert!(read_json(&folder)["databases"]["stock"].is_null());
}

/// Clears the recorded stock database of every run, as in a database from an older version.
fn set_stock_null(url: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = measured::db::Db::connect(url).await.unwrap();
        let measured::db::Db::Sqlite(pool) = &db else {
            panic!("a SQLite file")
        };
        sqlx::query("UPDATE runs SET stock_database = NULL")
            .execute(pool)
            .await
            .unwrap();
        db.close().await;
    });
}
