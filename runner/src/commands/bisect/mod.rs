//! `measured bisect`: the first commit where an experiment's primary metric regressed (cli ->
//! **bisect** -> run, once per step).
//!
//! The commits searched are the good one, then the bad one's first-parent line after it. The
//! first step checks that the bad end is slower than the good one at all; each further step
//! runs the manifest with two variants, the good end of the range and its middle commit (as
//! `measured run FILE --rev GOOD --rev MIDDLE` would), with the manifest's warm-up, blocks and
//! stopping rule, and judges the middle from that run's own paired blocks: slower than the good
//! end is bad, faster or no change is good, anything else ends the search as undecidable
//! rather than guessing. When the first bad commit was judged against an older good commit than
//! its parent, a last step compares the two neighbours, so the interval named at the end is the
//! bad commit's own. Every step is a stored run with its report; `log.rs` writes the page that
//! links them.

mod log;
mod step;

use super::run::{run_experiment, Voice};
use super::{load_manifest, load_with_revs};
use crate::cli::{BisectArgs, RevArgs, RunArgs, DEFAULT_DB_WAIT_SECONDS, DEFAULT_LEASE_SECONDS};
use crate::error::{CommandError, EXIT_FAILED, EXIT_OK};
use crate::gitrev::{Builds, LineCommit};
use crate::globals::Globals;
use crate::paths::Root;
use crate::stats::Comparison;
use step::{judge, Found, Judged, Step};

/// `measured bisect FILE --good REV --bad REV`.
pub fn bisect(g: &Globals, a: &BisectArgs, root: &Root) -> Result<u8, CommandError> {
    // Everything the steps will need is checked before the first one runs.
    let exp = load_manifest(g, &a.file, false)?;
    let line = crate::gitrev::first_parent_line(&exp, &a.good, &a.bad)?;
    let results = root.results_dir(a.results_dir.as_deref());
    let experiment_dir = crate::paths::experiment_dir(&results, &exp.name)?;
    if !g.quiet {
        eprintln!(
            "bisect {}: {} commits after good {}, up to bad {}; at most {} steps",
            exp.name,
            line.len() - 1,
            line[0].short,
            line[line.len() - 1].short,
            steps_at_most(line.len())
        );
    }
    let mut search = Search {
        g,
        a,
        line: &line,
        builds: Builds::default(),
        steps: Vec::new(),
        experiment_dir: &experiment_dir,
    };
    let found = match search.run()? {
        Ok(found) => found,
        Err(code) => return Ok(code),
    };
    let page = log::write(&experiment_dir, &exp, &line, &search.steps, &found)?;
    print!("{}", log::conclusion(&line, &search.steps, &found));
    println!("bisect: {}", page.display());
    Ok(match found {
        Found::FirstBad { .. } => EXIT_OK,
        Found::Undecidable { .. } => EXIT_FAILED,
    })
}

/// The most steps a line of `n` commits takes: the check of the bad end, the halvings, and a
/// last comparison of neighbours.
fn steps_at_most(n: usize) -> usize {
    let halvings = (usize::BITS - (n.saturating_sub(2)).leading_zeros()) as usize;
    halvings + 2
}

/// A search in progress.
struct Search<'a> {
    g: &'a Globals,
    a: &'a BisectArgs,
    line: &'a [LineCommit],
    builds: Builds,
    steps: Vec<Step>,
    experiment_dir: &'a std::path::Path,
}

impl Search<'_> {
    /// Runs the steps until the first bad commit is known or a step cannot decide; `Err` is
    /// the exit code of a step that did not end cleanly (failed trials, Ctrl-C).
    fn run(&mut self) -> Result<Result<Found, u8>, CommandError> {
        let (mut good, mut bad) = (0, self.line.len() - 1);
        // The bad end must be slower at all, or there is nothing to find.
        let mut evidence = match self.step(bad, good)? {
            Err(code) => return Ok(Err(code)),
            Ok((Judged::Bad, step)) => step,
            Ok((_, step)) => return Ok(Ok(Found::Undecidable { step })),
        };
        while bad - good > 1 {
            let middle = good + (bad - good) / 2;
            match self.step(middle, good)? {
                Err(code) => return Ok(Err(code)),
                Ok((Judged::Bad, step)) => (bad, evidence) = (middle, step),
                Ok((Judged::Good, _)) => good = middle,
                Ok((Judged::Undecided, step)) => return Ok(Ok(Found::Undecidable { step })),
            }
        }
        // The bad commit was judged against an older good one: measure it against its parent.
        if self.steps[evidence].against != good {
            match self.step(bad, good)? {
                Err(code) => return Ok(Err(code)),
                Ok((Judged::Bad, step)) => evidence = step,
                Ok((_, step)) => return Ok(Ok(Found::Undecidable { step })),
            }
        }
        Ok(Ok(Found::FirstBad {
            commit: bad,
            step: evidence,
        }))
    }

    /// Runs one step, `candidate` against `against` (indices into the line), prints its
    /// evidence and keeps it; returns how it judged the candidate and the step's index.
    fn step(&mut self, candidate: usize, against: usize) -> Result<Result<(Judged, usize), u8>, CommandError> {
        let (c, base) = (&self.line[candidate], &self.line[against]);
        let o = RunArgs {
            file: Some(self.a.file.clone()),
            resume: None,
            seed: self.a.seed,
            smoke: false,
            json_events: None,
            fail_on_regression: false,
            no_report: false,
            results_dir: self.a.results_dir.clone(),
            lease_seconds: DEFAULT_LEASE_SECONDS,
            db_wait: DEFAULT_DB_WAIT_SECONDS,
            preflight_only: false,
            data: Vec::new(),
            revs: RevArgs {
                revs: vec![base.short.clone(), c.short.clone()],
                build: self.a.build.clone(),
            },
        };
        let exp = load_with_revs(self.g, &self.a.file, false, &o.revs)?;
        let done = run_experiment(self.g, &o, Some(exp), Voice::Brief, &mut self.builds)?;
        let comparisons: Vec<Comparison> = done
            .report
            .iter()
            .flat_map(|w| w.report.comparisons.iter().map(|r| r.comparison.clone()))
            .collect();
        let step = Step {
            candidate,
            against,
            judged: judge(&comparisons),
            comparisons,
            run_id: done.run_id.clone(),
            report: done.report.as_ref().map(|w| {
                w.paths
                    .markdown
                    .strip_prefix(self.experiment_dir)
                    .map_or_else(|_| w.paths.markdown.clone(), std::path::Path::to_path_buf)
            }),
        };
        println!("{}", log::step_line(self.steps.len() + 1, self.line, &step));
        let judged = step.judged;
        self.steps.push(step);
        if done.code != EXIT_OK {
            eprintln!(
                "error: step {} did not end cleanly (exit {}); the search stops there",
                self.steps.len(),
                done.code
            );
            return Ok(Err(done.code));
        }
        Ok(Ok((judged, self.steps.len() - 1)))
    }
}

#[cfg(test)]
mod tests;
