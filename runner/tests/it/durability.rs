//! Nothing is lost: a database that restarts, stays down, loses acknowledged commits or whose
//! file is deleted mid-run; two runs creating one SQLite file at once; a killed run shown as
//! abandoned and finished by `--resume`.
//!
//! Every stage execution appends its trial index to a counter file, so "none re-run" is
//! counted, not assumed. The faults are injected at points the tests wait for (trials stored),
//! and no assertion depends on how long anything took.

use crate::common::{bin, run, run_cmd, scalar, strings, text, wait_until, write, PrivatePg};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// 2 variants x `reps` repetitions of a `secs`-second command that counts its executions.
fn counting_manifest(dir: &Path, reps: u32, secs: f64, before: &str) -> PathBuf {
    let counter = dir.join("executions");
    write(
        dir,
        "naps.toml",
        &format!(
            r#"
[experiment]
name = "naps"
[schedule]
warmup = 0
repetitions = {reps}
seed = 4
[stages.nap]
kind = "command"
shell = true
argv = ["{before}sleep {secs}; echo {{{{ trial }}}} >> '{counter}'"]
[variants.a]
[variants.b]
[compare]
allow_identical = true
"#,
            counter = counter.display()
        ),
    )
}

/// Trial indices executed, in order of execution.
fn executions(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("executions"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

fn assert_each_ran_once(dir: &Path, planned: u32) {
    let mut ran = executions(dir);
    ran.sort_unstable();
    assert_eq!(ran, (0..planned).collect::<Vec<_>>(), "every trial ran exactly once");
}

fn spawn_run(database: &str, results: &Path, manifest: &Path, extra: &[&str]) -> Child {
    run_cmd(database, results, extra)
        .arg(manifest)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stored(url: &str) -> i64 {
    scalar(url, "SELECT COUNT(*) FROM trials")
}

fn journals(results: &Path) -> Vec<PathBuf> {
    measured::store::journal::find(results, None)
}

/// The run id from the first line measured prints (`run <id>: ...`).
fn run_id(out: &Output) -> String {
    let t = text(out);
    t.lines()
        .find_map(|l| l.strip_prefix("run ").and_then(|r| r.split(':').next()))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no run id in:\n{t}"))
}

#[test]
fn postgres_restarted_mid_run_loses_no_trial_and_reruns_none() {
    let pg = PrivatePg::start();
    let dir = tempfile::tempdir().unwrap();
    let m = counting_manifest(dir.path(), 10, 0.3, "");
    let child = spawn_run(&pg.url, dir.path(), &m, &[]);
    wait_until("3 stored trials", LIMIT, || stored(&pg.url) >= 3);
    pg.stop_immediate();
    std::thread::sleep(Duration::from_secs(4));
    pg.start_again();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("finished: 20 of 20 trials stored, 0 failed"),
        "{}",
        text(&out)
    );
    assert_eq!(stored(&pg.url), 20);
    assert_eq!(scalar(&pg.url, "SELECT COUNT(DISTINCT trial_index) FROM trials"), 20);
    assert_eq!(scalar(&pg.url, "SELECT COUNT(*) FROM stage_results"), 20);
    assert_eq!(strings(&pg.url, "SELECT status FROM runs"), vec!["finished".to_owned()]);
    assert_each_ran_once(dir.path(), 20);
    assert!(
        journals(dir.path()).is_empty(),
        "the journal is deleted once all is stored"
    );
}

#[test]
fn postgres_down_to_the_end_keeps_the_journal_and_resume_stores_it_without_rerunning() {
    let pg = PrivatePg::start();
    let dir = tempfile::tempdir().unwrap();
    let m = counting_manifest(dir.path(), 10, 0.2, "");
    let child = spawn_run(&pg.url, dir.path(), &m, &["--db-wait", "1"]);
    wait_until("3 stored trials", LIMIT, || stored(&pg.url) >= 3);
    pg.stop_immediate();
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let id = run_id(&out);
    let resume = format!("measured run --resume {id} --results-dir {}", dir.path().display());
    assert!(t.contains(&resume), "names the command that stores the journal:\n{t}");
    assert!(t.contains("Nothing is lost: all 20 finished trials are kept in"), "{t}");
    assert!(!t.contains("pw-"), "no password in output:\n{t}");
    assert_eq!(journals(dir.path()).len(), 1, "{t}");
    assert_each_ran_once(dir.path(), 20);

    pg.start_again();
    let resumed = run(&mut run_cmd(&pg.url, dir.path(), &["--resume", &id]));
    let rt = text(&resumed);
    assert_eq!(resumed.status.code(), Some(0), "{rt}");
    assert!(rt.contains("stored") && rt.contains("from the journal"), "{rt}");
    assert!(rt.contains("20 of 20 trials stored"), "{rt}");
    assert_each_ran_once(dir.path(), 20);
    assert_eq!(stored(&pg.url), 20);
    assert_eq!(strings(&pg.url, "SELECT status FROM runs"), vec!["finished".to_owned()]);
    assert!(journals(dir.path()).is_empty());
}

#[test]
fn sqlite_file_deleted_mid_run_is_written_again_from_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let url = db.to_str().unwrap().to_owned();
    let m = counting_manifest(dir.path(), 8, 0.15, "");
    let child = spawn_run(&url, dir.path(), &m, &[]);
    wait_until("3 stored trials", LIMIT, || stored(&url) >= 3);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{url}{suffix}"));
    }
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("was deleted during the run"), "says so:\n{t}");
    assert!(t.contains("16 of 16 trials stored"), "{t}");
    assert_eq!(stored(&url), 16, "the new file holds every trial");
    assert_eq!(strings(&url, "SELECT status FROM runs"), vec!["finished".to_owned()]);
    assert_each_ran_once(dir.path(), 16);
}

/// A database that acknowledged a commit and then lost it (Postgres with
/// `synchronous_commit = off` after a crash, a restored backup): the end of the run checks the
/// database against the journal and writes the lost trial again.
#[test]
fn a_trial_the_database_lost_after_acknowledging_it_is_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let url = db.to_str().unwrap().to_owned();
    let forget = write(
        dir.path(),
        "forget.py",
        "import sqlite3, sys\n\
         c = sqlite3.connect(sys.argv[1], timeout=30)\n\
         first = c.execute('SELECT MIN(trial_index) FROM trials').fetchone()[0]\n\
         for t in ('metrics', 'stage_results', 'trials'):\n    c.execute(f'DELETE FROM {t} WHERE trial_index = ?', (first,))\n\
         c.commit()\n",
    );
    let before = format!(
        "{{% if trial == 5 %}}python3 '{}' '{}'; {{% endif %}}",
        forget.display(),
        db.display()
    );
    let m = counting_manifest(dir.path(), 5, 0.0, &before);
    let out = run(run_cmd(&db, dir.path(), &[]).arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("had lost 1 trials it had acknowledged"), "{t}");
    assert!(t.contains("finished: 10 of 10 trials stored"), "{t}");
    assert_eq!(stored(&url), 10);
    assert_each_ran_once(dir.path(), 10);
}

#[test]
fn two_runs_creating_one_sqlite_file_at_once_both_store_everything() {
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("new.sqlite");
        let m = write(
            dir.path(),
            "t.toml",
            "[experiment]\nname = \"t\"\n[schedule]\nwarmup = 0\nrepetitions = 2\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\n",
        );
        let children: Vec<Child> = (0..2)
            .map(|_| spawn_run(db.to_str().unwrap(), dir.path(), &m, &[]))
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "round {round}: {}", text(&out));
        }
        let url = db.to_str().unwrap();
        assert_eq!(scalar(url, "SELECT COUNT(*) FROM runs"), 2, "round {round}");
        assert_eq!(stored(url), 4, "round {round}");
        assert_eq!(
            strings(url, "SELECT status FROM runs"),
            vec!["finished".to_owned(); 2],
            "round {round}"
        );
    }
}

#[test]
fn a_killed_run_is_abandoned_after_its_lease_and_resume_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let url = db.to_str().unwrap().to_owned();
    let m = counting_manifest(dir.path(), 5, 0.25, "");
    let mut child = spawn_run(&url, dir.path(), &m, &["--lease-seconds", "1"]);
    wait_until("2 stored trials", LIMIT, || stored(&url) >= 2);
    child.kill().unwrap(); // SIGKILL: no chance to say anything
    child.wait().unwrap();
    let id = strings(&url, "SELECT id FROM runs").remove(0);
    let runs = || text(&run(bin().arg("--database").arg(&db).arg("runs")));
    wait_until("the run to be shown abandoned", LIMIT, || runs().contains("abandoned"));
    let listed = runs();
    assert!(listed.contains(&format!("measured run --resume {id}")), "{listed}");
    assert_eq!(strings(&url, "SELECT status FROM runs"), vec!["running".to_owned()]);
    let shown = text(&run(bin().arg("--database").arg(&db).args(["show", &id])));
    assert!(shown.contains("status abandoned"), "{shown}");
    assert!(shown.contains(&format!("measured run --resume {id}")), "{shown}");

    let resumed = run(&mut run_cmd(&db, dir.path(), &["--resume", &id]));
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert!(text(&resumed).contains("10 of 10 trials stored"), "{}", text(&resumed));
    assert_eq!(stored(&url), 10);
    let after = runs();
    assert!(after.contains("finished") && !after.contains("abandoned"), "{after}");
    assert!(journals(dir.path()).is_empty());
}

#[test]
fn a_queue_worker_keeps_its_finished_trials_through_a_database_restart() {
    // Durable: the queue's own state (claims, completed units) must survive the crash for
    // "each trial ran once" to be the worker's doing (a server that drops acknowledged
    // commits sends completed units back to the queue, and they run again, stored once).
    let pg = PrivatePg::start_durable();
    let dir = tempfile::tempdir().unwrap();
    let m = counting_manifest(dir.path(), 5, 0.3, "");
    let submitted = run(bin()
        .env("DATABASE_URL", &pg.url)
        .current_dir(dir.path())
        .arg("submit")
        .arg(&m));
    assert_eq!(submitted.status.code(), Some(0), "{}", text(&submitted));
    let id = String::from_utf8_lossy(&submitted.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("run: ").map(str::to_owned))
        .expect("submit prints the run id");
    let worker = bin()
        .env("DATABASE_URL", &pg.url)
        .current_dir(dir.path())
        .args(["worker", "--run", &id, "--results-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("2 stored trials", LIMIT, || stored(&pg.url) >= 2);
    pg.stop_immediate();
    std::thread::sleep(Duration::from_secs(3));
    pg.start_again();
    let out = worker.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(stored(&pg.url), 10, "{}", text(&out));
    assert_eq!(strings(&pg.url, "SELECT status FROM runs"), vec!["finished".to_owned()]);
    let mut ran = executions(dir.path());
    ran.sort_unstable();
    assert_eq!(ran, (0..10).collect::<Vec<_>>(), "each trial ran once:\n{}", text(&out));
    assert!(
        journals(dir.path()).is_empty(),
        "the worker's journal is deleted once all is stored"
    );
}

/// A results file made read-only mid-run: the open connections may still write (no loss), or
/// the writes fail, and then the run ends with a clear error and the journal intact. Root
/// ignores file modes, so under root the run is made as the unprivileged `nobody`.
#[test]
fn sqlite_file_made_read_only_mid_run_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let db = dir.path().join("r.sqlite");
    let url = db.to_str().unwrap().to_owned();
    let m = counting_manifest(dir.path(), 6, 0.2, "");
    let root = std::process::Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    let mut cmd = if root {
        // `nobody` may not reach the build folder (a clone in a 0700 temporary folder, say):
        // it runs a copy of the binary from the test's own open folder.
        let exe = dir.path().join("measured");
        std::fs::copy(env!("CARGO_BIN_EXE_measured"), &exe).unwrap();
        std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let mut c = std::process::Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(&exe);
        c
    } else {
        bin()
    };
    let mut child = cmd
        .env_remove("DATABASE_URL")
        .env_remove("STOCK_DATABASE_URL")
        .arg("--database")
        .arg(&db)
        .args(["run", "--no-report", "--db-wait", "1", "--results-dir"])
        .arg(dir.path())
        .arg(&m)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Only once the run made the file: a file this (root) process created would not be the
    // run's to write.
    wait_until("2 stored trials", LIMIT, || {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended before the file was made read-only: {status}");
        }
        db.exists() && stored(&url) >= 2
    });
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::set_permissions(
            format!("{url}{suffix}"),
            std::os::unix::fs::PermissionsExt::from_mode(0o444),
        );
    }
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::set_permissions(
            format!("{url}{suffix}"),
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        );
    }
    assert_each_ran_once(dir.path(), 12);
    match out.status.code() {
        Some(0) => {
            assert!(t.contains("12 of 12 trials stored"), "{t}");
            assert_eq!(stored(&url), 12, "{t}");
        }
        Some(1) => {
            assert!(t.contains("Nothing is lost: all 12 finished trials are kept in"), "{t}");
            let kept = journals(dir.path());
            assert_eq!(kept.len(), 1, "{t}");
            assert_eq!(
                measured::store::journal::read(&kept[0]).unwrap().trials.len(),
                12,
                "{t}"
            );
        }
        other => panic!("exit {other:?}:\n{t}"),
    }
}

#[test]
fn resuming_a_run_that_is_still_running_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let url = db.to_str().unwrap().to_owned();
    // 100 trials of 0.2 s: still running when the resume is tried (it is killed after).
    let m = counting_manifest(dir.path(), 50, 0.2, "");
    let mut child = spawn_run(&url, dir.path(), &m, &[]);
    wait_until("a stored trial", LIMIT, || db.exists() && stored(&url) >= 1);
    let id = strings(&url, "SELECT id FROM runs").remove(0);
    let resumed = run(&mut run_cmd(&db, dir.path(), &["--resume", &id]));
    child.kill().unwrap();
    child.wait().unwrap();
    let t = text(&resumed);
    assert_eq!(resumed.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&format!("run {id} is still running in another process")),
        "{t}"
    );
}

#[test]
fn a_journal_is_never_written_into_another_database() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.sqlite");
    let m = counting_manifest(dir.path(), 20, 0.2, "");
    let mut child = spawn_run(a.to_str().unwrap(), dir.path(), &m, &[]);
    wait_until("a stored trial", LIMIT, || {
        a.exists() && stored(a.to_str().unwrap()) >= 1
    });
    child.kill().unwrap(); // leaves its journal behind
    child.wait().unwrap();
    let id = strings(a.to_str().unwrap(), "SELECT id FROM runs").remove(0);
    let b = dir.path().join("b.sqlite");
    let wrong = run(&mut run_cmd(&b, dir.path(), &["--resume", &id]));
    let t = text(&wrong);
    assert_eq!(wrong.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&format!("holds results of run {id} for the database sqlite:")),
        "{t}"
    );
    assert!(t.contains("a.sqlite"), "{t}");
    assert_eq!(journals(dir.path()).len(), 1, "the journal is kept: {t}");
    let right = run(&mut run_cmd(&a, dir.path(), &["--resume", &id]));
    assert_eq!(right.status.code(), Some(0), "{}", text(&right));
    assert!(journals(dir.path()).is_empty());
}
