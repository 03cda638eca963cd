//! Tests of CSV files -> import -> stock tables -> load on both backends.

use crate::db::Db;
use crate::kinds::{LoadParams, SymbolSelection};
use crate::market::tests::{both_backends, count_rows, flatten, load_with, on_postgres, on_sqlite};
use crate::market::*;
use chrono::NaiveDate;
use std::io::Write;
use std::path::{Path, PathBuf};

both_backends!(
    both_layouts_import_and_load_back,
    malformed_file_writes_nothing_unless_skip_bad,
);

pub(super) const YAHOO: &str = "\
Date,Open,High,Low,Close,Adj Close,Volume
2024-01-02,187.15,188.44,183.89,185.64,184.94,82488700
2024-01-03,184.22,185.88,183.43,184.25,183.55,58414500
2024-01-04,182.15,183.09,180.88,181.91,181.22,71983600
";

// Tushare exports come newest first; `vol` is in lots and `amount` in thousands.
pub(super) const TUSHARE: &str = "\
ts_code,trade_date,open,high,low,close,pre_close,change,pct_chg,vol,amount
000001.SZ,20240104,9.19,9.24,9.13,9.20,9.21,-0.01,-0.11,1158366.45,1064961.59
600519.SH,20240104,1650.00,1670.00,1645.00,1660.00,1655.00,5.00,0.30,30000.00,4980000.00
000001.SZ,20240103,9.20,9.27,9.17,9.21,9.21,0.00,0.00,1021560.95,941178.84
600519.SH,20240103,1640.00,1660.00,1635.00,1655.00,1640.00,15.00,0.91,28000.00,4620000.00
";

pub(super) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn write_gz(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap();
    path
}

pub(super) fn opts(files: Vec<PathBuf>) -> ImportOptions {
    ImportOptions {
        files,
        ..ImportOptions::default()
    }
}

pub(super) fn only(codes: &[&str]) -> LoadParams {
    LoadParams {
        symbols: SymbolSelection::List(codes.iter().map(|c| c.to_string()).collect()),
        ..LoadParams::default()
    }
}

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2024, 1, d).unwrap()
}

async fn both_layouts_import_and_load_back(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        write(dir.path(), "AAPL.csv", YAHOO),
        // Gzip by extension, and by magic bytes under a plain name.
        write_gz(dir.path(), "MSFT.csv.gz", YAHOO),
        write_gz(dir.path(), "daily.csv", TUSHARE),
    ];
    let report = import(&db, &opts(files)).await.unwrap();
    assert_eq!((report.rows_read, report.rows_written, report.symbols), (10, 10, 4));
    assert_eq!((report.first_date, report.last_date), (Some(day(2)), Some(day(4))));
    assert!(report.to_string().contains("10 rows written for 4 symbols"), "{report}");

    let aapl = load_with(&db, only(&["AAPL"])).await.0.unwrap();
    let rows = flatten(&aapl);
    assert_eq!(rows.len(), 3);
    let (_, date, v) = &rows[0];
    assert_eq!(*date, day(2));
    assert_eq!(&v[..5], &[187.15, 188.44, 183.89, 185.64, 82488700.0]);
    assert_eq!(v[5], 82488700.0 * 185.64, "amount estimated as volume x close");
    assert_eq!(v[6], 184.94 / 185.64, "adj_factor = Adj Close / Close");
    let msft = load_with(&db, only(&["MSFT"])).await.0.unwrap();
    assert_eq!(flatten(&msft)[2].2, rows[2].2, "gzip reads the same");

    let china = load_with(&db, only(&["600519.SH", "000001.SZ"])).await.0.unwrap();
    assert_eq!(china.symbols[0].symbol, "600519.SH");
    assert_eq!(china.symbols[1].dates, vec![day(3), day(4)], "sorted by date");
    let first = &flatten(&china)[2];
    assert_eq!(first.0, "000001.SZ");
    assert_eq!(first.2, [9.20, 9.27, 9.17, 9.21, 102156095.0, 941178840.0, 1.0]);

    // The explicit mapping with its own date format.
    let custom = write(
        dir.path(),
        "custom.csv",
        "Ticker;Day;O;H;L;C;V\nX.HK;02.01.2024;1;2;0.5;1.5;10\n",
    );
    let explicit = ImportOptions {
        columns: Some("symbol=Ticker,date=Day,open=O,high=H,low=L,close=C,volume=V".into()),
        date_format: Some("%d.%m.%Y".into()),
        ..opts(vec![custom])
    };
    // Not comma-separated: the header is one column, so the mapping cannot be satisfied.
    let err = import(&db, &explicit).await.unwrap_err().to_string();
    assert!(err.contains("no column `Ticker`") && err.contains("hint:"), "{err}");
    let custom = write(
        dir.path(),
        "custom.csv",
        "Ticker,Day,O,H,L,C,V\nX.HK,02.01.2024,1,2,0.5,1.5,10\n",
    );
    let explicit = ImportOptions {
        files: vec![custom],
        ..explicit
    };
    import(&db, &explicit).await.unwrap();
    let x = load_with(&db, only(&["X.HK"])).await.0.unwrap();
    assert_eq!(
        flatten(&x),
        vec![("X.HK".into(), day(2), [1.0, 2.0, 0.5, 1.5, 10.0, 15.0, 1.0])]
    );
}

async fn malformed_file_writes_nothing_unless_skip_bad(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "GOOD.csv", YAHOO);
    let bad = write(
        dir.path(),
        "BAD.csv",
        "Date,Open,High,Low,Close,Adj Close,Volume\n\
         2024-01-02,10,11,9,10.5,10.5,1000\n\
         2024-01-03,abc,11,9,10.5,10.5,1000\n\
         2024-01-04,10,9,11,10.5,10.5,1000\n\
         2024-01-05,10,11,9,10.5,10.5,-5\n\
         2024-01-02,10,11,9,10.5,10.5,1000\n\
         2024-01-08,10,11,9,10.5,10.5,2000\n",
    );
    let shown = bad.display().to_string();
    let files = vec![good, bad];
    let err = import(&db, &opts(files.clone())).await.unwrap_err();
    let text = err.to_string();
    for want in [
        format!("{shown}:3: open: `abc` is not a number"),
        format!("{shown}:4: high 9 is below low 11"),
        format!("{shown}:5: negative volume -5"),
        format!("{shown}:6: duplicate date 2024-01-02 for BAD (first at {shown}:2)"),
        "4 bad rows".to_owned(),
        "--skip-bad".to_owned(),
    ] {
        assert!(text.contains(&want), "missing {want:?} in\n{text}");
    }
    assert_eq!(count_rows(&db).await, 0, "the good file was not written either");

    let report = import(
        &db,
        &ImportOptions {
            skip_bad: true,
            ..opts(files)
        },
    )
    .await
    .unwrap();
    assert_eq!((report.rows_read, report.skipped, report.rows_written), (9, 4, 5));
    assert!(report.to_string().contains("skipped 4 bad rows"), "{report}");
    let bad_rows = load_with(&db, only(&["BAD"])).await.0.unwrap();
    assert_eq!(bad_rows.symbols[0].dates, vec![day(2), day(8)]);
}

#[test]
fn error_lists_twenty_rows_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("Date,Open,High,Low,Close,Volume\n");
    for d in 1..=25 {
        text.push_str(&format!("2024-02-{d:02},1,2,1,null,5\n"));
    }
    let path = write(dir.path(), "Z.csv", &text);
    on_sqlite(|db| async move {
        let err = import(&db, &opts(vec![path])).await.unwrap_err().to_string();
        assert_eq!(err.matches("is not a number").count(), 20, "{err}");
        assert!(err.contains("25 bad rows") && err.contains("... and 5 more"), "{err}");
        assert_eq!(count_rows(&db).await, 0);
    });
}

#[test]
fn unknown_header_and_bad_names_get_hints() {
    let dir = tempfile::tempdir().unwrap();
    let odd = write(dir.path(), "Q.csv", "when,price\n2024-01-02,3\n");
    let spaced = write(dir.path(), "my file.csv", YAHOO);
    on_sqlite(|db| async move {
        let err = import(&db, &opts(vec![odd])).await.unwrap_err().to_string();
        assert!(
            err.contains("cannot tell the layout") && err.contains("--columns"),
            "{err}"
        );
        let err = import(&db, &opts(vec![spaced.clone()])).await.unwrap_err().to_string();
        assert!(err.contains("--symbol"), "{err}");
        let named = ImportOptions {
            symbol: Some("SPCD".into()),
            ..opts(vec![spaced])
        };
        assert_eq!(import(&db, &named).await.unwrap().symbols, 1);
        let bad_map = ImportOptions {
            columns: Some("price=Close".into()),
            ..opts(vec![dir.path().join("Q.csv")])
        };
        let err = import(&db, &bad_map).await.unwrap_err().to_string();
        assert!(err.contains("unknown field `price`"), "{err}");
    });
}

/// The one `--columns` hint of a failed prepare, unquoted as a shell would.
fn columns_hint(err: &str) -> String {
    let arg = err
        .lines()
        .find_map(|l| l.strip_prefix("hint: import it as one symbol per row with --columns "))
        .unwrap_or_else(|| panic!("no --columns hint in\n{err}"));
    match arg.strip_prefix('\'').and_then(|a| a.strip_suffix('\'')) {
        Some(quoted) => quoted.replace(r"'\''", "'"),
        None => arg.to_owned(),
    }
}

#[test]
fn usual_column_names_are_detected_in_any_case_and_spacing() {
    let dir = tempfile::tempdir().unwrap();
    for (header, date) in [
        ("SYMBOL,DATE,OPEN,HIGH,LOW,CLOSE,VOLUME", "2024-01-02"),
        (" Ticker , Trade Date ,Open,High,Low,Close,Vol", "20240102"),
        ("code,trade_date,open,high,low,close,volume", "2024/01/02"),
        ("ts_code,timestamp,open,high,low,close,volume", "2024-01-02 09:30:00"),
        ("Ts_Code,Datetime,Open,High,Low,Close,Volume", "2024-01-02T00:00:00Z"),
        ("Symbol,Day,Open,High,Low,Close,Volume", "2024-01-02"),
    ] {
        let body = format!("{header}\nAAA,{date},1,2,0.5,1.5,10\nBBB,{date},1,2,0.5,1.5,10\n");
        let path = write(dir.path(), "long.csv", &body);
        let plan = prepare(&opts(vec![path])).unwrap_or_else(|e| panic!("{header}: {e}"));
        assert_eq!(plan.codes, ["AAA", "BBB"], "{header}");
        assert_eq!((plan.rows, plan.first_date), (2, Some(day(2))), "{header}");
        assert!(plan.to_string().contains("(detected)"), "{header}: {plan}");
    }
    // tushare's own export (with `vol` in lots) is still the tushare layout.
    let plan = prepare(&opts(vec![write(dir.path(), "t.csv", TUSHARE)])).unwrap();
    assert!(plan.to_string().contains("(tushare layout"), "{plan}");
    assert_eq!(plan.codes, ["000001.SZ", "600519.SH"]);
}

#[test]
fn a_symbol_column_read_as_one_symbol_gets_a_columns_hint_that_works() {
    let dir = tempfile::tempdir().unwrap();
    let long = "Date,Ticker,Open,High,Low,Close,Adj Close,Volume,Name\n\
                2024-01-02,AAA,1,2,0.5,1.5,1.5,10,Alpha\n\
                2024-01-02,BBB,1,2,0.5,1.5,1.5,10,Beta\n\
                2024-01-03,AAA,1,2,0.5,1.5,1.5,10,Alpha\n\
                2024-01-03,BBB,1,2,0.5,1.5,1.5,10,Beta\n";
    let path = write(dir.path(), "long.csv", long);
    // Found by name: imports as long format.
    assert_eq!(prepare(&opts(vec![path.clone()])).unwrap().codes, ["AAA", "BBB"]);
    // --columns without a symbol: the Ticker column is still found by its name.
    let columns = ImportOptions {
        columns: Some("date=Date,open=Open,high=High,low=Low,close=Close,volume=Volume".into()),
        ..opts(vec![path.clone()])
    };
    let plan = prepare(&columns).unwrap();
    assert_eq!(plan.codes, ["AAA", "BBB"]);
    assert!(plan.to_string().contains("(--columns, the rest detected)"), "{plan}");
    // Read as one symbol two ways: --symbol, --layout yahoo.
    for how in [
        ImportOptions {
            symbol: Some("ONE".into()),
            ..opts(vec![path.clone()])
        },
        ImportOptions {
            layout: Some(Layout::Yahoo),
            ..opts(vec![path.clone()])
        },
    ] {
        for skip_bad in [false, true] {
            let how = ImportOptions {
                skip_bad,
                ..how.clone()
            };
            let err = prepare(&how).unwrap_err().to_string();
            assert!(err.contains("column `Ticker` looks like a symbol column"), "{err}");
            assert!(err.contains("AAA, BBB") && err.contains(":3: date 2024-01-02"), "{err}");
            assert!(!err.contains("--skip-bad"), "{err}");
            let fixed = ImportOptions {
                columns: Some(columns_hint(&err)),
                ..how
            };
            let plan = prepare(&fixed).unwrap();
            assert_eq!((plan.codes.len(), plan.rows, plan.skipped), (2, 4, 0), "{err}");
        }
    }
    // Same-date rows that agree in every text column are plain duplicates.
    let dupes = "Date,Open,High,Low,Close,Volume,Name\n\
                 2024-01-02,1,2,0.5,1.5,10,Alpha\n\
                 2024-01-02,1,2,0.5,1.5,10,Alpha\n";
    let err = prepare(&opts(vec![write(dir.path(), "D.csv", dupes)]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("duplicate date 2024-01-02 for D") && err.contains("--skip-bad"),
        "{err}"
    );
}

/// `--columns symbol=Sym` used to leave every other field unmapped ("no column for date"):
/// the fields it does not name are found under their usual names, in the columns it leaves.
#[test]
fn a_partial_columns_mapping_is_completed_from_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let file = "Sym,Date,Open,High,Low,Close,Volume,Sales\n\
                AAA,2024-01-02,1,2,0.5,1.5,10,7\n\
                BBB,2024-01-02,1,2,0.5,1.5,10,8\n";
    let path = write(dir.path(), "p.csv", file);
    let partial = ImportOptions {
        columns: Some("symbol=Sym,amount=Sales".into()),
        ..opts(vec![path.clone()])
    };
    let plan = prepare(&partial).unwrap();
    assert_eq!(
        (plan.codes.clone(), plan.rows),
        (vec!["AAA".to_owned(), "BBB".to_owned()], 2)
    );
    let shown = plan.to_string();
    assert!(
        shown.contains("date=Date,open=Open,high=High,low=Low,close=Close,volume=Volume,amount=Sales,symbol=Sym"),
        "{shown}"
    );
    assert!(shown.contains("(--columns, the rest detected)"), "{shown}");
    // A column --columns maps to one field is not taken again for another.
    let taken = ImportOptions {
        columns: Some("close=Open".into()),
        ..opts(vec![path.clone()])
    };
    let err = prepare(&taken).unwrap_err().to_string();
    assert!(err.contains("no column for open"), "{err}");
    // What neither names is still an error that says what is missing.
    let none = write(
        dir.path(),
        "n.csv",
        "Sym,When,O,H,L,C,V\nAAA,2024-01-02,1,2,0.5,1.5,10\n",
    );
    let err = prepare(&ImportOptions {
        columns: Some("symbol=Sym".into()),
        ..opts(vec![none])
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("no column for date"), "{err}");
}

#[test]
fn shell_words_survive_quotes_and_spaces() {
    use crate::market::source::csvmap::shell_word;
    assert_eq!(shell_word("date=Date,symbol=Ticker"), "date=Date,symbol=Ticker");
    assert_eq!(shell_word("adj_close=Adj Close"), "'adj_close=Adj Close'");
    assert_eq!(shell_word("symbol=Tom's"), r"'symbol=Tom'\''s'");
}

#[test]
fn open_and_close_must_lie_within_low_and_high() {
    let dir = tempfile::tempdir().unwrap();
    let body = "Date,Open,High,Low,Close,Volume\n\
                2024-01-02,100,110,90,100,1\n\
                2024-01-03,110.00005,110,90,100,1\n\
                2024-01-04,110.001,110,90,100,1\n\
                2024-01-05,100,110,90,89.9,1\n\
                2024-01-08,-1,110,90,100,1\n";
    let path = write(dir.path(), "R.csv", body);
    let shown = path.display().to_string();
    let err = prepare(&opts(vec![path.clone()])).unwrap_err().to_string();
    for want in [
        format!("{shown}:4: open 110.001 is above high 110"),
        format!("{shown}:5: close 89.9 is below low 90"),
        format!("{shown}:6: open must be positive, got -1"),
        "3 bad rows".to_owned(),
    ] {
        assert!(err.contains(&want), "missing {want:?} in\n{err}");
    }
    assert!(
        !err.contains(&format!("{shown}:3:")),
        "within 1e-6 of the price:\n{err}"
    );
    let plan = prepare(&ImportOptions {
        skip_bad: true,
        ..opts(vec![path])
    })
    .unwrap();
    assert_eq!((plan.rows, plan.skipped), (2, 3));
}

#[test]
fn dry_run_reads_everything_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        write(dir.path(), "AAPL.csv", YAHOO),
        write(dir.path(), "t.csv", TUSHARE),
    ];
    on_sqlite(|db| async move {
        let dry = ImportOptions {
            dry_run: true,
            ..opts(files.clone())
        };
        let report = import(&db, &dry).await.unwrap();
        assert_eq!((report.rows_read, report.rows_written, report.symbols), (7, 0, 3));
        assert_eq!(count_rows(&db).await, 0);
        let plan = prepare(&dry).unwrap().to_string();
        assert!(
            plan.starts_with("would import 7 rows of 3 symbols from 2 files (7 rows read, 2024-01-02 to 2024-01-04)"),
            "{plan}"
        );
        assert!(plan.contains("symbols: 000001.SZ, 600519.SH, AAPL"), "{plan}");
        assert!(
            plan.contains("date=Date,open=Open,high=High,low=Low,close=Close,volume=Volume,adj_close=Adj Close; symbol from the file name (detected):"),
            "{plan}"
        );
        assert_eq!(import(&db, &opts(files)).await.unwrap().rows_written, 7);
    });
}

both_backends!(a_split_is_no_return_after_import_load_and_normalize);

/// A CSV file with a 2:1 split, imported, loaded with the defaults and normalized: the split
/// day's `ret_1` and the target that crosses it are the hand-computed adjusted returns (prices
/// are split-adjusted exactly once, by `normalize`), not a jump of ln 2.
async fn a_split_is_no_return_after_import_load_and_normalize(db: Db) {
    use crate::features::{build_windows, NormalizeParams};
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("symbol,date,open,high,low,close,volume,adj_factor\n");
    let (mut date, mut closes) = (day(2), Vec::new());
    for i in 0..90 {
        while matches!(
            chrono::Datelike::weekday(&date),
            chrono::Weekday::Sat | chrono::Weekday::Sun
        ) {
            date = date.succ_opt().unwrap();
        }
        // Adjusted closes wander by +-1% a day; from row 60 on the raw close is half of it and
        // the factor 2, as a data vendor stores a 2:1 split.
        let adjusted = 20.0 * (1.0 + 0.005 * ((i * 7 % 5) as f64 - 2.0)) + 0.01 * i as f64;
        let factor = if i >= 60 { 2.0 } else { 1.0 };
        let close = ((adjusted / factor) * 100.0).round() / 100.0;
        text.push_str(&format!(
            "SPLT,{date},{close},{},{},{close},{},{factor}\n",
            close * 1.01,
            close * 0.99,
            1000.0 * factor
        ));
        closes.push(close);
        date = date.succ_opt().unwrap();
    }
    let file = write(dir.path(), "split.csv", &text);
    import(&db, &opts(vec![file])).await.unwrap();
    let params = LoadParams {
        symbols: SymbolSelection::List(vec!["SPLT".into()]),
        ..LoadParams::default()
    };
    let bars = load_with(&db, params).await.0.unwrap();
    let norm = NormalizeParams {
        seq_len: 5,
        preset: Some("minimal".into()),
        valid_fraction: Some(0.4),
        gap: Some(0),
        ..NormalizeParams::default()
    };
    let mut rec = crate::metrics::Recorder::new();
    let windows = build_windows(&bars, &norm, &mut rec, &std::sync::atomic::AtomicBool::new(false)).unwrap();
    let s = &bars.symbols[0];
    let split = s.adj_factor.iter().position(|&a| a == 2.0).unwrap();
    assert_eq!(split, 60);
    let want = ((closes[60] * 2.0) / closes[59]).ln();
    assert!(want.abs() < 0.03, "the adjusted move is an ordinary one: {want}");
    let col = windows.feature_names.iter().position(|f| f == "ret_1").unwrap();
    let mut seen = 0;
    for set in [&windows.train, &windows.valid] {
        for i in 0..set.len() {
            if set.dates[i] == s.dates[split - 1] {
                // The window ending the day before the split predicts across it.
                assert!(
                    (f64::from(set.targets[i]) - want).abs() < 1e-6,
                    "{} vs {want}",
                    set.targets[i]
                );
                seen += 1;
            }
            if set.dates[i] == s.dates[split] {
                let row = set.starts[i] as usize + windows.seq_len - 1;
                let z = set.features[row * windows.n_features + col];
                assert!(z.abs() < 4.0, "the split day's normalized ret_1 is {z}, a jump");
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 2, "both windows exist");
}
