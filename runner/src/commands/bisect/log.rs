//! What `measured bisect` says (bisect -> **log**): a line of evidence per step as it ends, the
//! conclusion, and `bisect-<good>-<bad>.md` beside the experiment's runs, linking every step's
//! report.

use super::step::{Found, Judged, Step};
use crate::error::CommandError;
use crate::gitrev::LineCommit;
use crate::manifest::Experiment;
use crate::stats::Comparison;
use anyhow::Context;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `slower, speedup 0.667x (repeated 95% CI 0.660x-0.674x), 12 blocks`, for each comparison.
fn evidence(comparisons: &[Comparison]) -> String {
    if comparisons.is_empty() {
        return "no comparison (no trial recorded the primary metric)".to_owned();
    }
    comparisons
        .iter()
        .map(crate::commands::evidence)
        .collect::<Vec<_>>()
        .join("; ")
}

fn judged_word(j: Judged) -> &'static str {
    match j {
        Judged::Bad => "bad",
        Judged::Good => "good",
        Judged::Undecided => "undecided",
    }
}

/// What the candidate is in the line: the bad end, or its place.
fn place(line: &[LineCommit], i: usize) -> String {
    if i + 1 == line.len() {
        "the bad end".to_owned()
    } else {
        format!("commit {i} of {}", line.len() - 1)
    }
}

/// `step 2: 3fa2c1d09b1e (commit 4 of 8) against 1a2b3c4d5e6f: slower, ... -> bad (run ...)`.
pub(super) fn step_line(n: usize, line: &[LineCommit], step: &Step) -> String {
    format!(
        "step {n}: {} ({}) against {}: {} -> {}{}",
        line[step.candidate].short,
        place(line, step.candidate),
        line[step.against].short,
        evidence(&step.comparisons),
        judged_word(step.judged),
        step.run_id.as_ref().map(|r| format!(" (run {r})")).unwrap_or_default()
    )
}

/// The closing lines: the first bad commit with its interval, or where the search stopped.
pub(super) fn conclusion(line: &[LineCommit], steps: &[Step], found: &Found) -> String {
    match found {
        Found::FirstBad { commit, step } => {
            let s = &steps[*step];
            format!(
                "first bad commit: {} {}\n  against {} (the commit before it): {}\n",
                line[*commit].short,
                crate::printable::printable(&line[*commit].subject),
                line[s.against].short,
                evidence(&s.comparisons)
            )
        }
        Found::Undecidable { step } => {
            let s = &steps[*step];
            let (why, hint) = if s.judged == Judged::Good {
                (
                    "the bad end is not slower than the good one beyond the noise band, so there is no regression to find",
                    "a regression smaller than the noise band (`band` in [compare]) is not one measured looks for",
                )
            } else if *step == 0 {
                (
                    "the run could not tell whether the bad end is slower than the good one within its budget",
                    "more blocks (`repetitions = { min, max }`, `max_time` in [schedule]) narrow the intervals",
                )
            } else {
                (
                    "the step could not tell within its budget",
                    "more blocks (`repetitions = { min, max }`, `max_time` in [schedule]) narrow the intervals",
                )
            };
            format!(
                "undecidable: {why} (step {}: {} against {}: {}); nothing is guessed\n  hint: {hint}\n",
                step + 1,
                line[s.candidate].short,
                line[s.against].short,
                evidence(&s.comparisons)
            )
        }
    }
}

/// Writes `bisect-<good>-<bad>.md` into the experiment's results folder; returns its path.
pub(super) fn write(
    dir: &Path,
    exp: &Experiment,
    line: &[LineCommit],
    steps: &[Step],
    found: &Found,
) -> Result<PathBuf, CommandError> {
    let (good, bad) = (&line[0], &line[line.len() - 1]);
    let mut md = format!(
        "# Bisect of `{}` on `{}`\n\nGood `{}` {}, bad `{}` {}: {} commits after the good one on the bad one's first-parent line.\n\n",
        exp.name,
        exp.compare.primary,
        good.short,
        cell(&good.subject),
        bad.short,
        cell(&bad.subject),
        line.len() - 1
    );
    let ending = conclusion(line, steps, found);
    let mut lines = ending.lines();
    let _ = writeln!(md, "**{}**\n", lines.next().unwrap_or_default());
    for l in lines {
        let _ = writeln!(md, "{}\n", l.trim());
    }
    md.push_str("| step | commit | against | evidence | judged | run |\n|---:|---|---|---|---|---|\n");
    for (i, s) in steps.iter().enumerate() {
        let run = match (&s.run_id, &s.report) {
            (Some(id), Some(report)) => format!("[{id}]({})", report.display()),
            (Some(id), None) => id.clone(),
            _ => String::new(),
        };
        let _ = writeln!(
            md,
            "| {} | `{}` {} | `{}` | {} | {} | {run} |",
            i + 1,
            line[s.candidate].short,
            cell(&line[s.candidate].subject),
            line[s.against].short,
            evidence(&s.comparisons),
            judged_word(s.judged)
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("bisect-{}-{}.md", good.short, bad.short));
    std::fs::write(&path, md).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// A commit subject inside a table cell.
fn cell(s: &str) -> String {
    crate::printable::printable(s).replace('|', "\\|")
}
