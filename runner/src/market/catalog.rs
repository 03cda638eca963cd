//! What the stock tables hold, recorded beside them (`synth_market`, `imported_files`): every
//! writer of the stock tables records what it wrote, so a run can tell the data its manifest
//! declares from any other data without reading every bar (data synth / import / a run's data
//! preparation -> **catalog** -> prepare, identity).

use super::synth::{symbol_info, trading_days};
use super::{CodeStyle, MarketError, SynthOptions, SynthReport};
use crate::db::Db;
use crate::on_pool;
use chrono::NaiveDate;
use clap::ValueEnum;
use sqlx::Row;

/// The synthetic market a database holds, as it was generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthRecord {
    pub options: SynthOptions,
    /// The generator version that wrote it ([`super::GENERATOR_VERSION`] for this build's).
    pub generator: u32,
    pub bar_rows: u64,
    pub first_date: NaiveDate,
    pub last_date: NaiveDate,
}

/// One imported file, by content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportRecord {
    pub sha256: String,
    /// The path as it was given, for messages.
    pub file: String,
    /// Its symbols, sorted.
    pub codes: Vec<String>,
    pub bar_rows: u64,
    pub first_date: Option<NaiveDate>,
    pub last_date: Option<NaiveDate>,
}

/// A style as `measured data synth --style` spells it.
pub fn style_name(style: CodeStyle) -> String {
    style
        .to_possible_value()
        .map_or_else(|| format!("{style:?}").to_lowercase(), |v| v.get_name().to_owned())
}

/// The style `--style NAME` selects.
pub fn parse_style(name: &str) -> Option<CodeStyle> {
    CodeStyle::from_str(name, true).ok()
}

/// Every style name, for hints.
pub fn style_names() -> Vec<String> {
    CodeStyle::value_variants().iter().map(|s| style_name(*s)).collect()
}

/// The synthetic market recorded in `db`, if any.
pub async fn synth_record(db: &Db) -> Result<Option<SynthRecord>, MarketError> {
    let found = on_pool!(db, |pool| {
        let row = sqlx::query(
            "SELECT symbols, days, start_date, seed, style, bar_rows, first_date, last_date, generator \
             FROM synth_market WHERE id = 1",
        )
        .fetch_optional(pool)
        .await?;
        match row {
            None => Ok::<_, sqlx::Error>(None),
            Some(r) => Ok(Some((
                r.try_get::<i64, _>("symbols")?,
                r.try_get::<i64, _>("days")?,
                r.try_get::<NaiveDate, _>("start_date")?,
                r.try_get::<String, _>("seed")?,
                r.try_get::<String, _>("style")?,
                r.try_get::<i64, _>("bar_rows")?,
                r.try_get::<NaiveDate, _>("first_date")?,
                r.try_get::<NaiveDate, _>("last_date")?,
                r.try_get::<i32, _>("generator")?,
            ))),
        }
    })?;
    let Some((symbols, days, start, seed, style, bar_rows, first_date, last_date, generator)) = found else {
        return Ok(None);
    };
    // A record this version cannot read describes nothing it could compare with.
    let (Some(style), Ok(seed)) = (parse_style(&style), seed.parse::<u64>()) else {
        return Ok(None);
    };
    Ok(Some(SynthRecord {
        options: SynthOptions {
            symbols: symbols as usize,
            days: days as usize,
            start,
            seed,
            style,
        },
        generator: generator.max(0) as u32,
        bar_rows: bar_rows as u64,
        first_date,
        last_date,
    }))
}

/// Replaces the record of the synthetic market (`None`: it is gone or unknown).
pub async fn set_synth_record(db: &Db, record: Option<&SynthRecord>) -> Result<(), MarketError> {
    on_pool!(db, |pool| {
        let mut tx = pool.begin().await?;
        sqlx::query("DELETE FROM synth_market").execute(&mut *tx).await?;
        if let Some(r) = record {
            let o = &r.options;
            sqlx::query(
                "INSERT INTO synth_market (id, symbols, days, start_date, seed, style, bar_rows, first_date, \
                 last_date, created_at, generator) VALUES (1, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(o.symbols as i64)
            .bind(o.days as i64)
            .bind(o.start)
            .bind(o.seed.to_string())
            .bind(style_name(o.style))
            .bind(r.bar_rows as i64)
            .bind(r.first_date)
            .bind(r.last_date)
            .bind(chrono::Utc::now())
            .bind(r.generator as i32)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(())
    })?;
    Ok(())
}

/// Generates the market `opts` describes (replacing the previous synthetic market; imported
/// symbols are kept) and records it. The record is removed first and written last, so an
/// interruption leaves the market unrecorded rather than described by a stale record.
pub async fn synth_recorded(
    db: &Db,
    opts: &SynthOptions,
    progress: &indicatif::ProgressBar,
) -> Result<SynthReport, MarketError> {
    opts.check()?;
    set_synth_record(db, None).await?;
    let report = super::synth(db, opts, progress).await?;
    let record = SynthRecord {
        options: opts.clone(),
        generator: super::GENERATOR_VERSION,
        bar_rows: report.rows,
        first_date: report.first_date,
        last_date: report.last_date,
    };
    set_synth_record(db, Some(&record)).await?;
    Ok(report)
}

/// Fills a database that holds no bars with the demo market, recorded; `None` when it
/// already holds bars.
pub async fn ensure_demo_recorded(db: &Db) -> Result<Option<SynthReport>, MarketError> {
    if super::has_bars(db).await? {
        return Ok(None);
    }
    let report = synth_recorded(db, &super::demo_options(), &indicatif::ProgressBar::hidden()).await?;
    Ok(Some(report))
}

/// One row of `symbols` as far as telling synthetic markets apart goes.
pub type SymbolFacts = (String, Option<NaiveDate>, Option<NaiveDate>, Option<String>);

/// The synthetic symbols in `db` (`source = 'synth'`), sorted by code.
pub async fn synth_symbols(db: &Db) -> Result<Vec<SymbolFacts>, MarketError> {
    Ok(on_pool!(db, |pool| {
        let rows =
            sqlx::query("SELECT code, listed, delisted, sector FROM symbols WHERE source = 'synth' ORDER BY code")
                .fetch_all(pool)
                .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("code")?,
                    r.try_get("listed")?,
                    r.try_get("delisted")?,
                    r.try_get("sector")?,
                ))
            })
            .collect::<Result<Vec<SymbolFacts>, sqlx::Error>>()
    })?)
}

/// The symbols `opts` generates, sorted by code: their codes, listing dates and sectors follow
/// from every option (the seed included), so equal lists mean the same market without
/// generating a single bar.
pub fn expected_symbols(opts: &SynthOptions) -> Vec<SymbolFacts> {
    let calendar = trading_days(opts.start, opts.days);
    if calendar.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<SymbolFacts> = (0..opts.symbols)
        .map(|i| {
            let s = symbol_info(opts, i, &calendar);
            (s.code, s.listed, s.delisted, s.sector)
        })
        .collect();
    out.sort();
    out
}

/// Whether the stored closes and adjustment factors of the first symbol (in code order) that
/// `opts` generates are the ones this version's generator makes: how a market no record
/// describes is told from one an older generator wrote, without reading every bar.
pub async fn matches_generator(db: &Db, opts: &SynthOptions) -> Result<bool, MarketError> {
    let Some(want) = super::synth::first_symbol_rows(opts) else {
        return Ok(false);
    };
    let sql = "SELECT close, adj_factor FROM daily_bars WHERE symbol = $1 ORDER BY trade_date";
    let stored: Vec<(f64, f64)> = on_pool!(db, |pool| {
        sqlx::query_as::<_, (f64, f64)>(sql)
            .bind(&want.code)
            .fetch_all(pool)
            .await
    })?;
    Ok(stored.len() == want.bars.len()
        && stored
            .iter()
            .zip(&want.bars)
            .all(|(s, b)| s.0 == b.close && s.1 == b.adj_factor))
}

/// Bars of the synthetic symbols in `db`.
pub async fn synth_bar_rows(db: &Db) -> Result<u64, MarketError> {
    let n: i64 = on_pool!(db, |pool| {
        sqlx::query_scalar(
            "SELECT COUNT(*) FROM daily_bars WHERE symbol IN (SELECT code FROM symbols WHERE source = 'synth')",
        )
        .fetch_one(pool)
        .await
    })?;
    Ok(n as u64)
}

/// Every recorded imported file, oldest first.
pub async fn import_records(db: &Db) -> Result<Vec<ImportRecord>, MarketError> {
    Ok(on_pool!(db, |pool| {
        let rows = sqlx::query(
            "SELECT sha256, file, codes, bar_rows, first_date, last_date FROM imported_files \
             ORDER BY imported_at, sha256",
        )
        .fetch_all(pool)
        .await?;
        rows.iter()
            .map(|r| {
                let codes: String = r.try_get("codes")?;
                Ok(ImportRecord {
                    sha256: r.try_get("sha256")?,
                    file: r.try_get("file")?,
                    codes: serde_json::from_str(&codes).unwrap_or_default(),
                    bar_rows: r.try_get::<i64, _>("bar_rows")? as u64,
                    first_date: r.try_get("first_date")?,
                    last_date: r.try_get("last_date")?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()
    })?)
}

/// Records imported files (the same content again replaces its row).
pub async fn record_imports(db: &Db, records: &[ImportRecord]) -> Result<(), MarketError> {
    for r in records {
        let codes = serde_json::to_string(&r.codes).unwrap_or_else(|_| "[]".into());
        on_pool!(db, |pool| {
            sqlx::query(
                "INSERT INTO imported_files (sha256, file, codes, bar_rows, first_date, last_date, imported_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (sha256) DO UPDATE SET file = excluded.file, \
                 codes = excluded.codes, bar_rows = excluded.bar_rows, first_date = excluded.first_date, \
                 last_date = excluded.last_date, imported_at = excluded.imported_at",
            )
            .bind(&r.sha256)
            .bind(&r.file)
            .bind(&codes)
            .bind(r.bar_rows as i64)
            .bind(r.first_date)
            .bind(r.last_date)
            .bind(chrono::Utc::now())
            .execute(pool)
            .await
            .map(|_| ())
        })?;
    }
    Ok(())
}

/// `measured data synth` with the same options, as a command line.
pub fn synth_command(opts: &SynthOptions) -> String {
    format!(
        "measured data synth --symbols {} --days {} --start {} --seed {} --style {}",
        opts.symbols,
        opts.days,
        opts.start,
        opts.seed,
        style_name(opts.style)
    )
}

/// A synthetic market in words: `500 symbols x 2500 days from 2015-01-01, seed 42, style mixed`.
pub fn describe_synth(opts: &SynthOptions) -> String {
    format!(
        "{} symbols x {} days from {}, seed {}, style {}",
        opts.symbols,
        opts.days,
        opts.start,
        opts.seed,
        style_name(opts.style)
    )
}
