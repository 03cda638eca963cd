//! Reports from real runs: verdicts against known truths, and before/after comparisons.

use crate::common::{bin, run, text, write};
use std::path::Path;

fn report_json(stdout: &str) -> serde_json::Value {
    let md = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .expect("report path printed");
    let json = Path::new(md).with_file_name("report.json");
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// Runs the two-variant manifest in `dir` (SQLite `r.sqlite`, reports under `dir`) and reads
/// the run's `report.json`.
fn run_and_read_report(dir: &Path, slow: &str, fast: &str) -> serde_json::Value {
    let m = write(dir, "k.toml", &manifest(slow, fast));
    let out = run(bin()
        .arg("--database")
        .arg(dir.join("r.sqlite"))
        .args(["run", "--results-dir"])
        .arg(dir)
        .arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    report_json(&String::from_utf8_lossy(&out.stdout))
}

/// Two variants whose `work.latency` is known exactly: `slow` and `fast` seconds, each scaled
/// by the same small per-repetition factor, so every repetition's true ratio is `slow / fast`.
/// The values are emitted by the stage, not timed: the verdict is a deterministic function
/// of them, whatever the machine is doing.
fn manifest(slow: &str, fast: &str) -> String {
    format!(
        r#"
[experiment]
name = "known-truth"
[schedule]
warmup = 1
repetitions = 10
seed = 5
[stages.noop]
kind = "command"
argv = ["true"]
[stages.work]
kind = "command"
shell = true
argv = ["echo '{{\"metric\": \"latency\", \"value\": {{{{ secs * (1 + 0.01 * (repetition % 5)) }}}}, \"unit\": \"s\"}}'"]
vars = {{ secs = {slow} }}
[variants.a]
[variants.b]
"stages.work.vars.secs" = {fast}
[compare]
primary = "work.latency"
allow_identical = {aa}
"#,
        aa = slow == fast
    )
}

#[test]
fn a_truly_faster_variant_is_reported_faster_with_a_ci_holding_the_true_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let json = run_and_read_report(dir.path(), "0.1", "0.07");
    let c = &json["comparisons"][0]["comparison"];
    assert_eq!(c["verdict"], "faster", "{c}");
    let truth = 0.1 / 0.07;
    let (lo, hi) = (
        c["speedup_ci"][0].as_f64().unwrap(),
        c["speedup_ci"][1].as_f64().unwrap(),
    );
    // One part in 1e9 for rounding: the ratio is exact up to floating point.
    assert!(
        lo <= truth * (1.0 + 1e-9) && truth <= hi * (1.0 + 1e-9),
        "true speedup {truth:.4} outside CI [{lo:.4}, {hi:.4}]"
    );
    let speedup = c["speedup"].as_f64().unwrap();
    assert!((speedup - truth).abs() < 1e-6, "speedup {speedup} vs {truth}");
}

#[test]
fn an_a_a_run_is_no_change_or_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    let json = run_and_read_report(dir.path(), "0.05", "0.05");
    let v = json["comparisons"][0]["comparison"]["verdict"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(v == "no_change" || v == "inconclusive", "A/A verdict {v}");
}

const DELAYED: &str = r#"
[experiment]
name = "delayed"
[schedule]
warmup = 0
repetitions = 8
seed = 2
[stages.work]
kind = "command"
shell = true
# 0.010, 0.011, ... for DELAY=0.01: a known spread, not a timing.
argv = ["echo '{\"metric\": \"latency\", \"value\": '$DELAY'{{ repetition % 5 }}, \"unit\": \"s\"}'"]
[compare]
primary = "work.latency"
"#;

#[test]
fn compare_flags_a_regression_between_two_runs() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "d.toml", DELAYED);
    let db = dir.path().join("r.sqlite");
    for delay in ["0.01", "0.05"] {
        let out = run(bin()
            .env("DELAY", delay)
            .arg("--database")
            .arg(&db)
            .args(["run", "--no-report"])
            .arg(&m));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let ids = crate::common::strings(db.to_str().unwrap(), "SELECT id FROM runs ORDER BY started_at, id");
    let cmp = |extra: &[&str]| {
        run(bin()
            .arg("--database")
            .arg(&db)
            .args(["compare", &ids[0], &ids[1], "--results-dir"])
            .arg(dir.path())
            .args(extra))
    };
    let plain = cmp(&[]);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain));
    assert!(text(&plain).contains("slower"), "{}", text(&plain));
    let path = text(&plain)
        .lines()
        .find_map(|l| l.strip_prefix("comparison: ").map(str::to_owned))
        .unwrap();
    assert!(std::fs::read_to_string(path).unwrap().contains("slower"));
    let gated = cmp(&["--fail-on-regression"]);
    assert_eq!(gated.status.code(), Some(1), "{}", text(&gated));
}

const LOADS: &str = r#"
[experiment]
name = "loads"
[schedule]
warmup = 0
repetitions = 2
seed = 2
[stages.load]
kind = "load"
symbols = { first = 3 }
"#;

#[test]
fn compare_refuses_runs_that_loaded_different_data() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "l.toml", LOADS);
    let db = dir.path().join("r.sqlite");
    let first = run(bin().arg("--database").arg(&db).args(["run", "--no-report"]).arg(&m));
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert!(
        text(&first).contains("filled the empty database with the demo market"),
        "{}",
        text(&first)
    );
    // Another synthetic market: same codes, other prices, as a version beside the demo's (a
    // manifest without [data] must then choose one).
    let synth = run(bin().arg("--database").arg(&db).args([
        "data",
        "synth",
        "--symbols",
        "50",
        "--days",
        "200",
        "--seed",
        "9",
        "--style",
        "mixed",
    ]));
    assert_eq!(synth.status.code(), Some(0), "{}", text(&synth));
    let ambiguous = run(bin().arg("--database").arg(&db).args(["run", "--no-report"]).arg(&m));
    assert_eq!(ambiguous.status.code(), Some(1), "{}", text(&ambiguous));
    assert!(text(&ambiguous).contains("--data"), "{}", text(&ambiguous));
    let second = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["run", "--no-report", "--data", "synth-50x200-2015-01-01-s9-mixed"])
        .arg(&m));
    assert_eq!(second.status.code(), Some(0), "{}", text(&second));
    let ids = crate::common::strings(db.to_str().unwrap(), "SELECT id FROM runs ORDER BY started_at, id");
    let refused = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["compare", &ids[0], &ids[1], "--results-dir"])
        .arg(dir.path()));
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("different data") && text(&refused).contains("--allow-different-data"),
        "{}",
        text(&refused)
    );
    // What differs, in the terms of the data each run recorded.
    assert!(
        text(&refused).contains("seed 20240601 vs 9") && text(&refused).contains("750 vs 200 synthetic days"),
        "{}",
        text(&refused)
    );
    assert!(
        text(&refused).contains(
            "dataset versions synth-50x750-2021-01-04-s20240601-mixed@1 vs synth-50x200-2015-01-01-s9-mixed@1"
        ),
        "{}",
        text(&refused)
    );
    assert_eq!(
        text(&refused).matches("hint").count(),
        1,
        "one hint: {}",
        text(&refused)
    );
    let allowed = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["compare", &ids[0], &ids[1], "--allow-different-data", "--results-dir"])
        .arg(dir.path()));
    assert_eq!(allowed.status.code(), Some(0), "{}", text(&allowed));
}
