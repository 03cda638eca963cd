//! CSV import (CLI `data import FILE...` -> validate every row -> [`ImportPlan`] -> write ->
//! stock tables).
//!
//! All input is parsed and checked before anything is written ([`prepare`], which is also the
//! whole of a dry run), so a bad file either changes nothing or, with `skip_bad`, loses only its
//! bad rows. An import writes one new dataset version in one transaction and never changes a
//! stored one: the same files imported again find their version; `--into DATASET` makes a new
//! version of that dataset holding its newest version's bars and the files', and stops at the
//! first bars the two disagree on unless `--replace` says the files' win.

use super::csvmap::{open_csv, parse_row, Mapping, SymbolGuess};
use super::import_options::{plural, BadRow, ImportError, ImportOptions};
use crate::market::stock::{is_valid_code, Bar, SymbolRows};
use crate::market::versions::FileRef;
use chrono::NaiveDate;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Bad rows listed in an error message; the rest are counted.
const SHOWN_BAD_ROWS: usize = 20;

/// Symbol codes named in a dry run's summary; the rest are counted.
const SHOWN_SYMBOLS: usize = 10;
/// File names listed per column mapping in a dry run's summary.
const SHOWN_FILES: usize = 3;

/// What an import would write: every file read and checked, nothing written.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportPlan {
    pub files: usize,
    /// Data rows read (good and bad).
    pub rows_read: u64,
    /// Good rows, each one bar to insert or update.
    pub rows: u64,
    /// Symbol codes, sorted.
    pub codes: Vec<String>,
    pub first_date: Option<NaiveDate>,
    pub last_date: Option<NaiveDate>,
    /// Each column mapping used (see the dry run's output) with the files it read.
    pub mappings: Vec<(String, Vec<String>)>,
    /// Bad rows to skip (only with `skip_bad`; otherwise they are an error).
    pub skipped: usize,
    /// The first bad rows, for the summary.
    pub bad: Vec<BadRow>,
    /// Per input file, in the order given: its sha256 and the rows it contributes.
    pub sources: Vec<FileSummary>,
    pub(super) groups: Vec<SymbolRows>,
    /// Per group, per bar: where it was read (index into `sources`, CSV line).
    pub(super) positions: Vec<Vec<(usize, u64)>>,
}

/// One input file of an import: its content hash (of the bytes on disk, as `sha256sum` prints
/// it) and the good rows it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSummary {
    /// The path as given.
    pub file: String,
    pub sha256: String,
    /// Its symbols, sorted.
    pub codes: Vec<String>,
    pub rows: u64,
    pub first_date: Option<NaiveDate>,
    pub last_date: Option<NaiveDate>,
}

impl FileSummary {
    /// The file as a version's origin names it.
    pub fn file_ref(&self) -> FileRef {
        FileRef {
            file: self.file.clone(),
            sha256: self.sha256.clone(),
        }
    }
}

/// The sha256 of a file's bytes, in hex.
pub fn file_sha256(path: &std::path::Path) -> std::io::Result<String> {
    Ok(crate::digest::hex_sha256(&std::fs::read(path)?))
}

impl fmt::Display for ImportPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "would import {} rows of {} symbol{} from {} file{} ({} rows read",
            self.rows,
            self.codes.len(),
            plural(self.codes.len()),
            self.files,
            plural(self.files),
            self.rows_read
        )?;
        if let (Some(a), Some(b)) = (self.first_date, self.last_date) {
            write!(f, ", {a} to {b}")?;
        }
        let shown: Vec<&str> = self.codes.iter().take(SHOWN_SYMBOLS).map(String::as_str).collect();
        let shown = if shown.is_empty() {
            "none".to_owned()
        } else {
            shown.join(", ")
        };
        write!(f, ")\nsymbols: {shown}")?;
        if self.codes.len() > SHOWN_SYMBOLS {
            write!(f, ", ... and {} more", self.codes.len() - SHOWN_SYMBOLS)?;
        }
        write!(f, "\ncolumns:")?;
        for (mapping, files) in &self.mappings {
            let mut shown = files.iter().take(SHOWN_FILES).cloned().collect::<Vec<_>>().join(", ");
            if files.len() > SHOWN_FILES {
                shown.push_str(&format!(" and {} more", files.len() - SHOWN_FILES));
            }
            write!(f, "\n  {mapping}: {shown}")?;
        }
        write!(f, "\nbad rows to skip: {}", self.skipped)?;
        for row in &self.bad {
            write!(f, "\n  {row}")?;
        }
        if self.skipped > self.bad.len() {
            write!(f, "\n  ... and {} more", self.skipped - self.bad.len())?;
        }
        Ok(())
    }
}

// Long because: one pass over the files, then each part of the plan computed from it in order.
/// Reads and checks every row of `opts.files` without touching a database: the plan an import
/// would write, or the error it would fail with (bad rows are an error unless `skip_bad`).
pub fn prepare(opts: &ImportOptions) -> Result<ImportPlan, ImportError> {
    if opts.files.is_empty() {
        return Err(ImportError::Options("no files to import".into()));
    }
    if let Some(code) = &opts.symbol {
        if !is_valid_code(code) {
            return Err(ImportError::Options(format!(
                "--symbol `{code}` is not a valid code (1 to 32 of A-Z a-z 0-9 . _ - ^ =)"
            )));
        }
    }
    let mut bars: HashMap<String, BTreeMap<NaiveDate, (Bar, String, u64)>> = HashMap::new();
    let mut bad = Vec::new();
    let mut rows_read = 0u64;
    let mut mappings: Vec<(String, Vec<String>)> = Vec::new();
    let mut hashes = Vec::with_capacity(opts.files.len());
    for path in &opts.files {
        let shown = path.display().to_string();
        hashes.push(file_sha256(path).map_err(|e| ImportError::Io {
            path: shown.clone(),
            message: e.to_string(),
        })?);
        let (headers, mut reader) = open_csv(path)?;
        let mapping = Mapping::for_file(opts, path, &headers)?;
        let described = mapping.describe();
        match mappings.iter_mut().find(|(m, _)| *m == described) {
            Some((_, files)) => files.push(shown.clone()),
            None => mappings.push((described, vec![shown.clone()])),
        }
        let mut guess = SymbolGuess::new(&mapping, &headers);
        let mut record = csv::StringRecord::new();
        loop {
            let more = reader.read_record(&mut record).map_err(|e| ImportError::Io {
                path: shown.clone(),
                message: e.to_string(),
            })?;
            if !more {
                break;
            }
            let line = record.position().map_or(0, csv::Position::line);
            rows_read += 1;
            let parsed = parse_row(&mapping, &record).and_then(|(code, bar)| {
                if let Some(g) = guess.as_mut() {
                    g.observe(bar.date, line, &record);
                }
                let by_date = bars.entry(code.clone()).or_default();
                match by_date.get(&bar.date) {
                    Some((_, file, first)) => Err(format!(
                        "duplicate date {} for {code} (first at {file}:{first})",
                        bar.date
                    )),
                    None => {
                        by_date.insert(bar.date, (bar, shown.clone(), line));
                        Ok(())
                    }
                }
            });
            if let Err(message) = parsed {
                bad.push(BadRow {
                    file: shown.clone(),
                    line,
                    message,
                });
            }
        }
        // A long file read as one symbol is misread as a whole: skipping rows cannot fix it.
        if let Some(err) = guess.and_then(|g| g.verdict(&mapping, path, &headers)) {
            return Err(err);
        }
    }
    let skipped = bad.len();
    bad.truncate(SHOWN_BAD_ROWS);
    if skipped > 0 && !opts.skip_bad {
        return Err(ImportError::BadRows { bad, total: skipped });
    }
    let mut codes: Vec<String> = bars
        .iter()
        .filter(|(_, b)| !b.is_empty())
        .map(|(c, _)| c.clone())
        .collect();
    codes.sort();
    let groups: Vec<SymbolRows> = codes
        .iter()
        .map(|code| SymbolRows {
            code: code.clone(),
            bars: bars[code].values().map(|(b, _, _)| *b).collect(),
        })
        .collect();
    let file_index: HashMap<String, usize> = opts
        .files
        .iter()
        .enumerate()
        .map(|(i, p)| (p.display().to_string(), i))
        .collect();
    let positions: Vec<Vec<(usize, u64)>> = codes
        .iter()
        .map(|code| {
            bars[code]
                .values()
                .map(|(_, file, line)| (file_index.get(file).copied().unwrap_or(0), *line))
                .collect()
        })
        .collect();
    // One pass over every kept bar, summed per file (codes are visited in sorted order).
    let mut per_file: HashMap<&str, FileSummary> = HashMap::new();
    for code in &codes {
        for (date, (_, file, _)) in &bars[code] {
            let s = per_file.entry(file.as_str()).or_insert_with(|| FileSummary {
                file: file.clone(),
                sha256: String::new(),
                codes: Vec::new(),
                rows: 0,
                first_date: None,
                last_date: None,
            });
            if s.codes.last() != Some(code) {
                s.codes.push(code.clone());
            }
            s.rows += 1;
            s.first_date = Some(s.first_date.map_or(*date, |d| d.min(*date)));
            s.last_date = Some(s.last_date.map_or(*date, |d| d.max(*date)));
        }
    }
    let sources = opts
        .files
        .iter()
        .zip(hashes)
        .map(|(path, sha256)| {
            let file = path.display().to_string();
            let mut s = per_file.remove(file.as_str()).unwrap_or_else(|| FileSummary {
                file,
                sha256: String::new(),
                codes: Vec::new(),
                rows: 0,
                first_date: None,
                last_date: None,
            });
            s.sha256 = sha256;
            s
        })
        .collect();
    Ok(ImportPlan {
        files: opts.files.len(),
        rows_read,
        rows: groups.iter().map(|g| g.bars.len() as u64).sum(),
        first_date: groups.iter().filter_map(|g| g.bars.first()).map(|b| b.date).min(),
        last_date: groups.iter().filter_map(|g| g.bars.last()).map(|b| b.date).max(),
        codes,
        mappings,
        skipped,
        bad,
        sources,
        groups,
        positions,
    })
}
