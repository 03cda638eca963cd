//! What a CSV import is asked and what it answers (CLI `data import` / `[data]` ->
//! **options** -> csvmap, import -> report or error): the options and known layouts, the report
//! of a finished import with its bad rows, and every way an import fails.

use crate::market::versions::VersionRef;
use chrono::NaiveDate;
use std::fmt;
use std::path::PathBuf;

/// A known CSV layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// One file per symbol: `Date,Open,High,Low,Close,Adj Close,Volume` (symbol from the file
    /// name or `--symbol`; `Adj Close / Close` becomes `adj_factor`).
    Yahoo,
    /// Long format: `ts_code,trade_date,open,high,low,close,pre_close,change,pct_chg,vol,amount`
    /// with `YYYYMMDD` dates, `vol` in lots of 100 shares and `amount` in thousands.
    Tushare,
}

/// What [`import`](crate::market::import()) reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportOptions {
    /// CSV files, optionally gzip-compressed (`.gz` or gzip magic bytes).
    pub files: Vec<PathBuf>,
    /// `None`: detect from each file's header.
    pub layout: Option<Layout>,
    /// Symbol code for files without a symbol column (default: the file name's stem); also
    /// replaces a symbol column found by its name, never one named in `columns`.
    pub symbol: Option<String>,
    /// Explicit mapping such as `date=Date,open=Open,high=High,low=Low,close=Close,
    /// volume=Vol,symbol=Ticker` (also `amount`, `adj_close`, `adj_factor`).
    pub columns: Option<String>,
    /// Skip and count bad rows instead of rejecting the import.
    pub skip_bad: bool,
    /// chrono format of the date column, e.g. `%d.%m.%Y` (default: detected).
    pub date_format: Option<String>,
    /// Read and check everything, write nothing.
    pub dry_run: bool,
    /// The dataset the new version belongs to (default: the first file's name).
    pub dataset: Option<String>,
    /// Extend this dataset: the new version holds its newest version's bars and the files'.
    pub into: Option<String>,
    /// With `into`: the files' bars replace the dataset's where both have a date (otherwise a
    /// difference stops the import).
    pub replace: bool,
}

/// One rejected input row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRow {
    pub file: String,
    /// CSV line number, 1-based; the header is line 1.
    pub line: u64,
    pub message: String,
}

impl fmt::Display for BadRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// What [`import`](crate::market::import()) did.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportReport {
    /// The version the files' bars are in (`None` for a dry run).
    pub version: Option<VersionRef>,
    /// The same files were imported before: their version was found, nothing was written.
    pub already: bool,
    pub files: usize,
    /// Data rows read (good and bad).
    pub rows_read: u64,
    /// Rows inserted or updated.
    pub rows_written: u64,
    pub symbols: usize,
    /// Bad rows skipped (only with `skip_bad`).
    pub skipped: usize,
    /// The first skipped rows, for the summary.
    pub bad: Vec<BadRow>,
    pub first_date: Option<NaiveDate>,
    pub last_date: Option<NaiveDate>,
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "imported {} file{}: {} rows written for {} symbol{}",
            self.files,
            plural(self.files),
            self.rows_written,
            self.symbols,
            plural(self.symbols)
        )?;
        if let (Some(a), Some(b)) = (self.first_date, self.last_date) {
            write!(f, " ({a} to {b})")?;
        }
        if self.skipped > 0 {
            write!(f, "; skipped {} bad row{}:", self.skipped, plural(self.skipped))?;
            for row in &self.bad {
                write!(f, "\n  {row}")?;
            }
            if self.skipped > self.bad.len() {
                write!(f, "\n  ... and {} more", self.skipped - self.bad.len())?;
            }
        }
        Ok(())
    }
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{0}")]
    Options(String),
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
    #[error("{path}: {message}\nhint: {hint}")]
    Header {
        path: String,
        message: String,
        hint: String,
    },
    /// A file read as one symbol whose dates repeat, with a column that looks like symbols.
    #[error("{message}\nhint: {hint}")]
    SymbolColumn { message: String, hint: String },
    #[error("{}", bad_rows_message(.bad, *.total))]
    BadRows { bad: Vec<BadRow>, total: usize },
    /// `--into`: the files and the dataset disagree on bars they both have.
    #[error("{}", conflict_message(.dataset, .conflicts, *.total))]
    Conflict {
        dataset: String,
        /// The first conflicting bars: `file:line`, symbol, date.
        conflicts: Vec<(String, String, NaiveDate)>,
        total: usize,
    },
    #[error("database error, nothing was imported: {0}")]
    Db(String),
}

/// Conflicting bars named in a conflict error; the rest are counted.
pub(super) const SHOWN_CONFLICTS: usize = 10;

fn conflict_message(dataset: &str, conflicts: &[(String, String, NaiveDate)], total: usize) -> String {
    let mut msg = format!(
        "{total} bar{} of the input differ{} from the bars {dataset} holds for the same symbol and date; \
         nothing was imported:",
        plural(total),
        if total == 1 { "s" } else { "" }
    );
    for (at, code, date) in conflicts {
        msg.push_str(&format!("\n  {at}: {code} on {date}"));
    }
    if total > conflicts.len() {
        msg.push_str(&format!("\n  ... and {} more", total - conflicts.len()));
    }
    msg.push_str(&format!(
        "\nhint: pass --replace to make a new version of {dataset} whose bars are the file's on those dates \
         (the dataset's versions stay as they are), or import the file as a dataset of its own (without --into)"
    ));
    msg
}

fn bad_rows_message(bad: &[BadRow], total: usize) -> String {
    let mut msg = format!("{total} bad row{} in the input; nothing was imported:", plural(total));
    for row in bad {
        msg.push_str(&format!("\n  {row}"));
    }
    if total > bad.len() {
        msg.push_str(&format!("\n  ... and {} more", total - bad.len()));
    }
    msg.push_str("\nhint: fix these rows, or pass --skip-bad to import the rest and skip them");
    msg
}
