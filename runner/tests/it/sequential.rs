//! Runs on a drifting machine, end to end: a command stage prints a latency that climbs by 1%
//! per trial (`tests/fixtures/drift/latency.sh`), so the truth is known exactly. The report is
//! paired, decides a true 5% effect and stops early; an A/A run goes to its maximum without
//! picking a side; a time budget ends a run with what stayed open; the drift is flagged in
//! every place a reader looks, and a steady machine is not.

use crate::common::{bin, fixture, pg_url, run, scalar, strings, text, wait_until};
use std::path::{Path, PathBuf};

/// A copy of the drift fixtures in a fresh folder (the script keeps its call count there).
fn drift_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in ["latency.sh", "effect.toml", "aa.toml", "steady.toml"] {
        std::fs::copy(fixture(&format!("drift/{f}")), dir.path().join(f)).unwrap();
    }
    dir
}

/// `measured run MANIFEST` in `dir` with its own SQLite database and results folder.
fn run_in(dir: &Path, manifest: &str) -> std::process::Output {
    run(bin()
        .current_dir(dir)
        .arg("--database")
        .arg(dir.join("r.sqlite"))
        .args(["run", "--results-dir"])
        .arg(dir.join("results"))
        .arg(dir.join(manifest)))
}

/// The report folder the run printed (`report: .../report.md`).
fn report_dir(stdout: &str) -> PathBuf {
    let md = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .expect("report path printed");
    Path::new(md).parent().unwrap().to_owned()
}

fn json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

fn show(dir: &Path, id: &str) -> String {
    let out = run(bin().arg("--database").arg(dir.join("r.sqlite")).args(["show", id]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Markers of `fill` colour among the SVG's circles, polygons and rectangles.
fn markers(svg: &str, fill: &str) -> usize {
    svg.lines()
        .filter(|l| l.contains("<circle") || l.contains("<polygon") || l.contains("<rect"))
        .filter(|l| l.to_ascii_lowercase().contains(&format!("fill=\"{fill}\"")))
        .count()
}

#[test]
fn a_true_effect_on_a_drifting_machine_is_decided_paired_and_stops_early() {
    let dir = drift_dir();
    let out = run_in(dir.path(), "effect.toml");
    let (stdout, all) = (String::from_utf8_lossy(&out.stdout).into_owned(), text(&out));
    assert_eq!(out.status.code(), Some(0), "{all}");
    let r = report_dir(&stdout);
    let j = json(&r);
    // Paired, faster, and the interval holds the exact truth: every block's ratio is 1/1.05
    // times the 1% the second trial of the block drifted on.
    assert_eq!(j["method"]["tests"][0]["test"], "wilcoxon_signed_rank", "{j:#}");
    let c = &j["comparisons"][0]["comparison"];
    assert_eq!(c["verdict"], "faster", "{c:#}");
    let (lo, hi) = (
        c["speedup_ci"][0].as_f64().unwrap(),
        c["speedup_ci"][1].as_f64().unwrap(),
    );
    assert!(lo <= 1.05 && 1.05 <= hi, "speedup CI {lo}-{hi}");
    // It stopped at a look, well before its maximum, and says so everywhere.
    let seq = &j["method"]["sequential"];
    assert_eq!(seq["stop"], "decided", "{seq:#}");
    let blocks = seq["blocks"].as_u64().unwrap();
    assert!(blocks < 200, "{seq:#}");
    assert_eq!(
        seq["looks_taken"].as_array().unwrap().last().unwrap().as_u64(),
        Some(blocks)
    );
    assert!(
        all.contains(&format!("ended after {blocks} blocks: every question is decided")),
        "{all}"
    );
    let md = std::fs::read_to_string(r.join("report.md")).unwrap();
    assert!(md.contains(&format!("Stopped after {blocks} blocks")), "{md}");
    // The run holds exactly the blocks it ran: finished, nothing planned is missing.
    let id = j["run_id"].as_str().unwrap();
    let shown = show(dir.path(), id);
    let stored = 2 * blocks + 2;
    assert!(
        shown.contains(&format!("trials: {stored} of {stored} stored")),
        "{shown}"
    );
    assert!(shown.contains(&format!("Stopped after {blocks} blocks")), "{shown}");
    // The drift is flagged with its figure in the console, `show`, report.md and report.json.
    assert_eq!(j["stability"]["drifting"], true, "{:#}", j["stability"]);
    for (place, body) in [("console", &all), ("show", &shown), ("report.md", &md)] {
        assert!(
            body.contains("Drifting machine: baseline's work.latency moved +"),
            "{place}: {body}"
        );
    }
    // The run chart shows every measured trial, each config in its colour (+1: the legend).
    let svg = std::fs::read_to_string(r.join("run_chart.svg")).unwrap();
    assert_eq!(markers(&svg, "#1f77b4"), blocks as usize + 1, "baseline markers");
    assert_eq!(markers(&svg, "#ff7f0e"), blocks as usize + 1, "faster markers");
}

#[test]
fn an_aa_run_on_a_drifting_machine_runs_to_its_maximum_and_never_picks_a_side() {
    let dir = drift_dir();
    let out = run_in(dir.path(), "aa.toml");
    let (stdout, all) = (String::from_utf8_lossy(&out.stdout).into_owned(), text(&out));
    assert_eq!(out.status.code(), Some(0), "{all}");
    let j = json(&report_dir(&stdout));
    let c = &j["comparisons"][0]["comparison"];
    assert_eq!(c["design"], "paired");
    assert!(
        c["verdict"] != "faster" && c["verdict"] != "slower",
        "an A/A run picked a side: {c:#}"
    );
    let seq = &j["method"]["sequential"];
    assert_eq!(
        (seq["stop"].as_str(), seq["blocks"].as_u64()),
        (Some("max_reached"), Some(16)),
        "{seq:#}"
    );
    assert!(!all.contains("ended after"), "{all}");
    assert_eq!(j["stability"]["jittery"], true, "{:#}", j["stability"]);
    assert!(
        all.contains("Jittery machine: baseline's work.latency varies by"),
        "{all}"
    );
}

#[test]
fn a_time_budget_ends_a_run_with_what_stayed_open() {
    let dir = drift_dir();
    // Each trial sleeps a tenth of a second: a budget of one second holds a few blocks.
    slowed(dir.path(), "aa.toml", "slow-aa.toml", "0.1");
    let manifest = std::fs::read_to_string(dir.path().join("slow-aa.toml"))
        .unwrap()
        .replace("max = 16 }", "max = 16 }\nmax_time = \"1s\"");
    std::fs::write(dir.path().join("budget.toml"), manifest).unwrap();
    let out = run_in(dir.path(), "budget.toml");
    let (stdout, all) = (String::from_utf8_lossy(&out.stdout).into_owned(), text(&out));
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("the time budget of 1s cannot fit another block"), "{all}");
    let r = report_dir(&stdout);
    let seq = &json(&r)["method"]["sequential"];
    assert_eq!(seq["stop"], "time_budget", "{seq:#}");
    assert!(seq["blocks"].as_u64().unwrap() < 16, "{seq:#}");
    assert_eq!(
        seq["open"][0]["what"], "same against baseline on work.latency",
        "{seq:#}"
    );
    let md = std::fs::read_to_string(r.join("report.md")).unwrap();
    assert!(md.contains("Its time budget of 1s was spent after"), "{md}");
}

/// The manifest `source` with each trial slowed down by `extra` seconds, written as `name`.
fn slowed(dir: &Path, source: &str, name: &str, extra: &str) -> String {
    let manifest = std::fs::read_to_string(dir.join(source)).unwrap().replace(
        "argv = [\"sh\", \"latency.sh\"",
        &format!("argv = [\"sh\", \"-c\", \"sleep {extra}; sh latency.sh \\\"$@\\\"\", \"sh\""),
    );
    std::fs::write(dir.join(name), manifest).unwrap();
    name.to_owned()
}

/// Killed in the middle, a sequential run resumes where it stopped, looks as it would have,
/// and ends decided with every planned trial stored once.
#[test]
fn a_killed_sequential_run_resumes_and_still_stops_when_decided() {
    let dir = drift_dir();
    let m = slowed(dir.path(), "effect.toml", "slow-effect.toml", "0.05");
    let db = dir.path().join("r.sqlite");
    let mut child = bin()
        .current_dir(dir.path())
        .arg("--database")
        .arg(&db)
        .args(["--quiet", "run", "--no-report", "--results-dir"])
        .arg(dir.path().join("results"))
        .arg(dir.path().join(&m))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = db.to_str().unwrap().to_owned();
    wait_until("stored trials", std::time::Duration::from_secs(60), || {
        db.exists() && scalar(&url, "SELECT COUNT(*) FROM trials") >= 7
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(strings(&url, "SELECT status FROM runs"), ["running"]);
    let id = strings(&url, "SELECT id FROM runs").remove(0);
    let out = run(bin()
        .current_dir(dir.path())
        .arg("--database")
        .arg(&db)
        .args(["run", "--resume", &id, "--results-dir"])
        .arg(dir.path().join("results")));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("every question is decided"), "{all}");
    assert_eq!(strings(&url, "SELECT status FROM runs"), ["finished"]);
    let (stored, planned) = (
        scalar(&url, "SELECT COUNT(*) FROM trials"),
        scalar(&url, "SELECT planned_trials FROM runs"),
    );
    assert_eq!(stored, planned, "{all}");
    assert_eq!(scalar(&url, "SELECT COUNT(DISTINCT trial_index) FROM trials"), stored);
    assert!(stored < 402, "{stored} trials: it ended before its maximum");
    let j = json(&report_dir(&String::from_utf8_lossy(&out.stdout)));
    assert_eq!(j["method"]["sequential"]["stop"], "decided");
}

#[test]
fn a_steady_machine_is_not_flagged() {
    let dir = drift_dir();
    let out = run_in(dir.path(), "steady.toml");
    let (stdout, all) = (String::from_utf8_lossy(&out.stdout).into_owned(), text(&out));
    assert_eq!(out.status.code(), Some(0), "{all}");
    let r = report_dir(&stdout);
    let j = json(&r);
    assert_eq!(
        (
            j["stability"]["drifting"].as_bool(),
            j["stability"]["jittery"].as_bool()
        ),
        (Some(false), Some(false))
    );
    let md = std::fs::read_to_string(r.join("report.md")).unwrap();
    let shown = show(dir.path(), j["run_id"].as_str().unwrap());
    for (place, body) in [("console", &all), ("show", &shown), ("report.md", &md)] {
        assert!(
            !body.contains("Drifting machine") && !body.contains("Jittery machine"),
            "{place}: {body}"
        );
    }
    assert!(shown.contains("(steady)"), "{shown}");
}

#[test]
fn a_sequential_plan_is_refused_by_submit_with_the_way_out() {
    let dir = drift_dir();
    let out = run(bin()
        .arg("--database")
        .arg(pg_url())
        .args(["submit"])
        .arg(dir.path().join("effect.toml")));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("a queue of workers cannot do"), "{t}");
    assert!(t.contains("run it on one machine with `measured run"), "{t}");
}
