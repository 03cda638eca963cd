//! `measured ab`: "is command A faster than command B?" in one line (cli -> **ab** -> run).
//! The commands become a manifest (`manifest.rs`), written where `--save` says or beside the
//! reports, and run as `measured run` would run it: warm-up, interleaved blocks until every
//! comparison is decided, every trial stored, a report. Then the verdicts and a short table,
//! and the exports hyperfine's users expect (`export.rs`).

mod export;
mod manifest;
mod results;

use results::Results;

use super::run::{run_experiment, Voice};
use crate::cli::{AbArgs, RevArgs, RunArgs, DEFAULT_DB_WAIT_SECONDS, DEFAULT_LEASE_SECONDS};
use crate::error::CommandError;
use crate::globals::Globals;
use crate::paths::Root;
use anyhow::Context;
use std::path::{Component, Path, PathBuf};

/// `measured ab`: builds the manifest, runs it, prints the verdicts and a table.
pub fn ab(g: &Globals, a: &AbArgs, root: &Root) -> Result<u8, CommandError> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let (path, made) = place(a, &cwd, &root.results_dir(a.results_dir.as_deref()))?;
    // Validated before anything is written: bad options leave no file and no run behind.
    let exp = crate::manifest::parse_str(&path, &made.text, false)?;
    write_manifest(&path, &made.text)?;
    let o = RunArgs {
        file: Some(path.clone()),
        resume: None,
        seed: Some(a.seed.unwrap_or_else(|| rand::random::<u64>() >> 11)),
        smoke: false,
        json_events: None,
        fail_on_regression: false,
        no_report: false,
        results_dir: a.results_dir.clone(),
        lease_seconds: DEFAULT_LEASE_SECONDS,
        db_wait: DEFAULT_DB_WAIT_SECONDS,
        preflight_only: false,
        data: Vec::new(),
        revs: RevArgs::default(),
    };
    if !g.quiet {
        eprintln!("manifest: {}", path.display());
    }
    let done = run_experiment(g, &o, Some(exp.clone()), Voice::Brief, &mut Default::default())?;
    let results = Results::of(a, &exp, &made.names, &done);
    print!("{}", results.text());
    if let Some(f) = &a.export_markdown {
        write_export(f, &export::markdown(&results))?;
    }
    if let Some(f) = &a.export_json {
        write_export(f, &export::json(&results))?;
    }
    Ok(done.code)
}

/// Where the manifest goes and what it says: `--save FILE`, else
/// `<results>/<name>/<name>-<hash>.toml` (the same commands and options find the same file).
/// Its commands run in the current directory, named relative to the manifest's folder.
fn place(a: &AbArgs, cwd: &Path, results: &Path) -> Result<(PathBuf, manifest::AbManifest), CommandError> {
    let dir = match &a.save {
        Some(f) => cwd
            .join(f)
            .parent()
            .map_or_else(|| cwd.to_path_buf(), Path::to_path_buf),
        None => cwd.join(results).join(&a.name),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let canonical = |p: &Path| std::fs::canonicalize(p).with_context(|| format!("cannot read {}", p.display()));
    let rel = relative_dir(&canonical(&dir)?, &canonical(cwd)?);
    let made = manifest::ab_manifest(a, &rel.display().to_string()).map_err(CommandError::BadInput)?;
    let path = match &a.save {
        Some(f) => f.clone(),
        None => {
            let hash = crate::digest::hex_sha256(made.text.as_bytes());
            let file = format!("{}-{}.toml", a.name, &hash[..12]);
            results.join(&a.name).join(file)
        }
    };
    Ok((path, made))
}

/// The path from folder `from` to folder `to`, both absolute and canonical (`.` for the same).
fn relative_dir(from: &Path, to: &Path) -> PathBuf {
    let (f, t): (Vec<Component>, Vec<Component>) = (from.components().collect(), to.components().collect());
    let common = f.iter().zip(&t).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Writes the manifest whole or not at all (a temporary file renamed over it).
fn write_manifest(path: &Path, text: &str) -> Result<(), CommandError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("cannot write the manifest {}", path.display()))?;
    Ok(())
}

fn write_export(path: &Path, text: &str) -> Result<(), CommandError> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests;
