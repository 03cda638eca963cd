//! Which column holds the symbol, guessed from the values when the headers do not say.

use super::*;
use crate::market::source::import_options::ImportError;
use crate::market::stock::is_valid_code;
use chrono::NaiveDate;
use std::collections::HashMap;
use std::path::Path;

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
