//! The identity of the stock data a run could read, stored with the run in words a person can
//! check (prepare -> **identity** -> store -> show, report, compare), and the counting queries
//! behind it and behind the preflight.

use super::stock::MarketError;
use super::versions::{self, short, DataView, Origin, VersionRef};
use crate::db::Db;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;

/// Codes per IN list on SQLite (far below its bound-parameter limit).
const CODES_PER_QUERY: usize = 500;

/// What stock data a run read: how much, which dates, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataIdentity {
    pub symbols: u64,
    pub rows: u64,
    pub first_date: Option<NaiveDate>,
    pub last_date: Option<NaiveDate>,
    /// Where it came from, as far as the stock database's records tell.
    #[serde(default)]
    pub sources: Vec<DataSource>,
    /// The dataset versions it is (empty for runs stored before versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<VersionRef>,
}

/// One part of the stock data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DataSource {
    /// A synthetic market: the same parameters always generate the same bars.
    Synth {
        symbols: u64,
        days: u64,
        start: NaiveDate,
        seed: u64,
        style: String,
        /// The generator version that wrote it; identities stored before it was recorded
        /// read as 1, the generator of that time.
        #[serde(default = "first_generator")]
        generator: u32,
    },
    /// An imported CSV file, by content.
    Import {
        file: String,
        sha256: String,
        symbols: u64,
        rows: u64,
    },
    /// Bars no record describes (written by an older version, or by hand).
    Unknown { symbols: u64, rows: u64 },
    /// Several imported files in one version, or a version extended with files.
    Files {
        files: Vec<versions::FileRef>,
        /// The version these files extend (`data import --into`), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extends: Option<String>,
        symbols: u64,
        rows: u64,
    },
}

fn first_generator() -> u32 {
    1
}

impl DataIdentity {
    pub fn to_json(&self) -> String {
        // Plain numbers, strings and dates: serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored identity; `None` when it is absent or unreadable (shown as unknown, never
    /// guessed).
    pub fn from_json(text: Option<&str>) -> Option<DataIdentity> {
        text.and_then(|t| serde_json::from_str(t).ok())
    }

    /// `500 symbols, 1,142,718 rows, 2015-01-01 to 2024-07-30`.
    pub fn extent(&self) -> String {
        let mut s = format!(
            "{} symbol{}, {} row{}",
            thousands(self.symbols),
            if self.symbols == 1 { "" } else { "s" },
            thousands(self.rows),
            if self.rows == 1 { "" } else { "s" }
        );
        if let (Some(a), Some(b)) = (self.first_date, self.last_date) {
            s.push_str(&format!(", {a} to {b}"));
        }
        s
    }

    /// Where the data came from, in words; `unknown origin` when nothing records it.
    pub fn origin(&self) -> String {
        if self.sources.is_empty() {
            return "unknown origin".into();
        }
        self.sources
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// What differs between two identities, in the terms people check: `50 vs 500 symbols`,
    /// `seed 7 vs 42`, date ranges, files. Empty when they are the same data.
    pub fn differences(&self, other: &DataIdentity) -> Vec<String> {
        let mut out = Vec::new();
        let labels = |d: &DataIdentity| {
            d.versions
                .iter()
                .map(|v| v.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.versions.is_empty() && !other.versions.is_empty() && labels(self) != labels(other) {
            out.push(format!("dataset versions {} vs {}", labels(self), labels(other)));
        }
        if self.symbols != other.symbols {
            out.push(format!("{} vs {} symbols", self.symbols, other.symbols));
        }
        if self.rows != other.rows {
            out.push(format!("{} vs {} rows", thousands(self.rows), thousands(other.rows)));
        }
        if (self.first_date, self.last_date) != (other.first_date, other.last_date) {
            out.push(format!(
                "dates {} vs {}",
                range(self.first_date, self.last_date),
                range(other.first_date, other.last_date)
            ));
        }
        match (self.synth(), other.synth()) {
            (Some(a), Some(b)) => {
                if a.0 != b.0 && self.symbols == other.symbols {
                    out.push(format!("synthetic market of {} vs {} symbols", a.0, b.0));
                }
                if a.3 != b.3 {
                    out.push(format!("seed {} vs {}", a.3, b.3));
                }
                if a.1 != b.1 {
                    out.push(format!("{} vs {} synthetic days", a.1, b.1));
                }
                if a.2 != b.2 {
                    out.push(format!("start {} vs {}", a.2, b.2));
                }
                if a.4 != b.4 {
                    out.push(format!("style {} vs {}", a.4, b.4));
                }
                if a.5 != b.5 {
                    out.push(format!("generator {} vs {}", a.5, b.5));
                }
            }
            (Some(_), None) => out.push("a synthetic market vs none".to_owned()),
            (None, Some(_)) => out.push("no synthetic market vs one".to_owned()),
            (None, None) => {}
        }
        let files = |d: &DataIdentity| -> Vec<String> {
            d.sources
                .iter()
                .flat_map(|s| match s {
                    DataSource::Import { file, sha256, .. } => vec![format!("{file} (sha256 {})", short(sha256))],
                    DataSource::Files { files, .. } => versions::file_words(files),
                    _ => Vec::new(),
                })
                .collect()
        };
        let (fa, fb) = (files(self), files(other));
        if fa != fb {
            let list = |f: &[String]| {
                if f.is_empty() {
                    "no files".to_owned()
                } else {
                    f.join(", ")
                }
            };
            out.push(format!("files {} vs {}", list(&fa), list(&fb)));
        }
        let unknown = |d: &DataIdentity| d.sources.iter().any(|s| matches!(s, DataSource::Unknown { .. }));
        if unknown(self) != unknown(other) || (out.is_empty() && unknown(self)) {
            out.push(format!(
                "{} vs {}",
                if unknown(self) {
                    "bars of unknown origin"
                } else {
                    "no bars of unknown origin"
                },
                if unknown(other) {
                    "bars of unknown origin"
                } else {
                    "none"
                }
            ));
        }
        out
    }

    /// The synthetic market's `(symbols, days, start, seed, style, generator)`, if the data has
    /// one.
    fn synth(&self) -> Option<(u64, u64, NaiveDate, u64, &str, u32)> {
        self.sources.iter().find_map(|s| match s {
            DataSource::Synth {
                symbols,
                days,
                start,
                seed,
                style,
                generator,
            } => Some((*symbols, *days, *start, *seed, style.as_str(), *generator)),
            _ => None,
        })
    }
}

impl fmt::Display for DataIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.extent(), self.origin())?;
        if !self.versions.is_empty() {
            write!(
                f,
                ", dataset version{} {}",
                if self.versions.len() == 1 { "" } else { "s" },
                self.version_labels()
            )?;
        }
        Ok(())
    }
}

impl DataIdentity {
    /// `a@1, b@2`; empty for runs stored before versions.
    pub fn version_labels(&self) -> String {
        versions::labels(&self.versions)
    }
}

impl fmt::Display for DataSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataSource::Synth {
                symbols,
                days,
                start,
                seed,
                style,
                generator,
            } => f.write_str(&versions::synth_words(
                *symbols, *days, *start, *seed, style, *generator,
            )),
            DataSource::Import {
                file,
                sha256,
                symbols,
                rows,
            } => write!(
                f,
                "imported {file} (sha256 {}, {symbols} symbol{}, {} rows)",
                short(sha256),
                if *symbols == 1 { "" } else { "s" },
                thousands(*rows)
            ),
            DataSource::Unknown { symbols, rows } => write!(
                f,
                "{symbols} symbol{} ({} rows) of unknown origin",
                if *symbols == 1 { "" } else { "s" },
                thousands(*rows)
            ),
            DataSource::Files {
                files,
                extends,
                symbols,
                rows,
            } => {
                let list = versions::file_words(files).join(", ");
                match extends {
                    Some(parent) => write!(f, "{parent} with {list} added")?,
                    None => write!(f, "imported {list}")?,
                }
                write!(
                    f,
                    " ({symbols} symbol{}, {} rows)",
                    if *symbols == 1 { "" } else { "s" },
                    thousands(*rows)
                )
            }
        }
    }
}

fn range(a: Option<NaiveDate>, b: Option<NaiveDate>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{a}..{b}"),
        _ => "none".into(),
    }
}

/// `1142718` as `1,142,718`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How much data there is: symbols with bars, rows, first and last date.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extent {
    pub symbols: u64,
    pub rows: u64,
    pub first_date: Option<NaiveDate>,
    pub last_date: Option<NaiveDate>,
}

impl Extent {
    fn add(&mut self, other: Extent) {
        self.symbols += other.symbols;
        self.rows += other.rows;
        self.first_date = min_opt(self.first_date, other.first_date);
        self.last_date = max_opt(self.last_date, other.last_date);
    }
}

fn min_opt(a: Option<NaiveDate>, b: Option<NaiveDate>) -> Option<NaiveDate> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<NaiveDate>, b: Option<NaiveDate>) -> Option<NaiveDate> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// `IN (1, 2)` over a view's version ids: integers, so spliced into the statement as text.
fn ids_list(view: &DataView) -> String {
    let ids: Vec<String> = view.ids().iter().map(i64::to_string).collect();
    if ids.is_empty() {
        "(NULL)".into()
    } else {
        format!("({})", ids.join(", "))
    }
}

/// The extent of the bars of `view`'s versions, from their stored counts (their symbols never
/// overlap, so the counts add up).
pub async fn extent(db: &Db, view: &DataView) -> Result<Extent, MarketError> {
    let all = versions::list(db).await?;
    let mut total = Extent::default();
    for v in all.iter().filter(|v| view.ids().contains(&v.id)) {
        total.add(Extent {
            symbols: v.symbols,
            rows: v.bar_rows,
            first_date: v.first_date,
            last_date: v.last_date,
        });
    }
    Ok(total)
}

/// Trading days with at least one bar in `view`'s versions.
pub async fn trading_days_held(db: &Db, view: &DataView) -> Result<u64, MarketError> {
    let sql = format!(
        "SELECT COUNT(DISTINCT trade_date) FROM daily_bars WHERE version IN {}",
        ids_list(view)
    );
    let n: i64 = crate::on_pool!(db, |pool| sqlx::query_scalar(&sql).fetch_one(pool).await)?;
    Ok(n as u64)
}

/// One symbol's bars in a date range: how many, and the first and last date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarSpan {
    pub bars: u64,
    pub first: NaiveDate,
    pub last: NaiveDate,
}

/// The bars of each symbol of `codes` in `view`'s versions between `start` and `end`
/// (inclusive, open when `None`); symbols without bars there are absent.
pub async fn bars_per_symbol(
    db: &Db,
    view: &DataView,
    codes: &[String],
    start: Option<NaiveDate>,
    end: Option<NaiveDate>,
) -> Result<HashMap<String, BarSpan>, MarketError> {
    let mut out = HashMap::new();
    let versions = ids_list(view);
    let columns = "symbol, COUNT(*), MIN(trade_date), MAX(trade_date)";
    match db {
        Db::Postgres(pool) => {
            let sql = format!(
                "SELECT {columns} FROM daily_bars WHERE version IN {versions} AND symbol = ANY($3) AND \
                 ($1::date IS NULL OR trade_date >= $1) AND ($2::date IS NULL OR trade_date <= $2) GROUP BY symbol"
            );
            let rows: Vec<(String, i64, NaiveDate, NaiveDate)> = sqlx::query_as(&sql)
                .bind(start)
                .bind(end)
                .bind(codes)
                .fetch_all(pool)
                .await?;
            out.extend(rows.into_iter().map(|(c, n, first, last)| {
                (
                    c,
                    BarSpan {
                        bars: n as u64,
                        first,
                        last,
                    },
                )
            }));
        }
        Db::Sqlite(pool) => {
            let range = "($1 IS NULL OR trade_date >= $1) AND ($2 IS NULL OR trade_date <= $2)";
            for chunk in codes.chunks(CODES_PER_QUERY) {
                let list: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 3)).collect();
                let sql = format!(
                    "SELECT {columns} FROM daily_bars WHERE version IN {versions} AND {range} \
                     AND symbol IN ({}) GROUP BY symbol",
                    list.join(", ")
                );
                // SQLite stores dates as text; an aggregate of them comes back as text.
                let mut q = sqlx::query_as::<_, (String, i64, String, String)>(&sql)
                    .bind(start)
                    .bind(end);
                for c in chunk {
                    q = q.bind(c);
                }
                for (c, n, first, last) in q.fetch_all(pool).await? {
                    let date = |t: &str| {
                        NaiveDate::parse_from_str(t.get(..10).unwrap_or(t), "%Y-%m-%d")
                            .map_err(|e| MarketError::Db(format!("stored date `{t}` of `{c}` does not read: {e}")))
                    };
                    let span = BarSpan {
                        bars: n as u64,
                        first: date(&first)?,
                        last: date(&last)?,
                    };
                    out.insert(c, span);
                }
            }
        }
    }
    Ok(out)
}

/// The identity of the data a run reads: `view`'s versions, each with where it came from.
pub async fn identify(db: &Db, view: &DataView) -> Result<DataIdentity, MarketError> {
    let ext = extent(db, view).await?;
    let all = versions::list(db).await?;
    let mut sources = Vec::new();
    for v in view.ids().iter().filter_map(|id| all.iter().find(|v| v.id == *id)) {
        sources.push(match &v.origin {
            Some(Origin::Synth {
                symbols,
                days,
                start,
                seed,
                style,
                generator,
            }) => DataSource::Synth {
                symbols: *symbols,
                days: *days,
                start: *start,
                seed: *seed,
                style: style.clone(),
                generator: *generator,
            },
            Some(Origin::Import { files }) if files.len() == 1 => DataSource::Import {
                file: files[0].file.clone(),
                sha256: files[0].sha256.clone(),
                symbols: v.symbols,
                rows: v.bar_rows,
            },
            Some(Origin::Import { files }) => DataSource::Files {
                files: files.clone(),
                extends: None,
                symbols: v.symbols,
                rows: v.bar_rows,
            },
            Some(Origin::Extend { parent, files, .. }) => DataSource::Files {
                files: files.clone(),
                extends: Some(parent.clone()),
                symbols: v.symbols,
                rows: v.bar_rows,
            },
            Some(Origin::PreVersion { .. }) | None => DataSource::Unknown {
                symbols: v.symbols,
                rows: v.bar_rows,
            },
        });
    }
    Ok(DataIdentity {
        symbols: ext.symbols,
        rows: ext.rows,
        first_date: ext.first_date,
        last_date: ext.last_date,
        sources,
        versions: view.versions.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(symbols: u64, seed: u64, files: &[(&str, &str)]) -> DataIdentity {
        let mut sources = vec![DataSource::Synth {
            symbols,
            days: 750,
            start: NaiveDate::from_ymd_opt(2021, 1, 4).unwrap(),
            seed,
            style: "mixed".into(),
            generator: 2,
        }];
        for (file, sha) in files {
            sources.push(DataSource::Import {
                file: (*file).into(),
                sha256: (*sha).into(),
                symbols: 1,
                rows: 4,
            });
        }
        DataIdentity {
            symbols,
            rows: symbols * 700,
            first_date: NaiveDate::from_ymd_opt(2021, 1, 4),
            last_date: NaiveDate::from_ymd_opt(2023, 12, 1),
            sources,
            versions: Vec::new(),
        }
    }

    #[test]
    fn differences_are_named_in_the_terms_people_check() {
        let a = identity(50, 7, &[]);
        let b = identity(500, 42, &[("prices.csv", "ab12cd34ef56aa")]);
        let d = a.differences(&b);
        assert!(d.contains(&"50 vs 500 symbols".to_owned()), "{d:?}");
        assert!(d.contains(&"seed 7 vs 42".to_owned()), "{d:?}");
        assert!(
            d.contains(&"files no files vs prices.csv (sha256 ab12cd34ef56)".to_owned()),
            "{d:?}"
        );
        assert!(a.differences(&a.clone()).is_empty());
        // A market an older generator wrote is other data, whatever its options.
        let mut old = a.clone();
        if let DataSource::Synth { generator, .. } = &mut old.sources[0] {
            *generator = 1;
        }
        assert_eq!(old.differences(&a), vec!["generator 1 vs 2".to_owned()]);
        // Identities stored before the generator was recorded read as version 1.
        let stored = a.to_json().replace(",\"generator\":2", "");
        assert_eq!(DataIdentity::from_json(Some(&stored)), Some(old));
    }

    #[test]
    fn identities_read_back_and_unknown_stays_unknown() {
        let a = identity(50, 7, &[("x.csv", "ff")]);
        assert_eq!(DataIdentity::from_json(Some(&a.to_json())), Some(a.clone()));
        assert_eq!(DataIdentity::from_json(None), None);
        assert_eq!(DataIdentity::from_json(Some("not json")), None);
        assert_eq!(
            a.to_string(),
            "50 symbols, 35,000 rows, 2021-01-04 to 2023-12-01 (synthetic market of 50 symbols x 750 days \
             from 2021-01-04, seed 7, style mixed, generator 2; imported x.csv (sha256 ff, 1 symbol, 4 rows))"
        );
        assert_eq!(thousands(1_142_718), "1,142,718");
        assert_eq!(thousands(999), "999");
    }
}
