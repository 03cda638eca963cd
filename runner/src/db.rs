//! Database connections for both backends (CLI -> store/market): the embedded SQLite default
//! and Postgres through `DATABASE_URL`.
//!
//! Migrations are embedded in the binary and run on every connect, so a fresh machine needs
//! no setup. One migration set per backend holds both the results tables and the stock tables.
//!
//! The rest of the crate is synchronous; this module is its one door into the async store
//! (results and stock tables alike): [`wait`] runs a future to its end on the process's one
//! runtime, built on first use, and [`spawn`] starts a task on it. No other code builds or holds
//! a runtime, so no signature carries one.

use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, SqlitePool};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::Duration;

/// Where the embedded default database lives, relative to the project root (the git root of
/// the manifest or of the current directory; see `crate::paths::Root`).
pub const DEFAULT_SQLITE_PATH: &str = "results/measured.sqlite";

/// The process's one async runtime, built on first use: two worker threads (the store's
/// background tasks, a heartbeat) with timers and I/O. It lives as long as the process.
/// [`wait`] and [`spawn`] are the only way into it.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the async runtime: {e}"))
    })
}

/// Runs `work` (a call into the store or the stock database) to its end from synchronous code,
/// on the calling thread, and returns its result: the crate's one way to wait on the async
/// store. It is generic on purpose: the store's and the market's async functions are many,
/// and each caller waits on the one it needs (`db::wait(store::load_run(&db, id))`). Not to
/// be called from inside an async task (the runtime refuses to wait within itself).
pub fn wait<F: Future>(work: F) -> F::Output {
    runtime().block_on(work)
}

/// Starts `task` on the runtime behind [`wait`], where it runs beside the calling thread (a
/// heartbeat, a lease kept alive) until it ends or its handle aborts it.
pub fn spawn<F>(task: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime().spawn(task)
}

/// A connection pool to one of the supported backends.
#[derive(Debug, Clone)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Which backend a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A failure to reach or prepare a database. Messages never contain a password.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("unsupported database URL `{url}`")]
    UnsupportedUrl { url: String },
    #[error("cannot connect to {url}: {message}\nhint: nothing was written; {hint}")]
    Connect { url: String, message: String, hint: String },
    #[error("cannot migrate {url}: {message}")]
    Migrate { url: String, message: String },
}

impl Db {
    /// Connects to `url` (`postgres://...`, `postgresql://...`, `sqlite:PATH` or a plain file
    /// path) and runs the migrations. SQLite files and their folders are created when missing.
    pub async fn connect(url: &str) -> Result<Db, DbError> {
        Self::connect_with(url, 8).await
    }

    /// [`Db::connect`] from synchronous code, through [`wait`].
    pub fn open(url: &str) -> Result<Db, DbError> {
        wait(Self::connect(url))
    }

    /// [`Db::connect_with`] from synchronous code, through [`wait`].
    pub fn open_with(url: &str, max_connections: u32) -> Result<Db, DbError> {
        wait(Self::connect_with(url, max_connections))
    }

    /// Like [`Db::connect`] with a chosen pool size (parallel loaders want more connections).
    pub async fn connect_with(url: &str, max_connections: u32) -> Result<Db, DbError> {
        let shown = redact_url(url);
        // `_setup`: the SQLite folder lock, held until the migrations below are done.
        let (db, _setup) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let opts = PgConnectOptions::from_str(url).map_err(|e| DbError::Connect {
                url: shown.clone(),
                message: redact_text(&e.to_string(), url),
                hint: SERVER_HINT.into(),
            })?;
            // One plain connection first: a pool that cannot connect reports only that it
            // timed out, while the driver says why (refused, unknown host, bad password).
            let probe = tokio::time::timeout(Duration::from_secs(15), async {
                use sqlx::Connection;
                sqlx::PgConnection::connect_with(&opts).await?.close().await
            })
            .await;
            let refused = match probe {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("no answer within 15 s".to_owned()),
            };
            if let Some(message) = refused {
                return Err(DbError::Connect {
                    url: shown,
                    message: redact_text(&message, url),
                    hint: SERVER_HINT.into(),
                });
            }
            let pool = PgPoolOptions::new()
                .max_connections(max_connections)
                .acquire_timeout(Duration::from_secs(15))
                .connect_with(opts)
                .await
                .map_err(|e| DbError::Connect {
                    url: shown.clone(),
                    message: redact_text(&e.to_string(), url),
                    hint: SERVER_HINT.into(),
                })?;
            (Db::Postgres(pool), None)
        } else {
            let path = sqlite_path(url).ok_or_else(|| DbError::UnsupportedUrl { url: shown.clone() })?;
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            std::fs::create_dir_all(parent).map_err(|e| DbError::Connect {
                url: shown.clone(),
                message: format!("cannot create {}: {e}", parent.display()),
                hint: sqlite_hint(""),
            })?;
            // Creating the file, switching it to WAL and migrating it race when two processes
            // open a new file at once ("database is locked", half-applied migrations). An
            // exclusive lock on the folder serializes that setup; it is held only while
            // connecting. (Not on the file itself: closing any other descriptor of a SQLite
            // file drops SQLite's own POSIX locks on it.)
            let setup = lock_dir(parent).await.map_err(|e| DbError::Connect {
                url: shown.clone(),
                message: format!("cannot lock {} for setup: {e}", parent.display()),
                hint: sqlite_hint(""),
            })?;
            (Self::open_sqlite(&path, max_connections, &shown).await?, Some(setup))
        };
        db.migrate().await.map_err(|message| DbError::Migrate {
            url: shown,
            message: redact_text(&message, url),
        })?;
        Ok(db)
    }

    async fn open_sqlite(path: &Path, max_connections: u32, shown: &str) -> Result<Db, DbError> {
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL keeps every committed trial across a crash of this process.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(30))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections.min(4))
            .connect_with(opts)
            .await
            .map_err(|e| {
                let message = e.to_string();
                DbError::Connect {
                    url: shown.to_owned(),
                    hint: sqlite_hint(&message),
                    message,
                }
            })?;
        Ok(Db::Sqlite(pool))
    }

    async fn migrate(&self) -> Result<(), String> {
        let files = match self {
            Db::Sqlite(_) => migrations::SQLITE,
            Db::Postgres(_) => migrations::POSTGRES,
        };
        let migrator = Migrator::new(Embedded(files)).await.map_err(|e| e.to_string())?;
        match self {
            Db::Sqlite(pool) => migrator.run(pool).await,
            Db::Postgres(pool) => migrator.run(pool).await,
        }
        .map_err(|e| e.to_string())
    }

    pub fn backend(&self) -> Backend {
        match self {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Closes the pool from synchronous code, through [`wait`]: every connection is let go.
    pub fn shut(&self) {
        wait(self.close());
    }

    pub async fn close(&self) {
        match self {
            Db::Sqlite(p) => p.close().await,
            Db::Postgres(p) => p.close().await,
        }
    }
}

/// What to check when a PostgreSQL server cannot be reached.
const SERVER_HINT: &str = "check the URL (--database or DATABASE_URL) and that the server accepts connections, \
                           then run the same command again";

/// What to check when a SQLite file cannot be opened, from the driver's `message`.
fn sqlite_hint(message: &str) -> String {
    if message.contains("file is not a database") || message.contains("database disk image is malformed") {
        "the file is not a SQLite database (or is damaged): give --database (or DATABASE_URL) a new path, \
         which is created, or a results file that measured wrote"
            .into()
    } else {
        "check the SQLite path (--database or DATABASE_URL): its folder must be writable, and an existing \
         file must be a SQLite database this user can read and write"
            .into()
    }
}

/// Takes an exclusive advisory lock on a folder (released when the handle is dropped). The
/// wait runs on a blocking thread so the async runtime keeps serving.
async fn lock_dir(dir: &Path) -> std::io::Result<std::fs::File> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let f = std::fs::File::open(&dir)?;
        f.lock()?;
        Ok(f)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// The identity (device, inode) of the SQLite file behind `url`, `None` when it does not
/// exist or `url` is not SQLite. A run compares it before each write to notice that its
/// results file was deleted or replaced underneath it.
pub fn sqlite_file_id(url: &str) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let path = sqlite_path(url)?;
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino()))
}

/// What identifies the database behind `url`, to tell whether a journal belongs to it: the
/// absolute path of a SQLite file, or a server URL without its password.
pub fn database_identity(url: &str) -> String {
    match sqlite_path(url) {
        Some(p) => format!("sqlite:{}", std::path::absolute(&p).unwrap_or(p).display()),
        None => match password_span(url) {
            Some((from, to)) => format!("{}{}", &url[..from - 1], &url[to..]),
            None => url.to_owned(),
        },
    }
}

/// Whether `url` names a SQLite database (a `sqlite:` URL or a plain path).
pub fn is_sqlite_url(url: &str) -> bool {
    sqlite_path(url).is_some()
}

/// The file behind a SQLite URL or path, `None` for other schemes.
pub fn sqlite_path(url: &str) -> Option<PathBuf> {
    if let Some(rest) = url.strip_prefix("sqlite://") {
        return Some(PathBuf::from(rest));
    }
    if let Some(rest) = url.strip_prefix("sqlite:") {
        return Some(PathBuf::from(rest));
    }
    if url.contains("://") {
        return None;
    }
    Some(Path::new(url).to_path_buf())
}

/// The userinfo password of `url` (as written in it) and where it lies, read from the raw text
/// so that it is found also when the URL does not parse as one: what lies between
/// `scheme://user:` and the last `@`, whatever it holds (`#`, `/`, `?` or `@` written raw). A
/// user name holds none of `/`, `?`, `#`, `@`, so a URL with no userinfo (`@` only in its path
/// or query) has no password.
fn password_span(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let at = rest.rfind('@')?;
    let colon = rest[..at].find(':')?;
    if rest[..colon].contains(['/', '?', '#', '@']) {
        return None;
    }
    let (from, to) = (start + colon + 1, start + at);
    (to > from).then_some((from, to))
}

/// The URL with any password replaced by `***`, safe for logs, errors and reports. Only the
/// password field changes, also in a URL that does not parse.
pub fn redact_url(url: &str) -> String {
    match password_span(url) {
        Some((from, to)) => format!("{}***{}", &url[..from], &url[to..]),
        None => url.to_owned(),
    }
}

/// Removes the password of `url` from `text` (driver errors may quote connection strings).
/// Only where it stands as a password (`:password@`, as written or percent-decoded), so a
/// short password does not mangle the rest of the message.
pub fn redact_text(text: &str, url: &str) -> String {
    let Some((from, to)) = password_span(url) else {
        return text.to_owned();
    };
    let written = &url[from..to];
    let mut out = text.replace(&format!(":{written}@"), ":***@");
    if let Ok(decoded) = percent_decode(written) {
        if decoded != written {
            out = out.replace(&format!(":{decoded}@"), ":***@");
        }
    }
    out
}

/// `%XX` escapes decoded (the form a driver may print).
fn percent_decode(s: &str) -> Result<String, std::string::FromUtf8Error> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
}

/// Dispatches one body over the pool of either backend; the SQL must be valid for both
/// (`$1`-style placeholders work on SQLite and Postgres alike).
#[macro_export]
#[doc(hidden)]
macro_rules! on_pool {
    ($db:expr, |$p:ident| $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite($p) => $body,
            $crate::db::Db::Postgres($p) => $body,
        }
    };
}

/// The migrations embedded by `build.rs`: `SQLITE` and `POSTGRES`, `(file name, SQL)` each.
mod migrations {
    include!(concat!(env!("OUT_DIR"), "/migrations.rs"));
}

/// Embedded migration files, read the way sqlx reads a migrations folder (and its `migrate!`
/// macro embeds one): `<version>_<description>.sql`, the description with `_` as spaces, the
/// type from the suffix, `-- no-transaction` on the first line to run outside a transaction.
/// The checksums are sqlx's own, so databases migrated by earlier builds verify.
#[derive(Debug)]
struct Embedded(&'static [(&'static str, &'static str)]);

impl Embedded {
    fn migrations(&self) -> Result<Vec<Migration>, String> {
        let mut out = Vec::new();
        for (file, sql) in self.0 {
            let (version, rest) = file
                .split_once('_')
                .ok_or_else(|| format!("migration {file}: expected <version>_<description>.sql"))?;
            let version: i64 = version
                .parse()
                .map_err(|_| format!("migration {file}: the version is not an integer"))?;
            let kind = MigrationType::from_filename(rest);
            let description = rest.trim_end_matches(kind.suffix()).replace('_', " ");
            let no_tx = sql.starts_with("-- no-transaction");
            out.push(Migration::new(
                version,
                description.into(),
                kind,
                std::borrow::Cow::Borrowed(*sql),
                no_tx,
            ));
        }
        out.sort_by_key(|m| m.version);
        Ok(out)
    }
}

impl<'s> MigrationSource<'s> for Embedded {
    fn resolve(
        self,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Vec<Migration>, sqlx::error::BoxDynError>> + Send + 's>,
    > {
        Box::pin(async move { self.migrations().map_err(Into::into) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded migrations are the ones sqlx reads from the folders: the same versions,
    /// descriptions, checksums and transaction modes, so a database migrated by an earlier build
    /// (through sqlx's `migrate!`, which reads the folders the same way) still verifies.
    #[test]
    fn the_embedded_migrations_are_the_folders() {
        for (files, dir) in [(migrations::SQLITE, "sqlite"), (migrations::POSTGRES, "postgres")] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations").join(dir);
            let from_dir = wait(Migrator::new(path.as_path())).unwrap();
            let embedded = wait(Migrator::new(Embedded(files))).unwrap();
            let key = |m: &Migration| (m.version, m.description.to_string(), m.checksum.to_vec(), m.no_tx);
            let want: Vec<_> = from_dir.iter().map(key).collect();
            assert!(want.len() >= 10, "{dir}: {} migrations", want.len());
            assert_eq!(embedded.iter().map(key).collect::<Vec<_>>(), want, "{dir}");
        }
    }

    #[test]
    fn redacts_password_in_url_and_text() {
        let url = "postgres://alice:s3cret@db.example:5432/results";
        assert_eq!(redact_url(url), "postgres://alice:***@db.example:5432/results");
        assert_eq!(
            redact_text("failed for alice:s3cret@db", url),
            "failed for alice:***@db"
        );
        assert_eq!(redact_url("results/x.sqlite"), "results/x.sqlite");
    }

    #[test]
    fn a_short_password_does_not_mangle_the_message() {
        let url = "postgres://u:p@127.0.0.1:1/db";
        let msg = "pool timed out while waiting for an open connection to u:p@127.0.0.1";
        assert_eq!(
            redact_text(msg, url),
            "pool timed out while waiting for an open connection to u:***@127.0.0.1"
        );
        assert_eq!(redact_url(url), "postgres://u:***@127.0.0.1:1/db");
    }

    #[test]
    fn urls_that_do_not_parse_are_redacted_too() {
        // A space in the host and a bad port: not a URL to the parser, still a password.
        let url = "postgres://alice:s3cr3t@db host:99999/x";
        assert_eq!(redact_url(url), "postgres://alice:***@db host:99999/x");
        assert_eq!(redact_url("postgres://alice@db/x"), "postgres://alice@db/x");
        // `@` in the password (percent-encoded) and the decoded form in a message.
        let url = "postgres://bob:a%40b@db/x";
        assert_eq!(redact_url(url), "postgres://bob:***@db/x");
        assert_eq!(redact_text("bob:a@b@db refused", url), "bob:***@db refused");
    }

    #[test]
    fn passwords_with_raw_url_delimiters_are_redacted_whole() {
        for (url, password, redacted) in [
            (
                "postgres://u:p#a/s?s@127.0.0.1:1/db",
                "p#a/s?s",
                "postgres://u:***@127.0.0.1:1/db",
            ),
            (
                "postgresql://bob:x/y@db:5432/r",
                "x/y",
                "postgresql://bob:***@db:5432/r",
            ),
            (
                "postgres://bob:a?b#c@db/r?sslmode=disable",
                "a?b#c",
                "postgres://bob:***@db/r?sslmode=disable",
            ),
            ("mysql://bob:a@b/c@db/r", "a@b/c", "mysql://bob:***@db/r"),
        ] {
            assert_eq!(redact_url(url), redacted, "{url}");
            let message = format!("error connecting to bob:{password}@db and u:{password}@127.0.0.1");
            let text = redact_text(&message, url);
            assert!(!text.contains(password), "{text}");
        }
        // No userinfo: an `@` in the path or query is not a password's end.
        assert_eq!(redact_url("postgres://db/r?user=a:b@c"), "postgres://db/r?user=a:b@c");
    }

    #[test]
    fn sqlite_paths() {
        assert_eq!(sqlite_path("sqlite:a/b.db"), Some(PathBuf::from("a/b.db")));
        assert_eq!(sqlite_path("sqlite://a/b.db"), Some(PathBuf::from("a/b.db")));
        assert_eq!(sqlite_path("x.sqlite"), Some(PathBuf::from("x.sqlite")));
        assert_eq!(sqlite_path("mysql://x"), None);
    }
}
