//! SQLite side of the bulk writers (synth / import -> `symbols`, `daily_bars`).
//!
//! Every write is one transaction, so a failure or a crash at any point leaves the tables as
//! they were. Inside it:
//! - when `daily_bars` is empty at the start of the write (a first synth or import, or a synth
//!   replacing the only market), its secondary indexes are dropped and recreated from their
//!   stored definitions before the commit: one sort instead of one random B-tree insert per
//!   row. DDL is transactional in SQLite: a rollback brings the indexes back, and readers keep
//!   seeing the committed tables, indexes included;
//! - the write runs on a connection of its own with a large page cache and temporary storage in
//!   memory, so a write that has to maintain the indexes (rows already stored) neither evicts
//!   and re-reads pages nor writes statement journals to temporary files;
//! - bars go out in multi-row INSERTs of one fixed size, one prepared statement for all, each
//!   batch encoded while SQLite inserts the previous one.
//!
//! Rows should arrive sorted by (symbol, date), the table's clustering key (synth and import
//! both send them so): the B-tree then grows at its right edge.

use super::write::{check_complete, placeholders, refuse_clash, SynthPlan, BAR_COLUMNS};
use super::{Bar, MarketError, SymbolInfo};
use chrono::NaiveDate;
use sqlx::sqlite::{SqliteArguments, SqliteConnection, SqlitePool};
use sqlx::{Arguments, Connection};
use std::collections::HashMap;
use std::sync::Arc;

/// Rows per bars INSERT: 9 parameters each stays far below SQLite's variable limit (32,766),
/// and a fixed size lets every full chunk reuse one prepared statement.
const ROWS_PER_INSERT: usize = 500;
/// Rows per symbols INSERT (8 parameters each).
const SYMBOLS_PER_INSERT: usize = 200;
/// Page cache of the writing connection, in KiB (SQLite's default is 2 MiB): enough to hold
/// the date index of a few million stored bars, which an import into a filled table updates
/// all over. Pages are allocated as used, so small writes stay small.
const BULK_CACHE_KIB: i64 = 128 * 1024;

const UPSERT_BARS: &str = " ON CONFLICT (symbol, trade_date) DO UPDATE SET open = excluded.open, \
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

/// Replaces the synthetic market with `plan` in one transaction; returns the rows written.
pub(super) async fn write_synth(pool: &SqlitePool, plan: SynthPlan<'_>) -> Result<u64, MarketError> {
    let mut conn = bulk_connection(pool).await?;
    let result = write_synth_on(&mut conn, plan).await;
    // A transaction still open here was rolled back on drop; closing only frees the handle.
    let _ = conn.close().await;
    result
}

async fn write_synth_on(conn: &mut SqliteConnection, plan: SynthPlan<'_>) -> Result<u64, MarketError> {
    let mut tx = conn.begin().await?;
    let mut clash = Vec::new();
    let codes: Vec<&str> = plan.symbols.iter().map(|s| s.code.as_str()).collect();
    for chunk in codes.chunks(500) {
        let sql = format!(
            "SELECT code FROM symbols WHERE source <> 'synth' AND code IN ({}) LIMIT 5",
            placeholders(chunk.len())
        );
        let mut q = sqlx::query_scalar::<_, String>(&sql);
        for c in chunk {
            q = q.bind(*c);
        }
        clash.extend(q.fetch_all(&mut *tx).await?);
    }
    refuse_clash(clash)?;
    let only_synth = sqlx::query_scalar::<_, i64>("SELECT NOT EXISTS (SELECT 1 FROM symbols WHERE source <> 'synth')")
        .fetch_one(&mut *tx)
        .await?
        != 0;
    if only_synth {
        // An unqualified DELETE is SQLite's fast truncate.
        sqlx::query("DELETE FROM daily_bars").execute(&mut *tx).await?;
    } else {
        sqlx::query("DELETE FROM daily_bars WHERE symbol IN (SELECT code FROM symbols WHERE source = 'synth')")
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query("DELETE FROM symbols WHERE source = 'synth'")
        .execute(&mut *tx)
        .await?;
    let deferred = defer_indexes(&mut tx).await?;
    insert_symbols(&mut tx, plan.symbols, "synth", false).await?;
    let mut bars = BarBatches::new(false);
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
    tx.commit().await?;
    Ok(written)
}

/// Inserts or replaces imported bars (and registers their symbols) in one transaction;
/// returns the number of rows written.
pub(super) async fn upsert_import(
    pool: &SqlitePool,
    symbols: &[SymbolInfo],
    groups: &[super::SymbolRows],
) -> Result<u64, sqlx::Error> {
    let mut conn = bulk_connection(pool).await?;
    let result = async {
        let mut tx = conn.begin().await?;
        insert_symbols(&mut tx, symbols, "import", true).await?;
        let deferred = defer_indexes(&mut tx).await?;
        let mut bars = BarBatches::new(true);
        for g in groups {
            bars.push(&mut tx, &g.code, &g.bars).await?;
        }
        let written = bars.finish(&mut tx).await?;
        rebuild_indexes(&mut tx, &deferred).await?;
        tx.commit().await?;
        Ok(written)
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

async fn insert_symbols(
    conn: &mut SqliteConnection,
    symbols: &[SymbolInfo],
    source: &str,
    upsert: bool,
) -> Result<(), sqlx::Error> {
    for chunk in symbols.chunks(SYMBOLS_PER_INSERT) {
        let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        // An imported file may name a synthetic symbol: it becomes an imported one.
        let conflict = if upsert {
            " ON CONFLICT (code) DO UPDATE SET source = excluded.source"
        } else {
            ""
        };
        let sql = format!(
            "INSERT INTO symbols (code, name, exchange, currency, listed, delisted, sector, \
             source) VALUES {values}{conflict}"
        );
        let mut q = sqlx::query(&sql);
        for s in chunk {
            q = q
                .bind(&s.code)
                .bind(&s.name)
                .bind(&s.exchange)
                .bind(&s.currency)
                .bind(s.listed)
                .bind(s.delisted)
                .bind(&s.sector)
                .bind(source);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// The INSERT of `rows` bars (with `upsert`, insert or replace).
fn bars_statement(rows: usize, upsert: bool) -> String {
    let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?)"; rows].join(", ");
    let conflict = if upsert { UPSERT_BARS } else { "" };
    format!("INSERT INTO daily_bars ({BAR_COLUMNS}) VALUES {values}{conflict}")
}

/// Bars on their way into `daily_bars` in full-size INSERTs, whatever the sizes of the groups
/// pushed; the rest goes out in [`BarBatches::finish`].
///
/// Encoding a batch's parameters costs about a third of what SQLite spends inserting it, so
/// each batch is encoded while SQLite (on the connection's own thread) inserts the one before.
struct BarBatches {
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
    fn new(upsert: bool) -> Self {
        BarBatches {
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
            let rows = self.pending.drain(..ROWS_PER_INSERT);
            let next = match self.ready.take() {
                None => encode_bars(rows, &mut self.dates)?,
                Some(args) => {
                    let insert = sqlx::query_with(&self.full, args).execute(&mut *conn);
                    // The insert is sent on its first poll; the encoding runs while it executes.
                    let (done, next) =
                        futures_util::future::join(insert, async { encode_bars(rows, &mut self.dates) }).await;
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
            let args = encode_bars(self.pending.drain(..), &mut self.dates)?;
            self.written += sqlx::query_with(&sql, args).execute(&mut *conn).await?.rows_affected();
        }
        Ok(self.written)
    }
}

/// The parameters of one bars INSERT. Owned values: the driver would copy borrowed ones anyway
/// on their way to the connection's thread.
fn encode_bars(
    rows: impl Iterator<Item = (Arc<str>, Bar)>,
    dates: &mut HashMap<NaiveDate, String>,
) -> Result<SqliteArguments<'static>, sqlx::Error> {
    let mut args = SqliteArguments::default();
    for (code, b) in rows {
        // The text the driver's own date encoding writes.
        let date = dates.entry(b.date).or_insert_with(|| b.date.format("%F").to_string());
        let values = [b.open, b.high, b.low, b.close, b.volume, b.amount, b.adj_factor];
        args.add(code.to_string()).map_err(sqlx::Error::Encode)?;
        args.add(date.clone()).map_err(sqlx::Error::Encode)?;
        for v in values {
            args.add(v).map_err(sqlx::Error::Encode)?;
        }
    }
    Ok(args)
}
