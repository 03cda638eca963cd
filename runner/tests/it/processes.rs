//! A stage's processes and output: a timeout ends the stage's whole tree, including children
//! that left its session; odd and extreme output is stored where it can be, never fatal, and
//! the report still finishes.

use crate::common::{bin, run, run_cmd, strings, text, wait_until, write};
use std::path::Path;
use std::time::{Duration, Instant};

/// Whether `pid` is still a live process (a zombie waiting for its reaper counts as ended).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}

/// `measured run` of `manifest` into the SQLite file `db`, results under `dir`.
fn measured_cmd(db: &str, dir: &Path, manifest: &Path) -> std::process::Command {
    let mut c = run_cmd(db, &dir.join("results"), &[]);
    c.arg(manifest);
    c
}

fn measured_run(db: &str, dir: &Path, manifest: &Path) -> std::process::Output {
    run(&mut measured_cmd(db, dir, manifest))
}

/// Writes `{name}.sh` holding `script` and `{name}.toml`: experiment `name`, no warm-up,
/// `repetitions`, one command stage `work` running the script with `sh`, then `extra` (more
/// keys of the stage, or further tables). Returns the manifest's path.
fn sh_stage(dir: &Path, name: &str, script: &str, repetitions: u32, extra: &str) -> std::path::PathBuf {
    let script = write(dir, &format!("{name}.sh"), script);
    write(
        dir,
        &format!("{name}.toml"),
        &format!(
            "[experiment]\nname = \"{name}\"\n[schedule]\nwarmup = 0\nrepetitions = {repetitions}\n\
             [stages.work]\nkind = \"command\"\nargv = [\"sh\", \"{}\"]\n{extra}",
            script.display()
        ),
    )
}

/// Starts `cmd` with its output discarded.
fn spawn_quiet(cmd: &mut std::process::Command) -> std::process::Child {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The exit status of `child` once it ends; kills it and fails when that takes over `limit`.
fn exit_within(child: &mut std::process::Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_timeout_ends_the_stage_tree_including_setsid_children() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let m = sh_stage(
        dir.path(),
        "tree",
        &format!(
            "setsid sh -c 'echo $$ > {}; exec sleep 60' &\nsleep 60\n",
            pidfile.display()
        ),
        1,
        "timeout = 1\n",
    );
    let db = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    let o = measured_run(&db, dir.path(), &m);
    assert_eq!(o.status.code(), Some(1), "the trial failed: {}", text(&o));
    let stage: Vec<String> = strings(&db, "SELECT printf('%.3f', seconds) || ' ' || error FROM stage_results");
    assert!(stage[0].contains("timed out after 1s"), "{stage:?}");
    let secs: f64 = stage[0].split(' ').next().unwrap().parse().unwrap();
    assert!(
        secs < 3.0,
        "the stage ended after {secs} s, not within 3 s of its start"
    );
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    assert!(!alive(&pid), "the setsid grandchild {pid} outlived the stage");
}

/// A program that exits while a `setsid` child of it runs on: the child is found among the
/// processes started since the stage began, and ended, so the stage's pipes close and the
/// trial finishes instead of waiting a minute for it.
#[test]
fn what_a_program_leaves_running_when_it_exits_is_ended_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("left.pid");
    let m = sh_stage(
        dir.path(),
        "leave",
        &format!(
            "setsid sh -c 'echo $$ > {}; exec sleep 60' &\nsleep 0.2\n",
            pidfile.display()
        ),
        2,
        "",
    );
    let db = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    let start = Instant::now();
    let o = measured_run(&db, dir.path(), &m);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "the run waited for the child it left: {:?}",
        start.elapsed()
    );
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    assert!(
        !alive(&pid),
        "the setsid child {pid} outlived the program that started it"
    );
}

#[test]
fn odd_and_extreme_output_is_stored_and_the_report_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let m = sh_stage(
        dir.path(),
        "odd",
        "printf '\\377\\376 not utf-8\\n'\n\
         printf '{\"metric\": \"big\", \"value\": 1e308, \"unit\": \"s\"}\\n'\n\
         printf '{\"metric\": \"small\", \"value\": -1e308, \"unit\": \"s\"}\\n'\n\
         printf '{\"metric\": \"nan\", \"value\": NaN, \"unit\": \"s\"}\\n'\n\
         seq 1 20000\n",
        2,
        "[compare]\nprimary = \"work.big\"\n",
    );
    let db = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    let o = measured_run(&db, dir.path(), &m);
    assert!(o.status.success(), "{}", text(&o));
    let stored = strings(
        &db,
        "SELECT name || '=' || value FROM metrics ORDER BY trial_index, name",
    );
    assert_eq!(
        stored,
        ["big=1.0e+308", "small=-1.0e+308", "big=1.0e+308", "small=-1.0e+308"]
    );
    let id = strings(&db, "SELECT id FROM runs").remove(0);
    let mut report = spawn_quiet(
        bin()
            .args(["--database", &db, "report", &id, "--results-dir"])
            .arg(dir.path().join("results")),
    );
    let status = exit_within(&mut report, Duration::from_secs(60), "`measured report`");
    assert!(status.success(), "report failed: {status}");
}

#[test]
fn killing_measured_takes_its_stage_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("stage.pid");
    let m = sh_stage(
        dir.path(),
        "victim",
        &format!("echo $$ > {}\nexec sleep 60\n", pidfile.display()),
        1,
        "",
    );
    let db = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    let mut measured = spawn_quiet(&mut measured_cmd(&db, dir.path(), &m));
    let written = || std::fs::read_to_string(&pidfile).ok().filter(|p| p.ends_with('\n'));
    wait_until("the stage to start", Duration::from_secs(30), || written().is_some());
    let pid = written().unwrap().trim().to_owned();
    measured.kill().unwrap(); // SIGKILL: no handler runs
    measured.wait().unwrap();
    wait_until("the stage to end with measured", Duration::from_secs(3), || {
        !alive(&pid)
    });
}

/// SIGTERM and SIGINT end a run within a few seconds, even with a stage that would sleep for a
/// minute: the stage's tree is killed, the run is stored as interrupted with exit 130, and the
/// trials that finished are kept.
#[test]
fn sigterm_and_sigint_end_a_run_promptly_and_keep_finished_trials() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("second.started");
        // The first trial finishes at once; the second sleeps until it is stopped.
        let script = write(
            dir.path(),
            "slow.sh",
            &format!(
                "if [ \"$1\" = 1 ]; then touch {}; exec sleep 60; fi\n",
                marker.display()
            ),
        );
        let m = write(
            dir.path(),
            "slow.toml",
            &format!(
                "[experiment]\nname = \"slow\"\n[schedule]\nwarmup = 0\nrepetitions = 2\norder = \"sequential\"\n[stages.work]\nkind = \"command\"\nargv = [\"sh\", \"{}\", \"{{{{ repetition }}}}\"]\n",
                script.display()
            ),
        );
        let db = format!("sqlite://{}", dir.path().join("r.sqlite").display());
        let mut measured = spawn_quiet(&mut measured_cmd(&db, dir.path(), &m));
        wait_until("the second trial to start", Duration::from_secs(30), || marker.exists());
        // SAFETY: plain syscall on our own child.
        unsafe {
            libc::kill(measured.id() as libc::pid_t, signal);
        }
        let status = exit_within(
            &mut measured,
            Duration::from_secs(5),
            &format!("measured after signal {signal}"),
        );
        assert_eq!(status.code(), Some(130), "signal {signal}");
        assert_eq!(
            strings(&db, "SELECT status FROM runs"),
            ["interrupted"],
            "signal {signal}"
        );
        assert_eq!(
            strings(&db, "SELECT CAST(repetition AS TEXT) FROM trials WHERE status = 'ok'"),
            ["0"],
            "signal {signal}: the finished trial is kept"
        );
    }
}
