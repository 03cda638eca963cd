//! The trial queue end to end: `measured submit` / `worker` / `status` against a real Postgres,
//! concurrent and killed workers, and a real single-node Slurm cluster running worker arrays.

use crate::common::{bin, pg_url, run, scalar, strings, text, wait_until, write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

fn manifest(name: &str, warmup: u32, reps: u32, secs: f64) -> String {
    format!(
        r#"
[experiment]
name = "{name}"

[schedule]
warmup = {warmup}
repetitions = {reps}
seed = 3

[stages.work]
kind = "command"
argv = ["sleep", "{secs}"]

[variants.baseline]
[variants.other]

[compare]
allow_identical = true
"#
    )
}

/// `measured submit`, returning the run id it printed (and the Slurm job id, if any).
fn submit(url: &str, dir: &Path, m: &Path, extra: &[&str], env: &[(&str, &str)]) -> (String, Option<String>) {
    let mut c = bin();
    c.env("DATABASE_URL", url)
        .current_dir(dir)
        .arg("submit")
        .arg(m)
        .args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = run(&mut c);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let field = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|s| s.trim().to_owned())
    };
    (field("run:").expect("run id printed"), field("slurm job:"))
}

fn worker(url: &str, run_id: &str, extra: &[&str]) -> Command {
    let mut c = bin();
    c.env("DATABASE_URL", url)
        .args(["worker", "--run", run_id, "--results-dir"])
        .arg(journals_dir())
        .args(extra);
    c
}

/// Where the workers of these tests keep their journals (not the crate's folder).
fn journals_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("worker-journals")
}

/// Every planned trial is stored exactly once: indices 0..planned, no gap.
fn assert_each_trial_once(url: &str, run_id: &str, planned: i64) {
    let q = |sql: &str| scalar(url, &sql.replace("RUN", run_id));
    assert_eq!(q("SELECT planned_trials FROM runs WHERE id = 'RUN'"), planned);
    assert_eq!(q("SELECT COUNT(*) FROM trials WHERE run_id = 'RUN'"), planned);
    assert_eq!(
        q("SELECT COUNT(DISTINCT trial_index) FROM trials WHERE run_id = 'RUN'"),
        planned
    );
    assert_eq!(q("SELECT MIN(trial_index) FROM trials WHERE run_id = 'RUN'"), 0);
    assert_eq!(
        q("SELECT MAX(trial_index) FROM trials WHERE run_id = 'RUN'"),
        planned - 1
    );
    assert_eq!(
        q("SELECT COUNT(*) FROM trials WHERE run_id = 'RUN' AND status <> 'ok'"),
        0
    );
    assert_eq!(
        q("SELECT COUNT(*) FROM queue_units WHERE run_id = 'RUN' AND status <> 'done'"),
        0
    );
}

fn run_status(url: &str, run_id: &str) -> String {
    strings(url, &format!("SELECT status FROM runs WHERE id = '{run_id}'")).remove(0)
}

#[test]
fn submit_and_worker_with_sqlite_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "q.toml", &manifest("q", 0, 2, 0.0));
    let db = dir.path().join("r.sqlite");
    for args in [
        vec!["submit", m.to_str().unwrap()],
        vec!["worker", "--any"],
        vec!["status", "latest"],
    ] {
        let out = run(bin().arg("--database").arg(&db).args(&args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("set DATABASE_URL=postgres://"), "{}", text(&out));
    }
    assert!(!db.exists(), "nothing was written to the SQLite file");
}

#[test]
fn dry_run_prints_the_script_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "q.toml", &manifest("dry", 0, 2, 0.0));
    let url = pg_url();
    let out = run(bin()
        .env("DATABASE_URL", &url)
        .current_dir(dir.path())
        .arg("submit")
        .arg(&m)
        .args([
            "--slurm",
            "--workers",
            "3",
            "--partition",
            "debug",
            "--gres",
            "gpu:1",
            "--time",
            "00:10:00",
            "--sbatch-arg=--mem=1G",
            "--dry-run",
        ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let script = String::from_utf8_lossy(&out.stdout);
    for line in [
        "#SBATCH --array=0-2",
        "#SBATCH --partition=debug",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --time=00:10:00",
        "#SBATCH --mem=1G",
        "#SBATCH --export=ALL",
    ] {
        assert!(script.lines().any(|l| l == line), "missing {line}:\n{script}");
    }
    assert!(script.contains(" worker --run '"), "{script}");
    let password = url::Url::parse(&url).unwrap().password().unwrap().to_owned();
    assert!(
        !text(&out).contains(&password) && !text(&out).contains("postgres://"),
        "{}",
        text(&out)
    );
    assert_eq!(scalar(&url, "SELECT COUNT(*) FROM runs"), 0, "dry run writes nothing");
    assert!(!dir.path().join("results").exists(), "dry run writes no script");
}

#[test]
fn concurrent_workers_store_exactly_one_result_per_trial() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "q.toml", &manifest("concurrent", 1, 10, 0.01));
    let url = pg_url();
    let (run_id, _) = submit(&url, dir.path(), &m, &["--lease-seconds", "5"], &[]);
    let children: Vec<Child> = (0..4)
        .map(|_| worker(&url, &run_id, &["--quiet"]).spawn().unwrap())
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    assert_each_trial_once(&url, &run_id, 22);
    assert_eq!(run_status(&url, &run_id), "finished");
    let workers = scalar(
        &url,
        &format!("SELECT COUNT(DISTINCT worker) FROM trials WHERE run_id = '{run_id}'"),
    );
    assert!(workers >= 2, "units were shared among workers ({workers} took part)");
    // Units are whole blocks: each block ran on one worker, back to back.
    assert_eq!(
        scalar(
            &url,
            &format!("SELECT COUNT(*) FROM (SELECT block FROM trials WHERE run_id = '{run_id}' GROUP BY block HAVING COUNT(DISTINCT worker) > 1) b")
        ),
        0
    );
}

#[test]
fn killed_worker_unit_is_reclaimed_after_lease_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "q.toml", &manifest("killed", 0, 4, 0.4));
    let url = pg_url();
    let (run_id, _) = submit(&url, dir.path(), &m, &["--lease-seconds", "1.5"], &[]);
    let mut first = worker(&url, &run_id, &["--quiet"]).spawn().unwrap();
    let stored = |sql: &str| scalar(&url, &sql.replace("RUN", &run_id));
    // Kill it once the first trial of unit 0 is stored: it is then inside the second trial.
    wait_until("the first stored trial", Duration::from_secs(20), || {
        stored("SELECT COUNT(*) FROM trials WHERE run_id = 'RUN'") >= 1
    });
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let pid_suffix = format!(":{}", first.id());
    let held_by_dead = strings(
        &url,
        &format!("SELECT worker FROM queue_units WHERE run_id = '{run_id}' AND unit = 0 AND status = 'running'"),
    );
    assert!(
        held_by_dead.len() == 1 && held_by_dead[0].ends_with(&pid_suffix),
        "unit 0 still leased by the killed worker: {held_by_dead:?}"
    );
    assert_eq!(
        stored("SELECT COUNT(*) FROM trials WHERE run_id = 'RUN' AND block = 0"),
        1,
        "killed in the middle of unit 0"
    );
    let status = run(bin().env("DATABASE_URL", &url).args(["status", &run_id]));
    assert!(text(&status).contains("unit    0  worker"), "{}", text(&status));
    let others: Vec<Child> = (0..2)
        .map(|_| worker(&url, &run_id, &["--quiet"]).spawn().unwrap())
        .collect();
    for c in others {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    assert_each_trial_once(&url, &run_id, 8);
    assert_eq!(run_status(&url, &run_id), "finished");
    assert_eq!(
        stored("SELECT attempts FROM queue_units WHERE run_id = 'RUN' AND unit = 0"),
        2
    );
    let unit0_workers = strings(
        &url,
        &format!("SELECT worker FROM trials WHERE run_id = '{run_id}' AND block = 0 ORDER BY trial_index"),
    );
    assert!(
        unit0_workers[0].ends_with(&pid_suffix) && !unit0_workers[1].ends_with(&pid_suffix),
        "unit 0 finished by another worker: {unit0_workers:?}"
    );
}

#[test]
fn paused_worker_that_lost_its_lease_stores_no_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "q.toml", &manifest("paused", 0, 3, 0.5));
    let url = pg_url();
    let (run_id, _) = submit(&url, dir.path(), &m, &["--lease-seconds", "1"], &[]);
    let stale = worker(&url, &run_id, &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = stale.id() as i32;
    wait_until("the first stored trial", Duration::from_secs(20), || {
        scalar(&url, &format!("SELECT COUNT(*) FROM trials WHERE run_id = '{run_id}'")) >= 1
    });
    // Frozen in the middle of unit 0 (its heartbeat too): the lease lapses and another worker
    // takes the unit over and finishes the run.
    // SAFETY: plain syscalls on our own child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let out = run(&mut worker(&url, &run_id, &[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(run_status(&url, &run_id), "finished");
    // Thawed, the stale worker finishes its trial; the store refuses the second result.
    // SAFETY: a plain syscall on our own child, which has not been waited for yet.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let stale = stale.wait_with_output().unwrap();
    assert_eq!(stale.status.code(), Some(0), "{}", text(&stale));
    let log = text(&stale);
    assert!(log.contains("duplicates=1") && log.contains("lost_units=1"), "{log}");
    assert_each_trial_once(&url, &run_id, 6);
}

#[test]
fn any_worker_serves_every_queued_run_and_fails_on_failed_trials() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write(dir.path(), "ok.toml", &manifest("any-ok", 0, 2, 0.0));
    let bad = write(
        dir.path(),
        "bad.toml",
        &manifest("any-bad", 0, 2, 0.0).replace(r#"argv = ["sleep", "0"]"#, r#"argv = ["false"]"#),
    );
    let url = pg_url();
    let (first, _) = submit(&url, dir.path(), &ok, &[], &[]);
    let (second, _) = submit(&url, dir.path(), &bad, &[], &[]);
    let out = run(bin()
        .env("DATABASE_URL", &url)
        .args(["worker", "--any", "--results-dir"])
        .arg(journals_dir()));
    assert_eq!(
        out.status.code(),
        Some(1),
        "failed trials make the worker fail: {}",
        text(&out)
    );
    assert!(text(&out).contains("failed=4"), "{}", text(&out));
    assert_each_trial_once(&url, &first, 4);
    assert_eq!(run_status(&url, &first), "finished");
    assert_eq!(
        scalar(
            &url,
            &format!("SELECT COUNT(*) FROM trials WHERE run_id = '{second}' AND status = 'failed'")
        ),
        4,
        "failed trials are results too, stored once"
    );
    assert_eq!(run_status(&url, &second), "finished");
}

#[test]
fn idle_limit_lets_a_worker_leave_while_another_holds_a_unit() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "q.toml", &manifest("idle", 0, 3, 0.3));
    let url = pg_url();
    let (run_id, _) = submit(&url, dir.path(), &m, &["--lease-seconds", "30"], &[]);
    let mut holder = worker(&url, &run_id, &["--quiet"]).spawn().unwrap();
    wait_until("the first stored trial", Duration::from_secs(20), || {
        scalar(&url, &format!("SELECT COUNT(*) FROM trials WHERE run_id = '{run_id}'")) >= 1
    });
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(holder.id() as i32, libc::SIGSTOP) };
    let start = Instant::now();
    let out = run(&mut worker(&url, &run_id, &["--max-idle-seconds", "0.5"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("idle for"), "{}", text(&out));
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "left long before the 30 s lease expired"
    );
    let st = run(bin().env("DATABASE_URL", &url).args(["status", &run_id]));
    assert!(
        text(&st).contains("0 queued, 1 running, 2 done") && text(&st).contains("expires in"),
        "{}",
        text(&st)
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
}

#[test]
fn a_unit_that_kills_every_worker_fails_after_three_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "q.toml", &manifest("poison", 0, 1, 5.0));
    let url = pg_url();
    let (run_id, _) = submit(&url, dir.path(), &m, &["--lease-seconds", "0.5"], &[]);
    let attempts = || {
        scalar(
            &url,
            &format!("SELECT attempts FROM queue_units WHERE run_id = '{run_id}'"),
        )
    };
    for attempt in 1..=3 {
        let mut w = worker(&url, &run_id, &["--quiet"]).spawn().unwrap();
        wait_until("the unit to be claimed", Duration::from_secs(20), || {
            attempts() == attempt
        });
        w.kill().unwrap();
        w.wait().unwrap();
    }
    let out = run(&mut worker(&url, &run_id, &[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(run_status(&url, &run_id), "failed");
    let st = run(bin().env("DATABASE_URL", &url).args(["status", &run_id]));
    assert!(
        text(&st).contains("0 queued, 0 running, 0 done, 1 failed") && text(&st).contains("expired on attempt 3 of 3"),
        "{}",
        text(&st)
    );
    assert_eq!(
        scalar(&url, &format!("SELECT COUNT(*) FROM trials WHERE run_id = '{run_id}'")),
        0
    );
}

/// A throwaway Slurm cluster (scripts/slurm-start.sh), one at a time; stopped on drop.
struct Slurm {
    dir: PathBuf,
    _lock: MutexGuard<'static, ()>,
}

impl Slurm {
    /// `None` (with the reason printed) only outside CI when not root; under CI=true a cluster
    /// that cannot start fails the test.
    fn start() -> Option<Slurm> {
        static LOCK: Mutex<()> = Mutex::new(());
        let lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        // SAFETY: plain syscall without arguments.
        let root = unsafe { libc::geteuid() } == 0;
        if !root && !ci {
            eprintln!("skipping: starting a Slurm cluster needs root (CI=true makes this a failure)");
            return None;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = std::env::temp_dir().join(format!("measured-slurm-{}-{nanos}", std::process::id()));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/slurm-start.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg(&dir)
            .output()
            .expect("run slurm-start.sh");
        assert!(out.status.success(), "Slurm did not start:\n{}", text(&out));
        Some(Slurm { dir, _lock: lock })
    }

    /// `measured submit --slurm` with `workers` array tasks and a lease of `lease` seconds:
    /// the run id and the Slurm job id.
    fn submit(&self, url: &str, dir: &Path, m: &Path, workers: u32, lease: u32) -> (String, String) {
        let (workers, lease) = (workers.to_string(), lease.to_string());
        let (run_id, job) = submit(
            url,
            dir,
            m,
            &["--slurm", "--workers", &workers, "--lease-seconds", &lease],
            &[("SLURM_CONF", &self.conf())],
        );
        (run_id, job.expect("slurm job id printed"))
    }

    fn conf(&self) -> String {
        self.dir.join("etc/slurm.conf").display().to_string()
    }

    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.conf());
        c
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/slurm-stop.sh");
        let _ = Command::new("bash").arg(script).arg(&self.dir).status();
    }
}

fn status_text(url: &str, slurm: &Slurm, run_id: &str) -> String {
    let out = run(bin()
        .env("DATABASE_URL", url)
        .env("SLURM_CONF", slurm.conf())
        .args(["status", run_id]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    text(&out)
}

#[test]
fn slurm_array_runs_every_trial_once_and_the_report_renders() {
    let Some(slurm) = Slurm::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "q.toml", &manifest("slurm-ab", 1, 6, 0.2));
    let url = pg_url();
    let (run_id, job) = slurm.submit(&url, dir.path(), &m, 3, 10);
    assert_eq!(
        strings(
            &url,
            &format!("SELECT slurm_job_id FROM queue_runs WHERE run_id = '{run_id}'")
        ),
        vec![job.clone()]
    );
    wait_until("the run to finish", Duration::from_secs(60), || {
        run_status(&url, &run_id) == "finished"
    });
    assert_each_trial_once(&url, &run_id, 14);
    let workers = strings(
        &url,
        &format!("SELECT DISTINCT worker FROM trials WHERE run_id = '{run_id}' ORDER BY 1"),
    );
    assert!(
        workers.iter().all(|w| w.contains(&format!(":slurm-{job}_"))),
        "every trial ran in an array task: {workers:?}"
    );
    assert!(workers.len() >= 2, "the array's tasks shared the units: {workers:?}");
    wait_until("the array to leave squeue", Duration::from_secs(30), || {
        status_text(&url, &slurm, &run_id).contains(&format!("slurm job {job}: not in squeue"))
    });
    let st = status_text(&url, &slurm, &run_id);
    assert!(
        st.contains("status finished") && st.contains("0 queued, 0 running, 7 done"),
        "{st}"
    );
    // The script and task logs never hold the password.
    let password = url::Url::parse(&url).unwrap().password().unwrap().to_owned();
    let run_dir = dir.path().join("results/slurm-ab").join(&run_id);
    let mut files = 0;
    for e in std::fs::read_dir(&run_dir).unwrap() {
        let body = std::fs::read_to_string(e.unwrap().path()).unwrap();
        assert!(!body.contains(&password), "password in {}", run_dir.display());
        files += 1;
    }
    assert_eq!(files, 4, "worker.sbatch plus one log per task");
    let out = run(bin().env("DATABASE_URL", &url).current_dir(dir.path()).args([
        "report",
        &run_id,
        "--results-dir",
        "reports",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = std::fs::read_to_string(dir.path().join("reports/slurm-ab").join(&run_id).join("report.md")).unwrap();
    assert!(
        md.contains("> **Note:** Host ") && md.contains("measured trials (6 baseline, 6 other)"),
        "{md}"
    );
}

#[test]
fn scancel_marks_the_run_interrupted_and_a_worker_by_hand_finishes_it() {
    let Some(slurm) = Slurm::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "q.toml", &manifest("slurm-cancel", 0, 6, 0.5));
    let url = pg_url();
    let (run_id, job) = slurm.submit(&url, dir.path(), &m, 2, 3);
    let stored = || scalar(&url, &format!("SELECT COUNT(*) FROM trials WHERE run_id = '{run_id}'"));
    wait_until("two stored trials", Duration::from_secs(30), || stored() >= 2);
    let out = slurm.cmd("scancel").arg(&job).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    wait_until("the run to show as interrupted", Duration::from_secs(30), || {
        status_text(&url, &slurm, &run_id).contains("status interrupted")
    });
    let st = status_text(&url, &slurm, &run_id);
    assert!(st.contains(&format!("slurm job {job}: not in squeue")), "{st}");
    let left = stored();
    assert!(left < 12, "cancelled before the end ({left} trials stored)");
    assert_eq!(run_status(&url, &run_id), "interrupted");
    let out = run(&mut worker(&url, &run_id, &[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_each_trial_once(&url, &run_id, 12);
    assert_eq!(run_status(&url, &run_id), "finished");
}
