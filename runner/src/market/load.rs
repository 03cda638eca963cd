//! The `load` stage's computation (stock tables -> `Bars` artifact -> normalize).
//!
//! Resolves the symbol selection against the `symbols` of the run's dataset versions (its
//! [`DataView`]), splits the symbols across `connections` workers, fetches with the chosen strategy, then drops short histories and
//! hashes per symbol (prices stay as stored; `normalize` split-adjusts them). Every manifest value reaches SQL as a bound parameter,
//! except in `COPY`, which takes no parameters: there only codes that exist in `symbols` *and*
//! pass [`is_valid_code`] (no quote, backslash or whitespace can appear) and dates formatted by
//! chrono are spliced in, so no manifest text can change the statement.

use super::fetch::{fetch_worker, Collected};
use super::fetch_sqlite::placeholders;
use super::select::{FetchStrategy, LoadParams, SymbolSelection};
use super::stock::{db_message, is_valid_code};
use super::versions::DataView;
use crate::artifact::{Bars, SymbolBars};
use crate::db::Db;
use crate::metrics::Recorder;
use chrono::NaiveDate;
use rand::SeedableRng;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// Why `load` produced no artifact.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{}", not_found_message(.missing, .suggestions))]
    NotFound {
        missing: Vec<String>,
        /// `(asked, close match)` pairs.
        suggestions: Vec<(String, String)>,
    },
    #[error("symbols = {asked} needs {wanted} symbols but {} has {available}", scope_name(*.declared))]
    TooFew {
        asked: String,
        wanted: usize,
        available: usize,
        /// Counted within the data the manifest declares (`[data]`), not the whole database.
        declared: bool,
    },
    /// Codes the stock database holds only in versions the run does not read.
    #[error("{}", undeclared_message(.codes, .view, *.declared))]
    Undeclared {
        codes: Vec<String>,
        /// The versions the run reads, `a@1, b@2`.
        view: String,
        declared: bool,
    },
    #[error(
        "no bars for symbols = {selection} in {range} (min_history = {min_history}); \
         hint: run `measured data synth` or `measured data import`, or widen the range"
    )]
    Empty {
        selection: String,
        range: String,
        min_history: usize,
    },
    #[error(
        "strategy = \"copy\" needs Postgres, but the stock database is SQLite; \
         hint: use strategy = \"stream\" or \"batched\", or set STOCK_DATABASE_URL"
    )]
    CopyNeedsPostgres,
    #[error("symbol code `{0}` in the database contains characters load cannot use with COPY")]
    UnsafeCode(String),
    #[error("database error while loading bars: {0}")]
    Db(String),
    #[error("malformed COPY data: {0}")]
    Decode(String),
}

impl From<sqlx::Error> for LoadError {
    fn from(e: sqlx::Error) -> Self {
        LoadError::Db(db_message(&e))
    }
}

fn undeclared_message(codes: &[String], view: &str, declared: bool) -> String {
    let shown: Vec<String> = codes.iter().take(10).map(|c| format!("`{c}`")).collect();
    let (s, them) = if codes.len() == 1 { ("", "it") } else { ("s", "them") };
    let hint = if declared {
        format!(
            "declare the data that holds {them} (e.g. its CSV file under [data] import), or select symbols of \
             the declared market"
        )
    } else {
        format!("read the version that holds {them} with `measured run --data VERSION` (`measured data ls` lists them)")
    };
    format!(
        "symbol{s} {} {} in the stock database but not in the dataset versions this run reads ({view})\nhint: {hint}",
        shown.join(", "),
        if codes.len() == 1 { "is" } else { "are" }
    )
}

fn scope_name(declared: bool) -> &'static str {
    if declared {
        "the data declared in [data]"
    } else {
        "the stock database"
    }
}

fn not_found_message(missing: &[String], suggestions: &[(String, String)]) -> String {
    let shown: Vec<String> = missing.iter().take(10).map(|c| format!("`{c}`")).collect();
    let more = missing.len().saturating_sub(10);
    let mut msg = format!(
        "symbol{} not found in the stock database: {}{}",
        if missing.len() == 1 { "" } else { "s" },
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
    for (asked, close) in suggestions {
        msg.push_str(&format!("\nhint: did you mean `{close}` for `{asked}`?"));
    }
    if suggestions.is_empty() {
        msg.push_str("\nhint: list symbols in the database, or import them with `measured data import`");
    }
    msg
}

/// A selection as a manifest would spell it, for messages.
pub(crate) fn describe(sel: &SymbolSelection) -> String {
    match sel {
        SymbolSelection::List(codes) if codes.len() <= 5 => format!("{codes:?}"),
        SymbolSelection::List(codes) => format!("[{} codes starting with {:?}]", codes.len(), codes[0]),
        SymbolSelection::All => "\"all\"".into(),
        SymbolSelection::First(n) => format!("{{ first = {n} }}"),
        SymbolSelection::Random { n, seed } => format!("{{ random = {n}, seed = {seed} }}"),
    }
}

/// Loads the selected bars of the newest version of every dataset (what a manifest that
/// declares no data reads), as [`load_within`] does.
pub async fn load(db: &Db, params: &LoadParams, rec: &mut Recorder) -> Result<Bars, LoadError> {
    let view = DataView {
        versions: super::versions::latest(db)
            .await
            .map_err(|e| LoadError::Db(e.to_string()))?
            .iter()
            .map(super::versions::Version::to_ref)
            .collect(),
        declared: false,
    };
    load_within(db, params, &view, rec).await
}

/// Loads the selected bars of the dataset versions `view` holds. Records `rows`, `symbols`,
/// `symbols_dropped`, `bytes` (the columnar payload, the same for every strategy), `seconds`
/// and `rows_per_second`, plus `wire_bytes` for `copy`; a note names the symbols
/// `min_history` dropped.
pub async fn load_within(db: &Db, params: &LoadParams, view: &DataView, rec: &mut Recorder) -> Result<Bars, LoadError> {
    let started = Instant::now();
    if params.strategy == FetchStrategy::Copy && matches!(db, Db::Sqlite(_)) {
        return Err(LoadError::CopyNeedsPostgres);
    }
    let targets = resolve(db, &params.symbols, view).await?;
    // More workers than pooled connections would only queue (and could hit the pool's acquire
    // timeout on long loads), so the pool size caps the parallelism. (SQLite workers open
    // read-only connections of their own; the same cap keeps them to a few.)
    let pool_size = match db {
        Db::Sqlite(pool) => pool.options().get_max_connections(),
        Db::Postgres(pool) => pool.options().get_max_connections(),
    } as usize;
    let workers = params.connections.min(pool_size).min(targets.len()).max(1);
    // Round-robin keeps the workers' shares balanced when codes are ordered by size or age.
    let mut shares = vec![Vec::new(); workers];
    for (i, target) in targets.iter().enumerate() {
        shares[i % workers].push(target.clone());
    }
    let codes: Vec<String> = targets.into_iter().map(|(c, _)| c).collect();
    // Workers run concurrently on the caller's task rather than as spawned tasks: their time
    // is mostly spent waiting on sockets, and a task hop per network read costs more (about
    // a third of the COPY throughput in the benchmark) than decoding on one thread.
    let outputs =
        futures_util::future::try_join_all(shares.iter().map(|share| fetch_worker(db, share, params))).await?;
    let mut by_code: HashMap<String, (SymbolBars, [u8; 32])> = HashMap::new();
    let (mut dropped, mut wire_bytes) = (HashSet::new(), 0u64);
    for output in outputs {
        let Collected {
            symbols,
            dropped: d,
            wire_bytes: w,
        } = output;
        dropped.extend(d);
        wire_bytes += w;
        by_code.extend(symbols.into_iter().map(|s| (s.0.symbol.clone(), s)));
    }
    let mut bars = Bars::default();
    let mut hasher = Sha256::new();
    for code in &codes {
        if let Some((symbol, digest)) = by_code.remove(code) {
            hasher.update((code.len() as u32).to_le_bytes());
            hasher.update(code.as_bytes());
            hasher.update(digest);
            bars.symbols.push(symbol);
        }
    }
    if bars.symbols.is_empty() {
        return Err(LoadError::Empty {
            selection: describe(&params.symbols),
            range: describe_range(params.start, params.end),
            min_history: params.min_history,
        });
    }
    bars.content_hash = format!("{:x}", hasher.finalize());
    let rows = bars.rows();
    let seconds = started.elapsed().as_secs_f64();
    let payload = rows * (std::mem::size_of::<NaiveDate>() + 7 * std::mem::size_of::<f64>());
    rec.record("rows", rows as f64, "count");
    rec.record("symbols", bars.symbols.len() as f64, "count");
    rec.record("symbols_dropped", dropped.len() as f64, "count");
    if !dropped.is_empty() {
        // Named in selection order, so the note is the same for every strategy and worker count.
        let names: Vec<String> = codes.iter().filter(|c| dropped.contains(*c)).cloned().collect();
        rec.note(dropped_note(&names, params));
    }
    rec.record("bytes", payload as f64, "B");
    if params.strategy == FetchStrategy::Copy {
        rec.record("wire_bytes", wire_bytes as f64, "B");
    }
    rec.record("seconds", seconds, "s");
    rec.record("rows_per_second", rows as f64 / seconds.max(1e-9), "rows/s");
    Ok(bars)
}

/// "dropped 3 symbols with fewer than 70 rows in the whole history (min_history = 70): A, B, C".
pub(crate) fn dropped_note(names: &[String], params: &LoadParams) -> String {
    let range = describe_range(params.start, params.end);
    let what = if params.min_history == 1 {
        format!("no rows in {range}")
    } else {
        format!(
            "fewer than {} rows in {range} (min_history = {})",
            params.min_history, params.min_history
        )
    };
    format!(
        "dropped {} with {what}: {}",
        crate::metrics::count(names.len(), "symbol"),
        crate::metrics::named_list(names)
    )
}

fn describe_range(start: Option<NaiveDate>, end: Option<NaiveDate>) -> String {
    match (start, end) {
        (None, None) => "the whole history".into(),
        (Some(s), None) => format!("{s} onwards"),
        (None, Some(e)) => format!("the history up to {e}"),
        (Some(s), Some(e)) => format!("{s}..={e}"),
    }
}

/// Digest of one symbol's loaded values: every date and column, in order.
pub(crate) fn symbol_digest(s: &SymbolBars) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut buf = Vec::with_capacity(s.len() * 60);
    for i in 0..s.len() {
        buf.extend_from_slice(&chrono::Datelike::num_days_from_ce(&s.dates[i]).to_le_bytes());
        for col in [&s.open, &s.high, &s.low, &s.close, &s.volume, &s.amount, &s.adj_factor] {
            buf.extend_from_slice(&col[i].to_le_bytes());
        }
    }
    h.update(&buf);
    h.finalize().into()
}

/// Replaces every adjustment factor with 1 (`adjust = false`), so the features see raw prices
/// and a split shows up as the price gap it is in the raw data.
///
/// Prices are never scaled here: they stay as stored, and the `normalize` stage multiplies them
/// by `adj_factor` (and divides volumes by it), the one place in the pipeline where prices are
/// split-adjusted, whichever way the bars arrived (database, CSV import, in-memory generator).
pub(crate) fn drop_adjustment(s: &mut SymbolBars) {
    s.adj_factor.iter_mut().for_each(|a| *a = 1.0);
}

/// The codes `sel` names among the symbols of `view`'s versions, each with the version it is
/// read from, in artifact order.
pub(crate) async fn resolve(db: &Db, sel: &SymbolSelection, view: &DataView) -> Result<Vec<(String, i64)>, LoadError> {
    let declared = view.declared;
    let held = view_codes(db, view).await?;
    let version_of: HashMap<&str, i64> = held.iter().map(|(c, v)| (c.as_str(), *v)).collect();
    let with_version = |codes: Vec<String>| -> Vec<(String, i64)> {
        codes
            .into_iter()
            .filter_map(|c| version_of.get(c.as_str()).map(|v| (c.clone(), *v)))
            .collect()
    };
    let all: Vec<String> = held.iter().map(|(c, _)| c.clone()).collect();
    match sel {
        SymbolSelection::List(asked) => {
            let missing: Vec<String> = asked
                .iter()
                .filter(|c| !version_of.contains_key(c.as_str()))
                .cloned()
                .collect();
            if missing.is_empty() {
                return Ok(with_version(asked.clone()));
            }
            // Held by another version than the run reads: say which, rather than "not found".
            let elsewhere = existing_codes(db, &missing).await?;
            let outside: Vec<String> = missing.iter().filter(|c| elsewhere.contains(*c)).cloned().collect();
            if !outside.is_empty() {
                return Err(LoadError::Undeclared {
                    codes: outside,
                    view: view.labels(),
                    declared,
                });
            }
            let suggestions = missing
                .iter()
                .filter_map(|m| {
                    all.iter()
                        .map(|c| (strsim::jaro_winkler(&m.to_uppercase(), &c.to_uppercase()), c))
                        .filter(|(score, _)| *score > 0.85)
                        .max_by(|a, b| a.0.total_cmp(&b.0))
                        .map(|(_, c)| (m.clone(), c.clone()))
                })
                .take(5)
                .collect();
            Err(LoadError::NotFound { missing, suggestions })
        }
        SymbolSelection::All => {
            if all.is_empty() {
                return Err(LoadError::TooFew {
                    asked: describe(sel),
                    wanted: 1,
                    available: 0,
                    declared,
                });
            }
            Ok(with_version(all))
        }
        SymbolSelection::First(n) | SymbolSelection::Random { n, .. } => {
            if all.len() < *n {
                return Err(LoadError::TooFew {
                    asked: describe(sel),
                    wanted: *n,
                    available: all.len(),
                    declared,
                });
            }
            if let SymbolSelection::Random { seed, .. } = sel {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(*seed);
                let mut picked = rand::seq::index::sample(&mut rng, all.len(), *n).into_vec();
                picked.sort_unstable();
                Ok(with_version(picked.into_iter().map(|i| all[i].clone()).collect()))
            } else {
                Ok(with_version(all.into_iter().take(*n).collect()))
            }
        }
    }
}

/// Every code of `view`'s versions with its version, sorted by code. Codes that cannot be used
/// safely are left out, whatever the table holds.
pub(crate) async fn view_codes(db: &Db, view: &DataView) -> Result<Vec<(String, i64)>, LoadError> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for id in view.ids() {
        let sql = "SELECT code FROM symbols WHERE version = $1 ORDER BY code";
        let codes: Vec<String> = match db {
            Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(id).fetch_all(pool).await?,
            Db::Postgres(pool) => sqlx::query_scalar(sql).bind(id).fetch_all(pool).await?,
        };
        out.extend(codes.into_iter().filter(|c| is_valid_code(c)).map(|c| (c, id)));
    }
    out.sort();
    // A view's versions never share a code; should they, the first version keeps it.
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// The subset of `asked` present in `symbols` of any version (codes travel as bound
/// parameters).
pub(crate) async fn existing_codes(db: &Db, asked: &[String]) -> Result<std::collections::HashSet<String>, LoadError> {
    let mut found = std::collections::HashSet::new();
    match db {
        Db::Postgres(pool) => {
            let codes: Vec<String> = sqlx::query_scalar("SELECT DISTINCT code FROM symbols WHERE code = ANY($1)")
                .bind(asked)
                .fetch_all(pool)
                .await?;
            found.extend(codes);
        }
        Db::Sqlite(pool) => {
            for chunk in asked.chunks(500) {
                let sql = format!(
                    "SELECT DISTINCT code FROM symbols WHERE code IN ({})",
                    placeholders(chunk.len())
                );
                let mut q = sqlx::query_scalar::<_, String>(&sql);
                for c in chunk {
                    q = q.bind(c);
                }
                found.extend(q.fetch_all(pool).await?);
            }
        }
    }
    // Codes that cannot be used safely are treated as absent, whatever the table holds.
    found.retain(|c| is_valid_code(c));
    Ok(found)
}
