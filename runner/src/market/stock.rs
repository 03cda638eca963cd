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
