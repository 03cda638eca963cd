//! `measured runs` and `measured show`: the stored runs, listed and shown one at a time.

use super::summary::truncate;
use super::{fmt_secs, open_existing, open_for_run};
use crate::db;
use crate::error::CommandError;
use crate::globals::Globals;
use crate::record::TrialRecord;
use crate::store;
use std::collections::HashSet;
use std::fmt::Write as _;

/// `measured runs`: stored runs, newest first.
pub fn runs(g: &Globals, experiment: Option<&str>, limit: u32) -> Result<String, CommandError> {
    let db = open_existing(&g.database)?;
    let rows = match &db {
        Some(db) => db::wait(store::list_runs(db, experiment, limit))?,
        None => Vec::new(),
    };
    let now = chrono::Utc::now();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<22}  {:<24}  {:<19}  {:>13}  {:<19}  commit",
        "run", "experiment", "status", "trials (fail)", "started (UTC)"
    );
    for r in &rows {
        let _ = writeln!(
            out,
            "{:<22}  {:<24}  {:<19}  {:>13}  {:<19}  {}{}",
            r.id,
            truncate(&r.experiment, 24),
            if r.smoke {
                format!("{} (smoke)", r.shown_status(now))
            } else {
                r.shown_status(now).to_owned()
            },
            format!("{}/{} ({})", r.stored_trials, r.planned_trials, r.failed_trials),
            r.started_at.format("%Y-%m-%d %H:%M:%S"),
            truncate(&r.git_commit, 10),
            if r.git_dirty { "+dirty" } else { "" }
        );
    }
    if rows.is_empty() {
        let shown = db::redact_url(&g.database);
        let _ = match experiment {
            Some(e) => writeln!(out, "(no runs of experiment `{e}` stored in {shown})"),
            None => writeln!(
                out,
                "(no runs stored yet in {shown}: try `measured run experiments/quickstart.toml`)"
            ),
        };
    }
    for r in rows.iter().filter(|r| r.abandoned(now)) {
        let _ = writeln!(out, "{}", abandoned_note(r, now));
    }
    for r in &rows {
        if let Some(note) = error_note(r) {
            let _ = writeln!(out, "{note}");
        }
    }
    if let Some(db) = db {
        db.shut();
    }
    Ok(out)
}

/// Why a run is shown as abandoned, and how to finish it.
fn abandoned_note(r: &store::RunRow, now: chrono::DateTime<chrono::Utc>) -> String {
    let silent = r.heartbeat_at.map_or(0, |h| (now - h).num_seconds().max(0));
    format!(
        "abandoned: run {} has not beaten for {silent} s (lease {} s): its process is gone; finish it with: measured run --resume {}",
        r.id, r.lease_seconds, r.id
    )
}

/// Why a run's process stopped on an error, and how to continue it (`None`: it did not).
fn error_note(r: &store::RunRow) -> Option<String> {
    let error = r.error.as_deref().filter(|_| r.status == store::RunStatus::Stopped)?;
    Some(format!(
        "stopped: run {} stopped on an error: {}; continue it with: measured run --resume {}",
        r.id,
        crate::record::one_line(error),
        r.id
    ))
}

/// `measured show`: one run's trials with stage timings.
pub fn show(g: &Globals, run: &str) -> Result<String, CommandError> {
    let db = open_for_run(&g.database, run)?;
    let row = db::wait(store::load_run(&db, run))?;
    let trials = db::wait(store::load_trials(&db, &row.id))?;
    let env = db::wait(store::environment(&db, &row.environment_hash))?;
    db.shut();
    let mut out = String::new();
    show_header(&mut out, &row, &trials, env.as_ref());
    let _ = writeln!(out, "trials: {} of {} stored", trials.len(), row.planned_trials);
    show_machine_and_notes(&mut out, &trials);
    show_facts(&mut out, &trials);
    show_design(&mut out, &row, &trials, env.as_ref(), &g.database);
    out.push('\n');
    show_trials(&mut out, &trials);
    Ok(out)
}

/// `show`'s head: the run, its status and data, why it stopped, its manifest, seed, code,
/// machine, reproduce line, and the code each config ran.
fn show_header(
    out: &mut String,
    row: &store::RunRow,
    trials: &[TrialRecord],
    env: Option<&crate::measure::Fingerprint>,
) {
    let now = chrono::Utc::now();
    let _ = writeln!(
        out,
        "run {}  experiment {}  status {}",
        row.id,
        row.experiment,
        row.shown_status(now)
    );
    if row.abandoned(now) {
        let _ = writeln!(out, "{}", abandoned_note(row, now));
    }
    out.push_str(&data_lines(row, trials));
    if let Some(note) = error_note(row) {
        let _ = writeln!(out, "{note}");
    }
    if row.status == store::RunStatus::Stopped {
        let configs: HashSet<&str> = trials.iter().map(|t| t.config.as_str()).collect();
        if let Some(error) = crate::record::common_first_failure(trials, configs.len()) {
            let _ = writeln!(
                out,
                "stopped: the first trial of every config failed with the same error, so the rest were not run: {}",
                crate::record::one_line(&error)
            );
        }
    }
    let _ = writeln!(
        out,
        "manifest {} (sha256 {})",
        row.manifest_path,
        &row.manifest_hash[..12.min(row.manifest_hash.len())]
    );
    let _ = writeln!(
        out,
        "started {}  seed {}  commit {}{}{}",
        row.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
        row.seed,
        row.git_commit,
        if row.git_dirty { " (dirty)" } else { "" },
        row.git_branch
            .as_ref()
            .map(|b| format!("  branch {b}"))
            .unwrap_or_default()
    );
    if let Some(e) = env {
        let _ = writeln!(
            out,
            "host {}  cpu {} ({} cores)  os {}  gpu {}",
            e.host, e.cpu, e.cores, e.os, e.gpu
        );
    }
    let _ = writeln!(out, "reproduce: {}", row.command);
    let commits = commits_by_config(trials);
    if !commits.is_empty() {
        let _ = writeln!(out, "code per config:");
        let width = commits.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
        for (config, list) in &commits {
            let _ = writeln!(out, "  {config:<width$}  commit {}", list.join(", "));
        }
    }
}

/// `show`'s table: one line per trial with its stage times, then its error, if any.
fn show_trials(out: &mut String, trials: &[TrialRecord]) {
    for t in trials {
        let _ = write!(
            out,
            "{:>4}  {:<24} {:<8} {:<6} {:>11}",
            t.index,
            truncate(&t.config, 24),
            if t.warmup {
                "warm-up".to_owned()
            } else {
                format!("rep {}", t.repetition)
            },
            if t.ok { "ok" } else { "FAILED" },
            fmt_secs(Some(t.seconds))
        );
        for s in &t.stages {
            let mark = match (s.status, s.cache_hit) {
                (crate::record::StageStatus::Ok, true) => " (cached)".to_owned(),
                (crate::record::StageStatus::Ok, false) => String::new(),
                (st, _) => format!(" ({})", st.as_str()),
            };
            let _ = write!(out, "  {}={}{}", s.name, fmt_secs(Some(s.seconds)), mark);
        }
        out.push('\n');
        if let Some(e) = &t.error {
            for line in e.lines() {
                let _ = writeln!(out, "        {line}");
            }
        }
    }
}

/// How steady the machine was on the primary metric (drift and jitter, with any warning),
/// and for a sequential run why it stopped. Nothing for a run whose spec cannot be read.
fn show_design(
    out: &mut String,
    row: &store::RunRow,
    trials: &[TrialRecord],
    env: Option<&crate::measure::Fingerprint>,
    database: &str,
) {
    let Ok(stored) = crate::store::StoredRun::new(row.clone(), trials.to_vec()) else {
        return;
    };
    let report = crate::report::build_report(&crate::rundata::of_run(&stored, env, database));
    if let Some(s) = &report.stability {
        let base = s.rows.iter().find(|r| r.config == s.baseline).map(|r| &r.figures);
        if let Some(f) = base {
            let _ = writeln!(
                out,
                "stability of {} on {}: level change {:+.1}% from the first third of its trials to the last, \
                 trial-to-trial CV {:.1}%{}",
                s.baseline,
                s.metric,
                (f.level_change - 1.0) * 100.0,
                f.cv * 100.0,
                match (s.drifting, s.jittery) {
                    (true, true) => " (drifting, jittery)",
                    (true, false) => " (drifting)",
                    (false, true) => " (jittery)",
                    (false, false) => " (steady)",
                }
            );
        }
        for w in s.warnings() {
            let _ = writeln!(out, "warning: {w}");
        }
    }
    if let Some(seq) = &report.method.sequential {
        let _ = writeln!(out, "sequential: {}", seq.stop_sentence());
    }
}

/// How busy the machine was (figures, then any warning) and the stages' distinct notes.
fn show_machine_and_notes(out: &mut String, trials: &[TrialRecord]) {
    let machine = crate::rundata::machine_load(trials);
    if let Some(l) = &machine.load {
        let _ = write!(
            out,
            "machine load over {}: 1-minute load mean {:.1} (max {:.1}) on {}",
            crate::metrics::count(l.trials, "measured trial"),
            l.mean,
            l.max,
            crate::metrics::count(l.cores as usize, "core")
        );
        if let Some(o) = l.other_cpu_mean {
            let _ = write!(out, "; other processes used {o:.1} cores on average");
        }
        if let Some(f) = &machine.frequency {
            let _ = write!(out, "; CPU clock {:.0}-{:.0} MHz", f.min_mhz, f.max_mhz);
        }
        out.push('\n');
    }
    for w in machine.warnings() {
        let _ = writeln!(out, "warning: {w}");
    }
    let (notes, left_out) = crate::rundata::stage_notes(trials);
    if !notes.is_empty() {
        let _ = writeln!(out, "notes from stages:");
    }
    for n in &notes {
        let _ = writeln!(
            out,
            "  {} ({} of {}): {}",
            n.stage,
            crate::metrics::count(n.trials, "trial"),
            crate::metrics::named_list(&n.configs),
            n.note
        );
    }
    if left_out > 0 {
        let _ = writeln!(out, "  ({left_out} more distinct notes not listed)");
    }
}

/// What each config's measured trials ran on (the facts their stages recorded), configs in
/// the order they first ran.
fn show_facts(out: &mut String, trials: &[TrialRecord]) {
    let mut configs: Vec<&str> = Vec::new();
    for t in trials {
        if !configs.contains(&t.config.as_str()) {
            configs.push(&t.config);
        }
    }
    let facts = crate::rundata::config_facts(&configs, trials);
    if !facts.is_empty() {
        let _ = writeln!(out, "what ran (facts the stages recorded):");
    }
    for c in &facts {
        // Values are database content: shown with control characters made visible.
        let shown = |v: Option<&str>| crate::printable::printable(v.unwrap_or("not recorded")).into_owned();
        let agreed: Vec<String> = c
            .agreed
            .iter()
            .map(|(k, v)| format!("{k} = {}", shown(Some(v))))
            .collect();
        let _ = writeln!(
            out,
            "  {} ({}): {}",
            c.config,
            crate::metrics::count(c.trials, "measured trial"),
            if agreed.is_empty() {
                "-".to_owned()
            } else {
                agreed.join(", ")
            }
        );
        for d in &c.differed {
            let values: Vec<String> = d
                .values
                .iter()
                .map(|v| {
                    format!(
                        "{} ({})",
                        shown(v.value.as_deref()),
                        crate::metrics::count(v.trials, "trial")
                    )
                })
                .collect();
            let _ = writeln!(out, "    {} differed: {}", d.fact, values.join(", "));
        }
    }
}

/// What `show` prints first: the stock data the run read, and the content hashes of what its
/// stages loaded from it.
fn data_lines(row: &store::RunRow, trials: &[TrialRecord]) -> String {
    let hashes = crate::rundata::data_hashes(trials);
    let reads = trials.iter().any(|t| {
        t.stages
            .iter()
            .any(|s| s.kind.parse() == Ok(crate::kinds::StageKind::Load))
    });
    let mut out = String::new();
    match crate::market::DataIdentity::from_json(row.stock_data.as_deref()) {
        Some(d) => {
            let _ = writeln!(out, "data: {}", d.extent());
            let _ = writeln!(out, "  source: {}", d.origin());
            if !d.versions.is_empty() {
                let _ = writeln!(out, "  dataset versions: {}", d.version_labels());
            }
        }
        None if reads || !hashes.is_empty() => {
            let _ = writeln!(
                out,
                "data: unknown (not recorded with the run: it was stored before runs named their data)"
            );
        }
        None => {}
    }
    for (stage, hash) in &hashes {
        let _ = writeln!(out, "  content hash of `{stage}`: {hash}");
    }
    out
}

/// Per config (in the order first stored), the commits its trials ran, `(dirty)` marked;
/// empty when no trial recorded one.
fn commits_by_config(trials: &[TrialRecord]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for t in trials {
        let Some(commit) = &t.git_commit else { continue };
        let shown = if t.git_dirty {
            format!("{commit} (dirty)")
        } else {
            commit.clone()
        };
        match out.iter_mut().find(|(c, _)| *c == t.config) {
            Some((_, list)) if list.contains(&shown) => {}
            Some((_, list)) => list.push(shown),
            None => out.push((t.config.clone(), vec![shown])),
        }
    }
    out
}
