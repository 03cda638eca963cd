//! Reading one CSV file for import (file -> header -> column mapping -> checked `Bar`s).
//!
//! Columns come from an explicit `--columns` mapping, a known `--layout`, or their usual names
//! (`Date`/`trade_date`/..., `Open`, ..., `Symbol`/`Ticker`/`code`/`ts_code`). A file without a
//! symbol column holds one symbol; [`SymbolGuess`] notices when such a file is really long
//! format, so the error can name the column to map instead of listing every repeated date.

mod row;
mod symbols;

pub(crate) use row::parse_row;
pub(crate) use symbols::SymbolGuess;

use super::import_options::{ImportError, ImportOptions, Layout};
use crate::market::stock::is_valid_code;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// A CSV reader over a plain or decompressed file.
pub(crate) type CsvReader = csv::Reader<Box<dyn Read>>;

/// The fields of a bar, in `--columns` order.
pub(crate) const FIELDS: [&str; 10] = [
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

/// Fields every mapping needs.
const REQUIRED: [&str; 6] = ["date", "open", "high", "low", "close", "volume"];

/// Header names recognised without `--columns`, most preferred first, compared after
/// [`normalize`] (so `Adj Close`, `adj_close` and `ADJCLOSE` are one name).
const USUAL_NAMES: [(&str, &[&str]); 10] = [
    (
        "date",
        &["date", "tradedate", "tradingdate", "datetime", "timestamp", "day"],
    ),
    ("open", &["open"]),
    ("high", &["high"]),
    ("low", &["low"]),
    ("close", &["close"]),
    ("volume", &["volume", "vol"]),
    ("amount", &["amount"]),
    ("adj_close", &["adjclose", "adjustedclose"]),
    ("adj_factor", &["adjfactor"]),
    ("symbol", &["symbol", "ticker", "code", "tscode"]),
];

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
    /// `(field, header)` of every mapped column, in [`FIELDS`] order.
    names: Vec<(&'static str, String)>,
    source: Source,
}

#[derive(Debug, Clone)]
enum Symbol {
    Column(usize),
    /// One symbol for the whole file: `--symbol`, or the file name when `from_name`.
    Fixed {
        code: String,
        from_name: bool,
    },
}

/// How the mapping of a file was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Columns,
    /// `--columns` named some fields; the others were found under their usual names.
    ColumnsAndDetected,
    Layout(Layout),
    Detected,
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
        .map(|h| h.trim_start_matches('\u{feff}').trim().to_owned())
        .collect();
    Ok((headers, reader))
}

/// The column named `name`: an exact match first, else one that differs only in case.
fn find(headers: &[String], name: &str) -> Option<usize> {
    let name = name.trim();
    headers
        .iter()
        .position(|h| h == name)
        .or_else(|| headers.iter().position(|h| h.eq_ignore_ascii_case(name)))
}

/// `Adj. Close` -> `adjclose`: lower case without spaces, `_`, `-` and `.`.
fn normalize(header: &str) -> String {
    header
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-' | '.'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The columns found under their usual names, as `(field, header)`.
fn detect(headers: &[String]) -> Vec<(&'static str, String)> {
    let normalized: Vec<String> = headers.iter().map(|h| normalize(h)).collect();
    USUAL_NAMES
        .iter()
        .filter_map(|(field, names)| {
            names
                .iter()
                .find_map(|n| normalized.iter().position(|h| h == n))
                .map(|i| (*field, headers[i].clone()))
        })
        .collect()
}

/// Parses `--columns FIELD=COLUMN,...`.
fn parse_columns(spec: &str) -> Result<Vec<(&'static str, String)>, ImportError> {
    let mut named: Vec<(&'static str, String)> = Vec::new();
    for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (field, column) = pair
            .split_once('=')
            .ok_or_else(|| ImportError::Options(format!("--columns: `{pair}` is not FIELD=COLUMN")))?;
        let field = FIELDS.iter().find(|f| **f == field.trim()).ok_or_else(|| {
            ImportError::Options(format!(
                "--columns: unknown field `{field}` (expected one of {})",
                FIELDS.join(", ")
            ))
        })?;
        if named.iter().any(|(f, _)| f == field) {
            return Err(ImportError::Options(format!("--columns: `{field}` is mapped twice")));
        }
        named.push((field, column.trim().to_owned()));
    }
    Ok(named)
}

/// The columns a known layout names.
fn layout_columns(layout: Layout) -> Vec<(&'static str, String)> {
    let pairs: &[(&'static str, &str)] = match layout {
        Layout::Yahoo => &[
            ("date", "Date"),
            ("open", "Open"),
            ("high", "High"),
            ("low", "Low"),
            ("close", "Close"),
            ("volume", "Volume"),
        ],
        Layout::Tushare => &[
            ("symbol", "ts_code"),
            ("date", "trade_date"),
            ("open", "open"),
            ("high", "high"),
            ("low", "low"),
            ("close", "close"),
            ("volume", "vol"),
            ("amount", "amount"),
        ],
    };
    pairs.iter().map(|(f, c)| (*f, (*c).to_owned())).collect()
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

/// `text` as one shell word: unchanged when it is safe, else single-quoted.
pub(crate) fn shell_word(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.,=/:@%+^".contains(&b));
    if safe {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

impl Mapping {
    // Long because: it resolves each column in precedence order (`--columns`, `--layout`, a known
    // layout, usual names) and gives each failure its own hint.
    /// The mapping of one file: explicit `--columns`, else `--layout`, else the tushare layout
    /// when its columns are there, else the usual column names.
    pub fn for_file(opts: &ImportOptions, path: &Path, headers: &[String]) -> Result<Mapping, ImportError> {
        let header_err = |message: String, hint: &str| ImportError::Header {
            path: path.display().to_string(),
            message,
            hint: hint.to_owned(),
        };
        let columns_hint = "name the columns with --columns \
            date=Date,open=Open,high=High,low=Low,close=Close,volume=Volume[,amount=..,symbol=..]";
        let (source, mut named) = if let Some(spec) = &opts.columns {
            let mut named = parse_columns(spec)?;
            // Fields --columns leaves out are found under their usual names, in columns it
            // does not already use; a symbol only when --symbol does not give one.
            let detected: Vec<(&'static str, String)> = detect(headers)
                .into_iter()
                .filter(|(f, c)| {
                    let taken = named
                        .iter()
                        .any(|(g, d)| g == f || find(headers, d) == find(headers, c));
                    let given = *f == "symbol" && opts.symbol.is_some();
                    !taken && !given
                })
                .collect();
            if detected.is_empty() {
                (Source::Columns, named)
            } else {
                named.extend(detected);
                (Source::ColumnsAndDetected, named)
            }
        } else if let Some(layout) = opts.layout {
            (Source::Layout(layout), layout_columns(layout))
        } else if ["ts_code", "trade_date", "vol"]
            .iter()
            .all(|c| find(headers, c).is_some())
        {
            (Source::Layout(Layout::Tushare), layout_columns(Layout::Tushare))
        } else {
            let found = detect(headers);
            let missing: Vec<&str> = REQUIRED
                .iter()
                .filter(|f| !found.iter().any(|(g, _)| g == *f))
                .copied()
                .collect();
            if !missing.is_empty() {
                return Err(header_err(
                    format!(
                        "cannot tell the layout from the header `{}` (no column for {})",
                        headers.join(","),
                        missing.join(", ")
                    ),
                    &format!("pass --layout yahoo|tushare, or {columns_hint}"),
                ));
            }
            (Source::Detected, found)
        };
        // An explicit --symbol beats a symbol column found by its name.
        if source == Source::Detected && opts.symbol.is_some() {
            named.retain(|(f, _)| *f != "symbol");
        }
        let layout = match source {
            Source::Layout(l) => Some(l),
            _ => None,
        };
        let mut at: [Option<usize>; FIELDS.len()] = [None; FIELDS.len()];
        let mut absent = Vec::new();
        for (field, col) in &named {
            match (FIELDS.iter().position(|f| f == field), find(headers, col)) {
                (Some(k), Some(i)) => at[k] = Some(i),
                _ => absent.push(format!("`{col}` (for {field})")),
            }
        }
        if !absent.is_empty() {
            return Err(header_err(
                format!("no column {} in the header `{}`", absent.join(", "), headers.join(",")),
                columns_hint,
            ));
        }
        // Optional columns of the known layouts are used when present.
        if layout.is_some() {
            for (field, name) in [
                ("amount", "amount"),
                ("adj_close", "Adj Close"),
                ("adj_factor", "adj_factor"),
            ] {
                if let Some(k) = FIELDS.iter().position(|f| *f == field) {
                    at[k] = at[k].or_else(|| find(headers, name));
                }
            }
        }
        let get = |field: &str| FIELDS.iter().position(|f| *f == field).and_then(|k| at[k]);
        let required =
            |field: &str| get(field).ok_or_else(|| header_err(format!("no column for {field}"), columns_hint));
        let symbol = match (get("symbol"), &opts.symbol) {
            (Some(i), _) => Symbol::Column(i),
            (None, Some(code)) => Symbol::Fixed {
                code: code.clone(),
                from_name: false,
            },
            (None, None) => {
                let code = stem(path);
                if !is_valid_code(&code) {
                    return Err(header_err(
                        format!("the file name `{code}` is not a valid symbol code"),
                        "pass --symbol CODE, or map a symbol column with --columns",
                    ));
                }
                Symbol::Fixed { code, from_name: true }
            }
        };
        let names = FIELDS
            .iter()
            .zip(at)
            .filter_map(|(f, i)| i.map(|i| (*f, headers[i].clone())))
            .collect();
        let tushare = layout == Some(Layout::Tushare);
        Ok(Mapping {
            date: required("date")?,
            open: required("open")?,
            high: required("high")?,
            low: required("low")?,
            close: required("close")?,
            volume: required("volume")?,
            amount: get("amount"),
            adj_close: get("adj_close"),
            adj_factor: get("adj_factor"),
            symbol,
            volume_scale: if tushare { 100.0 } else { 1.0 },
            amount_scale: if tushare { 1000.0 } else { 1.0 },
            date_format: opts
                .date_format
                .clone()
                .or_else(|| tushare.then(|| "%Y%m%d".to_owned())),
            names,
            source,
        })
    }

    /// The mapping as `--columns` text (`FIELD=COLUMN,...`), `symbol` replaced by `symbol`
    /// when given; `None` when a column name contains a comma, which `--columns` cannot name.
    fn columns_arg(&self, symbol: Option<&str>) -> Option<String> {
        let pairs: Vec<(&str, &str)> = self
            .names
            .iter()
            .filter(|(f, _)| symbol.is_none() || *f != "symbol")
            .map(|(f, c)| (*f, c.as_str()))
            .chain(symbol.map(|s| ("symbol", s)))
            .collect();
        if pairs.iter().any(|(_, c)| c.contains(',')) {
            return None;
        }
        Some(
            pairs
                .iter()
                .map(|(f, c)| format!("{f}={c}"))
                .collect::<Vec<_>>()
                .join(","),
        )
    }

    /// What this mapping reads, for the dry run: the same for every file it fits (a symbol
    /// taken from the file name is not spelled out).
    pub fn describe(&self) -> String {
        let pairs = self
            .names
            .iter()
            .map(|(f, c)| format!("{f}={c}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut s = pairs;
        match &self.symbol {
            Symbol::Column(_) => {}
            Symbol::Fixed { from_name: true, .. } => s.push_str("; symbol from the file name"),
            Symbol::Fixed { code, from_name: false } => s.push_str(&format!("; symbol {code} (--symbol)")),
        }
        if let Some(f) = &self.date_format {
            s.push_str(&format!("; dates {f}"));
        }
        let how = match self.source {
            Source::Columns => "--columns",
            Source::ColumnsAndDetected => "--columns, the rest detected",
            Source::Layout(Layout::Yahoo) => "yahoo layout",
            Source::Layout(Layout::Tushare) => "tushare layout: vol in lots of 100, amount in thousands",
            Source::Detected => "detected",
        };
        format!("{s} ({how})")
    }

    /// Columns read by this mapping.
    fn used(&self) -> Vec<usize> {
        let mut used = vec![self.date, self.open, self.high, self.low, self.close, self.volume];
        used.extend([self.amount, self.adj_close, self.adj_factor].into_iter().flatten());
        if let Symbol::Column(i) = self.symbol {
            used.push(i);
        }
        used
    }
}

#[cfg(test)]
mod tests;
