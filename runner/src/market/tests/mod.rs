//! Tests of synth -> stock tables -> load on both backends (Postgres through
//! MEASURED_TEST_DATABASE_URL, a fresh database per test).

mod import;
mod sqlite;
mod synth;
mod versions;
mod write;

use super::*;
use crate::artifact::Bars;
use crate::db::Db;
pub(super) use crate::kinds::{FetchStrategy, LoadParams, SymbolSelection};
use crate::market::read::fetch;
use crate::metrics::Recorder;
use chrono::NaiveDate;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `body` on a fresh SQLite file.
pub(super) fn on_sqlite<F, Fut>(body: F)
where
    F: FnOnce(Db) -> Fut,
    Fut: Future<Output = ()>,
{
    crate::db::wait(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::connect(dir.path().join("t.sqlite").to_str().expect("utf-8"))
            .await
            .expect("sqlite");
        body(db.clone()).await;
        db.close().await;
    });
}

/// Runs `body` on a freshly created Postgres database, dropped afterwards.
pub(super) fn on_postgres<F, Fut>(body: F)
where
    F: FnOnce(Db) -> Fut,
    Fut: Future<Output = ()>,
{
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let admin = std::env::var("MEASURED_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .expect(
            "MEASURED_TEST_DATABASE_URL is not set: Postgres tests need a server; run \
             `eval \"$(scripts/pg-start.sh /tmp/measured-pg)\"` (or the project's test script) first",
        );
    crate::db::wait(async {
        let admin_pool = sqlx::PgPool::connect(&admin).await.expect("admin connection");
        // A generated name (process id + counter), never user input.
        let name = format!(
            "measured_market_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name}"))
            .execute(&admin_pool)
            .await
            .expect("drop old");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&admin_pool)
            .await
            .expect("create database");
        let mut url = url::Url::parse(&admin).expect("admin URL");
        url.set_path(&name);
        let db = Db::connect(url.as_str()).await.expect("postgres");
        body(db.clone()).await;
        db.close().await;
        sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
            .execute(&admin_pool)
            .await
            .expect("drop database");
    });
}

/// One `#[test]` per backend for an `async fn(Db)`.
macro_rules! both_backends {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[test]
            fn sqlite() {
                super::on_sqlite(super::$case);
            }
            #[test]
            fn postgres() {
                super::on_postgres(super::$case);
            }
        }
    )*};
}
pub(super) use both_backends;

both_backends!(
    synth_then_load_returns_exactly_the_rows_written,
    injection_in_a_symbol_loads_nothing,
    selections_and_errors_name_what_was_asked,
    dropped_symbols_are_named_in_a_note,
);

pub(super) fn small_market(seed: u64) -> SynthOptions {
    SynthOptions {
        symbols: 12,
        days: 80,
        start: NaiveDate::from_ymd_opt(2019, 12, 20).unwrap(),
        seed,
        style: CodeStyle::Mixed,
    }
}

pub(super) async fn count_rows(db: &Db) -> i64 {
    let sql = "SELECT COUNT(*) FROM daily_bars";
    match db {
        Db::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
        Db::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
    }
}

/// Every stored row (of every version), ordered, as the load stage should see it unadjusted.
pub(super) async fn stored_rows(db: &Db) -> Vec<(String, NaiveDate, [f64; 7])> {
    stored_rows_where(db, None).await
}

/// The stored rows of version `id`, ordered.
pub(super) async fn stored_rows_in(db: &Db, id: i64) -> Vec<(String, NaiveDate, [f64; 7])> {
    stored_rows_where(db, Some(id)).await
}

async fn stored_rows_where(db: &Db, version: Option<i64>) -> Vec<(String, NaiveDate, [f64; 7])> {
    let sql = "SELECT symbol, trade_date, open, high, low, close, volume, amount, adj_factor \
               FROM daily_bars WHERE ($1 IS NULL OR version = $1) ORDER BY symbol, trade_date";
    type Row = (String, NaiveDate, f64, f64, f64, f64, f64, f64, f64);
    let rows: Vec<Row> = match db {
        Db::Sqlite(p) => sqlx::query_as(sql).bind(version).fetch_all(p).await.unwrap(),
        Db::Postgres(p) => sqlx::query_as(&sql.replace("$1 IS NULL", "$1::bigint IS NULL"))
            .bind(version)
            .fetch_all(p)
            .await
            .unwrap(),
    };
    rows.into_iter()
        .map(|r| (r.0, r.1, [r.2, r.3, r.4, r.5, r.6, r.7, r.8]))
        .collect()
}

pub(super) fn flatten(bars: &Bars) -> Vec<(String, NaiveDate, [f64; 7])> {
    let mut out = Vec::new();
    for s in &bars.symbols {
        for i in 0..s.len() {
            out.push((
                s.symbol.clone(),
                s.dates[i],
                [
                    s.open[i],
                    s.high[i],
                    s.low[i],
                    s.close[i],
                    s.volume[i],
                    s.amount[i],
                    s.adj_factor[i],
                ],
            ));
        }
    }
    out
}

pub(super) fn strategies(db: &Db) -> Vec<FetchStrategy> {
    match db {
        Db::Sqlite(_) => vec![FetchStrategy::Stream, FetchStrategy::Batched],
        Db::Postgres(_) => vec![FetchStrategy::Stream, FetchStrategy::Batched, FetchStrategy::Copy],
    }
}

pub(super) async fn load_with(db: &Db, params: LoadParams) -> (Result<Bars, LoadError>, Recorder) {
    params.check().expect("valid params");
    let mut rec = Recorder::new();
    let result = load(db, &params, &mut rec).await;
    (result, rec)
}

fn metric(rec: &Recorder, name: &str) -> f64 {
    rec.metrics()
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("metric {name}"))
        .value
}

async fn synth_then_load_returns_exactly_the_rows_written(db: Db) {
    let report = synth(&db, &small_market(5), &indicatif::ProgressBar::hidden())
        .await
        .unwrap();
    let stored = stored_rows(&db).await;
    assert_eq!(report.rows as usize, stored.len());
    assert!(stored.len() > 12 * 40, "late listings still leave most rows");
    let mut hashes = Vec::new();
    for strategy in strategies(&db) {
        for (connections, fetch_size) in [(1, 7), (3, 10_000)] {
            // The defaults keep the factors: load changes no stored value.
            let params = LoadParams {
                strategy,
                connections,
                fetch_size,
                ..LoadParams::default()
            };
            let (bars, rec) = load_with(&db, params).await;
            let bars = bars.unwrap_or_else(|e| panic!("{strategy}: {e}"));
            // "all" is ordered by code; the query above orders by symbol: same order only
            // when compared as sorted lists.
            let mut got = flatten(&bars);
            got.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            let mut want = stored.clone();
            want.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            assert_eq!(got, want, "{strategy} x{connections}");
            assert_eq!(metric(&rec, "rows"), stored.len() as f64);
            assert!(metric(&rec, "rows_per_second") > 0.0);
            assert_eq!(metric(&rec, "bytes"), (stored.len() * 60) as f64);
            hashes.push(bars.content_hash.clone());
        }
    }
    assert!(hashes.windows(2).all(|w| w[0] == w[1]), "{hashes:?}");
    // Prices are adjusted once, by `normalize`: across a split the return is the adjusted one.
    // Without `adjust` every factor is 1.
    for strategy in strategies(&db) {
        let params = LoadParams {
            strategy,
            ..LoadParams::default()
        };
        let kept = load_with(&db, params).await.0.unwrap();
        let features = [crate::features::Feature::Ret(1)];
        for s in &kept.symbols {
            let ret = &crate::features::feature_columns(s, &features).unwrap()[0];
            for (i, r) in ret.iter().enumerate().skip(1) {
                if s.adj_factor[i] != s.adj_factor[i - 1] {
                    // The raw close falls by the split ratio; the adjusted return does not.
                    let raw = (s.close[i] / s.close[i - 1]).ln();
                    let adjusted = (s.close[i] * s.adj_factor[i] / (s.close[i - 1] * s.adj_factor[i - 1])).ln();
                    assert!((r - adjusted).abs() < 1e-12, "{} {r} vs {adjusted}", s.symbol);
                    assert!(raw < -0.3, "{}: a split is a raw price gap, {raw}", s.symbol);
                }
            }
        }
        let raw = LoadParams {
            strategy,
            adjust: false,
            ..LoadParams::default()
        };
        let raw = load_with(&db, raw).await.0.unwrap();
        assert!(raw.symbols.iter().all(|s| s.adj_factor.iter().all(|&a| a == 1.0)));
        assert_eq!(raw.rows(), kept.rows());
    }
    if let Db::Sqlite(_) = db {
        let params = LoadParams {
            strategy: FetchStrategy::Copy,
            ..LoadParams::default()
        };
        let err = load_with(&db, params).await.0.unwrap_err();
        assert!(err.to_string().contains("needs Postgres"), "{err}");
    }
}

/// Loads `params` from version `v` alone.
pub(super) async fn load_version(db: &Db, params: LoadParams, v: &VersionRef) -> Result<Bars, LoadError> {
    let view = DataView {
        versions: vec![v.clone()],
        declared: false,
    };
    load_within(db, &params, &view, &mut Recorder::new()).await
}

async fn injection_in_a_symbol_loads_nothing(db: Db) {
    synth(&db, &small_market(3), &indicatif::ProgressBar::hidden())
        .await
        .unwrap();
    let before = count_rows(&db).await;
    let evil = "x'); DROP TABLE daily_bars; --".to_owned();
    for strategy in strategies(&db) {
        let params = LoadParams {
            symbols: SymbolSelection::List(vec![evil.clone()]),
            strategy,
            ..LoadParams::default()
        };
        // Validation refuses such a code; the load below it binds it as a value all the same.
        assert!(params.check().is_err(), "{evil} passes the code pattern");
        let err = load(&db, &params, &mut Recorder::new()).await.unwrap_err();
        assert!(
            matches!(&err, LoadError::NotFound { missing, .. } if missing.len() == 1 && missing[0] == evil),
            "{strategy}: {err}"
        );
        assert!(err.to_string().contains("not found"), "{err}");
    }
    assert_eq!(count_rows(&db).await, before, "table and rows intact");
}

async fn selections_and_errors_name_what_was_asked(db: Db) {
    let err = load_with(&db, LoadParams::default()).await.0.unwrap_err();
    assert!(err.to_string().contains("has 0"), "empty database: {err}");
    synth(&db, &small_market(8), &indicatif::ProgressBar::hidden())
        .await
        .unwrap();
    let all = load_with(&db, LoadParams::default()).await.0.unwrap();
    let codes: Vec<String> = all.symbols.iter().map(|s| s.symbol.clone()).collect();
    let mut sorted = codes.clone();
    sorted.sort();
    assert_eq!(codes, sorted, "\"all\" is ordered by code");

    let first = LoadParams {
        symbols: SymbolSelection::First(4),
        ..LoadParams::default()
    };
    let got = load_with(&db, first).await.0.unwrap();
    assert_eq!(got.symbols.len(), 4);
    assert_eq!(got.symbols[0].symbol, codes[0]);

    let random = |seed| LoadParams {
        symbols: SymbolSelection::Random { n: 5, seed },
        ..LoadParams::default()
    };
    let a = load_with(&db, random(1)).await.0.unwrap();
    let b = load_with(&db, random(1)).await.0.unwrap();
    assert_eq!(a, b, "same seed, same symbols");
    assert_eq!(a.symbols.len(), 5);

    // A list keeps its order; a date range bounds every symbol.
    let list = LoadParams {
        symbols: SymbolSelection::List(vec![codes[3].clone(), codes[1].clone()]),
        start: NaiveDate::from_ymd_opt(2020, 1, 15),
        end: NaiveDate::from_ymd_opt(2020, 2, 14),
        ..LoadParams::default()
    };
    let got = load_with(&db, list).await.0.unwrap();
    assert_eq!(got.symbols[0].symbol, codes[3]);
    for s in &got.symbols {
        assert!(s.dates.iter().all(|d| d.to_string().as_str() >= "2020-01-15"));
        assert!(s.dates.iter().all(|d| d.to_string().as_str() <= "2020-02-14"));
    }

    let typo = codes[0].to_lowercase();
    let missing = LoadParams {
        symbols: SymbolSelection::List(vec![codes[0].clone(), typo.clone()]),
        ..LoadParams::default()
    };
    let err = load_with(&db, missing).await.0.unwrap_err().to_string();
    assert!(err.contains(&format!("`{typo}`")), "{err}");
    assert!(err.contains(&format!("did you mean `{}`", codes[0])), "{err}");

    let too_many = LoadParams {
        symbols: SymbolSelection::First(1000),
        ..LoadParams::default()
    };
    let err = load_with(&db, too_many).await.0.unwrap_err().to_string();
    assert!(err.contains("{ first = 1000 } needs 1000 symbols"), "{err}");

    let empty_range = LoadParams {
        start: NaiveDate::from_ymd_opt(1990, 1, 1),
        end: NaiveDate::from_ymd_opt(1990, 12, 31),
        ..LoadParams::default()
    };
    let err = load_with(&db, empty_range).await.0.unwrap_err().to_string();
    assert!(
        err.contains("no bars for symbols = \"all\" in 1990-01-01..=1990-12-31"),
        "{err}"
    );

    let picky = LoadParams {
        min_history: 70,
        ..LoadParams::default()
    };
    let (got, rec) = load_with(&db, picky).await;
    let got = got.unwrap();
    assert!(got.symbols.iter().all(|s| s.len() >= 70));
    assert_eq!(
        metric(&rec, "symbols_dropped") as usize + got.symbols.len(),
        codes.len()
    );
}

async fn dropped_symbols_are_named_in_a_note(db: Db) {
    synth(&db, &small_market(8), &indicatif::ProgressBar::hidden())
        .await
        .unwrap();
    let mut rows: std::collections::BTreeMap<String, Vec<NaiveDate>> = Default::default();
    for (code, date, _) in stored_rows(&db).await {
        rows.entry(code).or_default().push(date);
    }
    let short: Vec<String> = rows
        .iter()
        .filter(|(_, d)| d.len() < 70)
        .map(|(c, _)| c.clone())
        .collect();
    assert!(!short.is_empty() && short.len() < rows.len(), "{rows:?}");
    let want = format!(
        "dropped {} with fewer than 70 rows in the whole history (min_history = 70): {}",
        crate::metrics::count(short.len(), "symbol"),
        crate::metrics::named_list(&short)
    );
    // The same note, names in selection order, whichever strategy and however many workers.
    for strategy in strategies(&db) {
        for connections in [1, 3] {
            let params = LoadParams {
                min_history: 70,
                strategy,
                connections,
                ..LoadParams::default()
            };
            let (bars, rec) = load_with(&db, params).await;
            assert_eq!(bars.unwrap().symbols.len(), rows.len() - short.len());
            assert_eq!(rec.notes(), std::slice::from_ref(&want), "{strategy} x{connections}");
        }
    }
    // A symbol delisted early has no rows after its last day: dropped by name even at
    // min_history = 1.
    let last = |d: &Vec<NaiveDate>| *d.last().unwrap();
    let (gone, dates) = rows.iter().min_by_key(|(_, d)| last(d)).unwrap();
    let (kept, _) = rows.iter().max_by_key(|(_, d)| last(d)).unwrap();
    let after = last(dates).succ_opt().unwrap();
    let params = LoadParams {
        symbols: SymbolSelection::List(vec![kept.clone(), gone.clone()]),
        start: Some(after),
        ..LoadParams::default()
    };
    let (bars, rec) = load_with(&db, params).await;
    assert_eq!(bars.unwrap().symbols.len(), 1);
    assert_eq!(
        rec.notes(),
        [format!("dropped 1 symbol with no rows in {after} onwards: {gone}")]
    );
    let (_, rec) = load_with(&db, LoadParams::default()).await;
    assert!(rec.notes().is_empty(), "{:?}", rec.notes());
}

#[test]
fn copy_statement_refuses_unsafe_codes() {
    let lo = NaiveDate::from_ymd_opt(2020, 1, 1).unwrap();
    let hi = NaiveDate::from_ymd_opt(2020, 12, 31).unwrap();
    let ok = fetch::copy_statement(7, &["600519.SH".into(), "^GSPC".into()], lo, hi).unwrap();
    assert!(ok.contains("version = 7 AND symbol IN ('600519.SH', '^GSPC')") && ok.contains("DATE '2020-12-31'"));
    for evil in ["x'); DROP TABLE daily_bars; --", "a b", "a\\", "", &"A".repeat(33)] {
        let err = fetch::copy_statement(7, &[evil.to_owned()], lo, hi);
        assert!(matches!(err, Err(LoadError::UnsafeCode(_))), "{evil:?}");
    }
}
