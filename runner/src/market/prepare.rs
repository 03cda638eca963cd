//! Making the stock database hold the data an experiment declares (`[data]`) before a run is
//! stored (manifest `[data]` -> [`DataSpec`] -> **prepare** -> stock tables -> universe ->
//! `load`).
//!
//! [`decide`] only reads: it says what would be written, or why nothing may be (a
//! [`Refusal`], located in the manifest). [`apply`] writes those steps. The policy: a
//! synthetic market is generated where there is none, and where another one is held it is
//! regenerated from its seed only on the embedded default database (the results SQLite file
//! doubling as stock database); a stock database named apart (a shared server) never has its
//! market replaced. Imported rows are never changed: a declared file is imported only when it
//! adds bars, and recorded without writing when its bars are already there.

use super::catalog::{self, ImportRecord, SynthRecord};
use super::import::{self, FileSummary, ImportOptions, ImportPlan};
use super::load::existing_codes;
use super::write::placeholders;
use super::{identity, MarketError, StockError, SynthOptions, GENERATOR_VERSION};
use crate::db::Db;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// What an experiment declares about its stock data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataSpec {
    /// The manifest has a `[data]` table (possibly empty: it needs no particular data).
    pub declared: bool,
    pub synth: Option<SynthDecl>,
    pub imports: Vec<ImportDecl>,
    pub require: Requirement,
}

impl DataSpec {
    /// Whether loads choose only among the declared data (a market or files are declared).
    pub fn restricts(&self) -> bool {
        self.synth.is_some() || !self.imports.is_empty()
    }
}

/// `[data] synth = { ... }`: a synthetic market, as `measured data synth` would generate it.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthDecl {
    pub options: SynthOptions,
    /// Where the manifest declares it (a key path, for locating messages).
    pub at: Vec<String>,
}

/// One `[[data.import]]` entry: a CSV file and the content it must have.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportDecl {
    /// The path as written in the manifest.
    pub file: String,
    /// The path resolved against the manifest's folder.
    pub path: PathBuf,
    pub sha256: String,
    /// How to read it (`files` is empty: the one file is `path`).
    pub options: ImportOptions,
    pub at: Vec<String>,
}

/// `[data] require = { ... }`: what the data must hold, whatever its source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Requirement {
    pub min_symbols: Option<usize>,
    pub min_days: Option<usize>,
    pub codes: Vec<String>,
    pub at: Vec<String>,
}

/// The stock database as the policy sees it.
#[derive(Debug, Clone)]
pub struct StockPlace {
    /// Its URL, password redacted.
    pub shown: String,
    /// The embedded default (the results SQLite file doubles as stock database): synthetic
    /// markets there are this checkout's cache and may be regenerated from their seed.
    pub embedded: bool,
    /// Named apart (`--stock-database`, `STOCK_DATABASE_URL`).
    pub named: bool,
    /// `measured` with the options that reach this database, to print runnable commands.
    pub command: String,
}

/// Why the declared data cannot be made ready; nothing was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub message: String,
    /// The manifest key the refusal is about.
    pub at: Vec<String>,
    pub label: String,
    pub hint: String,
}

/// One write [`apply`] makes.
#[derive(Debug)]
pub enum Step {
    /// Generate the declared market; `replacing` describes the synthetic market it replaces.
    Generate {
        options: SynthOptions,
        replacing: Option<String>,
    },
    /// The declared market is there but was never recorded (an older version wrote it).
    Record(SynthRecord),
    /// Import a declared file: every one of its bars is new to the database.
    Import { file: String, plan: Box<ImportPlan> },
    /// A declared file's bars are all there already: record the file without writing a bar.
    RecordImport(FileSummary),
    /// Nothing declared and no bars at all: the embedded database gets the demo market.
    Demo,
}

impl Step {
    /// The step in words: what will be done, or with `past`, what was.
    pub fn describe(&self, past: bool) -> String {
        let verb = |now: &str, then: &str| if past { then.to_owned() } else { now.to_owned() };
        match self {
            Step::Generate { options, replacing } => {
                let mut s = format!(
                    "{} the synthetic market {}",
                    verb("generate", "generated"),
                    catalog::describe_synth(options)
                );
                if let Some(old) = replacing {
                    s.push_str(&format!(", replacing {old} (imported symbols are never touched)"));
                }
                s
            }
            Step::Record(r) => format!(
                "{} the synthetic market already there ({})",
                verb("record", "recorded"),
                catalog::describe_synth(&r.options)
            ),
            Step::Import { file, plan } => format!(
                "{} {file} ({} rows of {} symbols)",
                verb("import", "imported"),
                plan.rows,
                plan.codes.len()
            ),
            Step::RecordImport(s) => format!(
                "{} {} (its {} rows {} already there)",
                verb("record", "recorded"),
                s.file,
                s.rows,
                verb("are", "were")
            ),
            Step::Demo => format!(
                "{} the empty database with the demo market ({})",
                verb("fill", "filled"),
                catalog::describe_synth(&super::demo_options())
            ),
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe(false))
    }
}

/// What the stock database is missing, and how to get it; reads only.
pub async fn decide(db: &Db, spec: &DataSpec, place: &StockPlace) -> Result<Result<Vec<Step>, Refusal>, MarketError> {
    let mut steps = Vec::new();
    if let Some(decl) = &spec.synth {
        match synth_step(db, decl, place).await? {
            Ok(Some(step)) => steps.push(step),
            Ok(None) => {}
            Err(refusal) => return Ok(Err(refusal)),
        }
    }
    let records = catalog::import_records(db).await?;
    for decl in &spec.imports {
        match import_step(db, decl, &records).await? {
            Ok(Some(step)) => steps.push(step),
            Ok(None) => {}
            Err(refusal) => return Ok(Err(refusal)),
        }
    }
    if !spec.restricts() && !super::has_bars(db).await? {
        if place.named {
            return Ok(Err(Refusal {
                message: format!(
                    "the stock database {} (--stock-database / STOCK_DATABASE_URL) holds no daily bars",
                    place.shown
                ),
                at: vec!["data".into()],
                label: "no data declared".into(),
                hint: format!(
                    "declare the data in [data] (e.g. synth = {{ symbols = 50, days = 750 }}), or fill the \
                     database with `{} data synth` or `{} data import FILE`",
                    place.command, place.command
                ),
            }));
        }
        steps.push(Step::Demo);
    }
    Ok(Ok(steps))
}

// Long because: a branch per state of the database (the declared market, clashing imports, empty,
// another market), each with its own message.
/// Whether the declared market is there; what to write if not.
async fn synth_step(
    db: &Db,
    decl: &SynthDecl,
    place: &StockPlace,
) -> Result<Result<Option<Step>, Refusal>, MarketError> {
    let want = &decl.options;
    let record = catalog::synth_record(db).await?;
    let have = catalog::synth_symbols(db).await?;
    let same_symbols = have == catalog::expected_symbols(want);
    if same_symbols && !have.is_empty() {
        let rows = catalog::synth_bar_rows(db).await?;
        match &record {
            Some(r) if r.options == *want && r.generator == GENERATOR_VERSION && r.bar_rows == rows => {
                return Ok(Ok(None))
            }
            // Bars lost or added since, another market, or one an older generator wrote (the
            // same options now give other bars): regenerate below.
            Some(_) => {}
            // Unrecorded (an older version wrote it, or a write was interrupted): recorded as
            // the declared market only when its bars are the ones this generator makes.
            None => {
                if catalog::matches_generator(db, want).await? {
                    let codes: Vec<String> = have.iter().map(|s| s.0.clone()).collect();
                    let ext = identity::extent(db, Some(&codes)).await?;
                    if let (Some(first_date), Some(last_date)) = (ext.first_date, ext.last_date) {
                        return Ok(Ok(Some(Step::Record(SynthRecord {
                            options: want.clone(),
                            generator: GENERATOR_VERSION,
                            bar_rows: rows,
                            first_date,
                            last_date,
                        }))));
                    }
                }
            }
        }
    }
    // Generating must not touch imported symbols: refuse before writing when codes clash.
    let clash = imported_among(db, &catalog::expected_symbols(want)).await?;
    if !clash.is_empty() {
        return Ok(Err(Refusal {
            message: format!(
                "the declared synthetic market would generate symbol codes the stock database {} holds as \
                 imported data ({}); imported rows are never replaced",
                place.shown,
                clash.join(", ")
            ),
            at: decl.at.clone(),
            label: "codes clash with imported symbols".into(),
            hint: "choose another `style` (\"us\" codes never look like exchange codes), or keep the imported \
                   files in a stock database of their own (--stock-database)"
                .into(),
        }));
    }
    if have.is_empty() {
        return Ok(Ok(Some(Step::Generate {
            options: want.clone(),
            replacing: None,
        })));
    }
    let held = match &record {
        Some(r) if r.generator != GENERATOR_VERSION => format!(
            "the synthetic market {} written by generator version {} (this version's generator is {}, \
             and its bars differ)",
            catalog::describe_synth(&r.options),
            r.generator,
            GENERATOR_VERSION
        ),
        Some(r) if r.options == *want => format!(
            "the declared market with {} of its {} bars",
            catalog::synth_bar_rows(db).await?,
            r.bar_rows
        ),
        Some(r) => format!("the synthetic market {}", catalog::describe_synth(&r.options)),
        None => format!(
            "{} synthetic symbols that no record describes and this version's generator did not make",
            have.len()
        ),
    };
    if place.embedded {
        return Ok(Ok(Some(Step::Generate {
            options: want.clone(),
            replacing: Some(held),
        })));
    }
    Ok(Err(Refusal {
        message: format!(
            "the stock database {} holds {held}, not the market [data] declares ({}); a stock database named \
             apart is shared, so measured never replaces its market",
            place.shown,
            catalog::describe_synth(want)
        ),
        at: decl.at.clone(),
        label: "another market is there".into(),
        hint: format!(
            "prepare the market in a stock database of your own, `measured --stock-database YOURS {synth}`, and \
             run with --stock-database YOURS; or, if everyone who uses {shown} agrees to replace its market: \
             `{command} {synth}`",
            synth = catalog::synth_command(want).trim_start_matches("measured "),
            shown = place.shown,
            command = place.command,
        ),
    }))
}

/// The codes among `symbols` that `db` holds as anything but synthetic.
async fn imported_among(db: &Db, symbols: &[catalog::SymbolFacts]) -> Result<Vec<String>, MarketError> {
    let codes: Vec<String> = symbols.iter().map(|s| s.0.clone()).collect();
    let mut out = Vec::new();
    match db {
        Db::Postgres(pool) => {
            out = sqlx::query_scalar(
                "SELECT code FROM symbols WHERE source <> 'synth' AND code = ANY($1) ORDER BY code LIMIT 5",
            )
            .bind(&codes)
            .fetch_all(pool)
            .await?;
        }
        Db::Sqlite(pool) => {
            for chunk in codes.chunks(500) {
                let sql = format!(
                    "SELECT code FROM symbols WHERE source <> 'synth' AND code IN ({}) ORDER BY code LIMIT 5",
                    placeholders(chunk.len())
                );
                let mut q = sqlx::query_scalar::<_, String>(&sql);
                for c in chunk {
                    q = q.bind(c);
                }
                out.extend(q.fetch_all(pool).await?);
            }
            out.truncate(5);
        }
    }
    Ok(out)
}

// Long because: a branch per state of the database (imported, absent, partly there, different
// rows), each with its own message.
/// Whether a declared file is imported; what to write if not.
async fn import_step(
    db: &Db,
    decl: &ImportDecl,
    records: &[ImportRecord],
) -> Result<Result<Option<Step>, Refusal>, MarketError> {
    let at = |key: &str| {
        let mut at = decl.at.clone();
        at.push(key.to_owned());
        at
    };
    let actual = match import::file_sha256(&decl.path) {
        Ok(h) => h,
        Err(e) => {
            return Ok(Err(Refusal {
                message: format!("cannot read {} ({}): {e}", decl.file, decl.path.display()),
                at: at("path"),
                label: "declared here".into(),
                hint: "the path is relative to the folder holding the manifest; restore the file or fix the path"
                    .into(),
            }))
        }
    };
    if actual != decl.sha256 {
        return Ok(Err(Refusal {
            message: format!(
                "{} has sha256 {actual}, but [data] declares sha256 {}",
                decl.file, decl.sha256
            ),
            at: at("sha256"),
            label: "not the content on disk".into(),
            hint: format!(
                "restore the file the experiment declares; if it changed on purpose, write sha256 = \"{actual}\" \
                 (runs on the old file then no longer compare with new ones)"
            ),
        }));
    }
    if let Some(r) = records.iter().find(|r| r.sha256 == actual) {
        if existing_codes(db, &r.codes)
            .await
            .map_err(|e| MarketError::Db(e.to_string()))?
            .len()
            == r.codes.len()
        {
            return Ok(Ok(None));
        }
    }
    let mut options = decl.options.clone();
    options.files = vec![decl.path.clone()];
    let plan = match import::prepare(&options) {
        Ok(p) => p,
        Err(e) => {
            return Ok(Err(Refusal {
                message: format!("{} cannot be imported: {e}", decl.file),
                at: decl.at.clone(),
                label: "declared here".into(),
                hint: "fix the file or its options here (layout, columns, date_format, skip_bad); \
                       `measured data import FILE --dry-run` shows how it is read"
                    .into(),
            }))
        }
    };
    let held = existing_codes(db, &plan.codes)
        .await
        .map_err(|e| MarketError::Db(e.to_string()))?;
    let mut summary = plan.sources.first().cloned().unwrap_or_else(|| FileSummary {
        file: decl.file.clone(),
        sha256: actual.clone(),
        codes: plan.codes.clone(),
        rows: plan.rows,
        first_date: plan.first_date,
        last_date: plan.last_date,
    });
    summary.file = decl.file.clone();
    if held.is_empty() {
        return Ok(Ok(Some(Step::Import {
            file: decl.file.clone(),
            plan: Box::new(plan),
        })));
    }
    let differing = differing_codes(db, &plan, &held).await?;
    if differing.is_empty() && held.len() == plan.codes.len() {
        return Ok(Ok(Some(Step::RecordImport(summary))));
    }
    let shown: Vec<String> = if differing.is_empty() {
        held.into_iter().collect()
    } else {
        differing
    };
    Ok(Err(Refusal {
        message: format!(
            "{} holds bars of {} that the stock database already holds{}; importing it would change rows it \
             did not write",
            decl.file,
            shown
                .iter()
                .take(5)
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if shown.len() > 5 {
                format!(" and {} more", shown.len() - 5)
            } else {
                String::new()
            }
        ),
        at: decl.at.clone(),
        label: "would overwrite other data".into(),
        hint: "keep this file's data in a stock database of its own (--stock-database), or rename its symbols".into(),
    }))
}

/// Codes of `plan` held in `db` whose stored bars differ from the file's on the file's dates.
async fn differing_codes(
    db: &Db,
    plan: &ImportPlan,
    held: &std::collections::HashSet<String>,
) -> Result<Vec<String>, MarketError> {
    type Row = (chrono::NaiveDate, f64, f64, f64, f64, f64, f64, f64);
    let sql = "SELECT trade_date, open, high, low, close, volume, amount, adj_factor FROM daily_bars \
               WHERE symbol = $1 ORDER BY trade_date";
    let mut out = Vec::new();
    for group in plan.groups().iter().filter(|g| held.contains(&g.code)) {
        let rows: Vec<Row> = crate::on_pool!(db, |pool| {
            sqlx::query_as::<_, Row>(sql).bind(&group.code).fetch_all(pool).await
        })?;
        let stored: std::collections::HashMap<chrono::NaiveDate, Row> = rows.into_iter().map(|r| (r.0, r)).collect();
        let same = group.bars.iter().all(|b| {
            stored.get(&b.date).is_some_and(|r| {
                (r.1, r.2, r.3, r.4, r.5, r.6, r.7)
                    == (b.open, b.high, b.low, b.close, b.volume, b.amount, b.adj_factor)
            })
        });
        if !same {
            out.push(group.code.clone());
        }
    }
    Ok(out)
}

/// Writes `steps`; returns a line per step for the console. A progress bar shows generation
/// unless `quiet`.
pub async fn apply(db: &Db, steps: Vec<Step>, quiet: bool) -> Result<Vec<String>, MarketError> {
    let mut done = Vec::new();
    for step in steps {
        let line = step.describe(true);
        match step {
            Step::Generate { options, .. } => {
                let bar = progress(quiet, &options);
                let report = catalog::synth_recorded(db, &options, &bar).await;
                bar.finish_and_clear();
                report?;
            }
            Step::Record(r) => catalog::set_synth_record(db, Some(&r)).await?,
            Step::Import { plan, .. } => {
                import::import_plan(db, *plan)
                    .await
                    .map_err(|e| MarketError::Db(e.to_string()))?;
            }
            Step::RecordImport(s) => catalog::record_imports(db, &[s.record()]).await?,
            Step::Demo => {
                let options = super::demo_options();
                let bar = progress(quiet, &options);
                let report = catalog::synth_recorded(db, &options, &bar).await;
                bar.finish_and_clear();
                report?;
            }
        }
        done.push(line);
    }
    Ok(done)
}

fn progress(quiet: bool, options: &SynthOptions) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(options.symbols as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "generating {msg}: {bar:30} {pos}/{len} symbols, {elapsed} elapsed, {eta} left",
    ) {
        bar.set_style(style);
    }
    bar.set_message(format!("{} x {} days", options.symbols, options.days));
    bar
}

/// The codes loads may choose from: the declared market's (sorted), or `None` when nothing
/// restricts them. An error when the declared data is not what the database holds.
pub async fn universe(db: &Db, spec: &DataSpec) -> Result<Option<Vec<String>>, StockError> {
    if !spec.restricts() {
        return Ok(None);
    }
    let mut codes = BTreeSet::new();
    if let Some(decl) = &spec.synth {
        let record = catalog::synth_record(db).await.map_err(StockError::database)?;
        if record.as_ref().map(|r| &r.options) != Some(&decl.options) {
            return Err(StockError::OtherMarket {
                held: record.map_or_else(
                    || "no recorded synthetic market".to_owned(),
                    |r| format!("the synthetic market {}", catalog::describe_synth(&r.options)),
                ),
                declared: catalog::describe_synth(&decl.options),
                command: catalog::synth_command(&decl.options),
            });
        }
        codes.extend(
            catalog::synth_symbols(db)
                .await
                .map_err(StockError::database)?
                .into_iter()
                .map(|s| s.0),
        );
    }
    let records = catalog::import_records(db).await.map_err(StockError::database)?;
    for decl in &spec.imports {
        let Some(r) = records.iter().find(|r| r.sha256 == decl.sha256) else {
            return Err(StockError::NotImported {
                file: decl.file.clone(),
                sha256: identity::short(&decl.sha256).to_owned(),
            });
        };
        codes.extend(r.codes.iter().cloned());
    }
    Ok(Some(codes.into_iter().collect()))
}
