//! Bulk writers of the stock tables (synth / import -> `symbols`, `daily_bars`).
//!
//! Postgres gets binary COPY for generated data and array-parameter upserts for imports;
//! SQLite gets multi-row prepared INSERTs with deferred indexes (see [`super::write_sqlite`]).
//! Each write is one transaction, so a failure leaves the tables as they were.

use super::{db_message, pgbinary, write_sqlite, MarketError, SymbolInfo, SymbolRows};
use crate::db::Db;
use sqlx::postgres::PgConnection;
use tokio::sync::mpsc::Receiver;

/// Rows per Postgres array upsert.
const PG_ROWS_PER_UPSERT: usize = 10_000;
/// Bytes buffered before a COPY chunk is sent.
const COPY_CHUNK: usize = 1 << 20;

pub(super) const BAR_COLUMNS: &str = "symbol, trade_date, open, high, low, close, volume, amount, adj_factor";

/// A synthetic market on its way to the database: symbols up front, bars as generated.
pub(crate) struct SynthPlan<'a> {
    pub symbols: &'a [SymbolInfo],
    pub rows: Receiver<SymbolRows>,
    pub progress: &'a indicatif::ProgressBar,
}

/// Replaces the synthetic market in `db` with `plan` in one transaction; returns the rows
/// written. Refuses when a generated code belongs to an imported symbol.
pub(crate) async fn write_synth(db: &Db, plan: SynthPlan<'_>) -> Result<u64, MarketError> {
    match db {
        Db::Postgres(pool) => {
            let codes: Vec<String> = plan.symbols.iter().map(|s| s.code.clone()).collect();
            let mut tx = pool.begin().await?;
            let clash: Vec<String> = sqlx::query_scalar(
                "SELECT code FROM symbols WHERE source <> 'synth' AND code = ANY($1) \
                 ORDER BY code LIMIT 5",
            )
            .bind(&codes)
            .fetch_all(&mut *tx)
            .await?;
            refuse_clash(clash)?;
            clear_synth_pg(&mut tx).await?;
            insert_symbols_pg(&mut tx, plan.symbols, "synth").await?;
            let rows = copy_bars_pg(&mut tx, plan).await?;
            tx.commit().await?;
            Ok(rows)
        }
        Db::Sqlite(pool) => write_sqlite::write_synth(pool, plan).await,
    }
}

pub(super) fn refuse_clash(clash: Vec<String>) -> Result<(), MarketError> {
    if clash.is_empty() {
        Ok(())
    } else {
        Err(MarketError::WouldOverwrite {
            codes: clash.join(", "),
        })
    }
}

pub(super) fn check_complete(received: usize, expected: usize) -> Result<(), MarketError> {
    if received == expected {
        Ok(())
    } else {
        Err(MarketError::Options(format!(
            "the generator stopped after {received} of {expected} symbols; nothing was written"
        )))
    }
}

/// Removes the previous synthetic market. When nothing else is stored, TRUNCATE is both faster
/// than deleting millions of rows and leaves no dead tuples behind (it is transactional).
async fn clear_synth_pg(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    let only_synth: bool = sqlx::query_scalar("SELECT NOT EXISTS (SELECT 1 FROM symbols WHERE source <> 'synth')")
        .fetch_one(&mut *conn)
        .await?;
    if only_synth {
        sqlx::query("TRUNCATE daily_bars, symbols").execute(&mut *conn).await?;
    } else {
        sqlx::query(
            "DELETE FROM daily_bars WHERE symbol IN \
             (SELECT code FROM symbols WHERE source = 'synth')",
        )
        .execute(&mut *conn)
        .await?;
        sqlx::query("DELETE FROM symbols WHERE source = 'synth'")
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Streams every generated symbol through one binary COPY.
async fn copy_bars_pg(conn: &mut PgConnection, plan: SynthPlan<'_>) -> Result<u64, MarketError> {
    let stmt = format!("COPY daily_bars ({BAR_COLUMNS}) FROM STDIN WITH (FORMAT binary)");
    let mut copy = conn.copy_in_raw(&stmt).await?;
    let mut buf = Vec::with_capacity(COPY_CHUNK + 4096);
    pgbinary::write_header(&mut buf);
    let mut rows_in = plan.rows;
    let mut received = 0usize;
    let mut failure = None;
    while let Some(group) = rows_in.recv().await {
        for bar in &group.bars {
            pgbinary::write_row(&mut buf, &group.code, bar);
        }
        received += 1;
        plan.progress.inc(1);
        if buf.len() >= COPY_CHUNK {
            if let Err(e) = copy.send(buf.as_slice()).await {
                failure = Some(MarketError::from(e));
                break;
            }
            buf.clear();
        }
    }
    if failure.is_none() {
        failure = check_complete(received, plan.symbols.len()).err();
    }
    if let Some(e) = failure {
        // Aborting leaves the connection usable; the transaction then rolls back on drop.
        let _ = copy.abort("synth failed").await;
        return Err(e);
    }
    pgbinary::write_trailer(&mut buf);
    copy.send(buf.as_slice()).await?;
    Ok(copy.finish().await?)
}

/// `?, ?, ...` for SQLite IN lists (placeholders only; values are always bound).
pub(crate) fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

async fn insert_symbols_pg(conn: &mut PgConnection, symbols: &[SymbolInfo], source: &str) -> Result<(), sqlx::Error> {
    let col = |f: fn(&SymbolInfo) -> String| symbols.iter().map(f).collect::<Vec<_>>();
    let opt = |f: fn(&SymbolInfo) -> Option<chrono::NaiveDate>| symbols.iter().map(f).collect::<Vec<_>>();
    // An imported file may name a synthetic symbol: it becomes an imported one.
    sqlx::query(
        "INSERT INTO symbols (code, name, exchange, currency, listed, delisted, sector, source) \
         SELECT u.*, $8 FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], \
                                    $5::date[], $6::date[], $7::text[]) AS u \
         ON CONFLICT (code) DO UPDATE SET source = EXCLUDED.source",
    )
    .bind(col(|s| s.code.clone()))
    .bind(col(|s| s.name.clone()))
    .bind(col(|s| s.exchange.clone()))
    .bind(col(|s| s.currency.clone()))
    .bind(opt(|s| s.listed))
    .bind(opt(|s| s.delisted))
    .bind(symbols.iter().map(|s| s.sector.clone()).collect::<Vec<_>>())
    .bind(source)
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts or replaces imported bars (and registers their symbols) in one transaction;
/// returns the number of rows written.
pub(crate) async fn upsert_import(db: &Db, symbols: &[SymbolInfo], groups: &[SymbolRows]) -> Result<u64, String> {
    let result: Result<u64, sqlx::Error> = async {
        match db {
            Db::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                insert_symbols_pg(&mut tx, symbols, "import").await?;
                let flat: Vec<(&str, &super::Bar)> = groups
                    .iter()
                    .flat_map(|g| g.bars.iter().map(move |b| (g.code.as_str(), b)))
                    .collect();
                let mut written = 0;
                for chunk in flat.chunks(PG_ROWS_PER_UPSERT) {
                    let f = |g: fn(&super::Bar) -> f64| chunk.iter().map(|(_, b)| g(b)).collect::<Vec<f64>>();
                    written += sqlx::query(&format!(
                        "INSERT INTO daily_bars ({BAR_COLUMNS}) \
                         SELECT * FROM UNNEST($1::text[], $2::date[], $3::float8[], $4::float8[], \
                              $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[]) \
                         ON CONFLICT (symbol, trade_date) DO UPDATE SET open = EXCLUDED.open, \
                         high = EXCLUDED.high, low = EXCLUDED.low, close = EXCLUDED.close, \
                         volume = EXCLUDED.volume, amount = EXCLUDED.amount, \
                         adj_factor = EXCLUDED.adj_factor"
                    ))
                    .bind(chunk.iter().map(|(c, _)| c.to_string()).collect::<Vec<_>>())
                    .bind(chunk.iter().map(|(_, b)| b.date).collect::<Vec<_>>())
                    .bind(f(|b| b.open))
                    .bind(f(|b| b.high))
                    .bind(f(|b| b.low))
                    .bind(f(|b| b.close))
                    .bind(f(|b| b.volume))
                    .bind(f(|b| b.amount))
                    .bind(f(|b| b.adj_factor))
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                }
                tx.commit().await?;
                Ok(written)
            }
            Db::Sqlite(pool) => write_sqlite::upsert_import(pool, symbols, groups).await,
        }
    }
    .await;
    result.map_err(|e| db_message(&e))
}
