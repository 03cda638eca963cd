//! The questions a run answers and where a sequential run stands (report model -> which
//! comparisons and claims are decided, which stay open, and why the run stopped). The runner
//! asks the same questions at each look, so "decided" means one thing in both places.

use serde::Serialize;

use super::format;
use super::model::{ClaimRow, ComparisonRecord, Interval};
use super::{RunData, RunDesign};
use crate::stats::{SequentialPlan, Verdict, INTERVAL_ERROR};

/// A question the run answers: a primary comparison, or a claim that can be judged here.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Question {
    /// `reuse against baseline on train.epoch_seconds`, or `claim "5-15%" on prefetch`.
    pub what: String,
    /// Faster, slower or no change; supported or refuted.
    pub decided: bool,
    /// The verdict word.
    pub verdict: String,
    /// The speedup interval it rests on.
    pub interval: Option<Interval>,
}

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

/// Why a sequential run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// Every question was decided at a look.
    Decided,
    /// It ran to `max` blocks with questions open.
    MaxReached,
    /// `max_time` ran out first, with questions open.
    TimeBudget,
    /// It did not finish (interrupted, running, stopped by failures).
    Unfinished,
}

/// A sequential run's plan, the looks it took and why it stopped (`report.json`'s
/// `sequential`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SequentialSummary {
    pub min: u32,
    pub max: u32,
    pub max_time_seconds: Option<f64>,
    /// Block counts of the planned looks.
    pub looks_planned: Vec<u32>,
    /// Block counts of the looks taken, the last one the report's.
    pub looks_taken: Vec<u32>,
    /// Complete blocks.
    pub blocks: u32,
    /// The level this look's tests used, and the nominal level of its intervals.
    pub alpha_at_look: f64,
    pub confidence_at_look: f64,
    pub stop: StopKind,
    /// Questions the run answers (comparisons and claims it can judge).
    pub questions: usize,
    /// Questions still open.
    pub open: Vec<Question>,
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
        stop: stop_kind(&run.status, &plan, blocks, open.is_empty()),
        questions: questions.len(),
        open,
    })
}

fn stop_kind(status: &str, plan: &SequentialPlan, blocks: u32, all_decided: bool) -> StopKind {
    if status != "finished" {
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
