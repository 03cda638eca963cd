//! `measured report`, `compare`, `history` and `publish`: reports rendered from stored runs.

use super::run::write_run_report;
use super::{load_stored, open_existing, open_for_run, stored_run, templates_dir};
use crate::cli::HistoryArgs;
use crate::db;
use crate::error::{CommandError, EXIT_FAILED, EXIT_OK};
use crate::globals::Globals;
use crate::measure::Fingerprint;
use crate::report::format::plural;
use crate::report::OutputFormat;
use crate::store;
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `measured report`: renders a stored run's report; returns the exit code. With `format`,
/// stdout gets that form of the report instead of the summary lines.
pub fn report(
    g: &Globals,
    run: &str,
    results_dir: &Path,
    fail_on_regression: bool,
    format: Option<OutputFormat>,
) -> Result<u8, CommandError> {
    let db = open_for_run(&g.database, run)?;
    let stored = load_stored(&db, run)?;
    let written = write_run_report(&db, &g.database, &stored, results_dir)?;
    db.shut();
    if let Some(format) = format {
        let out =
            crate::report::report_output(format, &written, templates_dir()).context("cannot render the report")?;
        print!("{out}");
    } else {
        for line in &written.report.summary {
            println!("{line}");
        }
        println!("report: {}", written.paths.markdown.display());
    }
    Ok(if fail_on_regression && crate::report::regression(&written.report) {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// `measured compare`: before/after across two stored runs of one experiment. With `format`,
/// stdout gets that form of the comparison instead of the summary lines.
pub fn compare(
    g: &Globals,
    before: &str,
    after: &str,
    options: crate::report::CompareOptions,
    results_dir: &Path,
    fail_on_regression: bool,
    format: Option<OutputFormat>,
) -> Result<u8, CommandError> {
    let db = open_for_run(&g.database, before)?;
    let run_a = load_stored(&db, before)?;
    let run_b = load_stored(&db, after)?;
    let (row_a, row_b) = (&run_a.row, &run_b.row);
    comparable(&run_a, &run_b, before, after)?;
    let env_a = db::wait(store::environment(&db, &row_a.environment_hash))?;
    let env_b = db::wait(store::environment(&db, &row_b.environment_hash))?;
    // The experiment's other runs show how much a run's level moves from run to run.
    let mut others = experiment_runs(g, &db, &row_a.experiment, false, HISTORY_RUNS)?.runs;
    others.retain(|r| r.run_id != row_a.id && r.run_id != row_b.id);
    db.shut();
    let a = crate::rundata::of_run(&run_a, env_a.as_ref(), &g.database);
    let b = crate::rundata::of_run(&run_b, env_b.as_ref(), &g.database);
    let model = match crate::report::compare_runs(&a, &b, options, &others) {
        Ok(m) => m,
        Err(e @ crate::report::ReportError::DataMismatch { .. }) => {
            return Err(CommandError::BadInput(format!(
                "{e}\n(hint: pass --allow-different-data to compare anyway)"
            )))
        }
        Err(e @ crate::report::ReportError::ConfigChanged { .. }) => {
            return Err(CommandError::BadInput(format!(
                "{e}\n(hint: run both in one run to compare them, or pass --allow-config-change to compare anyway)"
            )))
        }
        Err(e) => return Err(CommandError::BadInput(e.to_string())),
    };
    let cmp = crate::report::compare_view(&model);
    let md = crate::report::render_compare_markdown(&cmp, templates_dir()).context("cannot render the comparison")?;
    crate::paths::check_stored(results_dir, &row_a.experiment, &row_a.id)?;
    crate::paths::check_stored(results_dir, &row_b.experiment, &row_b.id)?;
    let out = crate::paths::experiment_dir(results_dir, &row_a.experiment)?
        .join(format!("compare-{}-vs-{}", row_a.id, row_b.id));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let path = out.join("compare.md");
    std::fs::write(&path, md).with_context(|| format!("cannot write {}", path.display()))?;
    if let Some(format) = format {
        let out = crate::report::compare_output(format, &model, &path, templates_dir())
            .context("cannot render the comparison")?;
        print!("{out}");
    } else {
        for line in &model.summary {
            println!("{line}");
        }
        println!("comparison: {}", path.display());
    }
    Ok(if fail_on_regression && model.regression {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// Why two stored runs cannot be compared: one run twice, a run that measured nothing, or runs
/// of two experiments.
fn comparable(a: &store::StoredRun, b: &store::StoredRun, before: &str, after: &str) -> Result<(), CommandError> {
    if a.row.id == b.row.id {
        return Err(CommandError::BadInput(format!(
            "`{before}` and `{after}` are the same run ({}); compare needs two different runs\n\
             (hint: `measured runs --experiment {}` lists its runs; a run's own variants are compared in `measured report {}`)",
            a.row.id, a.row.experiment, a.row.id
        )));
    }
    for run in [&a, &b] {
        if store::measured_nothing(&run.row.status, &run.trials) {
            return Err(CommandError::BadInput(format!(
                "run {} is {}: it has no measurement to compare
hint: `measured show {}` says why; \
                 `measured runs --experiment {}` lists the runs to compare instead",
                run.row.id,
                stopped_words(&run.row.status),
                run.row.id,
                run.row.experiment
            )));
        }
    }
    if a.row.experiment != b.row.experiment {
        return Err(CommandError::BadInput(format!(
            "run {} is of experiment `{}` but run {} is of `{}`; compare runs of one experiment",
            a.row.id, a.row.experiment, b.row.id, b.row.experiment
        )));
    }
    Ok(())
}

/// `measured history`: a metric over every stored run of an experiment, with the significant
/// steps between consecutive runs flagged; prints the Markdown and writes it with its chart.
pub fn history(g: &Globals, o: &HistoryArgs, results_dir: &Path) -> Result<u8, CommandError> {
    // The name becomes a path: only a valid experiment name gets that far.
    if !crate::paths::is_valid_name(&o.experiment) {
        return Err(CommandError::BadInput(format!(
            "`{}` is not an experiment name (1-64 letters, digits, `_` or `-`)",
            o.experiment
        )));
    }
    let none_stored = || {
        CommandError::BadInput(format!(
            "no runs of experiment `{}` stored in {}\nhint: `measured runs` lists the stored runs",
            o.experiment,
            db::redact_url(&g.database)
        ))
    };
    let db = open_existing(&g.database)?.ok_or_else(none_stored)?;
    let loaded = experiment_runs(g, &db, &o.experiment, o.include_smoke, o.limit);
    db.shut();
    let ExperimentRuns {
        runs,
        notes,
        latest,
        smoke,
        left_out,
    } = loaded?;
    let latest = latest.ok_or_else(|| match left_out.is_empty() {
        true => none_stored(),
        false => CommandError::BadInput(format!(
            "every stored run of experiment `{}` is stopped or failed every trial ({}): there is no measurement \
             to follow\nhint: `measured show RUN` says why a run stopped",
            o.experiment,
            left_out.join(", ")
        )),
    })?;
    let metric = o.metric.clone().unwrap_or_else(|| latest.primary.clone());
    let direction = (metric == latest.primary).then_some(latest.direction).flatten();
    let mut h = crate::report::build_history(&o.experiment, &metric, direction, &runs);
    if h.points.iter().all(|p| p.n == 0) {
        return Err(unrecorded_metric(&o.experiment, &metric, &runs));
    }
    if smoke > 0 && !o.include_smoke {
        h.notes.push(format!(
            "{} left out: smoke runs are not measurements (--include-smoke shows them).",
            plural(smoke, "smoke run")
        ));
    }
    if !left_out.is_empty() {
        h.notes.push(format!(
            "{} left out: stopped, or every trial failed, so they measured nothing ({}).",
            plural(left_out.len(), "run"),
            left_out.join(", ")
        ));
    }
    h.notes.extend(notes);
    let (md, md_path) = write_history(&o.experiment, results_dir, &metric, &h)?;
    print!("{md}");
    eprintln!("history: {}", md_path.display());
    Ok(EXIT_OK)
}

/// Earlier runs `compare` reads to estimate the run-to-run variation.
const HISTORY_RUNS: u32 = 200;

/// The stored runs of one experiment, oldest first, as report data.
struct ExperimentRuns {
    runs: Vec<crate::report::RunData>,
    /// What reading them noted (runs stored by older versions, say).
    notes: Vec<String>,
    /// The newest run's `[compare]` settings.
    latest: Option<crate::store::spec::CompareSpec>,
    /// Smoke runs left out.
    smoke: usize,
    /// Runs that measured nothing (stopped, or every trial failed), left out: as a point
    /// such a run would only be a gap or a false step.
    left_out: Vec<String>,
}

/// Reads the newest `limit` stored runs of `experiment`, oldest first; smoke runs only with
/// `include_smoke`.
fn experiment_runs(
    g: &Globals,
    db: &db::Db,
    experiment: &str,
    include_smoke: bool,
    limit: u32,
) -> Result<ExperimentRuns, CommandError> {
    let mut rows = db::wait(store::list_runs(db, Some(experiment), limit))?;
    rows.reverse();
    let smoke = rows.iter().filter(|r| r.smoke).count();
    rows.retain(|r| include_smoke || !r.smoke);
    let mut out = ExperimentRuns {
        runs: Vec::with_capacity(rows.len()),
        notes: Vec::new(),
        latest: None,
        smoke,
        left_out: Vec::new(),
    };
    // Runs of one machine share a fingerprint: read each once.
    let mut envs: BTreeMap<String, Option<Fingerprint>> = BTreeMap::new();
    for row in rows {
        let trials = db::wait(store::load_trials(db, &row.id))?;
        if store::measured_nothing(&row.status, &trials) {
            out.left_out.push(row.id.clone());
            continue;
        }
        if !envs.contains_key(&row.environment_hash) {
            let env = db::wait(store::environment(db, &row.environment_hash))?;
            envs.insert(row.environment_hash.clone(), env);
        }
        let env = envs.get(&row.environment_hash).and_then(Option::as_ref);
        let stored = stored_run(row, trials)?;
        out.notes.extend(stored.notes.iter().cloned());
        let mut data = crate::rundata::of_run(&stored, env, &g.database);
        data.notes.clear();
        out.runs.push(data);
        out.latest = Some(stored.spec.compare);
    }
    Ok(out)
}

/// The error for a metric no stored run recorded, with the metrics they did record.
fn unrecorded_metric(experiment: &str, metric: &str, runs: &[crate::report::RunData]) -> CommandError {
    let mut known: Vec<String> = runs
        .iter()
        .flat_map(|r| &r.configs)
        .flat_map(|c| &c.trials)
        .flat_map(|t| {
            t.stages
                .iter()
                .flat_map(|s| s.metrics.iter().map(move |m| format!("{}.{}", s.name, m.name)))
        })
        .collect();
    known.sort();
    known.dedup();
    CommandError::BadInput(format!(
        "no stored run of `{experiment}` recorded `{metric}`\nhint: metrics they recorded: {}; stage times are `<stage>.seconds`",
        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
    ))
}

/// Writes a history's chart, Markdown and JSON under `<results>/<experiment>/history/`;
/// returns the Markdown and its path.
fn write_history(
    experiment: &str,
    results_dir: &Path,
    metric: &str,
    h: &crate::report::History,
) -> Result<(String, PathBuf), CommandError> {
    let dir = crate::paths::experiment_dir(results_dir, experiment)?.join("history");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let stem = crate::paths::file_safe(metric);
    let svg_name = format!("{stem}.svg");
    let svg = crate::report::history_svg(h).context("cannot draw the history chart")?;
    std::fs::write(dir.join(&svg_name), svg)
        .with_context(|| format!("cannot write {}", dir.join(&svg_name).display()))?;
    let md = crate::report::render_history_markdown(h, Some(&svg_name), templates_dir())
        .context("cannot render the history")?;
    let md_path = dir.join(format!("{stem}.md"));
    std::fs::write(&md_path, &md).with_context(|| format!("cannot write {}", md_path.display()))?;
    std::fs::write(
        dir.join(format!("{stem}.json")),
        serde_json::to_string_pretty(h).unwrap_or_default(),
    )
    .with_context(|| format!("cannot write the history JSON in {}", dir.display()))?;
    Ok((md, md_path))
}

/// `measured publish`: every stored run as a static site.
pub fn publish(g: &Globals, o: &crate::publish::PublishOptions) -> Result<u8, CommandError> {
    let db = open_existing(&g.database)?.ok_or_else(|| {
        CommandError::BadInput(format!(
            "no results database at {}\nhint: `measured run <manifest>` stores runs there",
            db::redact_url(&g.database)
        ))
    })?;
    let started = std::time::Instant::now();
    let result = crate::publish::publish(&db, &g.database, o);
    db.shut();
    let p = result.map_err(|e| match e {
        crate::publish::PublishError::NotASite(_) => CommandError::BadInput(e.to_string()),
        e => CommandError::Runtime(e.into()),
    })?;
    for s in &p.skipped {
        eprintln!("warning: left out {s}");
    }
    if !g.quiet {
        eprintln!(
            "published {} of {} to {} in {:.2} s: {} rendered, {} reused; {} written, {} unchanged{}",
            plural(p.runs, "run"),
            plural(p.experiments, "experiment"),
            o.out.display(),
            started.elapsed().as_secs_f64(),
            p.rendered,
            p.reused,
            plural(p.written, "file"),
            p.unchanged,
            if p.smoke_left_out > 0 {
                format!("; {} left out", plural(p.smoke_left_out, "smoke run"))
            } else {
                String::new()
            }
        );
    }
    println!("{}", o.out.join("index.html").display());
    Ok(if p.skipped.is_empty() { EXIT_OK } else { EXIT_FAILED })
}

/// A run that has nothing to compare, in words.
fn stopped_words(status: &store::RunStatus) -> &str {
    if *status == store::RunStatus::Stopped {
        status.as_str()
    } else {
        "without a successful measured trial"
    }
}
