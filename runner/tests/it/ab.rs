//! `measured ab`: commands given on the command line become a stored run with its manifest,
//! a verdict line, a table and the exports; `--save` keeps a manifest that `check` accepts as
//! it is and `run` runs again. No test says which command is faster: that is a timing.

use crate::common::{bin, run, scalar, strings, text};
use std::path::Path;
use std::process::Output;

/// `measured ab` in `cwd` with the database `db` and the arguments `args` (as a shell splits
/// them).
fn ab(cwd: &Path, db: &Path, args: &str) -> Output {
    run(bin()
        .current_dir(cwd)
        .arg("--database")
        .arg(db)
        .arg("ab")
        .args(shlex::split(args).unwrap()))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn two_commands_give_a_verdict_a_table_a_stored_run_and_its_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let out = ab(
        dir.path(),
        &db,
        "-N true 'sh -c true' --runs 8 --warmup 0 --seed 3 --export-json ab.json --export-markdown ab.md",
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let s = stdout(&out);
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines[0].starts_with("config") && lines[0].contains("mean ± sd"), "{s}");
    assert!(lines[1].starts_with("true ") && lines[1].ends_with("  true"), "{s}");
    assert!(
        lines[2].starts_with("sh-c-true ") && lines[2].ends_with("  sh -c true"),
        "{s}"
    );
    let verdict = lines.iter().find(|l| l.starts_with("sh-c-true vs true: ")).expect(&s);
    let rest = verdict.strip_prefix("sh-c-true vs true: ").unwrap();
    let (word, figures) = rest.split_once(", speedup ").expect(verdict);
    assert!(
        ["faster", "slower", "no change", "inconclusive"].contains(&word),
        "{verdict}"
    );
    assert!(
        figures.contains("x (95% CI ") && figures.ends_with("x), 8 blocks"),
        "{verdict}"
    );
    let report = s.lines().find_map(|l| l.split_once("; report: ")).expect(&s).1;
    assert!(dir.path().join(report).is_file(), "{report}");

    // Stored like any run, with the manifest it ran, which is on disk beside the reports.
    let url = db.to_str().unwrap();
    assert_eq!(scalar(url, "SELECT COUNT(*) FROM runs WHERE experiment = 'ab'"), 1);
    assert_eq!(scalar(url, "SELECT COUNT(*) FROM trials"), 16);
    let stored = strings(url, "SELECT manifest_path || char(10) || manifest_text FROM runs");
    let (path, manifest) = stored[0].split_once('\n').unwrap();
    assert!(path.starts_with("results/ab/ab-") && path.ends_with(".toml"), "{path}");
    assert_eq!(std::fs::read_to_string(dir.path().join(path)).unwrap(), manifest);

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ab.json")).unwrap()).unwrap();
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{json}");
    assert_eq!(results[1]["command"], "sh -c true");
    let times: Vec<f64> = results[1]["times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(times.len(), 8);
    let mean = times.iter().sum::<f64>() / 8.0;
    assert!((results[1]["mean"].as_f64().unwrap() - mean).abs() < 1e-12, "{json}");
    let c = &json["comparisons"][0];
    assert_eq!(
        (c["name"].as_str(), c["against"].as_str(), c["blocks"].as_u64()),
        (Some("sh-c-true"), Some("true"), Some(8))
    );
    assert_eq!(c["verdict"].as_str(), Some(word));
    let md = std::fs::read_to_string(dir.path().join("ab.md")).unwrap();
    assert!(
        md.starts_with("| Command | Mean [") && md.contains("| `true` |") && md.contains("| `sh -c true` |"),
        "{md}"
    );
    assert!(md.contains(verdict), "{md}");
}

#[test]
fn a_saved_manifest_is_checked_as_it_is_and_run_again_from_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let db = dir.path().join("r.sqlite");
    // Each run of a command leaves a line in `where.txt` of the folder it ran in.
    let out = ab(
        &work,
        &db,
        "'echo a >> where.txt' 'echo b >> where.txt' --runs 8 --warmup 0 --save ../bench/cmp.toml --prepare true",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let saved = dir.path().join("bench/cmp.toml");
    let checked = run(bin().arg("check").arg(&saved));
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
    let url = db.to_str().unwrap();
    let stored = strings(url, "SELECT manifest_text FROM runs");
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), stored[0]);

    // `run` from another folder: the same configs and commands, run where `ab` ran them.
    let again = run(bin().current_dir(dir.path()).arg("--database").arg(&db).args([
        "run",
        "--no-report",
        "bench/cmp.toml",
        "--seed",
        "9",
    ]));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(scalar(url, "SELECT COUNT(DISTINCT manifest_hash) FROM runs"), 1);
    let configs = strings(
        url,
        "SELECT run_id || ' ' || config || ' ' || COUNT(*) FROM trials GROUP BY run_id, config ORDER BY run_id, config",
    );
    let shape: Vec<&str> = configs.iter().map(|c| c.split_once(' ').unwrap().1).collect();
    assert_eq!(
        shape,
        [
            "echo-a-where-txt 8",
            "echo-b-where-txt 8",
            "echo-a-where-txt 8",
            "echo-b-where-txt 8"
        ]
    );
    let lines = std::fs::read_to_string(work.join("where.txt")).unwrap();
    assert_eq!(
        (lines.matches("a\n").count(), lines.matches("b\n").count()),
        (16, 16),
        "{lines}"
    );
    assert!(!dir.path().join("where.txt").exists());
}

#[test]
fn a_parameter_list_runs_every_command_at_every_value() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let out = ab(
        dir.path(),
        &db,
        "-N -n plain -n shell 'true {n}' 'sh -c true {n}' -L n 1,2 --runs 8 --warmup 0 --export-json ab.json",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ab.json")).unwrap()).unwrap();
    let rows: Vec<String> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} n={}",
                r["name"].as_str().unwrap(),
                r["parameters"]["n"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        rows,
        ["plain[n=1] n=1", "plain[n=2] n=2", "shell[n=1] n=1", "shell[n=2] n=2"]
    );
    let compared: Vec<String> = json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{} vs {}", c["name"].as_str().unwrap(), c["against"].as_str().unwrap()))
        .collect();
    assert_eq!(compared, ["shell[n=1] vs plain[n=1]", "shell[n=2] vs plain[n=2]"]);
    let argv = strings(db.to_str().unwrap(), "SELECT manifest_text FROM runs");
    assert!(
        argv[0].contains(r#""stages.bench.argv" = ["sh", "-c", "true", "{{ n }}"]"#),
        "{}",
        argv[0]
    );
}

#[test]
fn options_that_cannot_make_a_manifest_exit_2_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let out = ab(dir.path(), &db, "-n a x y --save m.toml");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("1 names (-n) for 2 commands"), "{}", text(&out));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
