//! Before the first trial (commands `run`/`plan` -> **preflight** -> exec): the stock database
//! is made to hold the data the manifest declares (`[data]`), then every `load` stage's static
//! needs are checked against it, so a run that cannot get its data stops with one located
//! message and the fix before anything is stored, instead of failing every trial.

use crate::db;
use crate::db::{Db, DbError};
use crate::kinds::{LoadParams, StageKind, StageParams};
use crate::manifest::{self, Experiment, ManifestError, ManifestErrors};
use crate::market::{self, DataIdentity, DataSpec, DataView, LoadError, StockPlace};
use indexmap::IndexMap;
use windows::{window_problems, Loaded};

mod windows;

/// Dataset versions a run reads instead of the ones its manifest's `[data]` resolves to.
#[derive(Debug, Clone)]
pub enum Pin {
    /// `run --data NAME...`: `dataset@number`, a dataset (its newest version) or an id.
    Named(Vec<String>),
    /// The versions a run stored, for its resumption.
    Stored(Vec<market::VersionRef>),
}

/// The stock database, ready for the run.
pub struct Prepared {
    pub db: Db,
    /// The dataset versions loads read.
    pub view: DataView,
    /// What the loads read, stored with the run; `None` when no stage loads bars.
    pub identity: Option<DataIdentity>,
}

/// Whether a stage of `exp` reads the stock database.
pub fn reads_stock(exp: &Experiment) -> bool {
    exp.stages.iter().any(|s| s.kind == StageKind::Load)
}

/// Why the stock database cannot serve a run, or cannot be prepared for it. The commands map
/// each to their exit status: a request that cannot be met is bad input (2), the rest failures (1).
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// What was asked cannot be: a stock database named apart that does not exist, `--data`
    /// naming a version the database lacks.
    #[error("{0}")]
    BadInput(String),
    /// The stock data cannot serve the manifest (not there, not what it declares), located
    /// like a manifest error.
    #[error("{0}")]
    Data(ManifestErrors),
    /// The stock database cannot be reached or migrated.
    #[error(transparent)]
    Connect(#[from] DbError),
    /// The stock database failed a query: its message, any password redacted.
    #[error("{0}")]
    Database(String),
}

/// What the preflight needs of the command line: the stock database it prepares and whether to
/// speak. The commands build it from their options.
#[derive(Debug, Clone)]
pub struct StockOptions {
    /// The stock database's URL.
    pub url: String,
    /// Named apart from the results database (`--stock-database`, `STOCK_DATABASE_URL`).
    pub named: bool,
    /// `measured` with the options that reach this database, to print runnable commands.
    pub command: String,
    /// Say nothing on stderr.
    pub quiet: bool,
}

impl StockOptions {
    /// The stock database, as the data policy sees it.
    pub fn place(&self) -> StockPlace {
        StockPlace {
            embedded: !self.named && db::is_sqlite_url(&self.url),
            named: self.named,
            command: self.command.clone(),
            shown: db::redact_url(&self.url),
        }
    }
}

fn runtime_error(e: impl std::fmt::Display, url: &str) -> PreflightError {
    PreflightError::Database(db::redact_text(&e.to_string(), url))
}

/// `[data] versions` naming a version the stock database lacks: located at the list.
fn unknown_versions(exp: &Experiment, text: &str) -> PreflightError {
    let (message, hint) = split_hint(text);
    let span = manifest::span_of(exp, &exp.data.versions_at, false);
    PreflightError::Data(manifest::located(
        exp,
        vec![ManifestError::new(message, span)
            .label("not in the stock database")
            .maybe_hint(hint)],
    ))
}

fn refusal(exp: &Experiment, r: market::Refusal) -> PreflightError {
    // A table (`data.synth`) is pointed at by its key, a value in it (`sha256`) by the value.
    let span = manifest::span_of(exp, &r.at, r.at.len() <= 2);
    PreflightError::Data(manifest::located(
        exp,
        vec![ManifestError::new(r.message, span).label(r.label).hint(r.hint)],
    ))
}

/// Prepares the declared data and, with `check`, checks every load stage against it (exit 1
/// before anything is stored when unmet). `pin` names the dataset versions to read instead
/// (`run --data`, or a resumed run's own); nothing is prepared then. `None` when nothing
/// reads or declares stock data.
pub fn prepare(
    stock: &StockOptions,
    exp: &Experiment,
    check: bool,
    pin: Option<&Pin>,
) -> Result<Option<Prepared>, PreflightError> {
    // `[data] versions` pins the data as `--data` does; `--data` wins over it.
    let declared = exp.data.names_versions().then(|| Pin::Named(exp.data.versions.clone()));
    let from_manifest = pin.is_none() && declared.is_some();
    let pin = pin.or(declared.as_ref());
    if !reads_stock(exp) && !exp.data.restricts() && pin.is_none() {
        return Ok(None);
    }
    let url = stock.url.clone();
    let place = stock.place();
    if place.named {
        if let Some(missing) = crate::stage::missing_named_stock(&url) {
            return Err(PreflightError::BadInput(missing.to_string()));
        }
    }
    let db = Db::open_with(&url, 8)?;
    let view = match pin {
        Some(Pin::Named(names)) => db::wait(market::pinned_view(&db, names)).map_err(|e| {
            let text = db::redact_text(&e.to_string(), &url);
            match from_manifest {
                true => unknown_versions(exp, &text),
                false => PreflightError::BadInput(text),
            }
        })?,
        Some(Pin::Stored(refs)) => db::wait(market::stored_view(&db, refs)).map_err(|e| runtime_error(e, &url))?,
        None => {
            let steps = db::wait(market::decide_data(&db, &exp.data, &place))
                .map_err(|e| runtime_error(e, &url))?
                .map_err(|r| refusal(exp, r))?;
            let done = db::wait(market::apply_data(&db, steps, stock.quiet)).map_err(|e| runtime_error(e, &url))?;
            if !stock.quiet {
                for line in &done {
                    eprintln!("stock data: {}: {line}", place.shown);
                }
            }
            db::wait(market::data_view(&db, &exp.data)).map_err(|e| runtime_error(e, &url))?
        }
    };
    if !reads_stock(exp) {
        return Ok(Some(Prepared {
            db,
            view,
            identity: None,
        }));
    }
    let identity = db::wait(market::identify(&db, &view)).map_err(|e| runtime_error(e, &url))?;
    if check {
        let problems = db::wait(problems(exp, &db, &view, &identity, &place)).map_err(|e| runtime_error(e, &url))?;
        if !problems.is_empty() {
            return Err(PreflightError::Data(manifest::located(exp, problems)));
        }
    }
    if !stock.quiet {
        eprintln!("stock data: {}: {identity}", place.shown);
    }
    Ok(Some(Prepared {
        db,
        view,
        identity: Some(identity),
    }))
}

/// What `measured plan` says about the data: what a run would prepare, or, when the declared
/// data is there, the preflight's verdict (an error when unmet). Reads only.
pub fn plan_lines(stock: &StockOptions, exp: &Experiment) -> Result<Vec<String>, PreflightError> {
    if !reads_stock(exp) && !exp.data.restricts() && !exp.data.names_versions() {
        return Ok(Vec::new());
    }
    let url = stock.url.clone();
    let place = stock.place();
    let later = "preflight: checked once the data is there (`measured run --preflight-only` prepares and \
                 checks it without running a trial)"
        .to_owned();
    if db::is_sqlite_url(&url) && db::sqlite_file_id(&url).is_none() {
        if let Some(missing) = place.named.then(|| crate::stage::missing_named_stock(&url)).flatten() {
            return Err(PreflightError::BadInput(missing.to_string()));
        }
        if exp.data.names_versions() {
            return Err(unknown_versions(
                exp,
                &format!(
                    "[data] names stored dataset versions, but the stock database {} does not exist yet
hint: \
                     `measured data synth` or `measured data import FILE` makes the versions to name",
                    place.shown
                ),
            ));
        }
        return Ok(vec![
            format!(
                "stock data: {} does not exist yet; `measured run` creates it with {}",
                place.shown,
                declared_words(&exp.data)
            ),
            later,
        ]);
    }
    let db = Db::open_with(&url, 4)?;
    let result = (|| {
        if exp.data.names_versions() {
            let view = db::wait(market::pinned_view(&db, &exp.data.versions))
                .map_err(|e| unknown_versions(exp, &db::redact_text(&e.to_string(), &url)))?;
            return verdict_lines(exp, &db, &view, &place, &url);
        }
        let steps = db::wait(market::decide_data(&db, &exp.data, &place))
            .map_err(|e| runtime_error(e, &url))?
            .map_err(|r| refusal(exp, r))?;
        if !steps.is_empty() {
            let mut lines = vec![format!("stock data: {}: `measured run` will first:", place.shown)];
            lines.extend(steps.iter().map(|s| format!("  {s}")));
            lines.push(later);
            return Ok(lines);
        }
        let view = db::wait(market::data_view(&db, &exp.data)).map_err(|e| runtime_error(e, &url))?;
        verdict_lines(exp, &db, &view, &place, &url)
    })();
    db.shut();
    result
}

/// The preflight's verdict on `view` for `measured plan`: an error when a need is unmet.
fn verdict_lines(
    exp: &Experiment,
    db: &Db,
    view: &DataView,
    place: &StockPlace,
    url: &str,
) -> Result<Vec<String>, PreflightError> {
    let identity = db::wait(market::identify(db, view)).map_err(|e| runtime_error(e, url))?;
    let problems = db::wait(problems(exp, db, view, &identity, place)).map_err(|e| runtime_error(e, url))?;
    if !problems.is_empty() {
        return Err(PreflightError::Data(manifest::located(exp, problems)));
    }
    Ok(vec![
        format!("stock data: {}: {identity}", place.shown),
        "preflight: every load stage's needs are met".to_owned(),
    ])
}

/// The declared data in words, for a database that does not exist yet.
fn declared_words(spec: &DataSpec) -> String {
    let mut parts = Vec::new();
    if let Some(s) = &spec.synth {
        parts.push(format!(
            "the synthetic market {}",
            market::catalog::describe_synth(&s.options)
        ));
    }
    for i in &spec.imports {
        parts.push(format!("{} imported", i.file));
    }
    if parts.is_empty() {
        parts.push(format!(
            "the demo market ({})",
            market::catalog::describe_synth(&market::demo_options())
        ));
    }
    parts.join(" and ")
}

/// Every unmet static need of the load stages of `exp` and of `[data] require`, located.
async fn problems(
    exp: &Experiment,
    db: &Db,
    view: &DataView,
    identity: &DataIdentity,
    place: &StockPlace,
) -> Result<Vec<ManifestError>, market::MarketError> {
    let mut out = requirement_problems(exp, db, view, identity).await?;
    let holds = format!("{} holds {identity}", place.shown);
    let holds = holds.as_str();
    for (si, def) in exp.stages.iter().enumerate().filter(|(_, s)| s.kind == StageKind::Load) {
        // Configs that load with the same parameters are checked once.
        let mut groups: IndexMap<String, Vec<usize>> = IndexMap::new();
        for (ci, c) in exp.configs.iter().enumerate() {
            let Some(r) = c.stages.get(si) else { continue };
            groups.entry(r.params.canonical()).or_default().push(ci);
        }
        for configs in groups.values() {
            let first = configs[0];
            let StageParams::Load(params) = &exp.configs[first].stages[si].params else {
                continue; // a load stage's parameters are a load's
            };
            let which = which_configs(exp, configs);
            let codes = match market::resolve_selection(db, &params.symbols, view).await {
                Ok(targets) => targets.into_iter().map(|(c, _)| c).collect::<Vec<_>>(),
                Err(e @ (LoadError::TooFew { .. } | LoadError::NotFound { .. } | LoadError::Undeclared { .. })) => {
                    let (message, hint) = split_hint(&e.to_string());
                    let fix = selection_fix(exp, &e, place).or(hint).unwrap_or_default();
                    out.push(
                        ManifestError::new(
                            format!("stage `{}`{which}: {message} ({holds})", def.name),
                            manifest::param_span(exp, first, &def.name, "symbols"),
                        )
                        .label("not in the stock data")
                        .hint(fix),
                    );
                    continue;
                }
                Err(LoadError::Db(e)) => return Err(market::MarketError::Db(e)),
                Err(_) => continue, // the load itself reports anything else, with its cause
            };
            let mut spans = market::bars_per_symbol(db, view, &codes, params.start, params.end).await?;
            spans.retain(|_, s| s.bars as usize >= params.min_history);
            if spans.is_empty() {
                let param = if params.start.is_some() || params.end.is_some() {
                    if params.end.is_some() {
                        "end"
                    } else {
                        "start"
                    }
                } else {
                    "min_history"
                };
                out.push(
                    ManifestError::new(
                        format!(
                            "stage `{}`{which}: none of the {} symbols of symbols = {} has {} or more bars in {} ({holds})",
                            def.name,
                            codes.len(),
                            market::describe_selection(&params.symbols),
                            params.min_history,
                            range_words(params)
                        ),
                        manifest::param_span(exp, first, &def.name, param),
                    )
                    .label("no bars here")
                    .hint("widen `start`/`end` to the dates the data holds, or lower `min_history`"),
                );
                continue;
            }
            let loaded = Loaded {
                stage: si,
                configs,
                params,
                spans: &spans,
            };
            out.extend(window_problems(exp, db, view, &loaded).await?);
        }
    }
    Ok(out)
}

/// `[data] require` against the data loads choose from.
async fn requirement_problems(
    exp: &Experiment,
    db: &Db,
    view: &DataView,
    identity: &DataIdentity,
) -> Result<Vec<ManifestError>, market::MarketError> {
    let req = &exp.data.require;
    let at = |key: &str| {
        let mut at = req.at.clone();
        at.push(key.to_owned());
        manifest::span_of(exp, &at, false)
    };
    let scope = if view.declared {
        "the data declared in [data]"
    } else {
        "the data this run reads"
    };
    let mut out = Vec::new();
    if let Some(min) = req.min_symbols.filter(|&m| identity.symbols < m as u64) {
        out.push(
            ManifestError::new(
                format!("[data] requires at least {min} symbols, but {scope} has {identity}"),
                at("min_symbols"),
            )
            .label("too few symbols")
            .hint(format!(
                "declare a market that has them, e.g. synth = {{ symbols = {min} }} in [data], or fill the stock \
                 database with `measured data synth --symbols {min}`"
            )),
        );
    }
    if let Some(min) = req.min_days {
        let days = market::trading_days_held(db, view).await?;
        if days < min as u64 {
            out.push(
                ManifestError::new(
                    format!("[data] requires at least {min} trading days, but {scope} has {days} ({identity})"),
                    at("min_days"),
                )
                .label("too few days")
                .hint(format!(
                    "declare a longer market, e.g. synth = {{ days = {min} }} in [data], or fill the stock \
                     database with `measured data synth --days {min}`"
                )),
            );
        }
    }
    if !req.codes.is_empty() {
        let held: std::collections::HashSet<String> = market::view_codes(db, view)
            .await
            .map_err(|e| market::MarketError::Db(e.to_string()))?
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        let missing: Vec<String> = req
            .codes
            .iter()
            .filter(|c| !held.contains(*c))
            .map(|c| format!("`{c}`"))
            .collect();
        if !missing.is_empty() {
            out.push(
                ManifestError::new(
                    format!("[data] requires {}, which {scope} lacks ({identity})", missing.join(", ")),
                    at("codes"),
                )
                .label("missing symbols")
                .hint("declare the CSV files that hold them under [data] import, or import them with `measured data import`"),
            );
        }
    }
    Ok(out)
}

/// ` (configs `a`, `b`)` when only some configs have these parameters, else nothing.
fn which_configs(exp: &Experiment, configs: &[usize]) -> String {
    if configs.len() == exp.configs.len() {
        return String::new();
    }
    let names: Vec<String> = configs.iter().map(|&c| format!("`{}`", exp.configs[c].name)).collect();
    format!(
        " ({} {})",
        if names.len() == 1 { "config" } else { "configs" },
        names.join(", ")
    )
}

fn range_words(p: &LoadParams) -> String {
    match (p.start, p.end) {
        (None, None) => "the whole history".into(),
        (Some(s), None) => format!("{s} onwards"),
        (None, Some(e)) => format!("the history up to {e}"),
        (Some(s), Some(e)) => format!("{s}..={e}"),
    }
}

/// An error text's first part and its `hint:` line, if any.
fn split_hint(text: &str) -> (String, Option<String>) {
    match text.split_once("\nhint: ") {
        Some((m, h)) => (m.replace('\n', " "), Some(h.replace("\nhint: ", "; "))),
        None => (text.replace('\n', " "), None),
    }
}

/// The fix for a selection the data cannot satisfy: the `[data]` table to add, or what to
/// change in the one declared.
fn selection_fix(exp: &Experiment, e: &LoadError, place: &StockPlace) -> Option<String> {
    let LoadError::TooFew { wanted, available, .. } = e else {
        return None;
    };
    let spec = &exp.data;
    if let Some(s) = &spec.synth {
        return Some(format!(
            "raise `symbols` of the market in [data] to {wanted} (it declares {}), or select at most {available} symbols",
            s.options.symbols
        ));
    }
    if !spec.imports.is_empty() {
        return Some(format!(
            "the files declared in [data] hold {available} symbols: select at most {available}, or declare files \
             that hold more"
        ));
    }
    let days = 2500;
    Some(format!(
        "declare the market this experiment needs, so `measured run` prepares it:\n\n[data]\nsynth = {{ symbols = \
         {wanted}, days = {days}, seed = 42, style = \"mixed\" }}\n\nor fill the stock database yourself: {} data \
         synth --symbols {wanted} --days {days}",
        place.command
    ))
}
