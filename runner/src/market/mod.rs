//! Stock market data (CLI `data synth` / `data import` -> dataset versions in the `symbols`,
//! `daily_bars` tables -> `load` stage -> `Bars` artifact).
//!
//! Writers ([`synth`], [`import`]) add immutable dataset versions ([`versions`]) to the stock
//! tables of a [`Db`]; the `load` stage reads the versions of its run's [`DataView`] back into
//! the columnar [`crate::artifact::Bars`] with one of several fetch strategies so the
//! strategies themselves can be measured against each other.

mod args;
pub mod catalog;
mod csvmap;
mod fetch;
mod fetch_sqlite;
mod identity;
mod import;
mod import_write;
mod load;
mod pgbinary;
mod prepare;
mod select;
mod stock;
mod synth;
pub mod versions;
mod write;
mod write_sqlite;

#[cfg(test)]
mod tests;
pub use args::{ImportArgs, SynthArgs};
pub use identity::{
    bars_per_symbol, extent, identify, short, thousands, trading_days_held, DataIdentity, DataSource, Extent,
};
pub use import::{
    file_sha256, prepare, BadRow, FileSummary, ImportError, ImportOptions, ImportPlan, ImportReport, Layout,
};
pub use import_write::{import, Imported};
pub(crate) use load::{describe as describe_selection, resolve as resolve_selection, view_codes};
pub use load::{load, load_within, LoadError};
pub use prepare::{
    apply as apply_data, decide as decide_data, pinned_view, stored_view, view as data_view, DataSpec, ImportDecl,
    Refusal, Requirement, Step, StockPlace, SynthDecl,
};
pub use select::{date_schema, FetchStrategy, LoadParams, SymbolSelection};
pub use stock::StockError;
pub use synth::{
    demo_options, synth, synth_bars, CodeStyle, SynthOptions, SynthReport, DEMO_DAYS, DEMO_SEED, DEMO_START,
    DEMO_SYMBOLS, GENERATOR_VERSION, SIGNAL_COEFFICIENT,
};

use chrono::NaiveDate;
pub use versions::{DataView, VersionRef};

/// A failure while writing or inspecting stock data. Messages never contain a password.
#[derive(Debug, thiserror::Error)]
pub enum MarketError {
    #[error("invalid synth options: {0}")]
    Options(String),
    #[error("database error: {0}")]
    Db(String),
}

impl From<sqlx::Error> for MarketError {
    fn from(e: sqlx::Error) -> Self {
        MarketError::Db(db_message(&e))
    }
}

/// A driver error as text. Query errors quote the server's message, never the connection
/// URL (connecting, where a URL could appear, is `Db::connect`'s job and redacts it).
pub(crate) fn db_message(e: &sqlx::Error) -> String {
    e.to_string()
}

/// Whether `code` may be a symbol code: 1 to 32 characters from `[A-Za-z0-9._^=-]`.
///
/// None of these characters can end or escape an SQL string literal (no quote, no backslash,
/// no whitespace), which is what makes a validated code safe to embed in a `COPY` statement.
/// `^` and `=` admit index and currency tickers such as `^GSPC` and `EURUSD=X`.
pub fn is_valid_code(code: &str) -> bool {
    (1..=32).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'^' | b'='))
}

/// One row of `symbols`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SymbolInfo {
    pub code: String,
    pub name: String,
    pub exchange: String,
    pub currency: String,
    pub listed: Option<NaiveDate>,
    pub delisted: Option<NaiveDate>,
    pub sector: Option<String>,
}

impl SymbolInfo {
    /// What can be inferred from a code alone (imports carry no names or sectors).
    pub fn from_code(code: &str) -> Self {
        let (exchange, currency) = match code.rsplit_once('.').map(|(_, s)| s) {
            Some("SH") => ("SSE", "CNY"),
            Some("SZ") => ("SZSE", "CNY"),
            Some("BJ") => ("BSE", "CNY"),
            Some("HK") => ("HKEX", "HKD"),
            _ => ("", ""),
        };
        SymbolInfo {
            code: code.to_owned(),
            name: String::new(),
            exchange: exchange.to_owned(),
            currency: currency.to_owned(),
            listed: None,
            delisted: None,
            sector: None,
        }
    }
}

/// One daily bar without its symbol.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bar {
    pub date: NaiveDate,
    pub open: f64,
    pub high: f64,
    pub low: f64,
    pub close: f64,
    pub volume: f64,
    pub amount: f64,
    pub adj_factor: f64,
}

/// The bars of one symbol, sorted by date.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SymbolRows {
    pub code: String,
    pub bars: Vec<Bar>,
}
