//! A step of `measured bisect` (bisect -> **step**): the commit it measured against a good
//! one, how it judged it from the run's comparisons, and how the search ended.

use crate::stats::{Comparison, Verdict};

/// What a step made of the commit it measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Judged {
    /// Slower than the good end: the regression is at or before it.
    Bad,
    /// Faster, or no change beyond the noise band: the regression is after it.
    Good,
    /// Neither within the run's budget.
    Undecided,
}

/// One step: a commit measured against a good one.
pub(super) struct Step {
    /// Indices into the searched line.
    pub candidate: usize,
    pub against: usize,
    pub judged: Judged,
    /// The primary metric's comparisons (one per sweep point).
    pub comparisons: Vec<Comparison>,
    pub run_id: Option<String>,
    /// The run's report, relative to the experiment's results folder.
    pub report: Option<std::path::PathBuf>,
}

/// How the search ended.
pub(super) enum Found {
    /// The first bad commit (an index into the line) and the step whose interval is its own.
    FirstBad { commit: usize, step: usize },
    /// A step could not decide; the search stopped there.
    Undecidable { step: usize },
}

/// A step's judgement from its primary-metric comparisons (one per sweep point): bad when any
/// is slower, good when every one is faster or no change, undecided otherwise (and when there
/// is none).
pub(super) fn judge(comparisons: &[Comparison]) -> Judged {
    if comparisons.iter().any(|c| c.verdict == Verdict::Slower) {
        Judged::Bad
    } else if !comparisons.is_empty()
        && comparisons
            .iter()
            .all(|c| matches!(c.verdict, Verdict::Faster | Verdict::NoChange))
    {
        Judged::Good
    } else {
        Judged::Undecided
    }
}
