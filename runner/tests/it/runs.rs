//! `measured run` end to end: stored rows on both backends, failures, resume, interruption,
//! and secrets kept out of output.

use crate::common::{bin, pg_url, run, scalar, strings, text, wait_until, write};
use std::path::Path;
use std::time::{Duration, Instant};

const AB: &str = r#"
[experiment]
name = "ab"

[schedule]
warmup = 1
repetitions = 8
seed = 11

[stages.work]
kind = "command"
argv = ["sh", "-c", "sleep {{ secs }}; echo '{\"metric\": \"answer\", \"value\": {{ v }}, \"unit\": \"count\"}'; echo '{\"metric\": \"curve\", \"value\": 0.5, \"unit\": \"loss\", \"step\": 2}'"]
vars = { secs = 0.03, v = 1 }

[stages.after]
kind = "command"
needs = ["work"]
argv = ["true"]

[variants.baseline]
[variants.fast]
"stages.work.vars.secs" = 0.005
"stages.work.vars.v" = 2
"#;

fn check_ab_rows(url: &str) {
    assert_eq!(scalar(url, "SELECT COUNT(*) FROM runs"), 1);
    assert_eq!(
        scalar(url, "SELECT COUNT(*) FROM trials"),
        18,
        "2 configs x (1 warm-up + 8 repetitions)"
    );
    assert_eq!(scalar(url, "SELECT COUNT(*) FROM trials WHERE warmup"), 2);
    assert_eq!(scalar(url, "SELECT COUNT(*) FROM trials WHERE status = 'ok'"), 18);
    assert_eq!(scalar(url, "SELECT COUNT(*) FROM stage_results"), 36);
    assert_eq!(
        scalar(url, "SELECT COUNT(*) FROM metrics"),
        36,
        "two metric lines per trial"
    );
    assert_eq!(
        scalar(url, "SELECT CAST(SUM(m.value) AS BIGINT) FROM metrics m JOIN trials t ON t.run_id = m.run_id AND t.trial_index = m.trial_index WHERE m.name = 'answer' AND t.variant = 'fast'"),
        18,
        "9 fast trials reported answer = 2"
    );
    assert_eq!(
        scalar(
            url,
            "SELECT COUNT(*) FROM metrics WHERE name = 'curve' AND step = 2 AND unit = 'loss'"
        ),
        18
    );
    assert_eq!(strings(url, "SELECT status FROM runs"), vec!["finished".to_owned()]);
    // Stored stage times are the stage's wall time: at least the 30 ms the baseline sleeps.
    // (A lower bound the sleep guarantees; which variant is faster is not a test's question.)
    let slow = scalar(url, "SELECT CAST(MIN(s.seconds) * 1000000 AS BIGINT) FROM stage_results s JOIN trials t ON t.run_id = s.run_id AND t.trial_index = s.trial_index WHERE s.stage = 'work' AND t.variant = 'baseline'");
    assert!(slow >= 30_000, "baseline min {slow} us");
    assert!(scalar(url, "SELECT COUNT(*) FROM stage_results WHERE peak_rss_bytes > 0") == 36);
}

#[test]
fn run_stores_every_trial_stage_and_metric_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "ab.toml", AB);
    let db = dir.path().join("results.sqlite");
    let out = run(bin().arg("--database").arg(&db).args(["run", "--no-report"]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("18 of 18 trials stored, 0 failed"),
        "{}",
        text(&out)
    );
    check_ab_rows(db.to_str().unwrap());
}

#[test]
fn run_stores_every_trial_stage_and_metric_in_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "ab.toml", AB);
    let url = pg_url();
    let out = run(bin().env("DATABASE_URL", &url).args(["run", "--no-report"]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    check_ab_rows(&url);
    // The password never shows: not in run output, not in listings.
    let password = url::Url::parse(&url).unwrap().password().unwrap().to_owned();
    let listing = run(bin().env("DATABASE_URL", &url).arg("runs"));
    for o in [&out, &listing] {
        assert!(!text(o).contains(&password), "password leaked:\n{}", text(o));
    }
    assert!(text(&out).contains("measured:***@"), "{}", text(&out));
}

#[test]
fn unreachable_database_error_hides_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "ab.toml", AB);
    let out = run(bin()
        .env("DATABASE_URL", "postgres://alice:hunter2-secret@127.0.0.1:1/results")
        .args(["run", "--no-report"])
        .arg(&m));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!text(&out).contains("hunter2-secret"), "{}", text(&out));
    assert!(text(&out).contains("alice:***@127.0.0.1"), "{}", text(&out));
}

#[test]
fn failing_stage_fails_its_trial_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "fail.toml",
        r#"
[experiment]
name = "fail"
[schedule]
warmup = 0
repetitions = 8
seed = 1
[stages.work]
kind = "command"
argv = ["sh", "-c", "if [ {{ code }} -ne 0 ]; then echo first line >&2; echo 'boom: disk on fire' >&2; fi; exit {{ code }}"]
vars = { code = 0 }
[stages.after]
kind = "command"
needs = ["work"]
argv = ["true"]
[variants.good]
[variants.broken]
"stages.work.vars.code" = 3
"#,
    );
    let db = dir.path().join("r.sqlite");
    let out = run(bin().arg("--database").arg(&db).args(["run", "--no-report"]).arg(&m));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let url = db.to_str().unwrap();
    assert_eq!(
        scalar(
            url,
            "SELECT COUNT(*) FROM trials WHERE variant = 'good' AND status = 'ok'"
        ),
        8
    );
    assert_eq!(
        scalar(
            url,
            "SELECT COUNT(*) FROM trials WHERE variant = 'broken' AND status = 'failed'"
        ),
        8
    );
    let errors = strings(url, "SELECT error FROM trials WHERE status = 'failed'");
    assert!(
        errors
            .iter()
            .all(|e| e.contains("exited with code 3") && e.contains("boom: disk on fire")),
        "{errors:?}"
    );
    assert_eq!(
        scalar(
            url,
            "SELECT COUNT(*) FROM stage_results WHERE stage = 'after' AND status = 'skipped'"
        ),
        8
    );
    assert!(text(&out).contains("failed"), "{}", text(&out));
}

const SLOW: &str = r#"
[experiment]
name = "slow"
[schedule]
warmup = 0
repetitions = 8
seed = 3
[stages.work]
kind = "command"
argv = ["sleep", "0.25"]
[variants.a]
[variants.b]
"stages.work.timeout" = 30.0
"#;

fn wait_for_trials(db: &Path, at_least: i64) {
    wait_until("stored trials", Duration::from_secs(60), || {
        db.exists() && scalar(db.to_str().unwrap(), "SELECT COUNT(*) FROM trials") >= at_least
    });
}

fn check_complete(url: &str) {
    assert_eq!(scalar(url, "SELECT COUNT(*) FROM trials"), 16);
    assert_eq!(scalar(url, "SELECT COUNT(DISTINCT trial_index) FROM trials"), 16);
    assert_eq!(scalar(url, "SELECT MAX(trial_index) FROM trials"), 15);
    assert_eq!(scalar(url, "SELECT COUNT(*) FROM stage_results"), 16);
    assert_eq!(strings(url, "SELECT status FROM runs"), vec!["finished".to_owned()]);
}

#[test]
fn kill_9_then_resume_completes_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "slow.toml", SLOW);
    let db = dir.path().join("r.sqlite");
    let mut child = bin()
        .arg("--database")
        .arg(&db)
        .args(["--quiet", "run", "--no-report"])
        .arg(&m)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_trials(&db, 3);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let url = db.to_str().unwrap();
    let stored = scalar(url, "SELECT COUNT(*) FROM trials");
    assert!((3..16).contains(&stored), "{stored} trials stored before the kill");
    assert_eq!(strings(url, "SELECT status FROM runs"), vec!["running".to_owned()]);
    let id = strings(url, "SELECT id FROM runs").remove(0);
    let out = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["run", "--no-report", "--resume", &id]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{stored} of 16 trials already stored")),
        "{}",
        text(&out)
    );
    check_complete(url);
    // Resuming a finished run runs nothing and duplicates nothing.
    let again = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["run", "--no-report", "--resume", "latest"]));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    check_complete(url);
}

#[test]
fn ctrl_c_marks_the_run_interrupted_and_keeps_finished_trials() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "slow.toml", SLOW);
    let db = dir.path().join("r.sqlite");
    let child = bin()
        .arg("--database")
        .arg(&db)
        .args(["--quiet", "run", "--no-report"])
        .arg(&m)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_trials(&db, 2);
    // SAFETY: plain syscall on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the current trial is cancelled, not waited for"
    );
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let url = db.to_str().unwrap();
    assert_eq!(strings(url, "SELECT status FROM runs"), vec!["interrupted".to_owned()]);
    let stored = scalar(url, "SELECT COUNT(*) FROM trials");
    assert!((2..16).contains(&stored));
    assert_eq!(
        scalar(url, "SELECT COUNT(*) FROM trials WHERE status <> 'ok'"),
        0,
        "the cancelled trial is not stored"
    );
    assert!(text(&out).contains("measured run --resume"), "{}", text(&out));
    let id = strings(url, "SELECT id FROM runs").remove(0);
    let resumed = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["run", "--no-report", "--resume", &id]));
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    check_complete(url);
}

/// A run whose process stops on an error once its row is stored (here its events file, a pipe
/// whose reader goes away mid-run) is recorded as stopped with that error, not left running
/// until its lease runs out; `--resume` then runs the rest.
#[test]
fn a_run_that_stops_on_an_error_is_recorded_stopped_and_resumes() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "slow.toml", SLOW);
    let db = dir.path().join("r.sqlite");
    let events = dir.path().join("events");
    let made = std::process::Command::new("mkfifo").arg(&events).status().unwrap();
    assert!(made.success(), "mkfifo");
    let child = bin()
        .arg("--database")
        .arg(&db)
        .args(["--quiet", "run", "--no-report", "--json-events"])
        .arg(&events)
        .arg(&m)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Opens once the run opens its end; two trials finish, then the reader goes away.
    let mut lines = std::io::BufReader::new(std::fs::File::open(&events).unwrap()).lines();
    let mut finished = 0;
    while finished < 2 {
        let line = lines.next().expect("the run ended early").unwrap();
        finished += usize::from(line.contains("\"trial_finished\""));
    }
    drop(lines);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("cannot write events"), "{}", text(&out));
    let url = db.to_str().unwrap();
    assert_eq!(strings(url, "SELECT status FROM runs"), vec!["stopped".to_owned()]);
    let error = strings(url, "SELECT error FROM runs").remove(0);
    assert!(error.contains("cannot write events"), "{error}");
    let id = strings(url, "SELECT id FROM runs").remove(0);
    let listed = text(&run(bin().arg("--database").arg(&db).arg("runs")));
    assert!(
        listed.contains("stopped") && !listed.contains("running") && listed.contains("cannot write events"),
        "{listed}"
    );
    assert!(listed.contains(&format!("measured run --resume {id}")), "{listed}");
    let resumed = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["run", "--no-report", "--resume", &id]));
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    check_complete(url);
    assert_eq!(
        scalar(url, "SELECT COUNT(*) FROM runs WHERE error IS NULL"),
        1,
        "a resumed run's error is cleared"
    );
}

#[test]
fn command_timeout_fails_the_stage() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "t.toml",
        "[experiment]\nname = \"t\"\n[schedule]\nwarmup = 0\nrepetitions = 1\n[stages.work]\nkind = \"command\"\nargv = [\"sleep\", \"600\"]\ntimeout = 0.2\n",
    );
    let db = dir.path().join("r.sqlite");
    let start = Instant::now();
    let out = run(bin().arg("--database").arg(&db).args(["run", "--no-report"]).arg(&m));
    // The program was killed, not waited for (a bound 600 s away from both sides).
    assert!(start.elapsed() < Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let errors = strings(db.to_str().unwrap(), "SELECT error FROM trials");
    assert!(errors[0].contains("timed out after 0.2s"), "{errors:?}");
}

/// Lease lengths are bounded on every command that takes one (0.1 or 1 to 86400 s): 1e308 and
/// 0.001 are refused before anything runs.
#[test]
fn lease_seconds_are_bounded_everywhere() {
    for args in [
        &["worker", "--any", "--lease-seconds"][..],
        &["submit", "x.toml", "--lease-seconds"],
        &["run", "x.toml", "--lease-seconds"],
    ] {
        for value in ["1e308", "0.001", "inf"] {
            let o = crate::common::run(crate::common::bin().args(args).arg(value));
            assert_eq!(o.status.code(), Some(2), "{args:?} {value}");
            assert!(
                crate::common::text(&o).contains("must be between"),
                "{args:?} {value}: {}",
                crate::common::text(&o)
            );
        }
    }
}
