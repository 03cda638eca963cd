//! The `load` stage's computation (stock tables -> `Bars` artifact -> normalize).
//!
//! Resolves the symbol selection against the `symbols` of the run's dataset versions (its
//! [`DataView`]), splits the symbols across `connections` workers, fetches with the chosen strategy, then drops short histories and
//! hashes per symbol (prices stay as stored; `normalize` split-adjusts them). Every manifest value reaches SQL as a bound parameter,
//! except in `COPY`, which takes no parameters: there only codes that exist in `symbols` *and*
//! pass [`is_valid_code`] (no quote, backslash or whitespace can appear) and dates formatted by
//! chrono are spliced in, so no manifest text can change the statement.

use super::error::LoadError;
use super::fetch::{fetch_worker, Collected};
use super::rows::placeholders;
use crate::artifact::{Bars, SymbolBars};
use crate::db::Db;
use crate::kinds::{FetchStrategy, LoadParams, SymbolSelection};
use crate::market::stock::is_valid_code;
use crate::market::versions::DataView;
use crate::metrics::Recorder;
use chrono::NaiveDate;
use rand::SeedableRng;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

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
        versions: crate::market::versions::latest(db)
            .await
            .map_err(|e| LoadError::Db(e.to_string()))?
            .iter()
            .map(crate::market::versions::Version::to_ref)
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
