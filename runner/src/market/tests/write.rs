//! Tests of the bulk writers on both backends: the exact rows they store, that the stored
//! indexes survive every kind of write, and that a failed write leaves no version behind.

use crate::db::Db;
use crate::kinds::LoadParams;
use crate::market::stock::{Bar, SymbolInfo, SymbolRows};
use crate::market::tests::{
    both_backends, count_rows, load_version, on_postgres, on_sqlite, stored_rows, stored_rows_in,
};
use crate::market::write::{write_synth, SynthPlan};
use crate::market::*;
use chrono::NaiveDate;
use sha2::{Digest, Sha256};
use std::path::Path;

both_backends!(
    synth_stores_the_known_market_however_it_is_written,
    imports_into_empty_and_filled_tables,
    a_failed_synth_leaves_no_version,
);

/// The market of [`KNOWN_DIGEST`]: `data synth --symbols 30 --days 250 --start 2019-12-20
/// --seed 7 --style mixed`.
fn known_market() -> SynthOptions {
    SynthOptions {
        symbols: 30,
        days: 250,
        start: NaiveDate::from_ymd_opt(2019, 12, 20).unwrap(),
        seed: 7,
        style: CodeStyle::Mixed,
    }
}

const KNOWN_ROWS: u64 = 7_276;
/// [`rows_digest`] of [`known_market`] as generator version 2 makes it, the one every writer
/// (row-by-row batches with the date index in place, or the bulk load) must store exactly.
const KNOWN_DIGEST: &str = "cb9e08353b6bf410c74f80eac79a7f6bc203ebb8ee02de10ecbbb232acee8c89";
/// The `load` stage's content hash of the same rows (all symbols).
const KNOWN_CONTENT_HASH: &str = "ffe894637680530103108d81cf73910ce10cb0dc1b7c997510dff7471b383ab9";

/// A digest of the stored bars of version `id`, independent of the backend and of row order:
/// symbol, ISO date and the exact bits of every value, sorted by (symbol, date).
async fn rows_digest(db: &Db, id: i64) -> String {
    let mut rows = stored_rows_in(db, id).await;
    rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let mut hash = Sha256::new();
    for (symbol, date, values) in rows {
        let bits: Vec<String> = values.iter().map(|v| format!("{:016x}", v.to_bits())).collect();
        hash.update(format!("{symbol}|{date}|{}\n", bits.join("|")));
    }
    format!("{:x}", hash.finalize())
}

/// The secondary indexes of `daily_bars` as SQLite stores them (none on Postgres).
async fn sqlite_indexes(db: &Db) -> Vec<(String, String)> {
    let Db::Sqlite(pool) = db else {
        return Vec::new();
    };
    sqlx::query_as(
        "SELECT name, sql FROM sqlite_master \
         WHERE type = 'index' AND tbl_name = 'daily_bars' AND sql IS NOT NULL ORDER BY name",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// On SQLite: the indexes are the ones the migrations created, the file is consistent
/// (`integrity_check` compares every index entry with its row), dates are stored as ISO text,
/// and the date index finds every row.
async fn assert_sqlite_intact(db: &Db, indexes: &[(String, String)]) {
    let Db::Sqlite(pool) = db else { return };
    assert_eq!(
        &sqlite_indexes(db).await,
        indexes,
        "the same indexes, defined the same way"
    );
    let check: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(pool)
        .await
        .unwrap();
    assert_eq!(check, ["ok"]);
    let not_iso: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM daily_bars WHERE typeof(trade_date) <> 'text' OR length(trade_date) <> 10",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(not_iso, 0);
    let by_index: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM daily_bars INDEXED BY daily_bars_trade_date_idx WHERE version > 0 AND trade_date >= ''",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(by_index, count_rows(db).await);
}

async fn content_hash(db: &Db, v: &VersionRef) -> String {
    load_version(db, LoadParams::default(), v).await.unwrap().content_hash
}

fn csv(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn import_opts(files: Vec<std::path::PathBuf>) -> ImportOptions {
    ImportOptions {
        files,
        ..ImportOptions::default()
    }
}

const KEEP: &str = "Date,Open,High,Low,Close,Adj Close,Volume\n\
    2020-01-02,10,11,9,10.5,10.5,1000\n\
    2020-01-03,10.5,12,10,11,11,1200\n";

async fn synth_stores_the_known_market_however_it_is_written(db: Db) {
    let indexes = sqlite_indexes(&db).await;
    let hidden = indicatif::ProgressBar::hidden();
    // Into an empty table: indexes deferred and rebuilt.
    let report = synth(&db, &known_market(), &hidden).await.unwrap();
    assert_eq!(report.rows, KNOWN_ROWS);
    assert_eq!(rows_digest(&db, report.version.id).await, KNOWN_DIGEST);
    assert_eq!(content_hash(&db, &report.version).await, KNOWN_CONTENT_HASH);
    assert_sqlite_intact(&db, &indexes).await;
    // Beside other versions (an imported symbol, another seed), the indexes are kept up to
    // date row by row instead; the known market, written again, is the same bars.
    let dir = tempfile::tempdir().unwrap();
    import(&db, &import_opts(vec![csv(dir.path(), "KEEP.csv", KEEP)]))
        .await
        .unwrap();
    let other = synth(
        &db,
        &SynthOptions {
            seed: 8,
            ..known_market()
        },
        &hidden,
    )
    .await
    .unwrap();
    assert_ne!(rows_digest(&db, other.version.id).await, KNOWN_DIGEST);
    versions::remove(&db, report.version.id).await.unwrap();
    let again = synth(&db, &known_market(), &hidden).await.unwrap();
    assert_eq!(again.rows, KNOWN_ROWS);
    assert_eq!(count_rows(&db).await, (KNOWN_ROWS + other.rows) as i64 + 2);
    assert_eq!(rows_digest(&db, again.version.id).await, KNOWN_DIGEST);
    assert_eq!(content_hash(&db, &again.version).await, KNOWN_CONTENT_HASH);
    assert_sqlite_intact(&db, &indexes).await;
}

async fn imports_into_empty_and_filled_tables(db: Db) {
    let indexes = sqlite_indexes(&db).await;
    let dir = tempfile::tempdir().unwrap();
    // Into an empty table (indexes deferred), then the same file again (found, not written).
    let file = csv(dir.path(), "KEEP.csv", KEEP);
    let first = import(&db, &import_opts(vec![file.clone()])).await.unwrap();
    assert_eq!(first.rows_written, 2);
    assert_sqlite_intact(&db, &indexes).await;
    let keep = first.version.unwrap();
    let once = rows_digest(&db, keep.id).await;
    let again = import(&db, &import_opts(vec![file])).await.unwrap();
    assert!(again.already, "{again:?}");
    assert_eq!(rows_digest(&db, keep.id).await, once);
    assert_eq!(count_rows(&db).await, 2);

    // Into a filled table: a file holding a bar of the market is a version of its own, and the
    // market's version keeps its bar.
    let market = synth(&db, &known_market(), &indicatif::ProgressBar::hidden())
        .await
        .unwrap()
        .version;
    let bars = load_version(
        &db,
        LoadParams {
            adjust: false,
            ..LoadParams::default()
        },
        &market,
    )
    .await
    .unwrap();
    let target = &bars.symbols[0];
    let (code, date) = (target.symbol.clone(), target.dates[3]);
    let fix = format!("Date,Open,High,Low,Close,Adj Close,Volume\n{date},1,2,0.5,1.5,1.5,100\n");
    let named = ImportOptions {
        symbol: Some(code.clone()),
        ..import_opts(vec![csv(dir.path(), "fix.csv", &fix)])
    };
    let fresh = csv(dir.path(), "NEW.csv", &KEEP.replace("2020-01-0", "2020-02-0"));
    let fixed = import(&db, &named).await.unwrap().version.unwrap();
    import(&db, &import_opts(vec![fresh])).await.unwrap();
    assert_eq!(
        count_rows(&db).await,
        KNOWN_ROWS as i64 + 2 + 1 + 2,
        "every version kept"
    );
    assert_eq!(
        stored_rows_in(&db, fixed.id).await,
        vec![(code.clone(), date, [1.0, 2.0, 0.5, 1.5, 100.0, 150.0, 1.0])]
    );
    assert_eq!(
        rows_digest(&db, market.id).await,
        KNOWN_DIGEST,
        "the market's bar is as generated"
    );
    assert_eq!(stored_rows(&db).await.iter().filter(|r| r.0 == "NEW").count(), 2);
    assert_sqlite_intact(&db, &indexes).await;
}

/// Three symbols of `days` bars each, from 2020-01-01 on.
fn groups(days: usize) -> (Vec<SymbolInfo>, Vec<SymbolRows>) {
    let start = NaiveDate::from_ymd_opt(2020, 1, 1).unwrap();
    let codes = ["FAIL1", "FAIL2", "FAIL3"];
    let infos = codes.iter().map(|c| SymbolInfo::from_code(c)).collect();
    let rows = codes
        .iter()
        .map(|c| SymbolRows {
            code: c.to_string(),
            bars: (0..days)
                .map(|d| Bar {
                    date: start + chrono::Days::new(d as u64),
                    open: 1.0,
                    high: 2.0,
                    low: 0.5,
                    close: 1.5,
                    volume: 10.0,
                    amount: 15.0,
                    adj_factor: 1.0,
                })
                .collect(),
        })
        .collect();
    (infos, rows)
}

/// Writes `sent` as a synthetic market of `symbols`, as if generated, into a new version of the
/// dataset `failing`.
async fn write_groups(db: &Db, symbols: &[SymbolInfo], sent: Vec<SymbolRows>) -> Result<u64, MarketError> {
    let (tx, rx) = tokio::sync::mpsc::channel(sent.len().max(1));
    for g in sent {
        tx.try_send(g).unwrap();
    }
    drop(tx);
    let progress = indicatif::ProgressBar::hidden();
    let new = versions::NewVersion {
        dataset: "failing".into(),
        origin: versions::Origin::Import {
            files: vec![versions::FileRef {
                file: "groups".into(),
                sha256: format!("{}", symbols.len()),
            }],
        },
        parent: None,
    };
    write_synth(
        db,
        SynthPlan {
            symbols,
            rows: rx,
            progress: &progress,
        },
        &new,
    )
    .await
    .map(|(_, rows)| rows)
}

async fn a_failed_synth_leaves_no_version(db: Db) {
    let indexes = sqlite_indexes(&db).await;
    let market = synth(&db, &known_market(), &indicatif::ProgressBar::hidden())
        .await
        .unwrap()
        .version;
    let hash = content_hash(&db, &market).await;
    // Each failure comes after more than one full INSERT went through, with the version row
    // written and (on SQLite) the indexes in place.
    let (symbols, mut rows) = groups(700);
    let stopped = write_groups(&db, &symbols, rows[..2].to_vec()).await.unwrap_err();
    assert!(stopped.to_string().contains("stopped after 2 of 3"), "{stopped}");
    let dup = rows[2].bars[5];
    rows[2].bars.push(dup);
    let duplicate = write_groups(&db, &symbols, rows.clone()).await.unwrap_err();
    assert!(matches!(duplicate, MarketError::Db(_)), "{duplicate}");
    assert_eq!(count_rows(&db).await, KNOWN_ROWS as i64);
    assert_eq!(versions::list(&db).await.unwrap().len(), 1, "no half-written version");
    assert_eq!(rows_digest(&db, market.id).await, KNOWN_DIGEST);
    assert_eq!(content_hash(&db, &market).await, hash);
    assert_sqlite_intact(&db, &indexes).await;
    // The database is usable afterwards: the complete write goes through.
    rows[2].bars.pop();
    assert_eq!(write_groups(&db, &symbols, rows).await.unwrap(), 3 * 700);
    assert_sqlite_intact(&db, &indexes).await;
}
