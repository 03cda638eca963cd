//! One load worker (load -> fetch -> `SymbolBars`): fetches its share of the symbols with the
//! chosen strategy, then drops short histories and hashes each symbol.

use super::error::LoadError;
use super::rows::{by_version, push_bar, COLUMNS};
use crate::artifact::SymbolBars;
use crate::db::Db;
use crate::kinds::{FetchStrategy, LoadParams};
use crate::market::pgbinary::CopyDecoder;
use crate::market::stock::{is_valid_code, Bar};
use chrono::NaiveDate;
use futures_util::TryStreamExt;
use sha2::{Digest, Sha256};
use sqlx::{ColumnIndex, Decode, Row, Type};

/// What one worker hands back.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// Kept symbols with their digests.
    pub symbols: Vec<(SymbolBars, [u8; 32])>,
    /// Codes below `min_history` (those with no rows in the range included).
    pub dropped: Vec<String>,
    /// Bytes received from a COPY stream.
    pub wire_bytes: u64,
}

/// Date bounds that are always bound: an absent bound becomes one no bar can cross, so the
/// statement text (and its prepared plan) is the same with or without bounds.
fn bounds(params: &LoadParams) -> (NaiveDate, NaiveDate) {
    (
        params.start.unwrap_or(NaiveDate::from_ymd_opt(1, 1, 1).expect("valid")),
        params
            .end
            .unwrap_or(NaiveDate::from_ymd_opt(9999, 12, 31).expect("valid")),
    )
}

/// Groups rows that arrive ordered by (symbol, date) into per-symbol columns.
#[derive(Default)]
struct Grouper {
    done: Vec<SymbolBars>,
    current: Option<SymbolBars>,
}

impl Grouper {
    fn push(&mut self, code: &[u8], bar: Bar) {
        let same = self.current.as_ref().is_some_and(|c| c.symbol.as_bytes() == code);
        if !same {
            let next = SymbolBars::new(String::from_utf8_lossy(code).into_owned());
            self.done.extend(self.current.replace(next));
        }
        push_bar(self.current.as_mut().expect("set above"), bar);
    }

    fn finish(mut self) -> Vec<SymbolBars> {
        self.done.extend(self.current.take());
        self.done
    }
}

/// Decodes `trade_date` and the seven value columns starting at column `first`.
fn bar_from<'r, R>(row: &'r R, first: usize) -> Result<Bar, sqlx::Error>
where
    R: Row,
    usize: ColumnIndex<R>,
    NaiveDate: Decode<'r, R::Database> + Type<R::Database>,
    f64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(Bar {
        date: row.try_get(first)?,
        open: row.try_get(first + 1)?,
        high: row.try_get(first + 2)?,
        low: row.try_get(first + 3)?,
        close: row.try_get(first + 4)?,
        volume: row.try_get(first + 5)?,
        amount: row.try_get(first + 6)?,
        adj_factor: row.try_get(first + 7)?,
    })
}

/// Fetches `targets` (each code from its dataset version), then applies `min_history`,
/// `adjust` and the per-symbol digest.
pub(crate) async fn fetch_worker(
    db: &Db,
    targets: &[(String, i64)],
    params: &LoadParams,
) -> Result<Collected, LoadError> {
    let (lo, hi) = bounds(params);
    let codes: Vec<String> = targets.iter().map(|(c, _)| c.clone()).collect();
    let mut wire_bytes = 0;
    let fetched = match (db, params.strategy) {
        (Db::Postgres(pool), FetchStrategy::Stream) => {
            let mut conn = pool.acquire().await?;
            let sql = format!(
                "SELECT symbol, {COLUMNS} FROM daily_bars WHERE version = $4 AND symbol = ANY($1) \
                 AND trade_date >= $2 AND trade_date <= $3 ORDER BY symbol, trade_date"
            );
            let mut grouper = Grouper::default();
            for (version, codes) in by_version(targets) {
                let mut rows = sqlx::query(&sql)
                    .bind(&codes)
                    .bind(lo)
                    .bind(hi)
                    .bind(version)
                    .fetch(&mut *conn);
                while let Some(row) = rows.try_next().await? {
                    let code: &str = row.try_get(0)?;
                    grouper.push(code.as_bytes(), bar_from(&row, 1)?);
                }
            }
            grouper.finish()
        }
        // SQLite reads through its own API on a blocking thread, both strategies.
        (Db::Sqlite(pool), _) => {
            let path = pool.connect_options().get_filename().to_owned();
            let (targets, params) = (targets.to_vec(), params.clone());
            return tokio::task::spawn_blocking(move || {
                let fetched = super::fetch_sqlite::fetch(&path, &targets, &params, lo, hi)?;
                Ok(collect(fetched, &codes, &params, 0))
            })
            .await
            .map_err(|e| LoadError::Db(format!("the SQLite reader stopped: {e}")))?;
        }
        (Db::Postgres(pool), FetchStrategy::Batched) => {
            let mut conn = pool.acquire().await?;
            let sql = format!(
                "SELECT {COLUMNS} FROM daily_bars WHERE version = $5 AND symbol = $1 AND trade_date >= $2 \
                 AND trade_date <= $3 ORDER BY trade_date LIMIT $4"
            );
            let mut out = Vec::with_capacity(targets.len());
            for (code, version) in targets {
                let mut s = SymbolBars::new(code.clone());
                let mut from = lo;
                loop {
                    let rows = sqlx::query(&sql)
                        .bind(code)
                        .bind(from)
                        .bind(hi)
                        .bind(params.fetch_size as i64)
                        .bind(*version)
                        .fetch_all(&mut *conn)
                        .await?;
                    for row in &rows {
                        push_bar(&mut s, bar_from(row, 0)?);
                    }
                    match s.dates.last().and_then(|d| d.succ_opt()) {
                        Some(next) if rows.len() == params.fetch_size => from = next,
                        _ => break,
                    }
                }
                out.push(s);
            }
            out
        }
        (Db::Postgres(pool), FetchStrategy::Copy) => {
            let mut conn = pool.acquire().await?;
            let mut grouper = Grouper::default();
            for (version, codes) in by_version(targets) {
                let stmt = copy_statement(version, &codes, lo, hi)?;
                let mut stream = conn.copy_out_raw(&stmt).await?;
                let mut decoder = CopyDecoder::default();
                while let Some(chunk) = stream.try_next().await? {
                    wire_bytes += chunk.len() as u64;
                    decoder
                        .feed(&chunk, &mut |code, bar| grouper.push(code, bar))
                        .map_err(LoadError::Decode)?;
                }
                decoder.finish().map_err(LoadError::Decode)?;
            }
            grouper.finish()
        }
    };
    Ok(collect(fetched, &codes, params, wire_bytes))
}

/// Applies `min_history`, `adjust` and the per-symbol digest to the fetched symbols of `codes`.
fn collect(fetched: Vec<SymbolBars>, codes: &[String], params: &LoadParams, wire_bytes: u64) -> Collected {
    let mut collected = Collected {
        wire_bytes,
        ..Collected::default()
    };
    for mut s in fetched {
        if s.len() < params.min_history {
            collected.dropped.push(s.symbol);
            continue;
        }
        if !params.adjust {
            drop_adjustment(&mut s);
        }
        let digest = symbol_digest(&s);
        collected.symbols.push((s, digest));
    }
    // Symbols with no rows at all never reach the grouper; they are dropped too.
    if collected.symbols.len() + collected.dropped.len() < codes.len() {
        let seen: std::collections::HashSet<&str> = collected
            .symbols
            .iter()
            .map(|(s, _)| s.symbol.as_str())
            .chain(collected.dropped.iter().map(String::as_str))
            .collect();
        let unseen: Vec<String> = codes.iter().filter(|c| !seen.contains(c.as_str())).cloned().collect();
        collected.dropped.extend(unseen);
    }
    collected
}

/// The COPY statement for `codes` of `version` in `lo..=hi`. COPY cannot take bind
/// parameters, so this is the one statement built from values: codes must pass
/// [`is_valid_code`] (they were also looked up in `symbols` with bound parameters first), the
/// version is an integer, and dates are chrono's own `YYYY-MM-DD` rendering, so none can close
/// the quoted literal it sits in.
pub(crate) fn copy_statement(
    version: i64,
    codes: &[String],
    lo: NaiveDate,
    hi: NaiveDate,
) -> Result<String, LoadError> {
    let mut list = String::with_capacity(codes.len() * 14);
    for (i, code) in codes.iter().enumerate() {
        if !is_valid_code(code) {
            return Err(LoadError::UnsafeCode(code.clone()));
        }
        if i > 0 {
            list.push_str(", ");
        }
        list.push('\'');
        list.push_str(code);
        list.push('\'');
    }
    Ok(format!(
        "COPY (SELECT symbol, {COLUMNS} FROM daily_bars WHERE version = {version} AND symbol IN ({list}) \
         AND trade_date >= DATE '{}' AND trade_date <= DATE '{}' ORDER BY symbol, trade_date) \
         TO STDOUT WITH (FORMAT binary)",
        lo.format("%Y-%m-%d"),
        hi.format("%Y-%m-%d")
    ))
}

/// Digest of one symbol's loaded values: every date and column, in order.
fn symbol_digest(s: &SymbolBars) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut buf = Vec::with_capacity(s.len() * 60);
    for i in 0..s.len() {
        buf.extend_from_slice(&chrono::Datelike::num_days_from_ce(&s.dates[i]).to_le_bytes());
        for col in [&s.open, &s.high, &s.low, &s.close, &s.volume, &s.amount, &s.adj_factor] {
            buf.extend_from_slice(&col[i].to_le_bytes());
        }
    }
    h.update(&buf);
    h.finalize().into()
}

/// Replaces every adjustment factor with 1 (`adjust = false`), so the features see raw prices
/// and a split shows up as the price gap it is in the raw data.
///
/// Prices are never scaled here: they stay as stored, and the `normalize` stage multiplies them
/// by `adj_factor` (and divides volumes by it), the one place in the pipeline where prices are
/// split-adjusted, whichever way the bars arrived (database, CSV import, in-memory generator).
fn drop_adjustment(s: &mut SymbolBars) {
    s.adj_factor.iter_mut().for_each(|a| *a = 1.0);
}
