//! `report --format` and `compare --format`: pull-request comments (snapshot-tested), the typed
//! JSON and the Markdown documents, from real runs of a command stage that prints known values.

use crate::common::{bin, run, strings, text, write};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Two variants whose `work.latency` is `$BASE` followed by digits: `0.` makes 0.20-0.22 s and
/// 0.10-0.12 s, `0.0` ten times less. The values are printed, not timed, so every figure below
/// is a function of them.
const KNOWN: &str = r#"
[experiment]
name = "formats"
description = "Known values, not timings"
[schedule]
warmup = 0
repetitions = 8
seed = 3
[stages.work]
kind = "command"
shell = true
argv = ["echo '{\"metric\": \"latency\", \"value\": '$BASE'{{ secs }}{{ repetition % 3 }}, \"unit\": \"s\"}'; echo '{\"metric\": \"score\", \"value\": 0.5, \"unit\": \"score\"}'"]
vars = { secs = 2 }
[variants.a]
[variants.b]
change = "half the work"
"stages.work.vars.secs" = 1
[compare]
primary = "work.latency"
guards = [{ metric = "work.score", within = "1%" }]
claims = [{ metric = "work.latency", variant = "b", speedup = "1.5x..3x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work" }]
"#;

/// `measured` in `dir` with the database `r.sqlite` and reports under `out/`, both relative,
/// so paths in the output do not depend on the temporary folder.
fn measured(dir: &Path) -> Command {
    let mut c = bin();
    c.current_dir(dir).args(["--database", "r.sqlite"]);
    c
}

/// Stores a run with `BASE=0.` and one with `BASE=0.0` (ten times faster); returns their ids.
fn two_runs(dir: &Path) -> (String, String) {
    write(dir, "m.toml", KNOWN);
    for base in ["0.", "0.0"] {
        let out = run(measured(dir).env("BASE", base).args(["run", "--no-report", "m.toml"]));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let ids = strings(
        dir.join("r.sqlite").to_str().unwrap(),
        "SELECT id FROM runs ORDER BY started_at, id",
    );
    (ids[0].clone(), ids[1].clone())
}

fn stdout_of(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Snapshots `body` with what varies between runs replaced: run ids, timestamps and seeds
/// (fixed by the manifest here, but not a property of the format), the note of a build
/// without CUDA, the busy-machine and CPU-clock notes, which depend on what else the machine
/// runs beside the test, and the dirty-tree warning, which depends on how the binary was built.
fn assert_redacted_snapshot(name: &str, body: &str) {
    insta::with_settings!({filters => vec![
        (r"\d{8}-\d{6}-[0-9a-f]{4}", "[run]"),
        (r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?( UTC|Z)?", "[time]"),
        (r"(--seed|seed) \d+", "$1 [seed]"),
        (r"(?m)^> \*\*Note:\*\* CPU-only run.*\n\n", ""),
        (r"(?m)\n*^> \*\*Note:\*\* (Busy machine|CPU frequency dropped).*$", ""),
        (r"(?m)^> \*\*Warning:\*\* Dirty tree.*\n\n", ""),
    ]}, {
        insta::assert_snapshot!(name, body);
    });
}

#[test]
fn a_report_as_a_pull_request_comment() {
    let dir = tempfile::tempdir().unwrap();
    let (_, after) = two_runs(dir.path());
    let comment =
        stdout_of(measured(dir.path()).args(["report", &after, "--results-dir", "out", "--format", "github"]));
    // Charts are links to the files beside report.md, never inlined.
    assert!(!comment.contains("<svg") && !comment.contains("!["), "{comment}");
    let folder = format!("out/formats/{after}");
    for chart in ["stage_breakdown.svg", "primary_distribution.svg"] {
        assert!(comment.contains(&format!("]({folder}/{chart})")), "{comment}");
        assert!(dir.path().join(&folder).join(chart).is_file(), "{chart} written");
    }
    assert_redacted_snapshot("report_github", &comment);
}

#[test]
fn a_comparison_as_a_pull_request_comment() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = two_runs(dir.path());
    let comment = stdout_of(measured(dir.path()).args([
        "compare",
        &before,
        &after,
        "--results-dir",
        "out",
        "--format",
        "github",
    ]));
    let document = format!("out/formats/compare-{before}-vs-{after}/compare.md");
    assert!(comment.contains(&format!("]({document})")), "{comment}");
    assert!(dir.path().join(&document).is_file());
    assert_redacted_snapshot("compare_github", &comment);
    // The gate still applies: the after run is faster, so nothing regressed.
    let gated = run(measured(dir.path()).args([
        "compare",
        &before,
        &after,
        "--results-dir",
        "out",
        "--format",
        "github",
        "--fail-on-regression",
    ]));
    assert_eq!(gated.status.code(), Some(0), "{}", text(&gated));
}

/// Every string in `v` is free of Markdown.
fn assert_plain(v: &Value, path: &str) {
    match v {
        Value::String(s) => assert!(!s.contains("**") && !s.contains('`'), "Markdown in {path}: {s}"),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| assert_plain(x, &format!("{path}[{i}]"))),
        Value::Object(o) => o.iter().for_each(|(k, x)| assert_plain(x, &format!("{path}.{k}"))),
        _ => {}
    }
}

#[test]
fn json_formats_parse_and_hold_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = two_runs(dir.path());

    let printed = stdout_of(measured(dir.path()).args(["report", &after, "--results-dir", "out", "--format", "json"]));
    let report: Value = serde_json::from_str(&printed).unwrap();
    let file = std::fs::read_to_string(dir.path().join(format!("out/formats/{after}/report.json"))).unwrap();
    assert_eq!(printed, file, "--format json prints report.json");
    assert_plain(&report, "");
    let b = &report["results"][1];
    assert_eq!((b["config"].as_str(), b["n"].as_u64()), (Some("b"), Some(8)));
    assert!((b["median"].as_f64().unwrap() - 0.011).abs() < 1e-12, "{b}");
    assert!(b["speedup"].is_f64() && b["p"].is_f64(), "{b}");

    let printed =
        stdout_of(measured(dir.path()).args(["compare", &before, &after, "--results-dir", "out", "--format", "json"]));
    let cmp: Value = serde_json::from_str(&printed).unwrap();
    assert_plain(&cmp, "");
    assert_eq!(cmp["schema_version"], 1);
    assert_eq!(
        (cmp["before"]["run_id"].as_str(), cmp["after"]["run_id"].as_str()),
        (Some(&*before), Some(&*after))
    );
    assert_eq!(cmp["primary"]["unit"], "s");
    for (row, config, before_median) in [(&cmp["results"][0], "a", 0.21), (&cmp["results"][1], "b", 0.11)] {
        assert_eq!(row["config"], config);
        assert_eq!((row["n_before"].as_u64(), row["n_after"].as_u64()), (Some(8), Some(8)));
        assert!(
            (row["before_median"].as_f64().unwrap() - before_median).abs() < 1e-12,
            "{row}"
        );
        assert!(
            (row["after_median"].as_f64().unwrap() - before_median / 10.0).abs() < 1e-12,
            "{row}"
        );
        // Ten times less latency is a speedup of 10, whose interval holds it.
        let (lo, hi) = (
            row["speedup_ci"][0].as_f64().unwrap(),
            row["speedup_ci"][1].as_f64().unwrap(),
        );
        assert!(
            (row["speedup"].as_f64().unwrap() - 10.0).abs() < 1e-9 && lo <= 10.0 && 10.0 <= hi,
            "{row}"
        );
        assert!(row["p"].as_f64().is_some_and(|p| p < 0.01), "{row}");
        assert_eq!(row["verdict"], "faster");
    }
    let guard = &cmp["guards"][0];
    assert_eq!(
        (guard["verdict"].as_str(), guard["before_median"].as_f64()),
        (Some("pass"), Some(0.5))
    );
    assert_eq!(guard["tolerance"]["relative"], 0.01);
    assert_eq!(cmp["regression"], false);
    assert_eq!(cmp["comparisons"][0]["comparison"]["verdict"], "faster");
}

#[test]
fn markdown_formats_print_the_documents() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = two_runs(dir.path());
    let printed =
        stdout_of(measured(dir.path()).args(["report", &after, "--results-dir", "out", "--format", "markdown"]));
    let file = std::fs::read_to_string(dir.path().join(format!("out/formats/{after}/report.md"))).unwrap();
    assert_eq!(printed, file);
    let printed = stdout_of(measured(dir.path()).args([
        "compare",
        &before,
        &after,
        "--results-dir",
        "out",
        "--format",
        "markdown",
    ]));
    let file = std::fs::read_to_string(
        dir.path()
            .join(format!("out/formats/compare-{before}-vs-{after}/compare.md")),
    )
    .unwrap();
    assert_eq!(printed, file);
    // Without --format the summary lines stay as they were, in plain text.
    let plain = stdout_of(measured(dir.path()).args(["compare", &before, &after, "--results-dir", "out"]));
    assert!(plain.starts_with("a: after is 10.0"), "{plain}");
    assert!(!plain.contains("**") && plain.contains("comparison: "), "{plain}");
}
