//! Dataset versions: immutable sets of bars with where they came from (synth / import / a run's
//! data preparation -> **versions** -> `load`, identity, `data ls/show/rm`).
//!
//! Every symbol and bar belongs to one version (`symbols.version`, `daily_bars.version`). A
//! version is written in one transaction and never changed after: a new import, a newer
//! generator or an import `--into` a dataset makes a new version beside the old one. A run
//! reads a [`DataView`], a set of versions whose symbols do not overlap, and stores it, so
//! that its report names the versions and `run --data` can read them again.

use super::stock::MarketError;
use super::synth_options::{parse_style, style_name, SynthOptions, GENERATOR_VERSION};
use crate::db::Db;
use crate::on_pool;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use std::fmt;

/// Where a version's bars came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// A synthetic market: the same options and generator always generate the same bars.
    Synth {
        symbols: u64,
        days: u64,
        start: NaiveDate,
        /// A u64, kept as text (JSON readers and SQLite's integers stop at 2^63).
        #[serde(with = "seed_text")]
        seed: u64,
        style: String,
        generator: u32,
    },
    /// CSV files, by content.
    Import { files: Vec<FileRef> },
    /// The bars of `parent` with CSV files added (`data import --into`); with `replace`, the
    /// files' bars replaced the parent's where both had a date.
    Extend {
        parent: String,
        files: Vec<FileRef>,
        #[serde(default)]
        replace: bool,
    },
    /// Bars stored before versions whose origin the records of that time could not tell
    /// (symbols listed by two imported files, an unrecorded market, bars written by hand).
    PreVersion {
        #[serde(default)]
        files: Vec<FileRef>,
    },
}

/// One imported file, by content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    /// The path as it was given, for people.
    pub file: String,
    pub sha256: String,
}

mod seed_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    /// Text, or a number from a writer that stored one.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Seed {
            Text(String),
            Number(u64),
        }
        match Seed::deserialize(d)? {
            Seed::Number(n) => Ok(n),
            Seed::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Origin {
    /// The synthetic market `opts` describes, as this build's generator makes it.
    pub fn synth(opts: &SynthOptions) -> Origin {
        Origin::Synth {
            symbols: opts.symbols as u64,
            days: opts.days as u64,
            start: opts.start,
            seed: opts.seed,
            style: style_name(opts.style),
            generator: GENERATOR_VERSION,
        }
    }

    /// The origin as one comparable string: two versions with the same key hold the same bars.
    pub fn key(&self) -> String {
        let shas = |files: &[FileRef]| {
            let mut s: Vec<&str> = files.iter().map(|f| f.sha256.as_str()).collect();
            s.sort_unstable();
            s.dedup();
            s.join(",")
        };
        match self {
            Origin::Synth {
                symbols,
                days,
                start,
                seed,
                style,
                generator,
            } => format!("synth:{symbols}:{days}:{start}:{seed}:{style}:{generator}"),
            Origin::Import { files } => format!("import:{}", shas(files)),
            Origin::Extend { parent, files, replace } => {
                format!(
                    "extend:{parent}:{}{}",
                    shas(files),
                    if *replace { ":replace" } else { "" }
                )
            }
            Origin::PreVersion { .. } => "pre-version".into(),
        }
    }

    /// The synthetic market's options, for a synth origin this version can read.
    pub fn synth_options(&self) -> Option<SynthOptions> {
        match self {
            Origin::Synth {
                symbols,
                days,
                start,
                seed,
                style,
                ..
            } => Some(SynthOptions {
                symbols: *symbols as usize,
                days: *days as usize,
                start: *start,
                seed: *seed,
                style: parse_style(style)?,
            }),
            _ => None,
        }
    }

    /// The files an import brought in.
    pub fn files(&self) -> &[FileRef] {
        match self {
            Origin::Import { files } | Origin::Extend { files, .. } | Origin::PreVersion { files } => files,
            Origin::Synth { .. } => &[],
        }
    }
}

/// A synthetic market in words, as versions, run identities and reports print it.
pub fn synth_words(symbols: u64, days: u64, start: NaiveDate, seed: u64, style: &str, generator: u32) -> String {
    format!(
        "synthetic market of {symbols} symbols x {days} days from {start}, seed {seed}, style {style}, \
         generator {generator}"
    )
}

/// The first 12 hex digits of a hash, enough to tell files apart in a sentence.
pub fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// `a.csv (sha256 0123456789ab)`, one per file.
pub fn file_words(files: &[FileRef]) -> Vec<String> {
    files
        .iter()
        .map(|x| format!("{} (sha256 {})", x.file, short(&x.sha256)))
        .collect()
}

/// `a@1, b@2`: the labels of `versions`.
pub fn labels(versions: &[VersionRef]) -> String {
    versions.iter().map(|v| v.label.as_str()).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files = |files: &[FileRef]| file_words(files).join(", ");
        match self {
            Origin::Synth {
                symbols,
                days,
                start,
                seed,
                style,
                generator,
            } => f.write_str(&synth_words(*symbols, *days, *start, *seed, style, *generator)),
            Origin::Import { files: list } => write!(f, "imported from {}", files(list)),
            Origin::Extend {
                parent,
                files: list,
                replace,
            } => write!(
                f,
                "{parent} with {} added{}",
                files(list),
                if *replace {
                    " (its bars replacing the older ones on shared dates)"
                } else {
                    ""
                }
            ),
            Origin::PreVersion { files: list } if list.is_empty() => {
                write!(f, "bars stored before versions, of mixed or unrecorded origin")
            }
            Origin::PreVersion { files: list } => write!(
                f,
                "bars stored before versions, of mixed or unrecorded origin (files imported then: {})",
                files(list)
            ),
        }
    }
}

/// A version as a run names it: its id in the stock database and `dataset@number`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRef {
    pub id: i64,
    pub label: String,
}

impl fmt::Display for VersionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// One stored version.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub id: i64,
    pub dataset: String,
    pub number: i64,
    /// `None` when the stored origin is not one this build can read (shown as unknown).
    pub origin: Option<Origin>,
    pub origin_key: String,
    pub parent: Option<i64>,
    pub symbols: u64,
    pub bar_rows: u64,
    pub first_date: Option<NaiveDate>,
    pub last_date: Option<NaiveDate>,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
}

impl Version {
    /// `dataset@number`.
    pub fn label(&self) -> String {
        format!("{}@{}", self.dataset, self.number)
    }

    pub fn to_ref(&self) -> VersionRef {
        VersionRef {
            id: self.id,
            label: self.label(),
        }
    }

    /// Its origin in words.
    pub fn origin_words(&self) -> String {
        self.origin.as_ref().map_or_else(
            || format!("an origin this version cannot read ({})", self.origin_key),
            ToString::to_string,
        )
    }
}

/// The versions a run reads: their symbols never overlap, so every bar a load reads has one
/// version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataView {
    pub versions: Vec<VersionRef>,
    /// The manifest declares its data (`[data]`): messages say "declared" rather than "stock
    /// database".
    #[serde(default)]
    pub declared: bool,
}

impl DataView {
    pub fn ids(&self) -> Vec<i64> {
        self.versions.iter().map(|v| v.id).collect()
    }

    /// `a@1, b@2`.
    pub fn labels(&self) -> String {
        labels(&self.versions)
    }
}

/// The name `data synth` gives the dataset of a synthetic market.
pub fn synth_dataset(opts: &SynthOptions) -> String {
    format!(
        "synth-{}x{}-{}-s{}-{}",
        opts.symbols,
        opts.days,
        opts.start,
        opts.seed,
        style_name(opts.style)
    )
}

/// Whether `name` may name a dataset: 1 to 64 of letters, digits, `_`, `-` and `.`, not
/// starting with `.` or `-`.
pub fn is_valid_dataset(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with(['.', '-'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A dataset name from a file name: its stem with every other character made `-`.
pub fn dataset_from_file(path: &std::path::Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .trim_end_matches(".gz")
        .trim_end_matches(".csv")
        .trim_end_matches(".txt")
        .to_owned();
    let mut out: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    out = out.trim_start_matches(['.', '-']).to_owned();
    if out.is_empty() {
        "imported".into()
    } else {
        out
    }
}

const COLUMNS: &str = "id, dataset, number, origin, origin_key, parent, symbols, bar_rows, first_date, last_date, \
                       created_at, created_by";

/// Every version, by dataset and number. (The table holds one row per version: reading it
/// whole is how every lookup below finds its row.)
pub async fn list(db: &Db) -> Result<Vec<Version>, MarketError> {
    let sql = format!("SELECT {COLUMNS} FROM dataset_versions ORDER BY dataset, number");
    Ok(on_pool!(db, |pool| {
        let rows = sqlx::query(&sql).fetch_all(pool).await?;
        rows.iter()
            .map(|r| {
                let origin: String = r.try_get("origin")?;
                Ok(Version {
                    id: r.try_get("id")?,
                    dataset: r.try_get("dataset")?,
                    number: r.try_get("number")?,
                    origin: serde_json::from_str(&origin).ok(),
                    origin_key: r.try_get("origin_key")?,
                    parent: r.try_get("parent")?,
                    symbols: r.try_get::<i64, _>("symbols")?.max(0) as u64,
                    bar_rows: r.try_get::<i64, _>("bar_rows")?.max(0) as u64,
                    first_date: r.try_get("first_date")?,
                    last_date: r.try_get("last_date")?,
                    created_at: r.try_get("created_at")?,
                    created_by: r.try_get("created_by")?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()
    })?)
}

/// The version with this origin key, if one is stored.
pub async fn by_key(db: &Db, key: &str) -> Result<Option<Version>, MarketError> {
    Ok(list(db).await?.into_iter().find(|v| v.origin_key == key))
}

/// The version with this id.
pub async fn by_id(db: &Db, id: i64) -> Result<Option<Version>, MarketError> {
    Ok(list(db).await?.into_iter().find(|v| v.id == id))
}

/// The newest version of every dataset, by dataset.
pub async fn latest(db: &Db) -> Result<Vec<Version>, MarketError> {
    let mut newest: Vec<Version> = Vec::new();
    for v in list(db).await? {
        match newest.last_mut() {
            Some(last) if last.dataset == v.dataset => *last = v,
            _ => newest.push(v),
        }
    }
    Ok(newest)
}

/// Why a name given as a version (`--data`, `data show`, `data rm`) names none.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}\nhint: {hint}")]
pub struct UnknownVersion {
    pub message: String,
    pub hint: String,
}

/// The version `name` names: `dataset@number`, a dataset (its newest version) or an id.
pub async fn find(db: &Db, name: &str) -> Result<Result<Version, UnknownVersion>, MarketError> {
    let all = list(db).await?;
    let found = match name.rsplit_once('@') {
        Some((dataset, number)) => number
            .parse::<i64>()
            .ok()
            .and_then(|n| all.iter().find(|v| v.dataset == dataset && v.number == n)),
        None => all
            .iter()
            .rev()
            .find(|v| v.dataset == name)
            .or_else(|| name.parse::<i64>().ok().and_then(|id| all.iter().find(|v| v.id == id))),
    };
    if let Some(v) = found {
        return Ok(Ok(v.clone()));
    }
    let labels: Vec<String> = all.iter().map(Version::label).collect();
    let hint = match crate::hint::did_you_mean(name, labels.iter().map(String::as_str)) {
        Some(h) => h,
        None if labels.is_empty() => "the stock database holds no dataset yet: `measured data synth` or `measured \
                                      data import FILE` makes one"
            .into(),
        None => format!("`measured data ls` lists them: {}", shown_list(&labels, 8)),
    };
    Ok(Err(UnknownVersion {
        message: format!(
            "no dataset version `{}` in the stock database",
            crate::printable::printable(name)
        ),
        hint,
    }))
}

fn shown_list(items: &[String], n: usize) -> String {
    let mut s = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n {
        s.push_str(&format!(" and {} more", items.len() - n));
    }
    s
}

/// What a new version is, before its bars are written.
#[derive(Debug, Clone)]
pub struct NewVersion {
    pub dataset: String,
    pub origin: Origin,
    pub parent: Option<i64>,
}

/// The same statements on either backend's connection (the bodies are written once).
macro_rules! begin_version {
    ($conn:ident, $new:ident) => {{
        let number: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(number), 0) + 1 FROM dataset_versions WHERE dataset = $1")
                .bind($new.dataset.as_str())
                .fetch_one(&mut *$conn)
                .await?;
        let origin = serde_json::to_string(&$new.origin).unwrap_or_default();
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO dataset_versions (dataset, number, origin, origin_key, parent, created_at, created_by) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind($new.dataset.as_str())
        .bind(number)
        .bind(origin)
        .bind($new.origin.key())
        .bind($new.parent)
        .bind(Utc::now())
        .bind(format!("measured {}", crate::build_info::version()))
        .fetch_one(&mut *$conn)
        .await?;
        Ok(VersionRef {
            id,
            label: format!("{}@{}", $new.dataset, number),
        })
    }};
}

macro_rules! finish_version {
    ($conn:ident, $id:ident) => {{
        sqlx::query(
            "UPDATE dataset_versions SET \
               symbols = (SELECT COUNT(*) FROM symbols WHERE version = $1), \
               bar_rows = (SELECT COUNT(*) FROM daily_bars WHERE version = $1), \
               first_date = (SELECT MIN(trade_date) FROM daily_bars WHERE version = $1), \
               last_date = (SELECT MAX(trade_date) FROM daily_bars WHERE version = $1) \
             WHERE id = $1",
        )
        .bind($id)
        .execute(&mut *$conn)
        .await?;
        Ok(())
    }};
}

/// Inserts the row of a new version inside the writer's PostgreSQL transaction, numbered
/// after the dataset's newest; [`finish_pg`] sets its counts once its bars are in.
pub(crate) async fn begin_pg(conn: &mut sqlx::PgConnection, new: &NewVersion) -> Result<VersionRef, sqlx::Error> {
    begin_version!(conn, new)
}

/// [`begin_pg`] on SQLite.
pub(crate) async fn begin_sqlite(
    conn: &mut sqlx::SqliteConnection,
    new: &NewVersion,
) -> Result<VersionRef, sqlx::Error> {
    begin_version!(conn, new)
}

/// Sets a version's counts and date range from its bars, inside the writer's transaction.
pub(crate) async fn finish_pg(conn: &mut sqlx::PgConnection, id: i64) -> Result<(), sqlx::Error> {
    finish_version!(conn, id)
}

/// [`finish_pg`] on SQLite.
pub(crate) async fn finish_sqlite(conn: &mut sqlx::SqliteConnection, id: i64) -> Result<(), sqlx::Error> {
    finish_version!(conn, id)
}

/// Deletes a version with its symbols and bars, in one transaction. Versions that extend it
/// keep their own copies of its bars; their lineage then names a version that is gone.
pub async fn remove(db: &Db, id: i64) -> Result<(), MarketError> {
    on_pool!(db, |pool| {
        let mut tx = pool.begin().await?;
        sqlx::query("UPDATE dataset_versions SET parent = NULL WHERE parent = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM daily_bars WHERE version = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM symbols WHERE version = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM dataset_versions WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    })?;
    Ok(())
}

/// The codes two versions of `versions` share, per pair, with the first few codes.
pub async fn overlaps(db: &Db, versions: &[VersionRef]) -> Result<Vec<(String, String, Vec<String>)>, MarketError> {
    let mut out = Vec::new();
    for (i, a) in versions.iter().enumerate() {
        for b in &versions[i + 1..] {
            let shared: Vec<String> = on_pool!(db, |pool| {
                sqlx::query_scalar(
                    "SELECT a.code FROM symbols a JOIN symbols b ON b.code = a.code \
                     WHERE a.version = $1 AND b.version = $2 ORDER BY a.code LIMIT 6",
                )
                .bind(a.id)
                .bind(b.id)
                .fetch_all(pool)
                .await
            })?;
            if !shared.is_empty() {
                out.push((a.label.clone(), b.label.clone(), shared));
            }
        }
    }
    Ok(out)
}
