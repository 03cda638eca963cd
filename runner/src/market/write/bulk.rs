//! Bulk writers of the stock tables (synth / import -> a new dataset version's `symbols` and
//! `daily_bars`).
//!
//! Postgres gets binary COPY for generated data and array-parameter inserts for imports;
//! SQLite gets multi-row prepared INSERTs with deferred indexes (see [`super::sqlite`]).
//! Each write is one transaction that creates one version, so a failure leaves the tables as
//! they were, and no write ever changes a version stored before.

use super::plan::{check_complete, SynthPlan, BAR_COLUMNS, COPY_BARS, COPY_SYMBOLS};
use super::sqlite;
use crate::db::Db;
use crate::market::pgbinary;
use crate::market::stock::{db_message, Bar, MarketError, SymbolInfo, SymbolRows};
use crate::market::versions::{self, NewVersion, VersionRef};
use sqlx::postgres::PgConnection;

/// Rows per Postgres array upsert.
const PG_ROWS_PER_UPSERT: usize = 10_000;
/// Bytes buffered before a COPY chunk is sent.
const COPY_CHUNK: usize = 1 << 20;

/// Writes `plan` as the new version `new`, in one transaction; returns the version and the
/// rows written. Nothing stored before is touched.
pub(crate) async fn write_synth(
    db: &Db,
    plan: SynthPlan<'_>,
    new: &NewVersion,
) -> Result<(VersionRef, u64), MarketError> {
    match db {
        Db::Postgres(pool) => {
            let mut tx = pool.begin().await?;
            let version = versions::begin_pg(&mut tx, new).await?;
            insert_symbols_pg(&mut tx, version.id, plan.symbols).await?;
            let rows = copy_bars_pg(&mut tx, version.id, plan).await?;
            versions::finish_pg(&mut tx, version.id).await?;
            tx.commit().await?;
            Ok((version, rows))
        }
        Db::Sqlite(pool) => sqlite::write_synth(pool, plan, new).await,
    }
}

/// Streams every generated symbol through one binary COPY.
async fn copy_bars_pg(conn: &mut PgConnection, version: i64, plan: SynthPlan<'_>) -> Result<u64, MarketError> {
    let stmt = format!("COPY daily_bars ({BAR_COLUMNS}) FROM STDIN WITH (FORMAT binary)");
    let mut copy = conn.copy_in_raw(&stmt).await?;
    let mut buf = Vec::with_capacity(COPY_CHUNK + 4096);
    pgbinary::write_header(&mut buf);
    let mut rows_in = plan.rows;
    let mut received = 0usize;
    let mut failure = None;
    while let Some(group) = rows_in.recv().await {
        for bar in &group.bars {
            pgbinary::write_row(&mut buf, version, &group.code, bar);
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

async fn insert_symbols_pg(conn: &mut PgConnection, version: i64, symbols: &[SymbolInfo]) -> Result<(), sqlx::Error> {
    let col = |f: fn(&SymbolInfo) -> String| symbols.iter().map(f).collect::<Vec<_>>();
    let opt = |f: fn(&SymbolInfo) -> Option<chrono::NaiveDate>| symbols.iter().map(f).collect::<Vec<_>>();
    // A symbol a version extends already has its row there.
    sqlx::query(
        "INSERT INTO symbols (version, code, name, exchange, currency, listed, delisted, sector) \
         SELECT $8, u.* FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], \
                                    $5::date[], $6::date[], $7::text[]) AS u \
         ON CONFLICT (version, code) DO NOTHING",
    )
    .bind(col(|s| s.code.clone()))
    .bind(col(|s| s.name.clone()))
    .bind(col(|s| s.exchange.clone()))
    .bind(col(|s| s.currency.clone()))
    .bind(opt(|s| s.listed))
    .bind(opt(|s| s.delisted))
    .bind(symbols.iter().map(|s| s.sector.clone()).collect::<Vec<_>>())
    .bind(version)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes imported bars as the new version `new` (on top of a copy of its parent's, when it
/// extends one) in one transaction; returns the version and the rows written.
pub(crate) async fn write_import(
    db: &Db,
    new: &NewVersion,
    symbols: &[SymbolInfo],
    groups: &[SymbolRows],
) -> Result<(VersionRef, u64), String> {
    let result: Result<(VersionRef, u64), sqlx::Error> = async {
        match db {
            Db::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                let version = versions::begin_pg(&mut tx, new).await?;
                if let Some(parent) = new.parent {
                    for sql in [COPY_SYMBOLS, COPY_BARS] {
                        sqlx::query(sql).bind(version.id).bind(parent).execute(&mut *tx).await?;
                    }
                }
                insert_symbols_pg(&mut tx, version.id, symbols).await?;
                let flat: Vec<(&str, &Bar)> = groups
                    .iter()
                    .flat_map(|g| g.bars.iter().map(move |b| (g.code.as_str(), b)))
                    .collect();
                let mut written = 0;
                for chunk in flat.chunks(PG_ROWS_PER_UPSERT) {
                    let f = |g: fn(&Bar) -> f64| chunk.iter().map(|(_, b)| g(b)).collect::<Vec<f64>>();
                    written += sqlx::query(&format!(
                        "INSERT INTO daily_bars ({BAR_COLUMNS}) \
                         SELECT $10, u.* FROM UNNEST($1::text[], $2::date[], $3::float8[], $4::float8[], \
                              $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[]) AS u \
                         ON CONFLICT (version, symbol, trade_date) DO UPDATE SET open = EXCLUDED.open, \
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
                    .bind(version.id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                }
                versions::finish_pg(&mut tx, version.id).await?;
                tx.commit().await?;
                Ok((version, written))
            }
            Db::Sqlite(pool) => sqlite::write_import(pool, new, symbols, groups).await,
        }
    }
    .await;
    result.map_err(|e| db_message(&e))
}
