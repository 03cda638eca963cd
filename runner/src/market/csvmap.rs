//! Reading one CSV file for import (file -> header -> column mapping -> checked `Bar`s).

use super::import::{ImportError, ImportOptions, Layout};
use super::{is_valid_code, Bar};
use chrono::NaiveDate;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// A CSV reader over a plain or decompressed file.
pub(crate) type CsvReader = csv::Reader<Box<dyn Read>>;

/// Where each field of a bar comes from in one file.
#[derive(Debug, Clone)]
pub(crate) struct Mapping {
    date: usize,
    open: usize,
    high: usize,
    low: usize,
    close: usize,
    volume: usize,
    amount: Option<usize>,
    adj_close: Option<usize>,
    adj_factor: Option<usize>,
    symbol: Symbol,
    /// Tushare counts volume in lots of 100 shares and amount in thousands.
    volume_scale: f64,
    amount_scale: f64,
    date_format: Option<String>,
}

#[derive(Debug, Clone)]
enum Symbol {
    Column(usize),
    Fixed(String),
}

/// Opens `path` (gzip-compressed when its name ends in `.gz` or it starts with the gzip magic
/// bytes) and reads its header row.
pub(crate) fn open_csv(path: &Path) -> Result<(Vec<String>, CsvReader), ImportError> {
    let io_err = |e: std::io::Error| ImportError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut file = BufReader::new(File::open(path).map_err(io_err)?);
    let magic = file.fill_buf().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
    let gz_name = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    let input: Box<dyn Read> = if magic || gz_name {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(input);
    let headers = reader
        .headers()
        .map_err(|e| ImportError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?
        .iter()
        .map(|h| h.trim_start_matches('\u{feff}').to_owned())
        .collect();
    Ok((headers, reader))
}

fn find(headers: &[String], name: &str) -> Option<usize> {
    headers.iter().position(|h| h.eq_ignore_ascii_case(name))
}

/// `data.csv.gz` -> `data`.
fn stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name
        .strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".GZ"))
        .unwrap_or(&name);
    match name.rsplit_once('.') {
        Some((s, ext)) if ext.eq_ignore_ascii_case("csv") || ext.eq_ignore_ascii_case("txt") => s.to_owned(),
        _ => name.to_owned(),
    }
}

impl Mapping {
    /// The mapping of one file: explicit `--columns`, else `--layout`, else detected.
    pub fn for_file(opts: &ImportOptions, path: &Path, headers: &[String]) -> Result<Mapping, ImportError> {
        let header_err = |message: String, hint: &str| ImportError::Header {
            path: path.display().to_string(),
            message,
            hint: hint.to_owned(),
        };
        let columns_hint = "name the columns with --columns \
            date=Date,open=Open,high=High,low=Low,close=Close,volume=Volume[,amount=..,symbol=..]";
        let mut named: Vec<(&str, &str)> = Vec::new();
        let layout = if let Some(spec) = &opts.columns {
            for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (field, column) = pair
                    .split_once('=')
                    .ok_or_else(|| ImportError::Options(format!("--columns: `{pair}` is not FIELD=COLUMN")))?;
                const FIELDS: [&str; 10] = [
                    "date",
                    "open",
                    "high",
                    "low",
                    "close",
                    "volume",
                    "amount",
                    "adj_close",
                    "adj_factor",
                    "symbol",
                ];
                if !FIELDS.contains(&field.trim()) {
                    return Err(ImportError::Options(format!(
                        "--columns: unknown field `{field}` (expected one of {})",
                        FIELDS.join(", ")
                    )));
                }
                named.push((field.trim(), column.trim()));
            }
            None
        } else if let Some(layout) = opts.layout {
            Some(layout)
        } else if find(headers, "ts_code").is_some() && find(headers, "trade_date").is_some() {
            Some(Layout::Tushare)
        } else if ["date", "open", "high", "low", "close", "volume"]
            .iter()
            .all(|c| find(headers, c).is_some())
        {
            Some(Layout::Yahoo)
        } else {
            return Err(header_err(
                format!("cannot tell the layout from the header `{}`", headers.join(",")),
                &format!("pass --layout yahoo|tushare, or {columns_hint}"),
            ));
        };
        match layout {
            Some(Layout::Yahoo) => named.extend([
                ("date", "Date"),
                ("open", "Open"),
                ("high", "High"),
                ("low", "Low"),
                ("close", "Close"),
                ("volume", "Volume"),
            ]),
            Some(Layout::Tushare) => named.extend([
                ("symbol", "ts_code"),
                ("date", "trade_date"),
                ("open", "open"),
                ("high", "high"),
                ("low", "low"),
                ("close", "close"),
                ("volume", "vol"),
                ("amount", "amount"),
            ]),
            None => {}
        }
        let column = |field: &str| -> Result<Option<usize>, ImportError> {
            match named.iter().find(|(f, _)| *f == field) {
                Some((_, col)) => find(headers, col)
                    .map(Some)
                    .ok_or_else(|| header_err(format!("no column `{col}` (for {field})"), columns_hint)),
                None => Ok(None),
            }
        };
        let required = |field: &str| -> Result<usize, ImportError> {
            column(field)?.ok_or_else(|| header_err(format!("no column for {field}"), columns_hint))
        };
        // Optional columns of the known layouts are used when present.
        let optional = |field: &str, name: &str| -> Result<Option<usize>, ImportError> {
            Ok(column(field)?.or_else(|| layout.and_then(|_| find(headers, name))))
        };
        let symbol = match (column("symbol")?, &opts.symbol) {
            (Some(i), _) => Symbol::Column(i),
            (None, Some(code)) => Symbol::Fixed(code.clone()),
            (None, None) => {
                let code = stem(path);
                if !is_valid_code(&code) {
                    return Err(header_err(
                        format!("the file name `{code}` is not a valid symbol code"),
                        "pass --symbol CODE, or map a symbol column with --columns",
                    ));
                }
                Symbol::Fixed(code)
            }
        };
        let tushare = layout == Some(Layout::Tushare);
        Ok(Mapping {
            date: required("date")?,
            open: required("open")?,
            high: required("high")?,
            low: required("low")?,
            close: required("close")?,
            volume: required("volume")?,
            amount: optional("amount", "amount")?,
            adj_close: optional("adj_close", "Adj Close")?,
            adj_factor: optional("adj_factor", "adj_factor")?,
            symbol,
            volume_scale: if tushare { 100.0 } else { 1.0 },
            amount_scale: if tushare { 1000.0 } else { 1.0 },
            date_format: opts
                .date_format
                .clone()
                .or_else(|| tushare.then(|| "%Y%m%d".to_owned())),
        })
    }
}

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

fn date(text: &str, format: Option<&str>) -> Result<NaiveDate, String> {
    if let Some(f) = format {
        return NaiveDate::parse_from_str(text, f).map_err(|_| format!("date: `{text}` does not match `{f}`"));
    }
    // A timestamp such as `2020-01-02 00:00:00` keeps its date part.
    let day = text.split([' ', 'T']).next().unwrap_or(text);
    ["%Y-%m-%d", "%Y%m%d", "%Y/%m/%d"]
        .iter()
        .find_map(|f| NaiveDate::parse_from_str(day, f).ok())
        .ok_or_else(|| format!("date: `{text}` is not a date (use --date-format)"))
}

/// Parses and checks one data row: `(symbol code, bar)` or what is wrong with it.
pub(crate) fn parse_row(m: &Mapping, record: &csv::StringRecord) -> Result<(String, Bar), String> {
    let code = match &m.symbol {
        Symbol::Fixed(code) => code.clone(),
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
    for (name, v) in [("open", open), ("high", high), ("low", low), ("close", close)] {
        if v <= 0.0 {
            return Err(format!("{name} must be positive, got {v}"));
        }
    }
    if high < low {
        return Err(format!("high {high} is below low {low}"));
    }
    if volume < 0.0 {
        return Err(format!("negative volume {volume}"));
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
