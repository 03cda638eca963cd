//! Reading one CSV file for import (file -> header -> column mapping -> checked `Bar`s).
//!
//! Columns come from an explicit `--columns` mapping, a known `--layout`, or their usual names
//! (`Date`/`trade_date`/..., `Open`, ..., `Symbol`/`Ticker`/`code`/`ts_code`). A file without a
//! symbol column holds one symbol; [`SymbolGuess`] notices when such a file is really long
//! format, so the error can name the column to map instead of listing every repeated date.

use super::import::{ImportError, ImportOptions, Layout};
use super::{is_valid_code, Bar};
use chrono::NaiveDate;
use std::collections::HashMap;
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

/// Whether a value looks like a ticker rather than a number or a date: a valid code with a
/// letter (`AAPL`, `000001.SZ`, `BRK-B`), or a 6-digit or zero-padded exchange code
/// (`600519`, `00700`).
fn looks_like_ticker(v: &str) -> bool {
    if !is_valid_code(v) {
        return false;
    }
    if v.bytes().all(|b| b.is_ascii_digit()) {
        return v.len() == 6 || v.starts_with('0');
    }
    v.bytes().any(|b| b.is_ascii_alphabetic()) && v.parse::<f64>().is_err()
}

/// Distinct example values kept per watched column.
const EXAMPLES: usize = 3;

/// One unmapped column watched by [`SymbolGuess`].
#[derive(Debug)]
struct Watch {
    column: usize,
    /// Every value so far looks like a ticker.
    ticker_like: bool,
    /// Rows repeating an earlier date whose value here differs from / equals that row's.
    differs: u64,
    same: u64,
    examples: Vec<String>,
}

/// Watches a file read as one symbol for a column that really holds symbols: a column of
/// ticker-like values that differ between rows of the same date.
#[derive(Debug)]
pub(crate) struct SymbolGuess {
    watches: Vec<Watch>,
    /// The first row of each date: its line and the watched columns' values.
    first: HashMap<NaiveDate, (u64, Vec<String>)>,
    /// Rows whose date an earlier row of the file already had.
    repeats: u64,
    /// The first such row: (line, date, line of the earlier row).
    first_repeat: Option<(u64, NaiveDate, u64)>,
}

impl SymbolGuess {
    /// A watcher for files read as one symbol; `None` for files with a symbol column.
    pub fn new(m: &Mapping, headers: &[String]) -> Option<SymbolGuess> {
        if let Symbol::Column(_) = m.symbol {
            return None;
        }
        let used = m.used();
        let watches = (0..headers.len())
            .filter(|i| !used.contains(i))
            .map(|column| Watch {
                column,
                ticker_like: true,
                differs: 0,
                same: 0,
                examples: Vec::new(),
            })
            .collect();
        Some(SymbolGuess {
            watches,
            first: HashMap::new(),
            repeats: 0,
            first_repeat: None,
        })
    }

    /// Records one good row.
    pub fn observe(&mut self, date: NaiveDate, line: u64, record: &csv::StringRecord) {
        let values: Vec<&str> = self
            .watches
            .iter()
            .map(|w| record.get(w.column).unwrap_or(""))
            .collect();
        for (w, v) in self.watches.iter_mut().zip(&values) {
            if !w.ticker_like {
                continue;
            }
            if !looks_like_ticker(v) {
                w.ticker_like = false;
            } else if w.examples.len() < EXAMPLES && !w.examples.iter().any(|e| e == v) {
                w.examples.push((*v).to_owned());
            }
        }
        match self.first.get(&date) {
            None => {
                let kept = self
                    .watches
                    .iter()
                    .zip(&values)
                    .map(|(w, v)| if w.ticker_like { (*v).to_owned() } else { String::new() })
                    .collect();
                self.first.insert(date, (line, kept));
            }
            Some((first_line, earlier)) => {
                self.repeats += 1;
                if self.first_repeat.is_none() {
                    self.first_repeat = Some((line, date, *first_line));
                }
                for ((w, v), e) in self.watches.iter_mut().zip(&values).zip(earlier) {
                    if w.ticker_like {
                        if v == e {
                            w.same += 1;
                        } else {
                            w.differs += 1;
                        }
                    }
                }
            }
        }
    }

    /// After the whole file: when dates repeat and a column looks like the symbol column, the
    /// error that names it and the `--columns` argument that reads the file as long format.
    pub fn verdict(&self, m: &Mapping, path: &Path, headers: &[String]) -> Option<ImportError> {
        let (line, date, earlier) = self.first_repeat?;
        let usual = |w: &Watch| {
            let n = normalize(&headers[w.column]);
            USUAL_NAMES
                .iter()
                .filter(|(f, _)| *f == "symbol")
                .any(|(_, names)| names.contains(&n.as_str()))
        };
        let w = self
            .watches
            .iter()
            .filter(|w| w.ticker_like && w.differs > w.same)
            .min_by_key(|w| (!usual(w), w.column))?;
        let column = &headers[w.column];
        let (code, from) = match &m.symbol {
            Symbol::Fixed { code, from_name } => (code.as_str(), if *from_name { "the file name" } else { "--symbol" }),
            Symbol::Column(_) => return None,
        };
        let message = format!(
            "{}:{line}: date {date} already appeared on line {earlier}; {} row{} repeat an earlier date \
             because the file is read as one symbol, `{code}` (from {from})\n\
             column `{column}` looks like a symbol column: it holds codes such as {} that differ \
             between rows of the same date",
            path.display(),
            self.repeats,
            if self.repeats == 1 { "" } else { "s" },
            w.examples.join(", "),
        );
        let hint = match m.columns_arg(Some(column)) {
            Some(arg) => format!("import it as one symbol per row with --columns {}", shell_word(&arg)),
            None => format!(
                "map column `{column}` as the symbol with --columns FIELD=COLUMN,...,symbol=COLUMN \
                 (first rename the columns whose names contain a comma)"
            ),
        };
        Some(ImportError::SymbolColumn { message, hint })
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

fn date(text: &str, format: Option<&str>) -> Result<NaiveDate, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_dates_take_exactly_eight_digits() {
        let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).unwrap();
        assert_eq!(date("20200103", None), Ok(day(2020, 1, 3)));
        assert_eq!(date("20200103", Some("%Y%m%d")), Ok(day(2020, 1, 3)));
        assert_eq!(date("2020-01-03 00:00:00", None), Ok(day(2020, 1, 3)));
        assert!(date("2020013", None).is_err(), "seven digits are no date");
        assert!(date("2020013", Some("%Y%m%d")).is_err());
        assert!(date("202001031", None).is_err());
    }
}
