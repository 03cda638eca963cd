//! `measured data import` on real-looking files: long-format CSVs found by their column names,
//! the guidance for a long file read as one symbol, OHLC sanity and `--dry-run`.

use crate::common::{bin, run, scalar, strings, text};
use std::path::Path;
use std::process::Output;

/// A fresh SQLite stock database in `dir`.
fn db(dir: &Path) -> String {
    dir.join("stock.sqlite").display().to_string()
}

/// `measured --database DB data import ARGS...`, run from the crate root so fixture paths in
/// messages are relative.
fn import(db: &str, args: &[&str]) -> Output {
    run(bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--database", db, "data", "import"])
        .args(args))
}

fn rows(db: &str) -> i64 {
    scalar(db, "SELECT COUNT(*) FROM daily_bars")
}

fn symbols(db: &str) -> Vec<String> {
    strings(db, "SELECT DISTINCT symbol FROM daily_bars ORDER BY symbol")
}

#[test]
fn long_files_with_symbol_ticker_and_ts_code_columns_import_without_columns() {
    for (file, want_symbols, want_rows) in [
        ("long_symbol.csv", vec!["AAPL", "MSFT", "NVDA"], 12),
        ("long_ticker.csv", vec!["BRK-B", "^GSPC"], 6),
        ("long_ts_code.csv", vec!["000001.SZ", "600519.SH"], 6),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path());
        let path = format!("tests/fixtures/import/{file}");
        let out = import(&db, &[&path]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out));
        assert!(
            text(&out).contains(&format!("imported {want_rows} rows of {} symbols", want_symbols.len())),
            "{file}: {}",
            text(&out)
        );
        assert_eq!(symbols(&db), want_symbols, "{file}");
        assert_eq!(rows(&db), want_rows, "{file}");
        assert_eq!(
            strings(&db, "SELECT MIN(trade_date) FROM daily_bars"),
            vec!["2024-01-02"],
            "{file}: dates read from the date column"
        );
    }
    // `ts_code` without tushare's `vol` column is not the tushare layout: volume is not in lots.
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let out = import(&db, &["tests/fixtures/import/long_ts_code.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        scalar(
            &db,
            "SELECT CAST(volume AS INTEGER) FROM daily_bars WHERE symbol = '000001.SZ' ORDER BY trade_date LIMIT 1"
        ),
        3411568
    );
}

/// The `--columns` argument in the hint of a long file read as one symbol.
fn suggested_columns(stderr: &str) -> String {
    let prefix = "hint: import it as one symbol per row with --columns ";
    stderr
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no --columns hint in\n{stderr}"))
        .to_owned()
}

#[test]
fn long_file_read_as_one_symbol_names_the_symbol_column() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let file = "tests/fixtures/import/stock_column.csv";
    let out = import(&db, &[file]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    insta::assert_snapshot!("long_file_read_as_one_symbol", stderr);
    assert!(!stderr.contains("--skip-bad"), "{stderr}");
    assert!(stderr.contains("column `Stock`"), "{stderr}");
    assert_eq!(rows(&db), 0);

    // Even with --skip-bad the file is not half-imported as one symbol.
    let out = import(&db, &[file, "--skip-bad"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(rows(&db), 0);

    // The suggested argument works when pasted into a shell.
    let arg = suggested_columns(&stderr);
    let line = format!(
        "'{}' --database '{db}' data import {file} --columns {arg}",
        env!("CARGO_BIN_EXE_measured")
    );
    let out = run(std::process::Command::new("bash")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("DATABASE_URL")
        .env_remove("STOCK_DATABASE_URL")
        .args(["-c", &line]));
    assert_eq!(out.status.code(), Some(0), "{line}\n{}", text(&out));
    assert_eq!(symbols(&db), ["AAPL", "MSFT", "NVDA"]);
    assert_eq!(rows(&db), 9);
    // `Adj Close` came along: adj_factor = Adj Close / Close, not 1.
    assert_eq!(scalar(&db, "SELECT COUNT(*) FROM daily_bars WHERE adj_factor = 1.0"), 0);
}

#[test]
fn real_duplicates_without_a_symbol_column_still_suggest_skip_bad() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let file = crate::common::write(
        dir.path(),
        "DUP.csv",
        "Date,Open,High,Low,Close,Volume,Note\n\
         2024-01-02,10,11,9,10.5,100,x\n\
         2024-01-02,10,11,9,10.5,100,x\n\
         2024-01-03,10,11,9,10.5,100,x\n",
    );
    let out = import(&db, &[file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains(":3: duplicate date 2024-01-02 for DUP") && all.contains("--skip-bad"),
        "{all}"
    );
    assert!(!all.contains("looks like a symbol column"), "{all}");
}

#[test]
fn inconsistent_ohlc_rows_are_reported_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let file = "tests/fixtures/import/ohlc_bad.csv";
    let out = import(&db, &[file]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        !Path::new(&db).exists(),
        "a failed import leaves no database file behind"
    );
    let err = text(&out);
    let wanted = [
        format!("{file}:3: open 11.2 is above high 11"),
        format!("{file}:4: close 9.4 is below low 9.5"),
        format!("{file}:6: low must be positive, got 0"),
        format!("{file}:7: high 9 is below low 9.5"),
        format!("{file}:8: negative volume -3"),
        format!("{file}:9: open 9 is below low 9.5; close 12 is above high 11"),
        "6 bad rows in the input; nothing was imported".to_owned(),
    ];
    for want in &wanted {
        assert!(err.contains(want.as_str()), "missing {want:?} in\n{err}");
    }
    assert!(
        !err.contains(&format!("{file}:5:")),
        "within the 1e-6 tolerance:\n{err}"
    );
    assert_eq!(rows(&db), 0, "all or nothing");

    let out = import(&db, &[file, "--skip-bad"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = text(&out);
    assert!(report.contains("6 bad rows skipped"), "{report}");
    assert!(
        report.contains(&format!("skipped {file}:9: open 9 is below low 9.5")),
        "{report}"
    );
    assert_eq!(rows(&db), 2);
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let out = import(&db, &["tests/fixtures/import/long_ticker.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(rows(&db), 6);

    let files = [
        "tests/fixtures/import/long_symbol.csv",
        "tests/fixtures/import/ohlc_bad.csv",
    ];
    let out = import(&db, &[files[0], files[1], "--dry-run", "--skip-bad"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = String::from_utf8_lossy(&out.stdout).to_string();
    for want in [
        "would import 14 rows of 4 symbols from 2 files (20 rows read, 2024-01-02 to 2024-01-05)",
        "symbols: AAPL, MSFT, NVDA, ohlc_bad",
        "date=Date,open=Open,high=High,low=Low,close=Close,volume=Volume,adj_close=Adj Close,symbol=Symbol \
         (detected): tests/fixtures/import/long_symbol.csv",
        "date=Date,open=Open,high=High,low=Low,close=Close,volume=Volume; symbol from the file name \
         (detected): tests/fixtures/import/ohlc_bad.csv",
        "bad rows to skip: 6",
        "tests/fixtures/import/ohlc_bad.csv:7: high 9 is below low 9.5",
        "dry run: nothing was written",
    ] {
        assert!(plan.contains(want), "missing {want:?} in\n{plan}");
    }
    assert_eq!(rows(&db), 6, "the dry run wrote no rows");
    assert_eq!(symbols(&db), ["BRK-B", "^GSPC"]);

    // Without --skip-bad the dry run fails exactly like the import would.
    let dry = import(&db, &[files[0], files[1], "--dry-run"]);
    let real = import(&db, &files);
    assert_eq!(dry.status.code(), Some(2), "{}", text(&dry));
    assert_eq!(dry.status.code(), real.status.code());
    assert_eq!(
        String::from_utf8_lossy(&dry.stderr),
        String::from_utf8_lossy(&real.stderr)
    );
    assert_eq!(rows(&db), 6);
}
