//! The questions a run answers and where a sequential run stands (report model -> which
//! comparisons and claims are decided, which stay open, and why the run stopped). The runner
//! asks the same questions at each look, so "decided" means one thing in both places.

use crate::report::format;
use crate::report::model::{ClaimRow, ComparisonRecord, Question, RunData, RunDesign, SequentialSummary, StopKind};
use crate::stats::{SequentialPlan, Verdict, INTERVAL_ERROR};

/// The questions of a report: every primary comparison, then every claim the run could judge
/// (claims not reproduced here, not this experiment's, or untestable ask nothing of it).
pub(crate) fn questions(comparisons: &[ComparisonRecord], claims: &[ClaimRow]) -> Vec<Question> {
    let mut out: Vec<Question> = comparisons
        .iter()
        .map(|r| Question {
            what: format!("{} against {} on {}", r.config, r.against, r.metric),
            decided: r.comparison.verdict != Verdict::Inconclusive,
            verdict: r.comparison.verdict.as_str().to_owned(),
            interval: r.comparison.speedup_ci,
        })
        .collect();
    out.extend(
        claims
            .iter()
            .filter(|c| c.against.is_some())
            .filter(|c| {
                use crate::stats::ClaimVerdict::*;
                matches!(c.verdict, Supported | Refuted | Inconclusive)
            })
            .map(|c| Question {
                what: format!("claim \"{}\" on {}", c.claim, c.config),
                decided: c.verdict.decided(),
                verdict: c.verdict.as_str().to_owned(),
                interval: c.speedup_ci,
            }),
    );
    out
}

/// The summary of a sequential run; `None` for a fixed design.
pub(crate) fn sequential_summary(run: &RunData, questions: &[Question]) -> Option<SequentialSummary> {
    let RunDesign {
        sequential: Some(plan),
        blocks,
        max_time_seconds,
        ..
    } = run.design
    else {
        return None;
    };
    let look = plan.look(blocks, run.compare.alpha, INTERVAL_ERROR);
    let open: Vec<Question> = questions.iter().filter(|q| !q.decided).cloned().collect();
    Some(SequentialSummary {
        min: plan.min,
        max: plan.max,
        max_time_seconds,
        looks_planned: plan.looks(),
        looks_taken: look.taken,
        blocks,
        alpha_at_look: look.alpha,
        confidence_at_look: 1.0 - look.error,
        stop: stop_kind(run.finished, &plan, blocks, open.is_empty()),
        questions: questions.len(),
        open,
    })
}

fn stop_kind(finished: bool, plan: &SequentialPlan, blocks: u32, all_decided: bool) -> StopKind {
    if !finished {
        StopKind::Unfinished
    } else if all_decided {
        StopKind::Decided
    } else if blocks >= plan.max {
        StopKind::MaxReached
    } else {
        StopKind::TimeBudget
    }
}

impl SequentialSummary {
    /// Why the run stopped, in a sentence.
    pub fn stop_sentence(&self) -> String {
        let blocks = format::plural(self.blocks as usize, "block");
        let looks = self
            .looks_taken
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let open = || {
            self.open
                .iter()
                .map(|q| format!("{} ({}, {})", q.what, q.verdict, format::factor_interval(q.interval)))
                .collect::<Vec<_>>()
                .join("; ")
        };
        match self.stop {
            StopKind::Decided if self.questions == 0 => format!(
                "Stopped after {blocks}, at its first look: it had nothing to decide (no comparison, and no claim it \
                 could judge)."
            ),
            StopKind::Decided => format!(
                "Stopped after {blocks}: every question was decided at the look after {} blocks (looks at {looks}; \
                 the plan allowed up to {}).",
                self.blocks, self.max
            ),
            StopKind::MaxReached => {
                format!(
                    "Ran to its maximum of {blocks} (looks at {looks}); still open: {}.",
                    open()
                )
            }
            StopKind::TimeBudget => format!(
                "Its time budget of {} was spent after {blocks} (looks at {looks}; the plan allowed up to {}); \
                 still open: {}.",
                format::duration(self.max_time_seconds.unwrap_or(0.0).round() as i64),
                self.max,
                open()
            ),
            StopKind::Unfinished => format!(
                "The run is not finished: {blocks} so far (looks at {looks}); this report analyses them as a look."
            ),
        }
    }
}
