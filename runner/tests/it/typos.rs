//! Mistakes a new user makes every day, caught or explained where the user is looking.

use crate::common::{bin, run, run_cmd, strings, text, write};

const FAILING: &str = r#"
[experiment]
name = "noisy-failure"
[schedule]
warmup = 0
repetitions = 1
[stages.work]
kind = "command"
argv = ["sh", "-c", "for i in 1 2 3 4 5 6 7; do echo err-line-$i >&2; done; exit 3"]
"#;

#[test]
fn a_failed_trial_prints_its_stderr_tail_on_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "f.toml", FAILING);
    let out = run(run_cmd(dir.path().join("r.sqlite"), dir.path(), &[]).arg(&m));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = stderr.lines().skip_while(|l| !l.contains("failed:")).collect();
    let shown = console.join("\n");
    // The last five lines of the program's stderr, not only the "stderr tail:" header.
    for i in 3..=7 {
        assert!(shown.contains(&format!("err-line-{i}")), "line {i} missing:\n{shown}");
    }
    assert!(
        !shown.contains("err-line-2\n") && !shown.ends_with("err-line-2"),
        "{shown}"
    );
    assert!(shown.contains("2 earlier lines in `measured show`"), "{shown}");
}

#[test]
fn comparing_a_run_with_itself_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "s.toml",
        "[experiment]\nname = \"same\"\n[schedule]\nwarmup = 0\nrepetitions = 2\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\n",
    );
    let db = dir.path().join("r.sqlite");
    let first = run(bin().arg("--database").arg(&db).args(["run", "--no-report"]).arg(&m));
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let id = strings(db.to_str().unwrap(), "SELECT id FROM runs").remove(0);
    let prefix = &id[..id.len() - 2];
    let out = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["compare", &id, prefix, "--results-dir"])
        .arg(dir.path()));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains(&format!("are the same run ({id})")), "{t}");
    assert!(!dir.path().join("same").exists(), "nothing was written: {t}");
}

#[test]
fn check_counts_in_words_that_agree_and_runs_marks_smoke_runs() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "one.toml",
        "[experiment]\nname = \"one\"\n[schedule]\nwarmup = 0\nrepetitions = 3\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\n[smoke]\n\"schedule.repetitions\" = 1\n",
    );
    let checked = run(bin().arg("check").arg(&m));
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
    assert!(
        text(&checked).contains("(1 config, 1 stage, 3 trials)"),
        "{}",
        text(&checked)
    );
    let db = dir.path().join("r.sqlite");
    let smoke = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["run", "--no-report", "--smoke"])
        .arg(&m));
    assert_eq!(smoke.status.code(), Some(0), "{}", text(&smoke));
    let listed = text(&run(bin().arg("--database").arg(&db).arg("runs")));
    assert!(listed.contains("finished (smoke)"), "{listed}");
}

/// A command stage that reports `latency`, and a `[compare]` that misspells it.
fn misspelled(primary: &str, guard: &str) -> String {
    format!(
        r#"
[experiment]
name = "misspelled"
[schedule]
warmup = 0
repetitions = 3
seed = 1
[stages.nap]
kind = "command"
argv = ["echo", '{{"metric": "latency", "value": 0.5, "unit": "s"}}']
[variants.a]
[variants.b]
[compare]
allow_identical = true
primary = "{primary}"
guards = [{{ metric = "{guard}", within = "5%" }}]
"#
    )
}

#[test]
fn a_guard_metric_no_trial_produced_fails_the_run_and_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "m.toml", &misspelled("nap.seconds", "nap.latncy"));
    let db = dir.path().join("r.sqlite");
    let checked = run(bin().arg("check").arg(&m));
    assert_eq!(
        checked.status.code(),
        Some(0),
        "command-stage metrics are known only from their output"
    );
    let out = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["run", "--fail-on-regression", "--results-dir"])
        .arg(dir.path())
        .arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("metric `nap.latncy` ([compare] guards) was produced by no trial; stage `nap` produced: nap.latency, nap.seconds"),
        "{t}"
    );
    assert!(t.contains("did you mean `nap.latency`?"), "{t}");
    // The stored run, gated again: a guard that was never evaluated fails the gate.
    let gated = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["report", "latest", "--fail-on-regression", "--results-dir"])
        .arg(dir.path()));
    assert_eq!(gated.status.code(), Some(1), "{}", text(&gated));
    let plain = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["report", "latest", "--results-dir"])
        .arg(dir.path()));
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain));
}

/// The primary metric is checked after the first block (`mistakes.rs` has the located error);
/// a printed metric's name is offered too, not only the stage's time.
#[test]
fn a_primary_metric_no_trial_produced_stops_the_run_after_the_first_block() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "m.toml", &misspelled("nap.latenzy", "nap.latency"));
    let db = dir.path().join("r.sqlite");
    let out = run(bin().arg("--database").arg(&db).args(["run", "--no-report"]).arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("stopped after its first block: metric `nap.latenzy` ([compare] primary) was produced by no trial"),
        "{t}"
    );
    assert!(t.contains("did you mean `nap.latency`?"), "{t}");
    // One block of the two configs (no warm-up), of 6 planned trials.
    assert_eq!(
        crate::common::scalar(db.to_str().unwrap(), "SELECT COUNT(*) FROM trials"),
        2
    );
}

#[test]
fn a_refused_connection_says_so_and_a_short_password_mangles_nothing() {
    // Port 1 on the loopback refuses at once; the password is the single letter `p`.
    let out = run(bin()
        .args(["--database", "postgres://u:p@127.0.0.1:1/results"])
        .arg("runs"));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("postgres://u:***@127.0.0.1:1/results"), "{t}");
    assert!(
        t.to_lowercase().contains("connection refused"),
        "the driver's reason, not a pool timeout: {t}"
    );
    assert!(!t.contains("pool timed out") && !t.contains("***ool"), "{t}");
    assert!(t.contains("hint:"), "{t}");
}

const LOADS_TEN: &str = r#"
[experiment]
name = "loads"
[schedule]
warmup = 0
repetitions = 1
[stages.load]
kind = "load"
symbols = { first = 3 }
"#;

#[test]
fn a_mistyped_stock_database_path_is_an_error_not_a_new_fake_market() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "l.toml", LOADS_TEN);
    let missing = dir.path().join("nodir/stock.sqlite");
    let out = run(run_cmd(dir.path().join("r.sqlite"), dir.path(), &[])
        .env("STOCK_DATABASE_URL", &missing)
        .arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("stock.sqlite (--stock-database / STOCK_DATABASE_URL) does not exist"),
        "{t}"
    );
    assert!(
        !missing.exists() && !dir.path().join("nodir").exists(),
        "nothing was created: {t}"
    );
    assert!(!dir.path().join("r.sqlite").exists(), "no run was stored: {t}");

    // Created on purpose, it works, and the run reads it rather than filling it.
    let synth =
        run(bin()
            .env("STOCK_DATABASE_URL", &missing)
            .args(["data", "synth", "--symbols", "5", "--days", "300"]));
    assert_eq!(synth.status.code(), Some(0), "{}", text(&synth));
    let again = run(run_cmd(dir.path().join("r.sqlite"), dir.path(), &[])
        .env("STOCK_DATABASE_URL", &missing)
        .arg(&m));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        !text(&again).contains("filled with a synthetic market"),
        "{}",
        text(&again)
    );
}

#[test]
fn copy_on_a_sqlite_stock_database_is_a_located_check_error() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "copy.toml",
        "[experiment]\nname = \"copy\"\n[stages.load]\nkind = \"load\"\nsymbols = { first = 3 }\n\
         [variants.stream]\n[variants.copy]\n\"stages.load.strategy\" = \"copy\"\n",
    );
    let db = dir.path().join("r.sqlite");
    let out = run(bin().arg("--database").arg(&db).arg("check").arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("copy.toml:8:26"), "located at the override's value: {t}");
    assert!(
        t.contains("(in config `copy`)") && t.contains("the stock database is SQLite"),
        "{t}"
    );
    // `run` refuses it the same way, before a run or a database exists.
    let out = run(bin().arg("--database").arg(&db).args(["run", "--no-report"]).arg(&m));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!db.exists(), "nothing was written: {}", text(&out));
    // A PostgreSQL stock database can do it: nothing to reject (no connection is made).
    let out = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["--stock-database", "postgres://u:p@127.0.0.1:1/stock", "check"])
        .arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn check_with_smoke_points_at_the_smoke_line() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "s.toml",
        "[experiment]\nname = \"s\"\n[stages.nap]\nkind = \"command\"\nargv = [\"true\"]\n\
         [smoke]\n\"stages.nap.timeout\" = -1\n",
    );
    for smoke in [false, true] {
        let mut c = bin();
        c.arg("check").arg(&m);
        if smoke {
            c.arg("--smoke");
        }
        let out = run(&mut c);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "smoke={smoke}: {t}");
        assert!(
            t.contains("s.toml:7:24"),
            "smoke={smoke}: not at the [smoke] value: {t}"
        );
        assert!(t.contains("(as set by [smoke])"), "{t}");
    }
}

#[test]
fn ignored_json_lines_are_named_by_line_number() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "j.toml",
        r#"
[experiment]
name = "j"
[schedule]
warmup = 0
repetitions = 1
[stages.work]
kind = "command"
argv = ["printf", '{"metric": "a", "value": 1}\n{"metrc": "b", "value": 2}\nplain text\n{"metric": "c", "value": "x"}\n']
"#,
    );
    let out = run(run_cmd(dir.path().join("r.sqlite"), dir.path(), &[]).arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("ignored 2 stdout line(s)"), "{t}");
    assert!(t.contains("line 2:") && t.contains("line 4:"), "{t}");
    assert!(!t.contains("line 3:"), "plain text is not JSON: {t}");
}

#[test]
fn a_nested_vars_override_sets_one_variable_like_the_quoted_key() {
    let text = r#"
[experiment]
name = "nested"
[stages.work]
kind = "command"
argv = ["echo", "{{ a }}", "{{ b }}"]
vars = { a = 1, b = 2 }
[variants.base]
[variants.quoted]
"stages.work.vars.a" = 5
[variants.nested]
stages.work.vars.a = 6
[compare]
allow_identical = true
"#;
    let exp = measured::manifest::parse_str(std::path::Path::new("nested.toml"), text, false).unwrap();
    let vars = |i: usize| exp.configs[i].stages[0].table["vars"].clone();
    assert_eq!(vars(1).to_string(), "{ a = 5, b = 2 }");
    // Before, the nested form replaced the whole table and dropped `b`.
    assert_eq!(vars(2).to_string(), "{ a = 6, b = 2 }");
}

/// Every built-in stage kind, with the options that make it record its optional metrics.
const EVERY_KIND: &str = r#"
[experiment]
name = "catalog"
[data]
synth = { symbols = 6, days = 200, start = 2021-01-04, seed = 7 }
[schedule]
warmup = 0
repetitions = 1
[stages.load]
kind = "load"
[stages.features]
kind = "normalize"
needs = ["load"]
seq_len = 10
preset = "minimal"
[stages.train]
kind = "train"
needs = ["features"]
hidden = [8]
batch_size = 64
epochs = 2
phase_timing = true
target = { mse_vs_zero = 100.0 }
[stages.check]
kind = "validate"
needs = ["train"]
[stages.copy]
kind = "transfer"
sizes = ["4KiB", "16KiB"]
direction = "both"
host_memory = "pinned"
allocation = "reuse"
iterations = 2
[stages.copies]
kind = "transfer"
sizes = ["4KiB"]
host_memory = ["pageable", "pinned"]
sync = ["blocking", "non_blocking"]
iterations = 2
"#;

/// The stage catalog is the contract the validator, the report and `measured schema` read: a
/// metric a built-in stage records under a name or unit the catalog does not declare would be
/// refused in `[compare]` while it sits in the database, or described wrongly.
#[test]
fn every_metric_a_built_in_stage_records_is_in_the_catalog_with_its_unit() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "every-kind.toml", EVERY_KIND);
    let db = dir.path().join("r.sqlite");
    let out = run(run_cmd(&db, dir.path(), &[]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let url = format!("sqlite://{}", db.display());
    let recorded = strings(
        &url,
        "SELECT DISTINCT s.kind || '|' || m.name || '|' || m.unit FROM metrics m \
         JOIN stage_results s ON s.run_id = m.run_id AND s.trial_index = m.trial_index AND s.stage = m.stage \
         ORDER BY 1",
    );
    let mut kinds_seen = std::collections::BTreeSet::new();
    for row in &recorded {
        let [kind, name, unit] = row.splitn(3, '|').collect::<Vec<_>>()[..] else {
            panic!("{row}")
        };
        kinds_seen.insert(kind.to_owned());
        let decl = measured::kinds::catalog::find(kind, name)
            .unwrap_or_else(|| panic!("a `{kind}` stage recorded `{name}`, which the catalog does not declare"));
        assert_eq!(decl.unit, unit, "unit of {kind}.{name}");
    }
    for kind in ["load", "normalize", "train", "validate", "transfer"] {
        assert!(
            kinds_seen.contains(kind),
            "no metric of a `{kind}` stage in {recorded:?}"
        );
    }
    // The optional ones this manifest asks for are there, so the check above covered them.
    for name in [
        "train|seconds_to_target|s",
        "train|compute_seconds|s",
        "transfer|h2d_seconds|s",
    ] {
        assert!(recorded.iter().any(|r| r == name), "{name} not recorded: {recorded:?}");
    }
    // The facts are the same contract: claims are judged on them by name.
    let facts = strings(
        &url,
        "SELECT DISTINCT s.kind || '|' || j.key FROM stage_results s, json_each(s.facts) j ORDER BY 1",
    );
    for row in &facts {
        let (kind, name) = row.split_once('|').unwrap();
        assert!(
            measured::kinds::facts::find_fact(kind, name).is_some(),
            "a `{kind}` stage recorded the fact `{name}`, which the catalog does not declare"
        );
    }
    for kind in ["normalize", "train", "validate", "transfer"] {
        assert!(
            facts.iter().any(|r| r.starts_with(&format!("{kind}|"))),
            "no fact of a `{kind}` stage in {facts:?}"
        );
    }
}
