//! `measured data synth|import|ls|show|rm`: the stock database's dataset versions.

use crate::db;
use crate::db::Db;
use crate::error::{CommandError, EXIT_OK};
use crate::globals::Globals;
use crate::market::versions::{self, Version};
use crate::market::DataIdentity;
use crate::printable::printable;
use crate::report::format::plural;

/// Runs listed by `data show` and in a refusal of `data rm`; the rest are counted.
const SHOWN_RUNS: usize = 10;

fn runtime_error(e: impl std::fmt::Display, url: &str) -> CommandError {
    CommandError::Runtime(anyhow::Error::msg(db::redact_text(&e.to_string(), url)))
}

/// `measured data synth`: a synthetic market into the stock database, as a new dataset version
/// (or the version already holding it).
pub fn data_synth(g: &Globals, opts: crate::market::SynthOptions) -> Result<u8, CommandError> {
    let url = g.stock_url();
    let db = Db::open(&url)?;
    let bar = if g.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(0)
    };
    let result = db::wait(crate::market::catalog::ensure_synth(&db, &opts, &bar));
    bar.finish_and_clear();
    db.shut();
    match result {
        Ok((_, Some(report))) => {
            println!("{report} into {}", db::redact_url(&url));
            Ok(EXIT_OK)
        }
        Ok((version, None)) => {
            println!(
                "the synthetic market {} is already in {} as {version}; nothing was written",
                crate::market::catalog::describe_synth(&opts),
                db::redact_url(&url)
            );
            Ok(EXIT_OK)
        }
        Err(e @ crate::market::MarketError::Options(_)) => Err(CommandError::BadInput(e.to_string())),
        Err(e) => Err(runtime_error(e, &url)),
    }
}

/// `measured data import`: OHLCV files into the stock database as a new dataset version; all or
/// nothing by default. `--dry-run` only reads and checks the files and prints what would be
/// imported.
pub fn data_import(g: &Globals, opts: crate::market::ImportOptions) -> Result<u8, CommandError> {
    let url = g.stock_url();
    if opts.dry_run {
        // Checks the files only: the database is not even opened, so nothing can be written.
        return match crate::market::prepare(&opts) {
            Ok(plan) => {
                println!("{plan}");
                println!("dry run: nothing was written to {}", db::redact_url(&url));
                Ok(EXIT_OK)
            }
            Err(e) => Err(CommandError::BadInput(db::redact_text(&e.to_string(), &url))),
        };
    }
    // A SQLite file this import creates is removed again when the import fails.
    let created = db::sqlite_path(&url).filter(|p| !p.exists());
    let db = Db::open(&url)?;
    let result = db::wait(crate::market::import(&db, &opts));
    let overlaps = match &result {
        Ok(r) => match &r.version {
            Some(v) if !r.already => db::wait(shared_with_others(&db, v)).unwrap_or_default(),
            _ => Vec::new(),
        },
        Err(_) => Vec::new(),
    };
    db.shut();
    if let (Err(_), Some(file)) = (&result, &created) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = file.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
    let r = result.map_err(|e| CommandError::BadInput(db::redact_text(&e.to_string(), &url)))?;
    let version = r.version.as_ref().map_or_else(|| "?".to_owned(), ToString::to_string);
    if r.already {
        println!(
            "these files are already in {} as {version}; nothing was written",
            db::redact_url(&url)
        );
        print!("{}", pin_lines(&opts, &version));
        return Ok(EXIT_OK);
    }
    println!(
        "imported {} of {} from {} ({} read, {} skipped) into {} as {version}",
        plural(r.rows_written as usize, "row"),
        plural(r.symbols, "symbol"),
        plural(r.files, "file"),
        plural(r.rows_read as usize, "row"),
        plural(r.skipped, "bad row"),
        db::redact_url(&url)
    );
    for b in &r.bad {
        println!("  skipped {}", printable(&b.to_string()));
    }
    if r.skipped > r.bad.len() {
        println!("  ... and {} more", r.skipped - r.bad.len());
    }
    print!("{}", pin_lines(&opts, &version));
    for (other, codes) in overlaps {
        eprintln!(
            "note: {version} and {other} both hold {}; a run that declares no [data] reads the newest version of \
             every dataset, so it must now choose with `measured run --data`",
            codes
                .iter()
                .take(5)
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(EXIT_OK)
}

/// How a manifest reads what an import wrote: the stored version by name, or (for files
/// imported on their own) the files by content, which works wherever the manifest runs.
fn pin_lines(opts: &crate::market::ImportOptions, version: &str) -> String {
    let mut out = format!(
        "to read it from a manifest, in [data]:\n  versions = [{:?}]   # this version of this stock database\n",
        version
    );
    if opts.into.is_some() {
        return out;
    }
    let mut entries = Vec::new();
    for file in &opts.files {
        let Ok(sha256) = crate::market::file_sha256(file) else {
            return out;
        };
        let mut entry = format!("{{ path = {:?}, sha256 = {sha256:?}", file.display().to_string());
        let options = [
            (
                "layout",
                opts.layout
                    .and_then(|l| clap::ValueEnum::to_possible_value(&l))
                    .map(|v| v.get_name().to_owned()),
            ),
            ("symbol", opts.symbol.clone()),
            ("columns", opts.columns.clone()),
            ("date_format", opts.date_format.clone()),
        ];
        for (key, value) in options {
            if let Some(v) = value {
                entry.push_str(&format!(", {key} = {v:?}"));
            }
        }
        if opts.skip_bad {
            entry.push_str(", skip_bad = true");
        }
        entry.push_str(" }");
        entries.push(entry);
    }
    out.push_str(&format!(
        "  # or the files themselves, wherever the manifest runs (path relative to the manifest's folder):\n  import = [{}]\n",
        entries.join(", ")
    ));
    out
}

/// The newest versions of other datasets that share symbols with `v`, with the first shared
/// codes.
async fn shared_with_others(
    db: &Db,
    v: &crate::market::VersionRef,
) -> Result<Vec<(String, Vec<String>)>, crate::market::MarketError> {
    let latest = versions::latest(db).await?;
    let mut out = Vec::new();
    let dataset = v.label.rsplit_once('@').map_or(v.label.as_str(), |(d, _)| d);
    for other in latest.iter().filter(|o| o.dataset != dataset) {
        let pair = [v.clone(), other.to_ref()];
        if let Some((_, _, codes)) = versions::overlaps(db, &pair).await?.into_iter().next() {
            out.push((other.label(), codes));
        }
    }
    Ok(out)
}

/// Stored runs (in the results database) that read `v`, newest first: `(id, experiment)`.
async fn runs_reading(results: &Db, v: &Version) -> Result<Vec<(String, String)>, CommandError> {
    let sql = "SELECT id, experiment, stock_data FROM runs WHERE stock_data IS NOT NULL ORDER BY started_at DESC";
    let rows: Vec<(String, String, String)> =
        crate::on_pool!(results, |pool| { sqlx::query_as(sql).fetch_all(pool).await })
            .map_err(|e| CommandError::Runtime(e.into()))?;
    Ok(rows
        .into_iter()
        .filter(|(_, _, data)| {
            DataIdentity::from_json(Some(data))
                .is_some_and(|d| d.versions.iter().any(|r| r.id == v.id && r.label == v.label()))
        })
        .map(|(id, experiment, _)| (id, experiment))
        .collect())
}

/// The stock and results databases of `g`, connected (one connection when they are the same).
fn connect_both(g: &Globals) -> Result<(Db, Option<Db>), CommandError> {
    let stock = db::wait(Db::connect(&g.stock_url()))?;
    let results = if g.stock_database.is_some() {
        Some(Db::open(&g.database)?)
    } else {
        None
    };
    Ok((stock, results))
}

fn dates(v: &Version) -> String {
    match (v.first_date, v.last_date) {
        (Some(a), Some(b)) => format!("{a}..{b}"),
        _ => "-".into(),
    }
}

/// `measured data ls`: every dataset version, with the runs stored here that read it.
pub fn data_ls(g: &Globals) -> Result<u8, CommandError> {
    let url = g.stock_url();
    let (stock, results) = connect_both(g)?;
    let all = db::wait(versions::list(&stock)).map_err(|e| runtime_error(e, &url))?;
    let mut rows = Vec::with_capacity(all.len());
    for v in &all {
        let runs = db::wait(runs_reading(results.as_ref().unwrap_or(&stock), v))?;
        rows.push((v, runs.len()));
    }
    if all.is_empty() {
        println!(
            "no dataset versions in {} yet: `measured data synth` or `measured data import FILE` makes one",
            db::redact_url(&url)
        );
    } else {
        let width = all.iter().map(|v| v.label().chars().count()).max().unwrap_or(7).max(7);
        println!(
            "{:<width$}  {:>8}  {:>11}  {:<22}  {:>4}  origin",
            "version", "symbols", "rows", "dates", "runs"
        );
        for (v, runs) in rows {
            println!(
                "{:<width$}  {:>8}  {:>11}  {:<22}  {:>4}  {}",
                printable(&v.label()),
                v.symbols,
                crate::market::thousands(v.bar_rows),
                dates(v),
                runs,
                printable(&v.origin_words())
            );
        }
    }
    stock.shut();
    if let Some(r) = results {
        r.shut();
    }
    Ok(EXIT_OK)
}

/// The version `name` names, or a bad-input error with a hint.
fn find(stock: &Db, name: &str, url: &str) -> Result<Version, CommandError> {
    db::wait(versions::find(stock, name))
        .map_err(|e| runtime_error(e, url))?
        .map_err(|e| CommandError::BadInput(e.to_string()))
}

/// `measured data show VERSION`: one version in full, with its lineage and the runs that read
/// it.
pub fn data_show(g: &Globals, name: &str) -> Result<u8, CommandError> {
    let url = g.stock_url();
    let (stock, results) = connect_both(g)?;
    let v = find(&stock, name, &url)?;
    let all = db::wait(versions::list(&stock)).map_err(|e| runtime_error(e, &url))?;
    let runs = db::wait(runs_reading(results.as_ref().unwrap_or(&stock), &v))?;
    let mut out = vec![
        format!("version:    {} (id {})", printable(&v.label()), v.id),
        format!("origin:     {}", printable(&v.origin_words())),
        format!(
            "data:       {} symbols, {} rows, {}",
            v.symbols,
            crate::market::thousands(v.bar_rows),
            dates(&v)
        ),
        format!(
            "created:    {} by {}",
            v.created_at.format("%Y-%m-%d %H:%M:%S UTC"),
            printable(&v.created_by)
        ),
    ];
    // Lineage: the versions it extends, oldest last, and those that extend it.
    let mut chain = Vec::new();
    let mut parent = v.parent;
    while let Some(id) = parent.filter(|_| chain.len() < 1000) {
        match all.iter().find(|p| p.id == id) {
            Some(p) => {
                chain.push(p.label());
                parent = p.parent;
            }
            None => break,
        }
    }
    if !chain.is_empty() {
        out.push(format!("extends:    {}", printable(&chain.join(" <- "))));
    }
    let children: Vec<String> = all
        .iter()
        .filter(|c| c.parent == Some(v.id))
        .map(Version::label)
        .collect();
    if !children.is_empty() {
        out.push(format!("extended by: {}", printable(&children.join(", "))));
    }
    let siblings: Vec<String> = all
        .iter()
        .filter(|o| o.dataset == v.dataset && o.id != v.id)
        .map(Version::label)
        .collect();
    if !siblings.is_empty() {
        out.push(format!("same dataset: {}", printable(&siblings.join(", "))));
    }
    out.push(format!("runs:       {}", runs.len()));
    for (id, experiment) in runs.iter().take(SHOWN_RUNS) {
        out.push(format!("  {} {}", printable(id), printable(experiment)));
    }
    if runs.len() > SHOWN_RUNS {
        out.push(format!("  ... and {} more", runs.len() - SHOWN_RUNS));
    }
    println!("{}", out.join("\n"));
    stock.shut();
    if let Some(r) = results {
        r.shut();
    }
    Ok(EXIT_OK)
}

/// `measured data rm VERSION [--force]`: deletes a version and its bars; refused while a stored
/// run read it, unless `force`.
pub fn data_rm(g: &Globals, name: &str, force: bool) -> Result<u8, CommandError> {
    let url = g.stock_url();
    let (stock, results) = connect_both(g)?;
    let v = find(&stock, name, &url)?;
    let runs = db::wait(runs_reading(results.as_ref().unwrap_or(&stock), &v))?;
    let listed = |runs: &[(String, String)]| {
        let mut s = runs
            .iter()
            .take(SHOWN_RUNS)
            .map(|(id, _)| id.clone())
            .collect::<Vec<_>>()
            .join(", ");
        if runs.len() > SHOWN_RUNS {
            s.push_str(&format!(" and {} more", runs.len() - SHOWN_RUNS));
        }
        s
    };
    if !runs.is_empty() && !force {
        return Err(CommandError::BadInput(format!(
            "{} was read by {} ({}); nothing was deleted\nhint: their reports name it, and `run --data {}` or \
             `run --resume` need it to read the same bars again; delete it anyway with --force",
            printable(&v.label()),
            plural(runs.len(), "stored run"),
            listed(&runs),
            printable(&v.label())
        )));
    }
    db::wait(versions::remove(&stock, v.id)).map_err(|e| runtime_error(e, &url))?;
    println!(
        "deleted {} ({} symbols, {} rows) from {}",
        printable(&v.label()),
        v.symbols,
        crate::market::thousands(v.bar_rows),
        db::redact_url(&url)
    );
    if !runs.is_empty() {
        println!(
            "{} read it and can no longer be reproduced from this stock database: {}",
            plural(runs.len(), "stored run"),
            listed(&runs)
        );
    }
    stock.shut();
    if let Some(r) = results {
        r.shut();
    }
    Ok(EXIT_OK)
}
