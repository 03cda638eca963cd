//! `measured check` and `measured plan`: a manifest validated, and the trials it would run.

use super::{load_manifest, load_with_revs};
use crate::cli::RevArgs;
use crate::error::{CommandError, EXIT_BAD_INPUT, EXIT_OK};
use crate::globals::Globals;
use crate::plan;
use crate::report::format::plural;
use std::path::{Path, PathBuf};

/// `measured check`: validates manifests; prints each file's verdict.
pub fn check(g: &Globals, files: &[PathBuf], smoke: bool) -> u8 {
    let mut code = EXIT_OK;
    for f in files {
        match load_manifest(g, f, smoke) {
            Ok(exp) => {
                let per_block = exp.configs.len() as u32;
                let trials = per_block * (exp.schedule.warmup + exp.schedule.repetitions);
                let count = match exp.schedule.sequential {
                    Some(p) => format!("{}-{trials} trials", per_block * (exp.schedule.warmup + p.min)),
                    None => plural(trials as usize, "trial"),
                };
                println!(
                    "ok: {} ({}, {}, {count})",
                    crate::printable::printable(&f.display().to_string()),
                    plural(exp.configs.len(), "config"),
                    plural(exp.stages.len(), "stage"),
                );
                for w in crate::manifest::unjudgeable_claims(&exp) {
                    eprintln!("{w}");
                }
                if let Some(plan) = exp.schedule.sequential {
                    let (line, warning) = looks_lines(plan, exp.compare.alpha);
                    println!("  {line}");
                    if let Some(w) = warning {
                        eprintln!("warning: {w}");
                    }
                }
            }
            Err(e) => {
                eprint!("{}", e.render_for_stderr(crate::color::stderr()));
                code = EXIT_BAD_INPUT;
            }
        }
    }
    code
}

/// What a sequential plan's looks may use: one line naming each planned look's share of alpha
/// (or that it cannot decide) and the first look that can, and a warning, with the fix, when
/// the plan's first looks can never decide.
pub(crate) fn looks_lines(plan: crate::stats::SequentialPlan, alpha: f64) -> (String, Option<String>) {
    let levels = plan.planned_levels(alpha, crate::stats::INTERVAL_ERROR);
    let each: Vec<String> = levels
        .iter()
        .map(|l| {
            if l.alpha > 0.0 {
                format!("{} (alpha {})", l.blocks, crate::report::format::sig(l.alpha, 2))
            } else {
                format!("{} (cannot reject)", l.blocks)
            }
        })
        .collect();
    let first = levels.iter().find(|l| l.alpha > 0.0);
    let line = format!(
        "looks after {} blocks; {}",
        each.join(", "),
        match first {
            Some(l) => format!("the first that can decide is after {} blocks", l.blocks),
            None => "none can decide".to_owned(),
        }
    );
    let warning = match (levels.first(), first) {
        (Some(head), Some(first)) if head.alpha == 0.0 => Some(format!(
            "the look after {} blocks can never decide: its share of alpha, {}, is below {}, the smallest p-value \
             {} blocks can give; such looks spend nothing, and the first look that can decide is after {} blocks \
             (hint: start with `min = {}` to look first where a decision is possible)",
            head.blocks,
            crate::report::format::sig(
                crate::stats::spent(alpha, f64::from(head.blocks) / f64::from(plan.max)),
                2
            ),
            crate::report::format::sig(head.floor, 2),
            head.blocks,
            first.blocks,
            first.blocks
        )),
        _ => None,
    };
    (line, warning)
}

/// `measured plan`: prints configs, stage order, and every trial in time order.
pub fn plan(
    g: &Globals,
    file: &Path,
    seed: Option<u64>,
    smoke: bool,
    show_commands: bool,
    revs: &RevArgs,
) -> Result<String, CommandError> {
    let mut exp = load_with_revs(g, file, smoke, revs)?;
    // Resolved only: `plan` checks nothing out and builds nothing.
    for note in crate::gitrev::resolve(&mut exp, &Default::default())? {
        if !g.quiet {
            eprintln!("{note}");
        }
    }
    let (seed, random) = match seed.or(exp.schedule.seed) {
        Some(s) => (s, false),
        None => (rand::random::<u64>() >> 11, true),
    };
    let trials = plan::schedule(exp.configs.len(), &exp.schedule, seed);
    let mut out = plan::describe(&exp, seed, random, &trials, show_commands);
    // What the data preparation would do, and the preflight when the data is there already.
    if crate::preflight::reads_stock(&exp) || exp.data.restricts() || exp.data.names_versions() {
        for line in crate::preflight::plan_lines(&super::stock_options(g), &exp)? {
            out.push_str(&line);
            out.push('\n');
        }
    }
    Ok(out)
}
