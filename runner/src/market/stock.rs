//! Why the stock database cannot serve a manifest's loads (market -> stage services and
//! preflight): one error type, whose messages name the database (password redacted) and how to
//! fix it.

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
    /// The database holds another synthetic market than `[data]` declares.
    #[error(
        "the stock database holds {held}, not the synthetic market [data] declares ({declared})\n\
         hint: `measured run` prepares the declared market before the first trial; on a stock database \
         named apart, prepare it with `{command}`"
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
}

impl StockError {
    pub(crate) fn database(e: impl std::fmt::Display) -> Self {
        StockError::Database(e.to_string())
    }
}
