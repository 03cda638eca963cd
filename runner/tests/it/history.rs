//! `measured history`: a metric over every stored run, with significant steps flagged, on
//! SQLite and PostgreSQL.

use crate::common::{bin, pg_url, run, text, write};
use std::path::Path;

/// A program whose reported latency is read from `level.txt` (emitted, not timed, so the
/// history is fixed by the data), with a small known spread per repetition.
fn bench(dir: &Path, name: &str) -> std::path::PathBuf {
    let script = write(
        dir,
        "bench.sh",
        "level=$(cat \"$(dirname \"$0\")/level.txt\")\n\
         awk -v l=\"$level\" -v r=\"$1\" 'BEGIN { printf \"{\\\"metric\\\": \\\"latency\\\", \\\"value\\\": %.6f, \\\"unit\\\": \\\"s\\\"}\\n\", l * (1 + 0.01 * (r % 5)) }'\n",
    );
    write(
        dir,
        "h.toml",
        &format!(
            r#"
[experiment]
name = "{name}"
[schedule]
warmup = 0
repetitions = 8
seed = 5
[stages.bench]
kind = "command"
argv = ["sh", "{}", "{{{{ repetition }}}}"]
[compare]
primary = "bench.latency"
"#,
            script.display()
        ),
    )
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run levels: four around 0.100 (each run's level moves by up to 1%, as real runs' do), then
/// three around 0.120: one step, into the fifth run.
const LEVELS: [&str; 7] = ["0.100", "0.101", "0.099", "0.1005", "0.120", "0.1212", "0.1188"];

/// A run per level of [`LEVELS`], each on a commit of its own.
fn runs(dir: &Path, db: &dyn Fn(&mut std::process::Command) -> &mut std::process::Command, name: &str) {
    let m = bench(dir, name);
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join(".gitignore"), "*.sqlite*\n*.journal.jsonl\n").unwrap();
    for (i, level) in LEVELS.iter().enumerate() {
        std::fs::write(dir.join("level.txt"), level).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "--allow-empty", "-m", &format!("level {i}")]);
        let out = run(db(&mut bin())
            .args(["run", "--no-report", "--results-dir"])
            .arg(dir)
            .arg(&m));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
}

fn check_history(out: &std::process::Output, dir: &Path, name: &str) {
    let t = text(out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains(&format!("# History of `bench.latency` in {name}")), "{md}");
    // One flagged step, into run 5, with the true change shown as a speedup of 1 / 1.2.
    assert_eq!(md.matches("**regressed**").count(), 2, "sentence and table cell: {md}");
    assert!(md.contains("0.83x"), "{md}");
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| #"))
        .collect();
    assert_eq!(rows.len(), LEVELS.len(), "{md}");
    assert!(
        rows[0].starts_with("| 1 |") && rows[0].ends_with("| — |"),
        "{}",
        rows[0]
    );
    for (i, row) in rows.iter().enumerate().skip(1) {
        assert_eq!(row.contains("**regressed**"), i == 4, "{row}");
    }
    assert!(md.contains("two-sample t-test"), "the test is named: {md}");
    assert!(md.contains("run-to-run variation"), "{md}");
    // Each run names the commit it measured.
    let commits: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.split(" | ").nth(3).unwrap()).collect();
    assert_eq!(commits.len(), LEVELS.len(), "{rows:?}");
    assert!(
        !rows.iter().any(|r| r.contains("`unknown`") || r.contains("+dirty")),
        "{rows:?}"
    );
    let files = dir.join(name).join("history");
    let svg = std::fs::read_to_string(files.join("bench_latency.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("significant step"), "{svg}");
    assert_eq!(std::fs::read_to_string(files.join("bench_latency.md")).unwrap(), md);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(files.join("bench_latency.json")).unwrap()).unwrap();
    let flagged: Vec<&serde_json::Value> = json["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["flagged"] == true)
        .collect();
    assert_eq!(flagged.len(), 1, "{json}");
    let (lo, hi) = (
        flagged[0]["speedup_ci"][0].as_f64().unwrap(),
        flagged[0]["speedup_ci"][1].as_f64().unwrap(),
    );
    assert!(lo <= 1.0 / 1.2 && 1.0 / 1.2 <= hi, "true speedup 1/1.2 in [{lo}, {hi}]");
}

#[test]
fn history_flags_the_step_between_consecutive_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    runs(dir.path(), &|c| c.arg("--database").arg(&db), "hist");
    let out = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["history", "hist", "--results-dir"])
        .arg(dir.path()));
    check_history(&out, dir.path(), "hist");
    // A metric no run recorded is an error that lists the ones they did.
    let out = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["history", "hist", "--metric", "bench.latncy", "--results-dir"])
        .arg(dir.path()));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("bench.latency"), "{t}");
    // A name that is not an experiment name never becomes a path.
    let out = run(bin().arg("--database").arg(&db).args(["history", "../../etc"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn history_flags_the_step_between_consecutive_runs_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let url = pg_url();
    // The test database is shared: a name of its own keeps other tests' runs out.
    let name = format!("hist-pg-{}", std::process::id());
    runs(dir.path(), &|c| c.env("DATABASE_URL", &url), &name);
    let out = run(bin()
        .env("DATABASE_URL", &url)
        .args(["history", &name, "--results-dir"])
        .arg(dir.path()));
    check_history(&out, dir.path(), &name);
}

/// The same experiment run on `small.txt`, then with its command's input switched to
/// `tiny.txt`: `compare` refuses, naming the changed parameter, and `history` marks the step
/// "config changed" instead of calling the shorter input a speedup.
#[test]
fn a_changed_input_file_is_a_config_change_not_a_speedup() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["count.toml", "small.txt", "tiny.txt"] {
        std::fs::copy(
            crate::common::fixture(&format!("config_change/{f}")),
            dir.path().join(f),
        )
        .unwrap();
    }
    let db = dir.path().join("r.sqlite");
    let manifest = dir.path().join("count.toml");
    let mut ids = Vec::new();
    for input in ["small.txt", "tiny.txt"] {
        let text_of = std::fs::read_to_string(&manifest).unwrap();
        std::fs::write(&manifest, text_of.replace("small.txt", input)).unwrap();
        let out =
            run(bin()
                .current_dir(dir.path())
                .arg("--database")
                .arg(&db)
                .args(["run", "--no-report", "count.toml"]));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let listed = run(bin().arg("--database").arg(&db).args(["show", "latest"]));
        let shown = String::from_utf8_lossy(&listed.stdout).into_owned();
        let id = shown
            .split_whitespace()
            .find(|w| w.len() == 20 && w.chars().nth(8) == Some('-'))
            .unwrap_or_else(|| panic!("a run id in {shown}"))
            .to_owned();
        ids.push(id);
    }
    let out = run(bin()
        .current_dir(dir.path())
        .arg("--database")
        .arg(&db)
        .args(["compare", &ids[0], &ids[1]]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    insta::assert_snapshot!("compare_refuses_a_changed_config", err.trim());
    // Allowed on request, with the change named beside the numbers.
    let out = run(bin().current_dir(dir.path()).arg("--database").arg(&db).args([
        "compare",
        &ids[0],
        &ids[1],
        "--allow-config-change",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = run(bin()
        .current_dir(dir.path())
        .arg("--database")
        .arg(&db)
        .args(["history", "count-words", "--results-dir"])
        .arg(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = String::from_utf8_lossy(&out.stdout).into_owned();
    let sentences: Vec<&str> = md.lines().filter(|l| l.starts_with("- **config changed**")).collect();
    insta::with_settings!({filters => vec![(r"\d{8}-\d{6}-[0-9a-f]{4}", "[run]")]}, {
        insta::assert_snapshot!("history_marks_a_changed_config", sentences.join("\n"));
    });
    let row = md
        .lines()
        .find(|l| l.starts_with("| 2 |"))
        .expect("the second run's row");
    assert!(row.ends_with("| **config changed** |"), "{row}");
    assert!(!md.contains("**improved**") && !md.contains("**regressed**"), "{md}");
}
