//! Shared test helpers: the binary, throwaway databases, and polling.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_measured"));
    c.env_remove("DATABASE_URL")
        .env_remove("STOCK_DATABASE_URL")
        .env("NO_COLOR", "1");
    c
}

pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the measured binary runs")
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A fresh, empty Postgres database on the test server started by `scripts/test.sh`.
/// Fails (never skips) when no server was provided.
pub fn pg_url() -> String {
    let admin = std::env::var("MEASURED_TEST_DATABASE_URL").expect(
        "MEASURED_TEST_DATABASE_URL is not set: run the suite with `bash scripts/test.sh`, which starts PostgreSQL",
    );
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "t_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        rand_suffix()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&admin)
            .await
            .expect("connect to the test PostgreSQL");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut c)
            .await
            .expect("create test database");
    });
    let (base, _) = admin.rsplit_once('/').expect("URL has a database");
    format!("{base}/{name}")
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        % 100_000
}

/// Runs a query returning one integer on either backend.
pub fn scalar(url: &str, sql: &str) -> i64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = measured::db::Db::connect(url).await.expect("connect");
        let v: i64 = match &db {
            measured::db::Db::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await.expect(sql),
            measured::db::Db::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await.expect(sql),
        };
        db.close().await;
        v
    })
}

/// Runs a query returning text rows on either backend.
pub fn strings(url: &str, sql: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = measured::db::Db::connect(url).await.expect("connect");
        let v: Vec<String> = match &db {
            measured::db::Db::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await.expect(sql),
            measured::db::Db::Postgres(p) => sqlx::query_scalar(sql).fetch_all(p).await.expect(sql),
        };
        db.close().await;
        v
    })
}

/// Runs statements on a Postgres database, in order, in one transaction.
pub fn pg_exec(url: &str, statements: &[&str]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(url).await.expect("connect");
        let mut tx = c.begin().await.expect("begin");
        for s in statements {
            sqlx::query(s).execute(&mut *tx).await.expect(s);
        }
        tx.commit().await.expect("commit");
    });
}

pub fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    if name.ends_with(".toml") {
        write_sources(dir);
    }
    p
}

/// The quotes test manifests' claims cite: `sources/test-report.md` next to them.
pub const TEST_SOURCE: &str =
    "# test-report: the report the tests quote\n\n## Results\n\n> Batching halves the latency (~2x).\n";

/// Writes `sources/test-report.md` into `dir` (every manifest `write` writes gets it).
pub fn write_sources(dir: &Path) {
    let sources = dir.join("sources");
    std::fs::create_dir_all(&sources).unwrap();
    std::fs::write(sources.join("test-report.md"), TEST_SOURCE).unwrap();
}

/// A PostgreSQL server of one test's own (started with `scripts/pg-start.sh`), which the test
/// may stop and start again on the same port without disturbing the shared test server.
/// Fails (never skips) when it cannot start. Stopped and deleted on drop.
pub struct PrivatePg {
    dir: PathBuf,
    bin: String,
    pub url: String,
}

impl PrivatePg {
    /// A fast server: like the shared test server, a crash may lose its last acknowledged
    /// commits (`synchronous_commit = off`).
    pub fn start() -> PrivatePg {
        Self::start_with(false)
    }

    /// A server that keeps what it acknowledged across a crash (PostgreSQL's defaults).
    pub fn start_durable() -> PrivatePg {
        Self::start_with(true)
    }

    fn start_with(durable: bool) -> PrivatePg {
        let dir = tempfile::Builder::new()
            .prefix("measured-pg-")
            .tempdir_in("/tmp")
            .unwrap()
            .keep();
        Command::new("chmod").arg("755").arg(&dir).status().unwrap();
        let out = Command::new(scripts().join("pg-start.sh"))
            .arg(&dir)
            .env("MEASURED_PG_DURABLE", if durable { "1" } else { "0" })
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cannot start a private PostgreSQL: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let exports = String::from_utf8_lossy(&out.stdout).into_owned();
        let value = |name: &str| {
            exports
                .split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}='")))
                .and_then(|v| v.strip_suffix('\''))
                .unwrap_or_else(|| panic!("pg-start.sh printed no {name}"))
                .to_owned()
        };
        PrivatePg {
            bin: value("MEASURED_PG_BIN"),
            url: value("MEASURED_TEST_DATABASE_URL"),
            dir,
        }
    }

    fn ctl(&self, action: &str) {
        let out = Command::new(scripts().join("pg-ctl.sh"))
            .arg(&self.dir)
            .arg(action)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg-ctl.sh {action}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stops the server at once, as a crash would (no checkpoint, connections cut).
    pub fn stop_immediate(&self) {
        self.ctl("stop-immediate");
    }

    /// Starts it again on the same port with the same data.
    pub fn start_again(&self) {
        self.ctl("start");
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let _ = Command::new(scripts().join("pg-stop.sh"))
            .env("MEASURED_PG_DIR", &self.dir)
            .env("MEASURED_PG_BIN", &self.bin)
            .status();
    }
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts")
}

/// Polls `cond` every 20 ms until it holds; fails after `limit` (a bound on waiting, not a
/// timing assertion).
pub fn wait_until(what: &str, limit: std::time::Duration, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `measured --database DATABASE run --no-report --results-dir RESULTS EXTRA...`: add the
/// manifest, or pass `--resume RUN` in `extra`.
pub fn run_cmd(database: impl AsRef<std::ffi::OsStr>, results: &Path, extra: &[&str]) -> Command {
    let mut c = bin();
    c.arg("--database")
        .arg(database)
        .args(["run", "--no-report", "--results-dir"])
        .arg(results)
        .args(extra);
    c
}

/// Runs git in `dir`; its trimmed stdout, or the test fails with its stderr.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A new repository at `dir/repo`, with a committer and no signing.
pub fn git_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "bench@example.com"]);
    git(&repo, &["config", "user.name", "Bench"]);
    git(&repo, &["config", "commit.gpgsign", "false"]);
    repo
}

/// A program that prints the metric `latency` = `base` times the factor it is given: a value,
/// not a timing, so which revision is slower is a fact of the repository.
pub fn latency_sh(base: &str) -> String {
    format!(
        "#!/bin/sh\nawk -v f=\"$1\" 'BEGIN {{ printf \"{{\\\"metric\\\": \\\"latency\\\", \\\"value\\\": %.9f, \\\"unit\\\": \\\"s\\\"}}\\n\", {base} * f }}'\n"
    )
}
