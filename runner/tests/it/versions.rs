//! Stock data that never changes under a run: imports and markets are dataset versions, runs
//! name the versions they read and can read them again, and databases written before versions
//! migrate with every bar kept.

use crate::common::{bin, fixture, pg_exec, pg_url, run, scalar, strings, text, write};
use crate::stored::sqlite_exec;
use std::path::Path;

/// The bars of one version, every column, in order: equal strings mean byte-identical rows.
fn version_rows(url: &str, label: &str) -> String {
    let (dataset, number) = label.rsplit_once('@').unwrap();
    let concat = if url.starts_with("postgres") {
        "string_agg(row, ';' ORDER BY row)"
    } else {
        "group_concat(row, ';')"
    };
    strings(
        url,
        &format!(
            "SELECT COALESCE({concat}, '') FROM (SELECT b.symbol || ',' || b.trade_date || ',' || \
             b.open || ',' || b.high || ',' || b.low || ',' || b.close || ',' || b.volume || ',' || b.amount || ',' \
             || b.adj_factor AS row FROM daily_bars b JOIN dataset_versions v ON v.id = b.version \
             WHERE v.dataset = '{dataset}' AND v.number = {number} ORDER BY b.symbol, b.trade_date) AS t"
        ),
    )
    .remove(0)
}

/// `measured` with `--database url` (results and stock data in one database).
fn measured(url: &str, dir: &Path, args: &[&str]) -> std::process::Output {
    run(bin().current_dir(dir).arg("--database").arg(url).args(args))
}

fn loads_everything(name: &str) -> String {
    format!(
        "[experiment]\nname = \"{name}\"\n\n[schedule]\nwarmup = 0\nrepetitions = 2\n\n[stages.load]\nkind = \"load\"\n"
    )
}

/// The run id a `run` printed (`run 20261127-081205-95e2 ...`).
fn run_id(out: &std::process::Output) -> String {
    let all = text(out);
    let is_id = |w: &str| {
        let b = w.as_bytes();
        b.len() == 20
            && b[8] == b'-'
            && b[15] == b'-'
            && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
            && b[16..].iter().all(|c| c.is_ascii_hexdigit())
    };
    all.split(|c: char| c.is_whitespace() || c == ':')
        .find(|w| is_id(w))
        .unwrap_or_else(|| panic!("no run id in\n{all}"))
        .to_owned()
}

/// The `load` stage's content hash of a stored run.
fn load_hash(url: &str, run: &str) -> String {
    strings(
        url,
        &format!(
            "SELECT DISTINCT s.content_hash FROM stage_results s WHERE s.run_id = '{run}' AND s.stage = 'load' \
             AND s.content_hash IS NOT NULL"
        ),
    )
    .remove(0)
}

fn overlapping_imports(url: &str) {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture("data/overlap_a.csv");
    let b = fixture("data/overlap_b.csv");
    let out = measured(url, dir.path(), &["data", "import", a.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("as overlap_a@1"), "{}", text(&out));
    let before = version_rows(url, "overlap_a@1");
    assert!(before.contains("AAA,2024-01-02"), "{before}");

    // The second file holds bars of AAA, BBB and CCC on five dates of the first, with other
    // values: it becomes a version of its own, and the first version's bars are untouched.
    let out = measured(url, dir.path(), &["data", "import", b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("as overlap_b@1"), "{}", text(&out));
    assert!(
        text(&out).contains("overlap_b@1 and overlap_a@1 both hold `AAA`, `BBB`, `CCC`"),
        "{}",
        text(&out)
    );
    assert_eq!(version_rows(url, "overlap_a@1"), before, "byte-identical");
    // Into the first dataset, the disagreement stops the import at the first conflicting rows.
    let out = measured(
        url,
        dir.path(),
        &["data", "import", b.to_str().unwrap(), "--into", "overlap_a"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2: AAA on 2024-01-02", b.display())), "{err}");
    assert!(
        err.contains("15 bars of the input differ") && err.contains("--replace"),
        "{err}"
    );
    assert_eq!(
        scalar(url, "SELECT COUNT(*) FROM dataset_versions"),
        2,
        "nothing written"
    );

    // A manifest that declares no data cannot tell which AAA to read.
    let m = write(dir.path(), "all.toml", &loads_everything("all"));
    let out = measured(url, dir.path(), &["run", m.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("dataset versions overlap_a@1 and overlap_b@1 both hold `AAA`, `BBB`, `CCC`")
            && text(&out).contains("--data"),
        "{}",
        text(&out)
    );
    assert_eq!(scalar(url, "SELECT COUNT(*) FROM runs"), 0, "nothing stored");

    // A run on each version reads its own bars and says so; compare names the difference.
    let mut runs = Vec::new();
    for version in ["overlap_a@1", "overlap_b@1"] {
        let out = measured(url, dir.path(), &["run", m.to_str().unwrap(), "--data", version]);
        assert_eq!(out.status.code(), Some(0), "{version}: {}", text(&out));
        let id = run_id(&out);
        let shown = measured(url, dir.path(), &["show", &id]);
        assert!(
            text(&shown).contains(&format!("dataset versions: {version}")),
            "{}",
            text(&shown)
        );
        let report = std::fs::read_to_string(dir.path().join(format!("results/all/{id}/report.md"))).unwrap();
        assert!(report.contains(&format!("dataset version `{version}`")), "{report}");
        assert!(
            report.contains(&format!("--data {version}")),
            "the reproduce line pins it: {report}"
        );
        runs.push(id);
    }
    assert_ne!(load_hash(url, &runs[0]), load_hash(url, &runs[1]));
    let out = measured(url, dir.path(), &["compare", &runs[0], &runs[1]]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("dataset versions overlap_a@1 vs overlap_b@1"),
        "{}",
        text(&out)
    );
    let out = measured(
        url,
        dir.path(),
        &["compare", &runs[0], &runs[1], "--allow-different-data"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // `data ls` counts the runs of each version; `rm` refuses while one read it.
    let out = measured(url, dir.path(), &["data", "ls"]);
    let ls = text(&out);
    assert!(
        ls.lines().any(|l| l.starts_with("overlap_a@1") && l.contains("  1  ")),
        "{ls}"
    );
    let out = measured(url, dir.path(), &["data", "rm", "overlap_a@1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&runs[0]) && text(&out).contains("--force"),
        "{}",
        text(&out)
    );
    assert_eq!(version_rows(url, "overlap_a@1"), before, "refused: nothing deleted");
    let out = measured(url, dir.path(), &["data", "rm", "overlap_a@1", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("can no longer be reproduced"), "{}", text(&out));
    let out = measured(url, dir.path(), &["run", m.to_str().unwrap(), "--data", "overlap_a@1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("did you mean `overlap_b@1`?"), "{}", text(&out));
}

#[test]
fn overlapping_imports_are_versions_and_runs_read_their_own_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    overlapping_imports(dir.path().join("r.sqlite").to_str().unwrap());
}

#[test]
fn overlapping_imports_are_versions_and_runs_read_their_own_postgres() {
    overlapping_imports(&pg_url());
}

const MARKET: &str = "[data]\nsynth = { symbols = 6, days = 120, start = 2021-01-04, seed = 5, style = \"us\" }\n";

#[test]
fn a_newer_generator_makes_a_version_beside_the_old_one_and_old_runs_read_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let url = db.to_str().unwrap();
    let m = write(
        dir.path(),
        "market.toml",
        &format!("{}{MARKET}", loads_everything("market")).replace("[schedule]", "\n[schedule]"),
    );
    // The declared market as an older generator wrote it: the version of this generator,
    // relabelled generator 1, with other closes (the older generator's bars differ).
    let out = measured(
        url,
        dir.path(),
        &[
            "data",
            "synth",
            "--symbols",
            "6",
            "--days",
            "120",
            "--start",
            "2021-01-04",
            "--seed",
            "5",
            "--style",
            "us",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let old = "synth-6x120-2021-01-04-s5-us@1";
    sqlite_exec(
        &db,
        &[
            "UPDATE dataset_versions SET origin = replace(origin, '\"generator\":2', '\"generator\":1'), \
             origin_key = replace(origin_key, ':us:2', ':us:1')",
            "UPDATE daily_bars SET close = close * 1.01, high = high * 1.01",
        ],
    );
    // A run of that time: it read the old version.
    let out = measured(url, dir.path(), &["run", m.to_str().unwrap(), "--data", old]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let old_run = run_id(&out);
    let old_hash = load_hash(url, &old_run);

    // Today's run of the same manifest: this generator's market is a new version beside it.
    let out = measured(url, dir.path(), &["run", m.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("beside synth-6x120-2021-01-04-s5-us@1"),
        "{}",
        text(&out)
    );
    let new_run = run_id(&out);
    assert_ne!(load_hash(url, &new_run), old_hash);
    let versions = strings(
        url,
        "SELECT dataset || '@' || number || ' ' || origin_key FROM dataset_versions ORDER BY number",
    );
    assert_eq!(
        versions,
        [
            format!("{old} synth:6:120:2021-01-04:5:us:1"),
            "synth-6x120-2021-01-04-s5-us@2 synth:6:120:2021-01-04:5:us:2".to_owned()
        ]
    );
    // The old run still reports, naming its version; reading it again reproduces its bars.
    let out = measured(
        url,
        dir.path(),
        &[
            "report",
            &old_run,
            "--results-dir",
            dir.path().join("again").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = std::fs::read_to_string(dir.path().join(format!("again/market/{old_run}/report.md"))).unwrap();
    assert!(report.contains(&format!("dataset version `{old}`")), "{report}");
    let out = measured(url, dir.path(), &["run", m.to_str().unwrap(), "--data", old]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        load_hash(url, &run_id(&out)),
        old_hash,
        "the old content hash, reproduced"
    );
}

/// The stock tables as they were before versions (SQLite), with the migration's record gone.
const BEFORE_VERSIONS: &[&str] = &[
    "DROP TABLE daily_bars",
    "DROP TABLE symbols",
    "DROP TABLE dataset_versions",
    "DELETE FROM _sqlx_migrations WHERE description = 'dataset versions'",
    "CREATE TABLE symbols (code TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL DEFAULT '', \
     exchange TEXT NOT NULL DEFAULT '', currency TEXT NOT NULL DEFAULT '', listed TEXT, delisted TEXT, \
     sector TEXT, source TEXT NOT NULL DEFAULT 'import')",
    "CREATE TABLE daily_bars (symbol TEXT NOT NULL, trade_date TEXT NOT NULL, open REAL NOT NULL, \
     high REAL NOT NULL, low REAL NOT NULL, close REAL NOT NULL, volume REAL NOT NULL, amount REAL NOT NULL, \
     adj_factor REAL NOT NULL DEFAULT 1, PRIMARY KEY (symbol, trade_date)) WITHOUT ROWID",
    "CREATE INDEX daily_bars_trade_date_idx ON daily_bars (trade_date)",
    "CREATE INDEX symbols_source_idx ON symbols (source)",
    "CREATE TABLE synth_market (id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1), symbols INTEGER NOT NULL, \
     days INTEGER NOT NULL, start_date TEXT NOT NULL, seed TEXT NOT NULL, style TEXT NOT NULL, \
     bar_rows INTEGER NOT NULL, first_date TEXT NOT NULL, last_date TEXT NOT NULL, created_at TEXT NOT NULL, \
     generator INTEGER NOT NULL DEFAULT 1)",
    "CREATE TABLE imported_files (sha256 TEXT PRIMARY KEY NOT NULL, file TEXT NOT NULL, codes TEXT NOT NULL, \
     bar_rows INTEGER NOT NULL, first_date TEXT, last_date TEXT, imported_at TEXT NOT NULL)",
];

#[test]
fn a_database_from_before_versions_migrates_with_every_bar_kept_and_runs_still_report() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let url = db.to_str().unwrap();
    // A stored run first (its identity without versions, as runs were stored then).
    let m = write(dir.path(), "old.toml", &loads_everything("old"));
    let out = measured(url, dir.path(), &["run", m.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let old_run = run_id(&out);
    sqlite_exec(
        &db,
        &["UPDATE runs SET stock_data = json_remove(stock_data, '$.versions')"],
    );
    // The stock tables taken back: a recorded market (generator 1), two files that both listed
    // `SHARED` (the second overwrote its bars, as imports did), a file only it listed, and a
    // symbol no record describes.
    let mut statements: Vec<String> = BEFORE_VERSIONS.iter().map(|s| s.to_string()).collect();
    let bar = |code: &str, day: u32, close: f64| {
        format!(
            "INSERT INTO daily_bars VALUES ('{code}', '2024-01-{day:02}', {close}, {}, {}, {close}, 100, 1000, 1)",
            close + 1.0,
            close - 1.0
        )
    };
    statements.push(
        "INSERT INTO synth_market VALUES (1, 2, 3, '2024-01-02', '7', 'us', 6, '2024-01-02', '2024-01-04', \
         '2025-01-01T00:00:00Z', 1)"
            .into(),
    );
    for (code, source) in [
        ("SYNA", "synth"),
        ("SYNB", "synth"),
        ("ONLY", "import"),
        ("SHARED", "import"),
        ("HAND", "import"),
    ] {
        statements.push(format!(
            "INSERT INTO symbols (code, source) VALUES ('{code}', '{source}')"
        ));
        for day in 2..=4 {
            statements.push(bar(code, day, 10.0 + day as f64));
        }
    }
    statements.push(
        "INSERT INTO imported_files VALUES ('aaaa1111', 'first.csv', '[\"ONLY\",\"SHARED\"]', 6, '2024-01-02', \
         '2024-01-04', '2025-01-02T00:00:00Z')"
            .into(),
    );
    statements.push(
        "INSERT INTO imported_files VALUES ('bbbb2222', 'second.csv', '[\"SHARED\"]', 3, '2024-01-02', \
         '2024-01-04', '2025-01-03T00:00:00Z')"
            .into(),
    );
    let refs: Vec<&str> = statements.iter().map(String::as_str).collect();
    sqlite_exec(&db, &refs);
    let bars_before = strings(
        url,
        "SELECT group_concat(symbol || trade_date || close, ';') FROM (SELECT * FROM daily_bars ORDER BY symbol, trade_date)",
    );

    // Any command migrates it.
    let out = measured(url, dir.path(), &["data", "ls"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ls = text(&out);
    for want in [
        "synth-2x3-2024-01-02-s7-us@1",
        "import-aaaa1111@1",
        "pre-version@1",
        "generator 1",
        "bars stored before versions, of mixed or unrecorded origin (files imported then: first.csv",
    ] {
        assert!(ls.contains(want), "missing {want:?} in\n{ls}");
    }
    let per_version = strings(
        url,
        "SELECT v.dataset || ':' || group_concat(s.code, ',') FROM dataset_versions v JOIN \
         (SELECT * FROM symbols ORDER BY code) s ON s.version = v.id GROUP BY v.id ORDER BY v.id",
    );
    assert_eq!(
        per_version,
        [
            "synth-2x3-2024-01-02-s7-us:SYNA,SYNB",
            "import-aaaa1111:ONLY",
            "pre-version:HAND,SHARED"
        ]
    );
    let bars_after = strings(
        url,
        "SELECT group_concat(symbol || trade_date || close, ';') FROM (SELECT * FROM daily_bars ORDER BY symbol, trade_date)",
    );
    assert_eq!(bars_after, bars_before, "every bar kept");
    assert_eq!(
        scalar(url, "SELECT SUM(bar_rows) FROM dataset_versions"),
        15,
        "the versions count them"
    );
    // The stored run still reports; a new run on the migrated data reads its versions.
    let out = measured(
        url,
        dir.path(),
        &[
            "report",
            &old_run,
            "--results-dir",
            dir.path().join("again").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = measured(
        url,
        dir.path(),
        &["run", m.to_str().unwrap(), "--data", "import-aaaa1111@1"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// The stock tables as they were before versions, on PostgreSQL, with the migration's record
/// gone.
const BEFORE_VERSIONS_PG: &[&str] = &[
    "DROP TABLE daily_bars",
    "DROP TABLE symbols",
    "DROP TABLE dataset_versions",
    "DELETE FROM _sqlx_migrations WHERE description = 'dataset versions'",
    "CREATE TABLE symbols (code TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', exchange TEXT NOT NULL DEFAULT '', \
     currency TEXT NOT NULL DEFAULT '', listed DATE, delisted DATE, sector TEXT, source TEXT NOT NULL DEFAULT 'import')",
    "CREATE TABLE daily_bars (symbol TEXT NOT NULL, trade_date DATE NOT NULL, open DOUBLE PRECISION NOT NULL, \
     high DOUBLE PRECISION NOT NULL, low DOUBLE PRECISION NOT NULL, close DOUBLE PRECISION NOT NULL, \
     volume DOUBLE PRECISION NOT NULL, amount DOUBLE PRECISION NOT NULL, adj_factor DOUBLE PRECISION NOT NULL DEFAULT 1, \
     PRIMARY KEY (symbol, trade_date))",
    "CREATE INDEX daily_bars_trade_date_idx ON daily_bars (trade_date)",
    "CREATE TABLE synth_market (id INTEGER PRIMARY KEY CHECK (id = 1), symbols BIGINT NOT NULL, days BIGINT NOT NULL, \
     start_date DATE NOT NULL, seed TEXT NOT NULL, style TEXT NOT NULL, bar_rows BIGINT NOT NULL, first_date DATE NOT NULL, \
     last_date DATE NOT NULL, created_at TIMESTAMPTZ NOT NULL, generator INTEGER NOT NULL DEFAULT 1)",
    "CREATE TABLE imported_files (sha256 TEXT PRIMARY KEY, file TEXT NOT NULL, codes TEXT NOT NULL, bar_rows BIGINT NOT NULL, \
     first_date DATE, last_date DATE, imported_at TIMESTAMPTZ NOT NULL)",
    "INSERT INTO synth_market VALUES (1, 2, 3, '2024-01-02', '7', 'us', 6, '2024-01-02', '2024-01-04', \
     '2025-01-01T00:00:00Z', 1)",
    "INSERT INTO imported_files VALUES ('aaaa1111', 'first.csv', '[\"ONLY\",\"SHARED\"]', 6, '2024-01-02', '2024-01-04', \
     '2025-01-02T00:00:00Z')",
    "INSERT INTO imported_files VALUES ('bbbb2222', 'second.csv', '[\"SHARED\"]', 3, '2024-01-02', '2024-01-04', \
     '2025-01-03T00:00:00Z')",
    "INSERT INTO symbols (code, source) VALUES ('SYNA', 'synth'), ('SYNB', 'synth'), ('ONLY', 'import'), \
     ('SHARED', 'import'), ('HAND', 'import')",
    "INSERT INTO daily_bars SELECT s.code, d::date, 10, 11, 9, 10, 100, 1000, 1 FROM symbols s, \
     generate_series('2024-01-02'::date, '2024-01-04'::date, '1 day') AS d",
];

#[test]
fn a_postgres_database_from_before_versions_migrates_with_every_bar_kept() {
    let url = pg_url();
    let dir = tempfile::tempdir().unwrap();
    // Created with every migration, then taken back.
    let out = measured(&url, dir.path(), &["data", "ls"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    pg_exec(&url, BEFORE_VERSIONS_PG);
    let out = measured(&url, dir.path(), &["data", "ls"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let per_version = strings(
        &url,
        "SELECT v.dataset || ':' || string_agg(s.code, ',' ORDER BY s.code) FROM dataset_versions v \
         JOIN symbols s ON s.version = v.id GROUP BY v.id, v.dataset ORDER BY v.id",
    );
    assert_eq!(
        per_version,
        [
            "synth-2x3-2024-01-02-s7-us:SYNA,SYNB",
            "import-aaaa1111:ONLY",
            "pre-version:HAND,SHARED"
        ]
    );
    assert_eq!(scalar(&url, "SELECT COUNT(*) FROM daily_bars"), 15, "every bar kept");
    assert_eq!(scalar(&url, "SELECT SUM(bar_rows)::bigint FROM dataset_versions"), 15);
    assert!(text(&out).contains("generator 1"), "{}", text(&out));
    // New versions get ids after the migrated ones.
    let out = measured(
        &url,
        dir.path(),
        &[
            "data",
            "synth",
            "--symbols",
            "3",
            "--days",
            "5",
            "--start",
            "2024-01-02",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(scalar(&url, "SELECT MAX(id) FROM dataset_versions"), 4);
}
