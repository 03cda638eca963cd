//! `measured data synth` and `measured data import`: filling the stock database.

use super::runtime;
use crate::db;
use crate::db::Db;
use crate::error::{CommandError, EXIT_OK};
use crate::globals::Globals;
use crate::report::format::plural;

/// `measured data synth`: a synthetic market into the stock database.
pub fn data_synth(g: &Globals, opts: crate::market::SynthOptions) -> Result<u8, CommandError> {
    let rt = runtime()?;
    let url = g.stock_url();
    let db = rt.block_on(Db::connect(&url))?;
    let bar = if g.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(0)
    };
    // Recorded with its parameters, so a manifest declaring this market finds it here.
    let result = rt.block_on(crate::market::catalog::synth_recorded(&db, &opts, &bar));
    bar.finish_and_clear();
    rt.block_on(db.close());
    match result {
        Ok(report) => {
            println!("{report} into {}", db::redact_url(&url));
            Ok(EXIT_OK)
        }
        Err(e @ crate::market::MarketError::Options(_))
        | Err(e @ crate::market::MarketError::WouldOverwrite { .. }) => Err(CommandError::BadInput(e.to_string())),
        Err(e) => Err(CommandError::Runtime(anyhow::Error::msg(db::redact_text(
            &e.to_string(),
            &url,
        )))),
    }
}

/// `measured data import`: OHLCV files into the stock database; all or nothing by default.
/// `--dry-run` only reads and checks the files and prints what would be imported.
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
    let rt = runtime()?;
    // A SQLite file this import creates is removed again when the import fails.
    let created = db::sqlite_path(&url).filter(|p| !p.exists());
    let db = rt.block_on(Db::connect(&url))?;
    let result = rt.block_on(crate::market::import(&db, &opts));
    rt.block_on(db.close());
    if let (Err(_), Some(file)) = (&result, &created) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = file.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
    match result {
        Ok(r) => {
            println!(
                "imported {} of {} from {} ({} read, {} skipped) into {}",
                plural(r.rows_written as usize, "row"),
                plural(r.symbols, "symbol"),
                plural(r.files, "file"),
                plural(r.rows_read as usize, "row"),
                plural(r.skipped, "bad row"),
                db::redact_url(&url)
            );
            for b in &r.bad {
                println!("  skipped {b}");
            }
            Ok(EXIT_OK)
        }
        Err(e) => Err(CommandError::BadInput(db::redact_text(&e.to_string(), &url))),
    }
}
