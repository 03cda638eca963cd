//! What the two bulk writers share (source -> write: **plan** -> Postgres or SQLite): a
//! synthetic market on its way to the database, the check that the generator delivered every
//! symbol, and the SQL both backends run on the stock tables.

use crate::market::stock::{MarketError, SymbolInfo, SymbolRows};
use tokio::sync::mpsc::Receiver;

pub(super) const BAR_COLUMNS: &str = "version, symbol, trade_date, open, high, low, close, volume, amount, adj_factor";

/// A synthetic market on its way to the database: symbols up front, bars as generated.
pub(crate) struct SynthPlan<'a> {
    pub symbols: &'a [SymbolInfo],
    pub rows: Receiver<SymbolRows>,
    pub progress: &'a indicatif::ProgressBar,
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

/// Copies every symbol and bar of version `from` into version `to`, in the caller's
/// transaction (an import `--into` a dataset starts from its newest version).
pub(super) const COPY_SYMBOLS: &str =
    "INSERT INTO symbols (version, code, name, exchange, currency, listed, delisted, sector) \
     SELECT $1, code, name, exchange, currency, listed, delisted, sector FROM symbols WHERE version = $2";
pub(super) const COPY_BARS: &str =
    "INSERT INTO daily_bars (version, symbol, trade_date, open, high, low, close, volume, \
     amount, adj_factor) SELECT $1, symbol, trade_date, open, high, low, close, volume, amount, adj_factor \
     FROM daily_bars WHERE version = $2 ORDER BY symbol, trade_date";
