//! Making the stock database hold the data an experiment declares (`[data]`) before a run is
//! stored (manifest `[data]` -> [`DataSpec`] -> **prepare** -> dataset versions -> view ->
//! `load`).
//!
//! [`decide`] only reads: it says what would be written, or why nothing may be (a
//! [`Refusal`], located in the manifest). [`apply`] writes those steps. Every step writes a new
//! dataset version and none changes a stored one: a declared market this build's generator
//! has not written yet is generated beside any other (a market an older generator wrote stays
//! as the version it is, and the runs that read it keep reading it), and a declared file is
//! imported once, as a version of its own. [`view`] then says which versions a run reads.

use super::import::{self, ImportPlan};
use super::import_options::ImportOptions;
use crate::db::Db;
use crate::market::stock::{MarketError, StockError};
use crate::market::synth_options::{demo_options, describe_synth, synth_command, SynthOptions};
use crate::market::versions::{self, short, DataView, Origin, VersionRef};
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
    /// The dataset versions a run stored: read instead of the declared data (a resumed run, a
    /// queue worker), so every trial of a run reads the same bars.
    pub pinned: Option<Vec<VersionRef>>,
    /// `[data] versions = ["bars@1"]`: stored dataset versions to read, as `run --data` names
    /// them (`dataset@number`, a dataset's newest version, or an id). Nothing is prepared.
    pub versions: Vec<String>,
    /// Where the manifest declares `versions` (a key path, for locating messages).
    pub versions_at: Vec<String>,
}

impl DataSpec {
    /// Whether loads choose only among the declared data (a market or files are declared).
    pub fn restricts(&self) -> bool {
        self.synth.is_some() || !self.imports.is_empty()
    }

    /// Whether a run reads stored versions the manifest names (`[data] versions`).
    pub fn names_versions(&self) -> bool {
        !self.versions.is_empty()
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
    /// Generate the declared market as a new version; `beside` names the versions of other
    /// generators or options already stored, which stay as they are.
    Generate { options: SynthOptions, beside: Vec<String> },
    /// Import a declared file as a new version of its own.
    Import { file: String, plan: Box<ImportPlan> },
    /// Nothing declared and no bars at all: the embedded database gets the demo market.
    Demo,
}

impl Step {
    /// The step in words: what will be done, or with `past`, what was.
    pub fn describe(&self, past: bool) -> String {
        let verb = |now: &str, then: &str| if past { then.to_owned() } else { now.to_owned() };
        match self {
            Step::Generate { options, beside } => {
                let mut s = format!(
                    "{} the synthetic market {} as a new version of {}",
                    verb("generate", "generated"),
                    describe_synth(options),
                    versions::synth_dataset(options)
                );
                if !beside.is_empty() {
                    s.push_str(&format!(
                        " (beside {}, which {})",
                        beside.join(", "),
                        if beside.len() == 1 {
                            "stays as it is"
                        } else {
                            "stay as they are"
                        }
                    ));
                }
                s
            }
            Step::Import { file, plan } => format!(
                "{} {file} ({} rows of {} symbols) as a new version of {}",
                verb("import", "imported"),
                plan.rows,
                plan.codes.len(),
                versions::dataset_from_file(std::path::Path::new(file))
            ),
            Step::Demo => format!(
                "{} the empty database with the demo market ({})",
                verb("fill", "filled"),
                describe_synth(&demo_options())
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
    // Each declared part's symbols, to refuse parts that would put two bars on one date.
    let mut parts: Vec<(Vec<String>, BTreeSet<String>)> = Vec::new();
    if let Some(decl) = &spec.synth {
        let want = &decl.options;
        let codes: BTreeSet<String> = super::catalog::expected_symbols(want)
            .into_iter()
            .map(|s| s.0)
            .collect();
        parts.push((decl.at.clone(), codes));
        if versions::by_key(db, &Origin::synth(want).key()).await?.is_none() {
            let dataset = versions::synth_dataset(want);
            let beside = versions::list(db)
                .await?
                .iter()
                .filter(|v| v.dataset == dataset)
                .map(versions::Version::label)
                .collect();
            steps.push(Step::Generate {
                options: want.clone(),
                beside,
            });
        }
    }
    for decl in &spec.imports {
        match import_step(db, decl).await? {
            Ok((step, codes)) => {
                parts.push((decl.at.clone(), codes));
                steps.extend(step);
            }
            Err(refusal) => return Ok(Err(refusal)),
        }
    }
    if let Some(refusal) = overlapping_parts(&parts) {
        return Ok(Err(refusal));
    }
    if !spec.restricts() && versions::list(db).await?.is_empty() {
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

/// A refusal when two declared parts hold the same symbol: a run reads one bar per symbol and
/// date, and two versions would each offer one.
fn overlapping_parts(parts: &[(Vec<String>, BTreeSet<String>)]) -> Option<Refusal> {
    for (i, (_, a)) in parts.iter().enumerate() {
        for (at, b) in &parts[i + 1..] {
            let shared: Vec<&String> = a.intersection(b).take(6).collect();
            if !shared.is_empty() {
                let mut shown: Vec<String> = shared.iter().take(5).map(|c| format!("`{c}`")).collect();
                if shared.len() > 5 {
                    shown.push("...".into());
                }
                return Some(Refusal {
                    message: format!(
                        "this declared data and an earlier part of [data] both hold {}: a run reads one bar per \
                         symbol and date",
                        shown.join(", ")
                    ),
                    at: at.clone(),
                    label: "holds symbols of another declared part".into(),
                    hint: "declare data whose symbols do not overlap (another synth `style`, or files of other \
                           symbols), or merge the files into one dataset with `measured data import --into`"
                        .into(),
                });
            }
        }
    }
    None
}

// Long because: a branch per state of the declared file (unreadable, another content, imported,
// not yet imported), each with its own message.
/// Whether a declared file is imported (the step to import it if not), with its symbols.
async fn import_step(
    db: &Db,
    decl: &ImportDecl,
) -> Result<Result<(Option<Step>, BTreeSet<String>), Refusal>, MarketError> {
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
    if let Some(v) = versions::by_key(db, &import_key(&actual)).await? {
        return Ok(Ok((None, version_codes(db, v.id).await?)));
    }
    let mut options = decl.options.clone();
    options.files = vec![decl.path.clone()];
    let mut plan = match import::prepare(&options) {
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
    // The version names the file as the manifest does, not by where this checkout keeps it.
    if let Some(source) = plan.sources.first_mut() {
        source.file = decl.file.clone();
    }
    let codes = plan.codes.iter().cloned().collect();
    Ok(Ok((
        Some(Step::Import {
            file: decl.file.clone(),
            plan: Box::new(plan),
        }),
        codes,
    )))
}

/// The origin key of a version holding one imported file.
fn import_key(sha256: &str) -> String {
    Origin::Import {
        files: vec![versions::FileRef {
            file: String::new(),
            sha256: sha256.to_owned(),
        }],
    }
    .key()
}

/// The codes of version `id`.
async fn version_codes(db: &Db, id: i64) -> Result<BTreeSet<String>, MarketError> {
    let codes: Vec<String> = crate::on_pool!(db, |pool| {
        sqlx::query_scalar("SELECT code FROM symbols WHERE version = $1")
            .bind(id)
            .fetch_all(pool)
            .await
    })?;
    Ok(codes.into_iter().collect())
}

/// Writes `steps`; returns a line per step for the console. A progress bar shows generation
/// unless `quiet`.
pub async fn apply(db: &Db, steps: Vec<Step>, quiet: bool) -> Result<Vec<String>, MarketError> {
    let mut done = Vec::new();
    for step in steps {
        let line = step.describe(true);
        let version = match step {
            Step::Generate { options, .. } => generate(db, &options, quiet).await?,
            Step::Import { plan, file } => {
                let options = ImportOptions {
                    files: vec![PathBuf::from(&file)],
                    ..ImportOptions::default()
                };
                super::import_write::import_plan(db, *plan, &options)
                    .await
                    .map_err(|e| MarketError::Db(e.to_string()))?
                    .version
            }
            Step::Demo => generate(db, &demo_options(), quiet).await?,
        };
        done.push(format!("{line}: {version}"));
    }
    Ok(done)
}

async fn generate(db: &Db, options: &SynthOptions, quiet: bool) -> Result<VersionRef, MarketError> {
    let bar = progress(quiet, options);
    let result = super::catalog::ensure_synth(db, options, &bar).await;
    bar.finish_and_clear();
    Ok(result?.0)
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

/// The dataset versions a run of a manifest declaring `spec` reads: the declared market's and
/// files' versions; without declared data, the newest version of every dataset. An error when
/// the declared data is not there (`apply` writes it first), or when versions a run would read
/// hold the same symbol.
pub async fn view(db: &Db, spec: &DataSpec) -> Result<DataView, StockError> {
    let mut refs = Vec::new();
    if let Some(decl) = &spec.synth {
        match versions::by_key(db, &Origin::synth(&decl.options).key())
            .await
            .map_err(StockError::database)?
        {
            Some(v) => refs.push(v.to_ref()),
            None => {
                let held: Vec<String> = versions::list(db)
                    .await
                    .map_err(StockError::database)?
                    .iter()
                    .filter(|v| v.dataset == versions::synth_dataset(&decl.options))
                    .map(versions::Version::label)
                    .collect();
                return Err(StockError::OtherMarket {
                    held: if held.is_empty() {
                        String::new()
                    } else {
                        format!(" (it holds {}, written by another generator)", held.join(", "))
                    },
                    declared: describe_synth(&decl.options),
                    command: synth_command(&decl.options),
                });
            }
        }
    }
    for decl in &spec.imports {
        match versions::by_key(db, &import_key(&decl.sha256))
            .await
            .map_err(StockError::database)?
        {
            Some(v) => refs.push(v.to_ref()),
            None => {
                return Err(StockError::NotImported {
                    file: decl.file.clone(),
                    sha256: short(&decl.sha256).to_owned(),
                })
            }
        }
    }
    let declared = spec.restricts();
    if !declared {
        refs = versions::latest(db)
            .await
            .map_err(StockError::database)?
            .iter()
            .map(versions::Version::to_ref)
            .collect();
    }
    checked(
        db,
        DataView {
            versions: refs,
            declared,
        },
    )
    .await
}

/// The view of the versions `names` name (`run --data`): `dataset@number`, a dataset (its
/// newest version) or an id.
pub async fn pinned_view(db: &Db, names: &[String]) -> Result<DataView, StockError> {
    let mut refs: Vec<VersionRef> = Vec::new();
    for name in names {
        let v = versions::find(db, name)
            .await
            .map_err(StockError::database)?
            .map_err(|e| StockError::UnknownVersion(e.to_string()))?;
        if !refs.iter().any(|r| r.id == v.id) {
            refs.push(v.to_ref());
        }
    }
    checked(
        db,
        DataView {
            versions: refs,
            declared: false,
        },
    )
    .await
}

/// The view a run stored, read again (a resumed run, a queue worker): each version by its id,
/// and only while it still has the label the run stored.
pub async fn stored_view(db: &Db, refs: &[VersionRef]) -> Result<DataView, StockError> {
    let all = versions::list(db).await.map_err(StockError::database)?;
    for r in refs {
        if !all.iter().any(|v| v.id == r.id && v.label() == r.label) {
            return Err(StockError::UnknownVersion(format!(
                "dataset version {} (id {}), which this run read, is no longer in the stock database\nhint: a run \
                 reads the same data to its end; start a new run (`measured data ls` lists the versions there are)",
                r.label, r.id
            )));
        }
    }
    Ok(DataView {
        versions: refs.to_vec(),
        declared: false,
    })
}

/// `view` when no two of its versions hold the same symbol.
async fn checked(db: &Db, view: DataView) -> Result<DataView, StockError> {
    let shared = versions::overlaps(db, &view.versions)
        .await
        .map_err(StockError::database)?;
    match shared.into_iter().next() {
        None => Ok(view),
        Some((a, b, codes)) => Err(StockError::Overlap { a, b, codes }),
    }
}
