//! One CSV row into a bar: fields, numbers, dates, and the OHLCV sanity checks.

use super::*;
use crate::market::stock::{is_valid_code, Bar};
use chrono::NaiveDate;

fn field<'r>(record: &'r csv::StringRecord, i: usize, name: &str) -> Result<&'r str, String> {
    record
        .get(i)
        .ok_or_else(|| format!("missing {name} (the row has {} fields)", record.len()))
}

fn number(record: &csv::StringRecord, i: usize, name: &str) -> Result<f64, String> {
    let text = field(record, i, name)?;
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("{name}: `{text}` is not a number")),
    }
}

/// Relative tolerance of the open and close range check, so rounding in the source is not an
/// error.
const RANGE_TOLERANCE: f64 = 1e-6;

/// What is inconsistent in one bar: non-positive prices, `high < low`, open or close outside
/// `[low, high]` (by more than [`RANGE_TOLERANCE`] of the price), or negative volume.
fn ohlcv_problems(open: f64, high: f64, low: f64, close: f64, volume: f64) -> Vec<String> {
    let prices = [("open", open), ("high", high), ("low", low), ("close", close)];
    let mut problems: Vec<String> = prices
        .iter()
        .filter(|(_, v)| *v <= 0.0)
        .map(|(name, v)| format!("{name} must be positive, got {v}"))
        .collect();
    if problems.is_empty() {
        if high < low {
            problems.push(format!("high {high} is below low {low}"));
        } else {
            for (name, v) in [("open", open), ("close", close)] {
                let tolerance = RANGE_TOLERANCE * v;
                if v < low - tolerance {
                    problems.push(format!("{name} {v} is below low {low}"));
                } else if v > high + tolerance {
                    problems.push(format!("{name} {v} is above high {high}"));
                }
            }
        }
    }
    if volume < 0.0 {
        problems.push(format!("negative volume {volume}"));
    }
    problems
}

/// Parses `day` with `f`; the compact `%Y%m%d` takes exactly 8 digits (chrono would read the
/// seven-digit `2020013` as 2020-01-03).
fn parse_day(day: &str, f: &str) -> Option<NaiveDate> {
    if f == "%Y%m%d" && !(day.len() == 8 && day.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    NaiveDate::parse_from_str(day, f).ok()
}

pub(super) fn date(text: &str, format: Option<&str>) -> Result<NaiveDate, String> {
    if let Some(f) = format {
        return parse_day(text, f).ok_or_else(|| format!("date: `{text}` does not match `{f}`"));
    }
    // A timestamp such as `2020-01-02 00:00:00` keeps its date part.
    let day = text.split([' ', 'T']).next().unwrap_or(text);
    ["%Y-%m-%d", "%Y%m%d", "%Y/%m/%d"]
        .iter()
        .find_map(|f| parse_day(day, f))
        .ok_or_else(|| format!("date: `{text}` is not a date (use --date-format)"))
}

/// Parses and checks one data row: `(symbol code, bar)` or what is wrong with it.
pub(crate) fn parse_row(m: &Mapping, record: &csv::StringRecord) -> Result<(String, Bar), String> {
    let code = match &m.symbol {
        Symbol::Fixed { code, .. } => code.clone(),
        Symbol::Column(i) => {
            let code = field(record, *i, "symbol")?;
            if !is_valid_code(code) {
                return Err(format!("symbol `{code}` is not a valid code"));
            }
            code.to_owned()
        }
    };
    let date = date(field(record, m.date, "date")?, m.date_format.as_deref())?;
    let open = number(record, m.open, "open")?;
    let high = number(record, m.high, "high")?;
    let low = number(record, m.low, "low")?;
    let close = number(record, m.close, "close")?;
    let volume = number(record, m.volume, "volume")? * m.volume_scale;
    let problems = ohlcv_problems(open, high, low, close, volume);
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    // Files without turnover get an estimate, so `amount` is never missing downstream.
    let amount = match m.amount {
        Some(i) => number(record, i, "amount")? * m.amount_scale,
        None => volume * close,
    };
    if amount < 0.0 {
        return Err(format!("negative amount {amount}"));
    }
    let adj_factor = match (m.adj_factor, m.adj_close) {
        (Some(i), _) => number(record, i, "adj_factor")?,
        (None, Some(i)) => number(record, i, "adj_close")? / close,
        (None, None) => 1.0,
    };
    if adj_factor <= 0.0 {
        return Err(format!("adjustment factor must be positive, got {adj_factor}"));
    }
    Ok((
        code,
        Bar {
            date,
            open,
            high,
            low,
            close,
            volume,
            amount,
            adj_factor,
        },
    ))
}
