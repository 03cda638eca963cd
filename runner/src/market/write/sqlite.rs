//! SQLite side of the bulk writers (synth / import -> a new dataset version's `symbols` and
//! `daily_bars`).
//!
//! Every write is one transaction that creates one version, so a failure or a crash at any
//! point leaves the tables as they were. Inside it:
//! - when `daily_bars` is empty at the start of the write (a first synth or import), its
//!   secondary indexes are dropped and recreated from their stored definitions before the
//!   commit: one sort instead of one random B-tree insert per row. DDL is transactional in
//!   SQLite: a rollback brings the indexes back, and readers keep seeing the committed tables,
//!   indexes included;
//! - the write runs on a connection of its own with a large page cache and temporary storage in
//!   memory, so a write that has to maintain the indexes (rows already stored) neither evicts
//!   and re-reads pages nor writes statement journals to temporary files;
//! - bars go out in multi-row INSERTs of one fixed size, one prepared statement for all, each
//!   batch encoded while SQLite inserts the previous one.
//!
//! Rows should arrive sorted by (symbol, date): with the new version's id first, that is the
//! table's clustering key (synth and import both send them so), and the B-tree grows at its
//! right edge.

use super::plan::{check_complete, SynthPlan, BAR_COLUMNS, COPY_BARS, COPY_SYMBOLS};
use crate::market::stock::{Bar, MarketError, SymbolInfo, SymbolRows};
use crate::market::versions::{self, NewVersion, VersionRef};
use chrono::NaiveDate;
use sqlx::sqlite::{SqliteArguments, SqliteConnection, SqlitePool};
use sqlx::{Arguments, Connection};
use std::collections::HashMap;
use std::sync::Arc;

/// Rows per bars INSERT: 10 parameters each stays far below SQLite's variable limit (32,766),
/// and a fixed size lets every full chunk reuse one prepared statement.
const ROWS_PER_INSERT: usize = 500;
/// Rows per symbols INSERT (8 parameters each).
const SYMBOLS_PER_INSERT: usize = 200;
/// Page cache of the writing connection, in KiB (SQLite's default is 2 MiB): enough to hold
/// the date index of a few million stored bars, which an import into a filled table updates
/// all over. Pages are allocated as used, so small writes stay small.
const BULK_CACHE_KIB: i64 = 128 * 1024;

const UPSERT_BARS: &str = " ON CONFLICT (version, symbol, trade_date) DO UPDATE SET open = excluded.open, \
     high = excluded.high, low = excluded.low, close = excluded.close, \
     volume = excluded.volume, amount = excluded.amount, adj_factor = excluded.adj_factor";

/// A connection for one bulk write, outside the pool: its settings never leak to the pool's
/// other users, and closing it releases its memory.
///
/// Temporary storage in memory keeps the statement journals of multi-row INSERTs (each
/// statement must be undoable on its own) and the index sort out of temporary files: an
/// import into a filled table otherwise spends a third of its time writing them.
async fn bulk_connection(pool: &SqlitePool) -> Result<SqliteConnection, sqlx::Error> {
    let mut conn = pool.acquire().await?.detach();
    sqlx::query(&format!("PRAGMA cache_size = -{BULK_CACHE_KIB}"))
        .execute(&mut conn)
        .await?;
    sqlx::query("PRAGMA temp_store = MEMORY").execute(&mut conn).await?;
    Ok(conn)
}

/// Writes `plan` as the new version `new` in one transaction; returns it and the rows written.
pub(super) async fn write_synth(
    pool: &SqlitePool,
    plan: SynthPlan<'_>,
    new: &NewVersion,
) -> Result<(VersionRef, u64), MarketError> {
    let mut conn = bulk_connection(pool).await?;
    let result = write_synth_on(&mut conn, plan, new).await;
    // A transaction still open here was rolled back on drop; closing only frees the handle.
    let _ = conn.close().await;
    result
}

async fn write_synth_on(
    conn: &mut SqliteConnection,
    plan: SynthPlan<'_>,
    new: &NewVersion,
) -> Result<(VersionRef, u64), MarketError> {
    let mut tx = conn.begin().await?;
    let version = versions::begin_sqlite(&mut tx, new).await?;
    let deferred = defer_indexes(&mut tx).await?;
    insert_symbols(&mut tx, version.id, plan.symbols).await?;
    let mut bars = BarBatches::new(version.id, false);
    let mut rows_in = plan.rows;
    let mut received = 0usize;
    while let Some(group) = rows_in.recv().await {
        bars.push(&mut tx, &group.code, &group.bars).await?;
        received += 1;
        plan.progress.inc(1);
    }
    check_complete(received, plan.symbols.len())?;
    let written = bars.finish(&mut tx).await?;
    rebuild_indexes(&mut tx, &deferred).await?;
    versions::finish_sqlite(&mut tx, version.id).await?;
    tx.commit().await?;
    Ok((version, written))
}

/// Writes imported bars as the new version `new` (on top of a copy of its parent's, when it
/// extends one; the files' bars replace the parent's on shared dates) in one transaction;
/// returns the version and the rows written.
pub(super) async fn write_import(
    pool: &SqlitePool,
    new: &NewVersion,
    symbols: &[SymbolInfo],
    groups: &[SymbolRows],
) -> Result<(VersionRef, u64), sqlx::Error> {
    let mut conn = bulk_connection(pool).await?;
    let result = async {
        let mut tx = conn.begin().await?;
        let version = versions::begin_sqlite(&mut tx, new).await?;
        let deferred = defer_indexes(&mut tx).await?;
        if let Some(parent) = new.parent {
            for sql in [COPY_SYMBOLS, COPY_BARS] {
                sqlx::query(sql).bind(version.id).bind(parent).execute(&mut *tx).await?;
            }
        }
        insert_symbols(&mut tx, version.id, symbols).await?;
        let mut bars = BarBatches::new(version.id, new.parent.is_some());
        for g in groups {
            bars.push(&mut tx, &g.code, &g.bars).await?;
        }
        let written = bars.finish(&mut tx).await?;
        rebuild_indexes(&mut tx, &deferred).await?;
        versions::finish_sqlite(&mut tx, version.id).await?;
        tx.commit().await?;
        Ok((version, written))
    }
    .await;
    let _ = conn.close().await;
    result
}

/// A stored secondary index: its name and the statement that created it.
type IndexDef = (String, String);

/// Drops the secondary indexes of `daily_bars` when the table is empty and returns them for
/// [`rebuild_indexes`]; with rows stored it keeps them (and returns none), because rebuilding
/// from scratch would cost a sort of every stored row for each write.
async fn defer_indexes(conn: &mut SqliteConnection) -> Result<Vec<IndexDef>, sqlx::Error> {
    let empty = sqlx::query_scalar::<_, i64>("SELECT NOT EXISTS (SELECT 1 FROM daily_bars)")
        .fetch_one(&mut *conn)
        .await?
        != 0;
    if !empty {
        return Ok(Vec::new());
    }
    // `sql IS NULL` marks the primary key's own index, which cannot be dropped.
    let indexes: Vec<IndexDef> = sqlx::query_as(
        "SELECT name, sql FROM sqlite_master \
         WHERE type = 'index' AND tbl_name = 'daily_bars' AND sql IS NOT NULL ORDER BY name",
    )
    .fetch_all(&mut *conn)
    .await?;
    for (name, _) in &indexes {
        // A name from the schema itself, quoted as an identifier.
        sqlx::query(&format!("DROP INDEX \"{}\"", name.replace('"', "\"\"")))
            .execute(&mut *conn)
            .await?;
    }
    Ok(indexes)
}

/// Recreates the indexes [`defer_indexes`] dropped, exactly as they were defined.
async fn rebuild_indexes(conn: &mut SqliteConnection, indexes: &[IndexDef]) -> Result<(), sqlx::Error> {
    for (_, sql) in indexes {
        sqlx::query(sql).execute(&mut *conn).await?;
    }
    Ok(())
}

async fn insert_symbols(conn: &mut SqliteConnection, version: i64, symbols: &[SymbolInfo]) -> Result<(), sqlx::Error> {
    for chunk in symbols.chunks(SYMBOLS_PER_INSERT) {
        let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        // A symbol a version extends already has its row there.
        let sql = format!(
            "INSERT INTO symbols (version, code, name, exchange, currency, listed, delisted, sector) \
             VALUES {values} ON CONFLICT (version, code) DO NOTHING"
        );
        let mut q = sqlx::query(&sql);
        for s in chunk {
            q = q
                .bind(version)
                .bind(&s.code)
                .bind(&s.name)
                .bind(&s.exchange)
                .bind(&s.currency)
                .bind(s.listed)
                .bind(s.delisted)
                .bind(&s.sector);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// The INSERT of `rows` bars (with `upsert`, insert or replace).
fn bars_statement(rows: usize, upsert: bool) -> String {
    let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; rows].join(", ");
    let conflict = if upsert { UPSERT_BARS } else { "" };
    format!("INSERT INTO daily_bars ({BAR_COLUMNS}) VALUES {values}{conflict}")
}

/// Bars on their way into `daily_bars` in full-size INSERTs, whatever the sizes of the groups
/// pushed; the rest goes out in [`BarBatches::finish`].
///
/// Encoding a batch's parameters costs about a third of what SQLite spends inserting it, so
/// each batch is encoded while SQLite (on the connection's own thread) inserts the one before.
struct BarBatches {
    /// The version every bar goes into.
    version: i64,
    full: String,
    upsert: bool,
    pending: Vec<(Arc<str>, Bar)>,
    /// The next full batch, encoded and not sent yet.
    ready: Option<SqliteArguments<'static>>,
    /// Each date as SQLite stores it, formatted once per write instead of once per row.
    dates: HashMap<NaiveDate, String>,
    written: u64,
}

impl BarBatches {
    fn new(version: i64, upsert: bool) -> Self {
        BarBatches {
            version,
            full: bars_statement(ROWS_PER_INSERT, upsert),
            upsert,
            pending: Vec::with_capacity(2 * ROWS_PER_INSERT),
            ready: None,
            dates: HashMap::new(),
            written: 0,
        }
    }

    async fn push(&mut self, conn: &mut SqliteConnection, code: &str, bars: &[Bar]) -> Result<(), sqlx::Error> {
        let code: Arc<str> = Arc::from(code);
        // Piece by piece, so a long single-symbol import never sits in memory twice.
        for piece in bars.chunks(ROWS_PER_INSERT) {
            self.pending.extend(piece.iter().map(|b| (Arc::clone(&code), *b)));
            if self.pending.len() < ROWS_PER_INSERT {
                continue;
            }
            let version = self.version;
            let rows = self.pending.drain(..ROWS_PER_INSERT);
            let next = match self.ready.take() {
                None => encode_bars(self.version, rows, &mut self.dates)?,
                Some(args) => {
                    let insert = sqlx::query_with(&self.full, args).execute(&mut *conn);
                    // The insert is sent on its first poll; the encoding runs while it executes.
                    let (done, next) =
                        futures_util::future::join(insert, async { encode_bars(version, rows, &mut self.dates) }).await;
                    self.written += done?.rows_affected();
                    next?
                }
            };
            self.ready = Some(next);
        }
        Ok(())
    }

    async fn finish(mut self, conn: &mut SqliteConnection) -> Result<u64, sqlx::Error> {
        if let Some(args) = self.ready.take() {
            self.written += sqlx::query_with(&self.full, args)
                .execute(&mut *conn)
                .await?
                .rows_affected();
        }
        if !self.pending.is_empty() {
            let sql = bars_statement(self.pending.len(), self.upsert);
            let args = encode_bars(self.version, self.pending.drain(..), &mut self.dates)?;
            self.written += sqlx::query_with(&sql, args).execute(&mut *conn).await?.rows_affected();
        }
        Ok(self.written)
    }
}

/// The parameters of one bars INSERT. Owned values: the driver would copy borrowed ones anyway
/// on their way to the connection's thread.
fn encode_bars(
    version: i64,
    rows: impl Iterator<Item = (Arc<str>, Bar)>,
    dates: &mut HashMap<NaiveDate, String>,
) -> Result<SqliteArguments<'static>, sqlx::Error> {
    let mut args = SqliteArguments::default();
    for (code, b) in rows {
        // The text the driver's own date encoding writes.
        let date = dates.entry(b.date).or_insert_with(|| b.date.format("%F").to_string());
        let values = [b.open, b.high, b.low, b.close, b.volume, b.amount, b.adj_factor];
        args.add(version).map_err(sqlx::Error::Encode)?;
        args.add(code.to_string()).map_err(sqlx::Error::Encode)?;
        args.add(date.clone()).map_err(sqlx::Error::Encode)?;
        for v in values {
            args.add(v).map_err(sqlx::Error::Encode)?;
        }
    }
    Ok(args)
}
