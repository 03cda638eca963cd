//! The SQLite side of a load worker (load -> fetch -> here): reads the bars through SQLite's
//! own API on a blocking thread, one read-only connection per worker.
//!
//! sqlx's SQLite driver runs each connection on a worker thread of its own and hands every
//! row over a channel as owned values; on 1.2 M bars that hand-off cost three to four times
//! what SQLite itself spends on the scan. Here rows are read in place (`sqlite3_step`, then
//! each column straight into the symbol's columns), so the scan runs at close to the rate of
//! the `sqlite3` shell aggregating the same query.
//!
//! Each worker reads inside one read transaction, so all its statements see the same
//! committed snapshot even while a writer commits (the database is in WAL mode).

use super::error::LoadError;
use super::rows::{by_version, placeholders, push_bar, COLUMNS};
use crate::artifact::SymbolBars;
use crate::kinds::{FetchStrategy, LoadParams};
use crate::market::stock::Bar;
use chrono::NaiveDate;
use rusqlite::{params_from_iter, Connection, OpenFlags, Row, ToSql};
use std::path::Path;
use std::time::Duration;

/// Codes per IN list, far below SQLite's bound-variable limit.
pub(super) const CODES_PER_QUERY: usize = 500;

/// The same wait for a lock as the pool's connections.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The widest stored value shown in an error message (values are untrusted input).
const SHOWN_CHARS: usize = 40;

impl From<rusqlite::Error> for LoadError {
    fn from(e: rusqlite::Error) -> Self {
        LoadError::Db(e.to_string())
    }
}

/// Fetches `targets` (each code from its dataset version) from the SQLite file at `path` with
/// `params.strategy` (`stream` or `batched`), in `lo..=hi`; those with no rows left out (the
/// caller orders the symbols).
pub(super) fn fetch(
    path: &Path,
    targets: &[(String, i64)],
    params: &LoadParams,
    lo: NaiveDate,
    hi: NaiveDate,
) -> Result<Vec<SymbolBars>, LoadError> {
    let mut conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let snapshot = conn.transaction()?;
    // Dates are stored as ISO-8601 text, the form sqlx binds a date in.
    let (lo, hi) = (lo.format("%F").to_string(), hi.format("%F").to_string());
    match params.strategy {
        FetchStrategy::Stream => stream(&snapshot, targets, &lo, &hi),
        FetchStrategy::Batched => batched(&snapshot, targets, &lo, &hi, params.fetch_size),
        FetchStrategy::Copy => Err(LoadError::CopyNeedsPostgres),
    }
}

/// One ordered query per [`CODES_PER_QUERY`] codes of one version.
fn stream(conn: &Connection, targets: &[(String, i64)], lo: &str, hi: &str) -> Result<Vec<SymbolBars>, LoadError> {
    let mut out: Vec<SymbolBars> = Vec::with_capacity(targets.len());
    let groups = by_version(targets);
    for (version, chunk) in groups
        .iter()
        .flat_map(|(v, codes)| codes.chunks(CODES_PER_QUERY).map(move |c| (v, c)))
    {
        let sql = format!(
            "SELECT symbol, {} FROM daily_bars WHERE version = ? AND symbol IN ({}) \
             AND trade_date >= ? AND trade_date <= ? ORDER BY symbol, trade_date",
            COLUMNS,
            placeholders(chunk.len())
        );
        let mut stmt = conn.prepare(&sql)?;
        let bound = std::iter::once(version as &dyn ToSql)
            .chain(chunk.iter().map(|c| c as &dyn ToSql))
            .chain([&lo as &dyn ToSql, &hi]);
        let mut rows = stmt.query(params_from_iter(bound))?;
        while let Some(row) = rows.next()? {
            let code = text(row, 0)?;
            if out.last().is_none_or(|s| s.symbol != code) {
                out.push(SymbolBars::new(code.to_owned()));
            }
            let bar = bar_at(row, 1, code)?;
            push_bar(out.last_mut().expect("pushed above"), bar);
        }
    }
    Ok(out)
}

/// One query per symbol, in pages of `fetch_size` rows.
fn batched(
    conn: &Connection,
    targets: &[(String, i64)],
    lo: &str,
    hi: &str,
    fetch_size: usize,
) -> Result<Vec<SymbolBars>, LoadError> {
    // Each page starts after the last stored `trade_date` text the previous one returned:
    // keyed on the column's own order, so every page moves forward whatever the stored text.
    let sql = format!(
        "SELECT {} FROM daily_bars WHERE version = ?6 AND symbol = ?1 AND trade_date >= ?2 AND trade_date > ?3 \
         AND trade_date <= ?4 ORDER BY trade_date LIMIT ?5",
        COLUMNS
    );
    let mut stmt = conn.prepare(&sql)?;
    let limit = i64::try_from(fetch_size).unwrap_or(i64::MAX);
    let mut out = Vec::with_capacity(targets.len());
    for (code, version) in targets {
        let mut s = SymbolBars::new(code.clone());
        // Text sorts after "", so the first page is bounded by `lo` alone.
        let mut after = String::new();
        loop {
            let before = s.len();
            let mut rows = stmt.query((code, lo, &after, hi, limit, version))?;
            while let Some(row) = rows.next()? {
                push_bar(&mut s, bar_at(row, 0, code)?);
                // Only a full page has a next one: it starts after this row.
                if s.len() - before == fetch_size {
                    after.clear();
                    after.push_str(text(row, 0)?);
                }
            }
            if s.len() - before < fetch_size {
                break;
            }
        }
        if !s.is_empty() {
            out.push(s);
        }
    }
    Ok(out)
}

/// `trade_date` and the seven value columns starting at column `first`.
fn bar_at(row: &Row<'_>, first: usize, code: &str) -> Result<Bar, LoadError> {
    let text = self::text(row, first)?;
    let date = parse_date(text).ok_or_else(|| {
        LoadError::Db(format!(
            "`trade_date` of `{}` holds `{}`, not a date (YYYY-MM-DD)",
            shown(code),
            shown(text)
        ))
    })?;
    Ok(Bar {
        date,
        open: row.get(first + 1)?,
        high: row.get(first + 2)?,
        low: row.get(first + 3)?,
        close: row.get(first + 4)?,
        volume: row.get(first + 5)?,
        amount: row.get(first + 6)?,
        adj_factor: row.get(first + 7)?,
    })
}

/// A stored value for an error message: cut after [`SHOWN_CHARS`] characters (with `…`),
/// control characters escaped.
fn shown(value: &str) -> String {
    crate::metrics::cut(value, SHOWN_CHARS + 1).escape_debug().to_string()
}

/// Column `i` as text; another type is an error naming the column.
fn text<'r>(row: &'r Row<'_>, i: usize) -> Result<&'r str, LoadError> {
    let value = row.get_ref(i)?;
    value.as_str().map_err(|_| {
        let name = row.as_ref().column_name(i).unwrap_or("?");
        LoadError::Db(format!(
            "column `{name}` holds {}, where text is stored",
            match value.data_type() {
                rusqlite::types::Type::Null => "NULL",
                rusqlite::types::Type::Integer => "an integer",
                rusqlite::types::Type::Real => "a real number",
                rusqlite::types::Type::Text => "text that is not UTF-8",
                rusqlite::types::Type::Blob => "a blob",
            }
        ))
    })
}

/// A stored date: `YYYY-MM-DD` read digit by digit, anything else as chrono's `%F` reads it
/// (the same dates the sqlx driver accepts).
fn parse_date(text: &str) -> Option<NaiveDate> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b[r].iter()
            .try_fold(0u32, |n, &c| c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0')))
    };
    if b.len() == 10 && b[4] == b'-' && b[7] == b'-' {
        if let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) {
            return NaiveDate::from_ymd_opt(y as i32, m, d);
        }
    }
    NaiveDate::parse_from_str(text, "%F").ok()
}

#[cfg(test)]
mod tests {
    use super::parse_date;
    use chrono::NaiveDate;

    #[test]
    fn stored_dates_parse_as_chrono_reads_them() {
        for text in [
            "2015-01-05",
            "0001-01-01",
            "9999-12-31",
            "2024-02-29",
            "2023-02-29",
            "2015-13-01",
            "2015-1-05",
            "+2015-01-05",
            "2015-01-0x",
            "20150105",
            "",
            "2015-01-05 ",
        ] {
            assert_eq!(parse_date(text), NaiveDate::parse_from_str(text, "%F").ok(), "{text:?}");
        }
        assert_eq!(parse_date("2015-01-05"), NaiveDate::from_ymd_opt(2015, 1, 5));
    }
}
