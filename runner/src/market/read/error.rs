//! Why `load` produced no artifact (read: resolve -> fetch -> **error** -> the `load` stage's
//! failure): one error type for every reader, whose messages name what was asked and how to
//! get it.

use crate::market::stock::db_message;

/// Why `load` produced no artifact.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}", not_found_message(.missing, .suggestions))]
    NotFound {
        missing: Vec<String>,
        /// `(asked, close match)` pairs.
        suggestions: Vec<(String, String)>,
    },
    #[error("symbols = {asked} needs {wanted} symbols but {} has {available}", scope_name(*.declared))]
    TooFew {
        asked: String,
        wanted: usize,
        available: usize,
        /// Counted within the data the manifest declares (`[data]`), not the whole database.
        declared: bool,
    },
    /// Codes the stock database holds only in versions the run does not read.
    #[error("{}", undeclared_message(.codes, .view, *.declared))]
    Undeclared {
        codes: Vec<String>,
        /// The versions the run reads, `a@1, b@2`.
        view: String,
        declared: bool,
    },
    #[error(
        "no bars for symbols = {selection} in {range} (min_history = {min_history}); \
         hint: run `measured data synth` or `measured data import`, or widen the range"
    )]
    Empty {
        selection: String,
        range: String,
        min_history: usize,
    },
    #[error(
        "strategy = \"copy\" needs Postgres, but the stock database is SQLite; \
         hint: use strategy = \"stream\" or \"batched\", or set STOCK_DATABASE_URL"
    )]
    CopyNeedsPostgres,
    #[error("symbol code `{0}` in the database contains characters load cannot use with COPY")]
    UnsafeCode(String),
    #[error("database error while loading bars: {0}")]
    Db(String),
    #[error("malformed COPY data: {0}")]
    Decode(String),
}

impl From<sqlx::Error> for LoadError {
    fn from(e: sqlx::Error) -> Self {
        LoadError::Db(db_message(&e))
    }
}

fn undeclared_message(codes: &[String], view: &str, declared: bool) -> String {
    let shown: Vec<String> = codes.iter().take(10).map(|c| format!("`{c}`")).collect();
    let (s, them) = if codes.len() == 1 { ("", "it") } else { ("s", "them") };
    let hint = if declared {
        format!(
            "declare the data that holds {them} (e.g. its CSV file under [data] import), or select symbols of \
             the declared market"
        )
    } else {
        format!("read the version that holds {them} with `measured run --data VERSION` (`measured data ls` lists them)")
    };
    format!(
        "symbol{s} {} {} in the stock database but not in the dataset versions this run reads ({view})\nhint: {hint}",
        shown.join(", "),
        if codes.len() == 1 { "is" } else { "are" }
    )
}

fn scope_name(declared: bool) -> &'static str {
    if declared {
        "the data declared in [data]"
    } else {
        "the stock database"
    }
}

fn not_found_message(missing: &[String], suggestions: &[(String, String)]) -> String {
    let shown: Vec<String> = missing.iter().take(10).map(|c| format!("`{c}`")).collect();
    let more = missing.len().saturating_sub(10);
    let mut msg = format!(
        "symbol{} not found in the stock database: {}{}",
        if missing.len() == 1 { "" } else { "s" },
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
    for (asked, close) in suggestions {
        msg.push_str(&format!("\nhint: did you mean `{close}` for `{asked}`?"));
    }
    if suggestions.is_empty() {
        msg.push_str("\nhint: list symbols in the database, or import them with `measured data import`");
    }
    msg
}
