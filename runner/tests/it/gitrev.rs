//! Git revisions as variants: a throwaway repository whose program emits a known latency at
//! each commit, compared across commits through `git = ...` and `--rev`.

use crate::common::{bin, git, git_repo, latency_sh, pg_url, run, run_cmd, scalar, strings, text, write};
use std::path::{Path, PathBuf};

/// A repository under `dir/repo` with two commits: `bench.sh` emits 0.100 s, then 0.120 s.
/// Returns (repository, first sha, second sha).
fn repo(dir: &Path) -> (PathBuf, String, String) {
    let repo = git_repo(dir);
    write(&repo, "bench.sh", &latency_sh("0.100"));
    git(&repo, &["add", "bench.sh"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let first = git(&repo, &["rev-parse", "HEAD"]);
    write(&repo, "bench.sh", &latency_sh("0.120"));
    git(&repo, &["commit", "-q", "-a", "-m", "second: 20% slower"]);
    let second = git(&repo, &["rev-parse", "HEAD"]);
    (repo, first, second)
}

/// The experiment, with `variants` appended. The stage has no `cwd`: in a git variant it runs
/// in the manifest's folder of the variant's checkout, i.e. that commit's `bench.sh`.
fn manifest(variants: &str) -> String {
    format!(
        r#"
[experiment]
name = "revisions"
[schedule]
warmup = 0
repetitions = 8
seed = 11
[stages.bench]
kind = "command"
argv = ["sh", "bench.sh", "{{{{ 1 + 0.01 * (repetition % 5) }}}}"]
[compare]
primary = "bench.latency"
{variants}
"#
    )
}

fn report_json(stdout: &str) -> serde_json::Value {
    let md = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .expect("report path printed");
    let json = Path::new(md).with_file_name("report.json");
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// `measured run` with the report, database and results outside the repository.
fn run_with_report(dir: &Path, m: &Path, extra: &[&str]) -> std::process::Output {
    run(bin()
        .arg("--database")
        .arg(dir.join("r.sqlite"))
        .args(["run", "--results-dir"])
        .arg(dir.join("out"))
        .arg(m)
        .args(extra))
}

/// The verdict is `slower` and the speedup's CI holds the true ratio 0.100 / 0.120.
fn assert_slower_by_the_truth(json: &serde_json::Value) {
    let c = &json["comparisons"][0]["comparison"];
    assert_eq!(c["verdict"], "slower", "{c}");
    let truth = 0.100 / 0.120;
    let (lo, hi) = (
        c["speedup_ci"][0].as_f64().unwrap(),
        c["speedup_ci"][1].as_f64().unwrap(),
    );
    assert!(
        lo <= truth * (1.0 + 1e-9) && truth <= hi * (1.0 + 1e-9),
        "true speedup {truth:.4} outside CI [{lo:.4}, {hi:.4}]"
    );
    assert!((c["speedup"].as_f64().unwrap() - truth).abs() < 1e-6, "{c}");
}

/// `variant commit` of every stored trial.
fn trial_commits(db: &Path) -> Vec<String> {
    strings(
        db.to_str().unwrap(),
        "SELECT variant || ' ' || COALESCE(git_commit, 'NULL') FROM trials ORDER BY trial_index",
    )
}

#[test]
fn two_commits_as_variants_give_the_true_slowdown_and_each_trial_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, first, second) = repo(dir.path());
    let m = write(
        &repo,
        "exp.toml",
        &manifest(&format!(
            "[variants.before]\ngit = \"{first}\"\nbuild = \"echo built >> marker\"\n\
             [variants.after]\ngit = \"HEAD\"\nbuild = \"echo built >> marker\"\n"
        )),
    );
    let out = run_with_report(dir.path(), &m, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let json = report_json(&String::from_utf8_lossy(&out.stdout));
    assert_slower_by_the_truth(&json);
    let note = format!(
        "before ran {} (git = \"{first}\"), after ran {}",
        &first[..12],
        &second[..12]
    );
    let notes = json["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains(&note)), "{notes:?}");

    let commits = trial_commits(&dir.path().join("r.sqlite"));
    assert_eq!(commits.len(), 16, "{commits:?}");
    for c in &commits {
        let expected = if c.starts_with("before ") { &first } else { &second };
        assert_eq!(c.split_once(' ').unwrap().1, expected, "{commits:?}");
    }
    // One build per revision, in its own checkout, logged beside it.
    let worktrees = repo.join(".measured/worktrees");
    for sha in [&first, &second] {
        let marker = std::fs::read_to_string(worktrees.join(sha).join("marker")).unwrap();
        assert_eq!(marker, "built\n", "{sha}");
        assert!(worktrees.join(format!("{sha}.build.log")).is_file(), "{sha}");
    }
    // The manifest is not committed: the run says which manifest it used.
    assert!(t.contains("exp.toml has uncommitted changes"), "{t}");
    // The checkouts stay out of the user's status.
    let status = git(&repo, &["status", "--porcelain"]);
    // (`sources/` holds the quotes the test manifest's claims cite, written beside it.)
    assert_eq!(status, "?? exp.toml\n?? sources/", "{status}");

    // `show` names each config's commit; the report names them too.
    let shown = run(bin()
        .arg("--database")
        .arg(dir.path().join("r.sqlite"))
        .args(["show", "latest"]));
    let s = text(&shown);
    assert!(s.contains(&format!("before  commit {first}")), "{s}");
    assert!(s.contains(&format!("after   commit {second}")), "{s}");

    // A second run reuses both checkouts and builds each once more.
    let again = run(run_cmd(dir.path().join("r.sqlite"), &dir.path().join("out"), &[]).arg(&m));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(text(&again).contains("reuses its checkout"), "{}", text(&again));
    let marker = std::fs::read_to_string(worktrees.join(&first).join("marker")).unwrap();
    assert_eq!(marker, "built\nbuilt\n");
}

#[test]
fn rev_arguments_make_the_same_variants_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, first, second) = repo(dir.path());
    // The manifest's own variants are replaced, and its baseline with them.
    let m = write(
        &repo,
        "exp.toml",
        &manifest("[variants.x]\n\"stages.bench.timeout\" = 30.0\n[variants.y]\n\"stages.bench.timeout\" = 60.0\n")
            .replace("[compare]\n", "[compare]\nbaseline = \"y\"\n"),
    );
    let out = run_with_report(
        dir.path(),
        &m,
        &["--rev", &first, "--rev", "HEAD", "--build", "echo built >> marker"],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_slower_by_the_truth(&report_json(&String::from_utf8_lossy(&out.stdout)));
    let db = dir.path().join("r.sqlite");
    let mut commits = trial_commits(&db);
    commits.sort();
    commits.dedup();
    let mut expected = vec![format!("HEAD {second}"), format!("{first} {first}")];
    expected.sort();
    assert_eq!(commits, expected);
    let marker = std::fs::read_to_string(repo.join(".measured/worktrees").join(&second).join("marker")).unwrap();
    assert_eq!(marker, "built\n");
    // The reproduce line gives the revisions again.
    let command = strings(db.to_str().unwrap(), "SELECT command FROM runs").remove(0);
    assert!(
        command.ends_with(&format!("--rev {first} --rev HEAD --build 'echo built >> marker'")),
        "{command}"
    );
}

/// HEAD against the working tree, whose uncommitted `bench.sh` is 20% slower, stored in
/// `database`: the working tree's trials are HEAD's commit, marked dirty.
fn working_tree_against_head(database: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, second) = repo(dir.path());
    write(&repo, "bench.sh", &latency_sh("0.144"));
    let m = write(&repo, "exp.toml", &manifest(""));
    let out = run(bin()
        .args(["--database", database, "run", "--results-dir"])
        .arg(dir.path().join("out"))
        .arg(&m)
        .args(["--rev", "HEAD", "--rev", ":worktree"]));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let json = report_json(&String::from_utf8_lossy(&out.stdout));
    let c = &json["comparisons"][0]["comparison"];
    assert_eq!(c["verdict"], "slower", "{c}");
    let commits = strings(
        database,
        "SELECT DISTINCT variant || ' ' || git_commit FROM trials ORDER BY 1",
    );
    assert_eq!(commits, [format!("HEAD {second}"), format!("worktree {second}")]);
    let dirty = |variant: &str| {
        scalar(
            database,
            &format!("SELECT COUNT(*) FROM trials WHERE git_dirty AND variant = '{variant}'"),
        )
    };
    assert_eq!((dirty("HEAD"), dirty("worktree")), (0, 8));
}

#[test]
fn the_working_tree_is_a_variant_only_when_asked_and_is_recorded_dirty() {
    let dir = tempfile::tempdir().unwrap();
    working_tree_against_head(dir.path().join("r.sqlite").to_str().unwrap());
}

#[test]
fn trial_commits_are_stored_on_postgres_too() {
    working_tree_against_head(&pg_url());
}

/// The stored run of `database` (its only one), read through the store.
fn stored_run(database: &str) -> measured::store::RunRow {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = measured::db::Db::connect(database).await.unwrap();
        let row = measured::store::load_run(&db, "latest").await.unwrap();
        db.close().await;
        row
    })
}

/// Forgets the branch of every stored run, as for runs stored before branches were recorded.
fn forget_branches(database: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = measured::db::Db::connect(database).await.unwrap();
        let sql = "UPDATE runs SET git_branch = NULL";
        match &db {
            measured::db::Db::Sqlite(p) => sqlx::query(sql).execute(p).await.map(|_| ()),
            measured::db::Db::Postgres(p) => sqlx::query(sql).execute(p).await.map(|_| ()),
        }
        .unwrap();
        db.close().await;
    });
}

/// A run of a manifest in a repository on a named branch, stored in `database`: the run keeps
/// the branch, `show` prints it, and a run without one (stored before, or from a detached
/// HEAD) reads back as `None`.
fn run_on_a_branch(database: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, second) = repo(dir.path());
    git(&repo, &["checkout", "-q", "-b", "feature/fast-path"]);
    let m = write(
        &repo,
        "exp.toml",
        "[experiment]\nname = \"flagged\"\n[schedule]\nwarmup = 0\nrepetitions = 1\n\
         [stages.bench]\nkind = \"command\"\nargv = [\"true\"]\n",
    );
    let results = dir.path().join("out");
    let out = run(run_cmd(database, &results, &[]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let row = stored_run(database);
    assert_eq!(row.git_branch.as_deref(), Some("feature/fast-path"));
    assert_eq!(row.git_commit, second);
    assert_eq!(strings(database, "SELECT git_branch FROM runs"), ["feature/fast-path"]);
    let show = |database: &str| {
        let out = run(bin().args(["--database", database, "show", "latest"]));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = show(database);
    assert!(
        shown.contains(&format!("commit {second}  branch feature/fast-path\n")),
        "{shown}"
    );

    forget_branches(database);
    assert_eq!(stored_run(database).git_branch, None);
    let shown = show(database);
    assert!(
        shown.contains(&format!("commit {second}\n")) && !shown.contains("feature/fast-path"),
        "{shown}"
    );

    // A detached HEAD has no branch: the next run stores none.
    git(&repo, &["checkout", "-q", "--detach"]);
    let out = run(run_cmd(database, &results, &[]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        scalar(database, "SELECT COUNT(*) FROM runs WHERE git_branch IS NULL"),
        2
    );
}

#[test]
fn a_run_stores_the_branch_it_started_on() {
    let dir = tempfile::tempdir().unwrap();
    run_on_a_branch(dir.path().join("r.sqlite").to_str().unwrap());
}

#[test]
fn the_branch_is_stored_on_postgres_too() {
    run_on_a_branch(&pg_url());
}

#[test]
fn a_resumed_run_keeps_the_commits_its_first_trials_ran() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, first, second) = repo(dir.path());
    let m = write(
        &repo,
        "exp.toml",
        &manifest(&format!(
            "[variants.before]\ngit = \"{first}\"\n[variants.after]\ngit = \"HEAD\"\n"
        )),
    );
    let db = dir.path().join("r.sqlite");
    let out = run(run_cmd(&db, &dir.path().join("out"), &[]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Half the trials lost, and HEAD moved on since.
    forget_trials_from(&db, 8);
    write(&repo, "bench.sh", &latency_sh("0.500"));
    git(&repo, &["commit", "-q", "-a", "-m", "third"]);
    let id = strings(db.to_str().unwrap(), "SELECT id FROM runs").remove(0);
    let resumed = run(&mut run_cmd(&db, &dir.path().join("out"), &["--resume", &id]));
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    let mut commits = trial_commits(&db);
    assert_eq!(commits.len(), 16);
    commits.sort();
    commits.dedup();
    assert_eq!(commits, [format!("after {second}"), format!("before {first}")]);
}

/// Deletes the stored trials from `index` on, as a run cut short would have left them.
fn forget_trials_from(db: &Path, index: u32) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = measured::db::Db::connect(db.to_str().unwrap()).await.unwrap();
        let measured::db::Db::Sqlite(pool) = &db else {
            panic!("a SQLite file")
        };
        for table in ["metrics", "stage_results", "trials"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE trial_index >= $1"))
                .bind(i64::from(index))
                .execute(pool)
                .await
                .unwrap();
        }
        db.close().await;
    });
}

/// Runs `m` expecting exit code 2 with nothing stored (the database is not even created).
fn refused(dir: &Path, m: &Path, extra: &[&str]) -> String {
    let db = dir.join("refused.sqlite");
    let out = run(run_cmd(&db, &dir.join("out"), extra).arg(m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(!db.exists(), "nothing may be written: {t}");
    t
}

#[test]
fn an_unknown_revision_is_named_with_where_to_look() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, _) = repo(dir.path());
    let m = write(
        &repo,
        "exp.toml",
        &manifest("[variants.before]\ngit = \"no-such-branch\"\n[variants.after]\ngit = \"HEAD\"\n"),
    );
    let t = refused(dir.path(), &m, &[]);
    assert!(
        t.contains("variant `before`: `no-such-branch` is not a commit in the repository"),
        "{t}"
    );
    assert!(t.contains("git branch -a") && t.contains("git log --oneline"), "{t}");
    let t = refused(dir.path(), &m, &["--rev", "HEAD", "--rev", "v9.9"]);
    assert!(t.contains("`v9.9` is not a commit"), "{t}");
}

#[test]
fn a_failing_build_stops_the_run_with_its_exit_status_and_output() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, first, _) = repo(dir.path());
    let m = write(
        &repo,
        "exp.toml",
        &manifest(&format!(
            "[variants.before]\ngit = \"{first}\"\nbuild = \"echo compiling; echo 'error: it broke' >&2; exit 7\"\n\
             [variants.after]\ngit = \"HEAD\"\n"
        )),
    );
    let t = refused(dir.path(), &m, &[]);
    assert!(t.contains("the build of variant `before`"), "{t}");
    assert!(t.contains("exited with code 7"), "{t}");
    assert!(t.contains("compiling") && t.contains("error: it broke"), "{t}");
    let log = repo.join(format!(".measured/worktrees/{first}.build.log"));
    assert!(t.contains(&format!("log: {}", log.display())), "{t}");
    assert!(std::fs::read_to_string(&log).unwrap().contains("it broke"));
}

#[test]
fn a_git_variant_outside_a_repository_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "exp.toml",
        &manifest("[variants.before]\ngit = \"main\"\n[variants.after]\ngit = \"HEAD\"\n"),
    );
    // `check` needs no repository: it only reads the manifest.
    let checked = run(bin().arg("check").arg(&m));
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
    let t = refused(dir.path(), &m, &[]);
    assert!(t.contains("is not inside a git repository"), "{t}");
    assert!(t.contains("variant `before` names the git revision `main`"), "{t}");
}

#[test]
fn queued_runs_refuse_git_variants_for_now() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _, _) = repo(dir.path());
    let m = write(
        &repo,
        "exp.toml",
        &manifest("[variants.before]\ngit = \"HEAD~1\"\n[variants.after]\ngit = \"HEAD\"\n"),
    );
    let url = pg_url();
    let out = run(bin().args(["--database", &url, "submit"]).arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("queued runs cannot check out yet"), "{t}");
    assert!(t.contains("measured run"), "{t}");
    assert_eq!(scalar(&url, "SELECT COUNT(*) FROM runs"), 0);
}

/// A repository whose config names commands (a filesystem monitor, hooks) has none of them run
/// by a measured run of two of its commits: checking them out and reading its state.
#[test]
fn no_command_of_the_repository_config_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, first, _) = repo(dir.path());
    let hooks = dir.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    let marker = dir.path().join("ran");
    for name in ["fsmonitor.sh", "post-checkout", "reference-transaction"] {
        let script = write(
            &hooks,
            name,
            &format!("#!/bin/sh\necho {name} >> '{}'\n", marker.display()),
        );
        let mut perms = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&script, perms).unwrap();
    }
    git(
        &repo,
        &["config", "core.fsmonitor", hooks.join("fsmonitor.sh").to_str().unwrap()],
    );
    git(&repo, &["config", "core.hooksPath", hooks.to_str().unwrap()]);
    let m = write(&repo, "exp.toml", &manifest(""));
    let out = run_with_report(dir.path(), &m, &["--rev", &first, "--rev", "HEAD"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !marker.exists(),
        "ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}
