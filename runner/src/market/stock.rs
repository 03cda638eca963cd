//! What stock data is, shared by every part of `market` (source -> write -> stock tables ->
//! read): a daily bar, a symbol's bars and its `symbols` row, what makes a symbol code valid
//! (`kinds`' `is_valid_code`, re-exported: the `load` stage's parameters check codes too), and
//! the two errors of stock storage ([`MarketError`] while writing or inspecting stock data,
//! [`StockError`] when the stock database cannot serve a manifest's loads, whose messages name
//! the database, password redacted, and how to fix it).

use chrono::NaiveDate;

pub use crate::kinds::is_valid_code;

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

/// Why the stock database cannot serve a manifest's loads. Clone, because a run caches the
/// answer of its stock database and gives it to every trial.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StockError {
    /// A stock database named apart whose SQLite file does not exist (its URL, redacted).
    #[error(
        "the stock database {0} (--stock-database / STOCK_DATABASE_URL) does not exist\n\
         hint: check the path; create it on purpose with `measured data synth` or \
         `measured data import` and the same --stock-database, or leave it unset to use the results database"
    )]
    Missing(String),
    /// A stock database named apart that holds no bars (its URL, redacted).
    #[error(
        "the stock database {0} (--stock-database / STOCK_DATABASE_URL) holds no daily bars\n\
         hint: fill it with `measured data synth` or `measured data import` and the same --stock-database"
    )]
    Empty(String),
    /// The database could not be reached or read: the driver's message.
    #[error("{0}")]
    Database(String),
    /// The stock database holds no version of the synthetic market `[data]` declares.
    #[error(
        "the synthetic market [data] declares ({declared}) is not in the stock database{held}\n\
         hint: `measured run` generates the declared market before the first trial; or generate it with \
         `{command}`"
    )]
    OtherMarket {
        held: String,
        declared: String,
        command: String,
    },
    /// A file `[data]` declares was never imported.
    #[error(
        "{file} (sha256 {sha256}) was never imported into the stock database\n\
         hint: `measured run` imports the declared files before the first trial"
    )]
    NotImported { file: String, sha256: String },
    /// `--data` names no stored version: the message with its hint.
    #[error("{0}")]
    UnknownVersion(String),
    /// Two versions a run would read hold the same symbol.
    #[error(
        "dataset versions {a} and {b} both hold {}: a run reads one bar per symbol and date, so it cannot read both\n\
         hint: choose the versions to read with `measured run --data VERSION` (`measured data ls` lists them), \
         or declare the data in [data]", codes_list(.codes)
    )]
    Overlap { a: String, b: String, codes: Vec<String> },
}

fn codes_list(codes: &[String]) -> String {
    let mut shown: Vec<String> = codes.iter().take(5).map(|c| format!("`{c}`")).collect();
    if codes.len() > 5 {
        shown.push("...".into());
    }
    shown.join(", ")
}

impl StockError {
    pub(crate) fn database(e: impl std::fmt::Display) -> Self {
        StockError::Database(e.to_string())
    }
}
