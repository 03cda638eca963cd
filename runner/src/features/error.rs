//! Why the `normalize` stage could not build windows (Bars -> compute -> normalize ->
//! windows): the one error type every phase of the stage returns.

use crate::params::ParamError;
use chrono::NaiveDate;

/// Why the stage could not build windows from the bars it was given.
#[derive(Debug, thiserror::Error)]
pub enum NormalizeError {
    #[error("invalid parameter {0}")]
    Params(#[from] ParamError),
    #[error("symbol `{symbol}` on {date}: {field} is {value}, expected a positive finite number")]
    BadBar {
        symbol: String,
        date: NaiveDate,
        field: &'static str,
        value: f64,
    },
    #[error("symbol `{symbol}`: dates must increase, but {date} follows {previous}")]
    Unsorted {
        symbol: String,
        previous: NaiveDate,
        date: NaiveDate,
    },
    #[error("symbol `{symbol}`: column `{column}` has {got} values for {expected} dates")]
    Ragged {
        symbol: String,
        column: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("no bars to build windows from")]
    NoBars,
    #[error(
        "no symbol has enough history for one training window: the longest, `{symbol}`, has only \
         {rows} rows before the split ({split}), and one window needs {needed} ({warmup} warm-up + \
         seq_len {seq_len} + horizon {horizon})"
    )]
    NotEnoughHistory {
        symbol: String,
        rows: usize,
        needed: usize,
        split: NaiveDate,
        warmup: usize,
        seq_len: usize,
        horizon: usize,
    },
    /// `detail` says, for the symbol closest to having one, exactly what it lacks.
    #[error("no symbol has enough data for one validation window: {detail}")]
    NoValidationWindows { detail: String },
    #[error("could not start a pool of {threads} threads: {message}")]
    ThreadPool { threads: usize, message: String },
    #[error("cancelled")]
    Cancelled,
}
