//! `[data]`: the stock data an experiment needs (raw TOML -> **data** -> `market::DataSpec`).
//!
//! ```toml
//! [data]
//! synth = { symbols = 500, days = 2500, seed = 42, style = "mixed", start = 2015-01-01 }
//! import = [{ path = "prices.csv", sha256 = "9f86d0...", layout = "yahoo" }]
//! require = { min_symbols = 500, min_days = 250, codes = ["AAPL"] }
//! ```
//!
//! The table is read after `[smoke]`'s `data.*` overrides are applied, so a smoke run can name a
//! smaller market; every key is checked either way, and every mistake is located at the key
//! that holds it (the `[smoke]` line when a smoke override set it).

use super::{set_path, Override, Validator};
use crate::hint::did_you_mean;
use crate::manifest::diag::ManifestError;
use crate::market::{catalog, DataSpec, ImportDecl, ImportOptions, Layout, Requirement, SynthDecl, SynthOptions};
use chrono::NaiveDate;
use clap::ValueEnum;
use serde::Deserialize;
use std::ops::Range;
use std::path::Path;

/// The defaults of `measured data synth` (checked against its argument parser in a test), so
/// `synth = { symbols = 500 }` is the market `measured data synth --symbols 500` makes.
const SYNTH_SYMBOLS: usize = 500;
const SYNTH_DAYS: usize = 2500;
const SYNTH_START: (i32, u32, u32) = (2015, 1, 1);
const SYNTH_SEED: u64 = 42;
const SYNTH_STYLE: &str = "mixed";

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawData {
    pub synth: Option<RawSynth>,
    #[serde(default)]
    pub import: Vec<RawImport>,
    pub require: Option<RawRequire>,
    #[serde(default)]
    pub versions: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawSynth {
    pub symbols: Option<usize>,
    pub days: Option<usize>,
    /// A TOML date (`2015-01-01`) or a string.
    pub start: Option<toml::Value>,
    pub seed: Option<u64>,
    pub style: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawImport {
    pub path: Option<String>,
    pub sha256: Option<String>,
    pub layout: Option<String>,
    pub symbol: Option<String>,
    pub columns: Option<String>,
    pub date_format: Option<String>,
    #[serde(default)]
    pub skip_bad: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawRequire {
    pub min_symbols: Option<usize>,
    pub min_days: Option<usize>,
    #[serde(default)]
    pub codes: Vec<String>,
}

/// The known keys of the table at `parent` (a path under `[data]`), for unknown-key hints.
pub(super) fn known_keys(parent: &[&str]) -> Option<&'static [&'static str]> {
    Some(match parent {
        ["data"] => crate::kinds::field_names::<RawData>(),
        ["data", "synth"] => crate::kinds::field_names::<RawSynth>(),
        ["data", "import", _] => crate::kinds::field_names::<RawImport>(),
        ["data", "require"] => crate::kinds::field_names::<RawRequire>(),
        _ => return None,
    })
}

impl Validator {
    /// `[data]` (`table`) with `smoke` overrides applied, checked; the spec it declares. Paths
    /// of declared files resolve against `dir`, the manifest's folder.
    pub(super) fn data(&mut self, table: Option<&toml::Table>, smoke: &[Override], dir: &Path) -> DataSpec {
        let mut merged = table.cloned().unwrap_or_default();
        // Key path under [data] -> the [smoke] key that set it.
        let mut origin: Vec<(Vec<String>, Vec<String>)> = Vec::new();
        for ov in smoke {
            let segs: Vec<String> = ov.path.split('.').skip(1).map(str::to_owned).collect();
            if let Err(msg) = set_path(&mut merged, &segs, ov.value.clone()) {
                let at: Vec<&str> = ov.at.iter().map(String::as_str).collect();
                let span = self.key_span(&at);
                self.err(ManifestError::new(msg, span).hint("[smoke] may replace a key of [data] or a whole table"));
                continue;
            }
            origin.push((segs, ov.at.clone()));
        }
        let at = |path: &[String]| -> Vec<String> {
            origin
                .iter()
                .filter(|(p, _)| path.starts_with(p) || p.starts_with(path))
                .map(|(_, at)| at.clone())
                .next_back()
                .unwrap_or_else(|| std::iter::once("data".to_owned()).chain(path.iter().cloned()).collect())
        };
        let raw = match self.raw_data(&merged, &at) {
            Some(raw) => raw,
            None => return DataSpec::default(),
        };
        let mut spec = DataSpec {
            declared: table.is_some() || !smoke.is_empty(),
            ..DataSpec::default()
        };
        if let Some(s) = raw.synth {
            let path = vec!["synth".to_owned()];
            spec.synth = self.synth(&s, &at(&path), &|k| at(&[path[0].clone(), k.to_owned()]));
        }
        for (i, imp) in raw.import.iter().enumerate() {
            let path = vec!["import".to_owned(), i.to_string()];
            let key = |k: &str| {
                let mut p = path.clone();
                p.push(k.to_owned());
                at(&p)
            };
            if let Some(decl) = self.import(imp, &at(&path), &key, dir) {
                spec.imports.push(decl);
            }
        }
        if let Some(r) = raw.require {
            let path = vec!["require".to_owned()];
            spec.require = self.require(&r, &at(&path), &|k| at(&[path[0].clone(), k.to_owned()]));
        }
        if !raw.versions.is_empty() {
            let path = vec!["versions".to_owned()];
            spec.versions_at = at(&path);
            spec.versions = self.versions(&raw.versions, &spec, &|i| at(&[path[0].clone(), i.to_string()]));
        }
        spec
    }

    /// `versions = ["bars@1"]`: stored dataset versions to read. They replace a market or
    /// files to prepare, so the two are not declared together.
    fn versions(&mut self, names: &[String], spec: &DataSpec, at: &dyn Fn(usize) -> Vec<String>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let span = self.span_of(&at(i), false);
            let valid = !name.trim().is_empty()
                && name.len() <= 200
                && name.chars().all(|c| c.is_ascii_graphic() && c != '"' && c != '\\');
            if !valid {
                self.err(
                    ManifestError::new(format!("`{name}` is not a dataset version name"), span)
                        .label("not a version")
                        .hint(
                            "name a stored version as `measured data ls` lists it: dataset@number, e.g. \"prices@1\"",
                        ),
                );
            } else if out.contains(name) {
                self.err(ManifestError::new(format!("`{name}` is listed twice"), span).hint("list each version once"));
            } else {
                out.push(name.clone());
            }
        }
        if let Some(other) = [(spec.synth.is_some(), "synth"), (!spec.imports.is_empty(), "import")]
            .into_iter()
            .find_map(|(declared, key)| declared.then_some(key))
        {
            let span = self.span_of(&at(0), false);
            self.err(
                ManifestError::new(
                    format!("[data] names stored `versions` and declares `{other}` too: a run reads one or the other"),
                    span,
                )
                .label("stored versions")
                .hint(format!(
                    "keep `versions` to read what the stock database holds, or `{other}` to have `measured run` \
                     prepare it; `require` may go with either"
                )),
            );
        }
        out
    }

    /// Deserializes the merged table, reporting unknown keys and type errors where they are.
    fn raw_data(&mut self, merged: &toml::Table, at: &dyn Fn(&[String]) -> Vec<String>) -> Option<RawData> {
        // Round-trip through text: the parser's spans map a type error back to its key.
        let text = toml::to_string(merged).ok()?;
        let de = toml::Deserializer::parse(&text).ok()?;
        let mut ignored = Vec::new();
        let parsed: Result<RawData, _> = serde_ignored::deserialize(de, |p| ignored.push(p.to_string()));
        for key in &ignored {
            let segs: Vec<String> = key.split('.').filter(|s| *s != "?").map(str::to_owned).collect();
            let place = at(&segs);
            if let [one] = segs.as_slice() {
                if let Some(e) = self.version_key(one, merged.get(one), &place) {
                    self.err(e);
                    continue;
                }
            }
            if place.first().map(String::as_str) == Some("data") {
                self.unknown_key(&place.join("."));
            } else {
                let parent: Vec<&str> = std::iter::once("data")
                    .chain(segs[..segs.len().saturating_sub(1)].iter().map(String::as_str))
                    .collect();
                let name = segs.last().cloned().unwrap_or_default();
                let known = known_keys(&parent).unwrap_or(&[]);
                let hint = did_you_mean(&name, known.iter().copied())
                    .unwrap_or_else(|| format!("known keys: {}", known.join(", ")));
                let span = self.span_of(&place, true);
                self.err(
                    ManifestError::new(
                        format!("unknown key `{name}` in `{}` (set by [smoke])", parent.join(".")),
                        span,
                    )
                    .label("unknown key")
                    .hint(hint),
                );
            }
        }
        match parsed {
            Ok(raw) => Some(raw),
            Err(e) => {
                let path = e.span().map(|s| key_path_at(&text, s.start)).unwrap_or_default();
                let span = self.span_of(&at(&path), false);
                let message = e.message().trim().to_owned();
                let hint = crate::hint::serde_hint(&message);
                self.err(ManifestError::new(format!("[data]: {message}"), span).maybe_hint(hint));
                None
            }
        }
    }

    /// `version = "bars@1"` (or `dataset`, `dataset_version`): what was meant is the
    /// `versions` list, written from the value given; or, for the content itself, `import`.
    fn version_key(&self, key: &str, value: Option<&toml::Value>, place: &[String]) -> Option<ManifestError> {
        if !matches!(key, "version" | "dataset" | "dataset_version" | "data_version" | "pin") {
            return None;
        }
        let names: Vec<String> = match value? {
            toml::Value::String(s) => vec![s.clone()],
            toml::Value::Array(a) => a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            _ => return None,
        };
        let list = names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ");
        let span = self.span_of(place, true);
        Some(
            ManifestError::new(format!("unknown key `{key}` in [data]"), span)
                .label("unknown key")
                .hint(format!(
                    "write versions = [{list}] to read stored dataset versions (as `run --data` does); to pin the \
                     content itself wherever the manifest runs, declare the file instead: import = [{{ path = \
                     \"prices.csv\", sha256 = \"...\" }}], which `measured data import` prints"
                )),
        )
    }

    fn span_of(&self, at: &[String], key: bool) -> Option<Range<usize>> {
        let at: Vec<&str> = at.iter().map(String::as_str).collect();
        if key {
            self.key_span(&at)
        } else {
            self.value_span(&at)
        }
    }

    fn synth(&mut self, s: &RawSynth, at: &[String], key: &dyn Fn(&str) -> Vec<String>) -> Option<SynthDecl> {
        let style = s.style.as_deref().unwrap_or(SYNTH_STYLE);
        let Some(style) = catalog::parse_style(style) else {
            let span = self.span_of(&key("style"), false);
            let names = catalog::style_names();
            let hint = did_you_mean(style, names.iter().map(String::as_str))
                .unwrap_or_else(|| format!("use one of {}", names.join(", ")));
            self.err(
                ManifestError::new(format!("unknown synthetic market style `{style}`"), span)
                    .label("not a style")
                    .hint(hint),
            );
            return None;
        };
        let (y, m, d) = SYNTH_START;
        let start = match &s.start {
            None => NaiveDate::from_ymd_opt(y, m, d).expect("valid date"),
            Some(v) => match date_of(v) {
                Some(date) => date,
                None => {
                    let span = self.span_of(&key("start"), false);
                    self.err(
                        ManifestError::new(format!("`start` = {v} is not a date"), span)
                            .hint("write a TOML date such as start = 2015-01-01"),
                    );
                    return None;
                }
            },
        };
        let options = SynthOptions {
            symbols: s.symbols.unwrap_or(SYNTH_SYMBOLS),
            days: s.days.unwrap_or(SYNTH_DAYS),
            start,
            seed: s.seed.unwrap_or(SYNTH_SEED),
            style,
        };
        if let Err(e) = options.check() {
            let message = e.to_string();
            let field = if message.contains("days") { "days" } else { "symbols" };
            let span = self.span_of(&key(field), false);
            self.err(
                ManifestError::new(format!("[data] synth: {message}"), span)
                    .hint("the same limits as `measured data synth`"),
            );
            return None;
        }
        Some(SynthDecl {
            options,
            at: at.to_vec(),
        })
    }

    fn import(
        &mut self,
        raw: &RawImport,
        at: &[String],
        key: &dyn Fn(&str) -> Vec<String>,
        dir: &Path,
    ) -> Option<ImportDecl> {
        let Some(file) = raw.path.clone().filter(|p| !p.trim().is_empty()) else {
            let span = self.span_of(at, false);
            self.err(
                ManifestError::new("a [data] import has no `path`", span)
                    .label("missing path")
                    .hint("write e.g. { path = \"data/prices.csv\", sha256 = \"...\" }; the path is relative to the manifest's folder"),
            );
            return None;
        };
        let path = dir.join(&file);
        let now = crate::market::file_sha256(&path).ok();
        let sha256 = match raw.sha256.as_deref().map(str::trim) {
            Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => h.to_ascii_lowercase(),
            other => {
                let (message, span) = match other {
                    None => (
                        format!("[data] import of `{file}` has no `sha256`"),
                        self.span_of(at, false),
                    ),
                    Some(h) => (
                        format!("`sha256` = \"{h}\" is not a sha256 (64 hex digits)"),
                        self.span_of(&key("sha256"), false),
                    ),
                };
                let hint = match &now {
                    Some(h) => format!(
                        "declare the content the experiment is measured on: sha256 = \"{h}\" (the file's sha256 now)"
                    ),
                    None => "declare the content the experiment is measured on: sha256 = \"<output of sha256sum>\""
                        .to_owned(),
                };
                self.err(ManifestError::new(message, span).label("the file's content").hint(hint));
                return None;
            }
        };
        let layout = match raw.layout.as_deref() {
            None => None,
            Some(l) => match Layout::from_str(l, true) {
                Ok(layout) => Some(layout),
                Err(_) => {
                    let span = self.span_of(&key("layout"), false);
                    self.err(
                        ManifestError::new(format!("unknown layout `{l}`"), span)
                            .hint("use \"yahoo\" or \"tushare\", or map columns with `columns`"),
                    );
                    return None;
                }
            },
        };
        if let Some(code) = raw.symbol.as_deref().filter(|c| !crate::market::is_valid_code(c)) {
            let span = self.span_of(&key("symbol"), false);
            self.err(
                ManifestError::new(format!("`symbol` = \"{code}\" is not a valid code"), span)
                    .hint("1 to 32 of A-Z a-z 0-9 . _ - ^ ="),
            );
            return None;
        }
        Some(ImportDecl {
            file,
            path,
            sha256,
            options: ImportOptions {
                files: Vec::new(),
                layout,
                symbol: raw.symbol.clone(),
                columns: raw.columns.clone(),
                skip_bad: raw.skip_bad,
                date_format: raw.date_format.clone(),
                ..ImportOptions::default()
            },
            at: at.to_vec(),
        })
    }

    fn require(&mut self, r: &RawRequire, at: &[String], key: &dyn Fn(&str) -> Vec<String>) -> Requirement {
        for (name, value) in [("min_symbols", r.min_symbols), ("min_days", r.min_days)] {
            if value == Some(0) {
                let span = self.span_of(&key(name), false);
                self.err(
                    ManifestError::new(format!("`{name}` must be at least 1"), span)
                        .hint("leave it out to require nothing"),
                );
            }
        }
        let mut codes: Vec<String> = Vec::new();
        for (i, code) in r.codes.iter().enumerate() {
            let mut place = key("codes");
            place.push(i.to_string());
            if !crate::market::is_valid_code(code) || codes.contains(code) {
                let span = self.span_of(&place, false);
                let why = if codes.contains(code) {
                    "is listed twice"
                } else {
                    "is not a valid code"
                };
                self.err(ManifestError::new(format!("`{code}` {why}"), span).hint("list each symbol code once"));
                continue;
            }
            codes.push(code.clone());
        }
        Requirement {
            min_symbols: r.min_symbols,
            min_days: r.min_days,
            codes,
            at: at.to_vec(),
        }
    }
}

/// A TOML date or a `YYYY-MM-DD` string.
fn date_of(v: &toml::Value) -> Option<NaiveDate> {
    let text = match v {
        toml::Value::Datetime(d) if d.time.is_none() && d.offset.is_none() => d.to_string(),
        toml::Value::String(s) => s.clone(),
        _ => return None,
    };
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").ok()
}

/// The key path (under the table `text` holds) of the deepest key whose entry contains byte
/// `offset`.
fn key_path_at(text: &str, offset: usize) -> Vec<String> {
    let mut path = Vec::new();
    if let Ok(doc) = toml_edit::Document::parse(text.to_owned()) {
        descend_table(doc.as_table(), offset, &mut path);
    }
    path
}

fn covers(key: Option<Range<usize>>, value: Option<Range<usize>>, offset: usize) -> bool {
    match (key, value) {
        (Some(k), Some(v)) => k.start <= offset && offset <= v.end,
        (Some(s), None) | (None, Some(s)) => s.start <= offset && offset <= s.end,
        (None, None) => false,
    }
}

fn descend_table(t: &toml_edit::Table, offset: usize, path: &mut Vec<String>) -> bool {
    for (k, item) in t.iter() {
        let key = t.key(k).and_then(|k| k.span());
        let hit = match item {
            toml_edit::Item::Table(inner) => {
                path.push(k.to_owned());
                if descend_table(inner, offset, path) {
                    return true;
                }
                path.pop();
                false
            }
            toml_edit::Item::ArrayOfTables(arr) => {
                for (i, inner) in arr.iter().enumerate() {
                    path.extend([k.to_owned(), i.to_string()]);
                    if descend_table(inner, offset, path) {
                        return true;
                    }
                    path.truncate(path.len() - 2);
                }
                false
            }
            toml_edit::Item::Value(v) => covers(key, v.span(), offset),
            toml_edit::Item::None => false,
        };
        if hit {
            path.push(k.to_owned());
            if let toml_edit::Item::Value(v) = item {
                descend_value(v, offset, path);
            }
            return true;
        }
    }
    false
}

fn descend_value(v: &toml_edit::Value, offset: usize, path: &mut Vec<String>) {
    match v {
        toml_edit::Value::InlineTable(t) => {
            for (k, inner) in t.iter() {
                if covers(t.key(k).and_then(|k| k.span()), inner.span(), offset) {
                    path.push(k.to_owned());
                    descend_value(inner, offset, path);
                    return;
                }
            }
        }
        toml_edit::Value::Array(a) => {
            for (i, inner) in a.iter().enumerate() {
                if covers(None, inner.span(), offset) {
                    path.push(i.to_string());
                    descend_value(inner, offset, path);
                    return;
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        synth: crate::cli::SynthArgs,
    }

    #[test]
    fn synth_defaults_are_those_of_the_command() {
        let a = Cli::try_parse_from(["x"]).unwrap().synth;
        let (y, m, d) = SYNTH_START;
        assert_eq!(
            (a.symbols, a.days, a.start, a.seed, catalog::style_name(a.style)),
            (
                SYNTH_SYMBOLS,
                SYNTH_DAYS,
                NaiveDate::from_ymd_opt(y, m, d).unwrap(),
                SYNTH_SEED,
                SYNTH_STYLE.to_owned()
            )
        );
    }

    #[test]
    fn type_errors_are_found_by_key_path() {
        let text = "[synth]\nsymbols = \"x\"\ndays = 3\n\n[[import]]\npath = \"a\"\n\n[[import]]\npath = 5\n";
        let offset = text.find("\"x\"").unwrap();
        assert_eq!(key_path_at(text, offset), vec!["synth", "symbols"]);
        let offset = text.find('5').unwrap();
        assert_eq!(key_path_at(text, offset), vec!["import", "1", "path"]);
        let inline = "synth = { seed = \"s\" }\n";
        assert_eq!(
            key_path_at(inline, inline.find("\"s\"").unwrap()),
            vec!["synth", "seed"]
        );
    }
}
