//! A new user's mistakes that only a run can find (the fixtures under
//! `tests/fixtures/mistakes/`), caught as early as they can be: by the preflight before any
//! trial, by `run` after the first block, or explained where the user looks (`plan`, a failed
//! trial, the report, `history`, the site). The mistakes `check` finds alone are in
//! `tests/fixtures/invalid/` (see `manifests.rs`).

use crate::common::{bin, fixture, run, run_cmd, scalar, strings, text};
use std::path::Path;

/// A copy of fixture folder `mistakes/<name>` (or one file of it) in a fresh folder, so that
/// what a run writes beside its manifest stays out of the source tree.
fn copied(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        let to = dir.path().join(Path::new(f).file_name().unwrap());
        std::fs::copy(fixture(&format!("mistakes/{f}")), to).unwrap();
    }
    dir
}

/// `text` with the run id and the folder it names replaced, for snapshots.
fn redacted(text: &str, dir: &Path, run: Option<&str>) -> String {
    let mut out = text.replace(&dir.display().to_string(), "[DIR]");
    if let Some(run) = run {
        out = out.replace(run, "[RUN]");
    }
    out
}

#[test]
fn a_primary_metric_no_trial_produced_stops_the_run_after_its_first_block() {
    let dir = copied(&["primary_typo.toml"]);
    let m = dir.path().join("primary_typo.toml");
    let checked = run(bin().arg("check").arg(&m));
    assert_eq!(
        checked.status.code(),
        Some(0),
        "a command's metrics are known only from its output"
    );
    let db = dir.path().join("r.sqlite");
    let out = run(run_cmd(&db, &dir.path().join("results"), &[]).arg(&m));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let db = db.to_str().unwrap();
    let id = strings(db, "SELECT id FROM runs").remove(0);
    assert_eq!(strings(db, "SELECT status FROM runs"), ["stopped"]);
    // Two warm-ups and the first block of two configs ran, of 22 planned trials.
    assert_eq!(scalar(db, "SELECT COUNT(*) FROM trials"), 4);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = &stderr[stderr.find("error: run").expect("the located error")..];
    insta::assert_snapshot!(redacted(error, dir.path(), Some(&id)));
    // The stored run's report says why it stopped.
    let shown = run(bin()
        .arg("--database")
        .arg(db)
        .args(["report", &id, "--results-dir"])
        .arg(dir.path()));
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown));
    let report = std::fs::read_to_string(dir.path().join(format!("compress/{id}/report.md"))).unwrap();
    assert!(
        report.contains("It stopped after its first block because no trial produced \"compress.second\""),
        "{report}"
    );
}

#[test]
fn a_seq_len_longer_than_the_training_period_stops_the_preflight_with_the_largest_that_fits() {
    let dir = copied(&["seq_len_too_long.toml"]);
    let m = dir.path().join("seq_len_too_long.toml");
    let db = dir.path().join("r.sqlite");
    let out = run(run_cmd(&db, &dir.path().join("results"), &["--preflight-only"]).arg(&m));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = &stderr[stderr.find("error:").expect("the located error")..];
    insta::assert_snapshot!(redacted(error, dir.path(), None));
    assert!(
        strings(db.to_str().unwrap(), "SELECT id FROM runs").is_empty(),
        "nothing is stored"
    );
    // The largest it names fits: the same manifest with it passes the preflight and runs.
    let largest: usize = error
        .split("the largest seq_len that fits is ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .expect("a largest seq_len");
    let fitting = std::fs::read_to_string(&m)
        .unwrap()
        .replace("seq_len = 300", &format!("seq_len = {largest}"));
    std::fs::write(&m, fitting).unwrap();
    let ok = run(run_cmd(&db, &dir.path().join("results"), &[]).arg(&m));
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    // One more than the largest does not.
    let over = std::fs::read_to_string(&m)
        .unwrap()
        .replace(&format!("seq_len = {largest}"), &format!("seq_len = {}", largest + 1));
    std::fs::write(&m, over).unwrap();
    let refused = run(run_cmd(&db, &dir.path().join("results"), &["--preflight-only"]).arg(&m));
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
}

#[test]
fn a_command_stage_runs_in_its_manifests_folder_from_anywhere_and_says_where() {
    let elsewhere = tempfile::tempdir().unwrap();
    let m = fixture("mistakes/cwd/list.toml");
    let folder = std::fs::canonicalize(fixture("mistakes/cwd")).unwrap();
    let db = elsewhere.path().join("r.sqlite");
    let out = run(run_cmd(&db, elsewhere.path(), &[])
        .arg(&m)
        .current_dir(elsewhere.path()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = run(bin()
        .args(["plan", "--seed", "1", "--show-commands"])
        .arg(&m)
        .current_dir(elsewhere.path()));
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let shown = String::from_utf8_lossy(&plan.stdout);
    let commands: Vec<&str> = shown.lines().filter(|l| l.contains("(in ")).collect();
    insta::assert_snapshot!(redacted(&commands.join("\n"), &folder, None));
    // A file that is not there: the failed trial names the folder it looked in.
    let missing = elsewhere.path().join("missing.toml");
    let body = std::fs::read_to_string(&m).unwrap().replace("tiny.txt", "missing.txt");
    std::fs::write(&missing, body).unwrap();
    let out = run(run_cmd(&db, elsewhere.path(), &[])
        .arg("missing.toml")
        .current_dir(elsewhere.path()));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let inside = std::fs::canonicalize(elsewhere.path()).unwrap();
    assert!(
        text(&out).contains(&format!("`ls` exited with code 2 (in {})", inside.display())),
        "{}",
        text(&out)
    );
}

#[test]
fn the_reproduce_line_names_the_manifest_from_the_repository_root() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    std::fs::create_dir_all(repo.path().join("experiments")).unwrap();
    std::fs::copy(
        fixture("mistakes/cwd/list.toml"),
        repo.path().join("experiments/list.toml"),
    )
    .unwrap();
    std::fs::copy(
        fixture("mistakes/cwd/tiny.txt"),
        repo.path().join("experiments/tiny.txt"),
    )
    .unwrap();
    let db = repo.path().join("r.sqlite");
    // Started inside experiments/, the manifest named as `list.toml`.
    let out = run(run_cmd(&db, repo.path(), &["--seed", "3"])
        .arg("list.toml")
        .current_dir(repo.path().join("experiments")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let command = strings(db.to_str().unwrap(), "SELECT command FROM runs").remove(0);
    assert!(
        command.starts_with("measured run experiments/list.toml --seed 3"),
        "{command}"
    );
}

#[test]
fn a_stopped_run_is_left_out_of_history_and_comparisons_and_badged_on_the_site() {
    let dir = copied(&["stops.toml"]);
    let m = dir.path().join("stops.toml");
    let db = dir.path().join("r.sqlite");
    let results = dir.path().join("results");
    let good = run(run_cmd(&db, &results, &[]).arg(&m));
    assert_eq!(good.status.code(), Some(0), "{}", text(&good));
    let body = std::fs::read_to_string(&m).unwrap().replace("code = 0", "code = 1");
    std::fs::write(&m, body).unwrap();
    let stopped = run(run_cmd(&db, &results, &[]).arg(&m));
    assert_eq!(stopped.status.code(), Some(1), "{}", text(&stopped));
    let url = db.to_str().unwrap();
    let ids = strings(url, "SELECT id FROM runs ORDER BY started_at");
    assert_eq!(
        strings(url, "SELECT status FROM runs ORDER BY started_at"),
        ["finished", "stopped"]
    );
    let history = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["history", "sometimes-fails", "--results-dir"])
        .arg(&results));
    assert_eq!(history.status.code(), Some(0), "{}", text(&history));
    let notes: Vec<String> = text(&history)
        .lines()
        .filter(|l| l.contains("left out"))
        .map(|l| l.replace(&ids[1], "[STOPPED]"))
        .collect();
    insta::assert_snapshot!(notes.join("\n"));
    let compared = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["compare", &ids[0], &ids[1], "--results-dir"])
        .arg(&results));
    assert_eq!(compared.status.code(), Some(2), "{}", text(&compared));
    assert!(
        text(&compared).contains(&format!("run {} is stopped: it has no measurement to compare", ids[1])),
        "{}",
        text(&compared)
    );
    let site = dir.path().join("site");
    let published = run(bin().arg("--database").arg(&db).arg("publish").arg("--out").arg(&site));
    assert_eq!(published.status.code(), Some(0), "{}", text(&published));
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    let row = &index[index.find("data-experiment=\"sometimes-fails\"").unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    // The good run stays the latest shown; the stopped one is badged beside it.
    assert!(row.contains(&format!(">{}</a>", ids[0])), "{row}");
    assert!(row.contains("<span class=\"badge stopped\">stopped</span>"), "{row}");
    let newer = &row[row.find("newer run <a").expect("the newer stopped run is listed")..];
    assert!(newer.contains(&format!(">{}</a>", ids[1])), "{row}");
    assert!(!row.contains("inconclusive"), "{row}");
}

#[test]
fn repeat_runs_a_command_several_times_per_trial_and_records_the_mean_per_run() {
    let dir = copied(&["repeat.toml"]);
    let m = dir.path().join("repeat.toml");
    let db = dir.path().join("r.sqlite");
    let out = run(run_cmd(&db, &dir.path().join("results"), &[]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Four runs in the one trial, counting 1 to 4: their mean, 2.5, is the trial's value.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("runs.count")).unwrap().trim(),
        "4"
    );
    let url = db.to_str().unwrap();
    assert_eq!(
        strings(
            url,
            "SELECT CAST(value AS TEXT) FROM metrics WHERE stage = 'count' AND name = 'run'"
        ),
        ["2.5"]
    );
    let notes = strings(url, "SELECT notes FROM stage_results WHERE stage = 'count'").join("");
    assert!(
        notes.contains("the program ran 4 times per trial (`repeat = 4`)"),
        "{notes}"
    );
}
