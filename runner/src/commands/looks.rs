//! The looks of a sequential run (`repetitions = { min, max }`): after each planned block
//! count, the run's questions are asked as the report would ask them, and the run ends once
//! every one is decided or its time budget cannot fit another block.

use crate::exec::{BlockJudge, BlockJudgement};
use crate::measure::Fingerprint;
use crate::record::TrialRecord;
use crate::report::Question;
use crate::stats::SequentialPlan;
use crate::store::spec::StoredSpec;
use crate::store::RunRow;
use std::time::Duration;

/// Decides after each measured block of a sequential run whether it goes on.
pub(super) struct SequentialJudge {
    row: RunRow,
    spec: StoredSpec,
    env: Fingerprint,
    database: String,
    plan: SequentialPlan,
    max_time: Option<Duration>,
    /// Trials stored before this process started (a resumed run's).
    stored: Vec<TrialRecord>,
}

/// Seconds the trials took, start to end, warm-ups included.
fn trial_seconds(trials: &[TrialRecord]) -> f64 {
    trials
        .iter()
        .map(|t| (t.finished_at - t.started_at).num_milliseconds().max(0) as f64 / 1e3)
        .sum()
}

impl SequentialJudge {
    /// The judge of run `row` (a sequential plan in its spec), with the trials it already
    /// stored; `None` for a fixed design.
    pub(super) fn of(
        row: RunRow,
        spec: StoredSpec,
        env: Fingerprint,
        database: &str,
        stored: Vec<TrialRecord>,
    ) -> Option<SequentialJudge> {
        let plan = spec.schedule.sequential?;
        let max_time = spec
            .schedule
            .max_time_seconds
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64);
        Some(SequentialJudge {
            row,
            spec,
            env,
            database: database.to_owned(),
            plan,
            max_time,
            stored,
        })
    }

    /// The questions as they stand over `trials`.
    fn questions(&self, trials: &[TrialRecord]) -> Vec<Question> {
        let data = crate::rundata::run_data(&self.row, &self.spec, trials, Some(&self.env), &self.database);
        crate::report::questions(&data)
    }

    /// Judges the run over the stored trials and those run now: at a planned look, its
    /// questions; after any block, whether the time budget fits another.
    fn judge(&self, ran: &[TrialRecord]) -> BlockJudgement {
        let all: Vec<TrialRecord> = self.stored.iter().chain(ran).cloned().collect();
        let blocks = crate::rundata::complete_blocks(&all, self.spec.configs.len());
        let mut out = BlockJudgement {
            blocks,
            ..BlockJudgement::default()
        };
        if blocks >= self.plan.max {
            return out;
        }
        if self.plan.is_look(blocks) {
            let questions = self.questions(&all);
            out.look = Some(look_summary(&questions));
            if questions.is_empty() {
                out.stop = Some("nothing to decide: no comparison, and no claim this run can judge".to_owned());
                return out;
            }
            if questions.iter().all(|q| q.decided) {
                out.stop = Some(format!(
                    "every question is decided ({})",
                    questions
                        .iter()
                        .map(|q| format!("{}: {}", q.what, q.verdict))
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
                return out;
            }
        }
        if let Some(budget) = self.max_time {
            let spent = trial_seconds(&all);
            let measured: Vec<TrialRecord> = all.iter().filter(|t| !t.warmup).cloned().collect();
            let per_block = trial_seconds(&measured) / f64::from(blocks.max(1));
            if spent + per_block > budget.as_secs_f64() {
                out.stop = Some(format!(
                    "the time budget of {} cannot fit another block (spent {}, about {} a block)",
                    humantime::format_duration(Duration::from_secs(budget.as_secs())),
                    humantime::format_duration(Duration::from_secs(spent.round() as u64)),
                    humantime::format_duration(Duration::from_secs(per_block.round().max(1.0) as u64))
                ));
            }
        }
        out
    }

    /// The judgement over the stored trials alone, before a resumed run goes on: a run that
    /// was cut off right after a deciding look, or out of time, ends without another trial.
    pub(super) fn before_resuming(&self) -> BlockJudgement {
        self.judge(&[])
    }
}

impl BlockJudge for SequentialJudge {
    fn after_block(&mut self, _block: u32, ran: &[TrialRecord]) -> BlockJudgement {
        self.judge(ran)
    }
}

/// `1 of 2 decided; open: reuse against baseline on train.epoch_seconds (inconclusive,
/// 0.97x–1.08x)`: what the console and the events file show at a look.
fn look_summary(questions: &[Question]) -> String {
    let decided = questions.iter().filter(|q| q.decided).count();
    let open: Vec<String> = questions
        .iter()
        .filter(|q| !q.decided)
        .map(|q| {
            let interval = q
                .interval
                .map_or_else(|| "no interval yet".to_owned(), |(lo, hi)| format!("{lo:.3}x-{hi:.3}x"));
            format!("{} ({}, {interval})", q.what, q.verdict)
        })
        .collect();
    if questions.is_empty() {
        "no comparison, and no claim this run can judge".to_owned()
    } else if open.is_empty() {
        format!("{} decided", crate::report::format::plural(decided, "question"))
    } else {
        format!("{decided} of {} decided; open: {}", questions.len(), open.join("; "))
    }
}

/// Trials of the schedule up to and including measured block count `blocks`: the run's
/// planned total once a sequential run ends early.
pub(super) fn planned_through(trials: &[crate::plan::ScheduledTrial], blocks: u32) -> u32 {
    let warm = trials
        .iter()
        .filter(|t| t.warmup)
        .map(|t| t.block)
        .max()
        .map_or(0, |b| b + 1);
    trials.iter().filter(|t| t.warmup || t.block < warm + blocks).count() as u32
}

/// Ends a run after its first measured block when no trial so far produced the primary
/// metric although some succeeded: a typo in `[compare] primary` (`compress.second`) would
/// otherwise run every trial and fail at the end. Wraps a sequential run's judge.
pub(super) struct PrimaryCheck<'a> {
    exp: &'a crate::manifest::Experiment,
    inner: Option<&'a mut dyn BlockJudge>,
    checked: bool,
    /// What the first block showed missing; the run then stops.
    pub(super) missing: Option<crate::produced::Unproduced>,
}

impl<'a> PrimaryCheck<'a> {
    /// Whether `exp` needs the check: not when its primary metric is known before the run
    /// (the trial's or a stage's time, or a metric a built-in kind's catalog lists, checked at
    /// validation). A command stage's metrics are known only from what it prints.
    pub(super) fn applies(exp: &crate::manifest::Experiment) -> bool {
        crate::metrics::summed(&exp.compare.primary).into_iter().any(|m| {
            m.split_once('.').is_some_and(|(stage, name)| {
                name != "seconds"
                    && exp
                        .stages
                        .iter()
                        .any(|s| s.name == stage && s.kind == crate::kinds::StageKind::Command)
            })
        })
    }

    pub(super) fn new(exp: &'a crate::manifest::Experiment, inner: Option<&'a mut dyn BlockJudge>) -> Self {
        PrimaryCheck {
            exp,
            inner,
            checked: false,
            missing: None,
        }
    }
}

/// The error a run stopped by [`PrimaryCheck`] ends with: located at `[compare] primary`, with
/// what the stage did produce and the name it probably meant.
pub(super) fn primary_error(
    exp: &crate::manifest::Experiment,
    missing: &crate::produced::Unproduced,
    run_id: &str,
    stored: usize,
) -> crate::manifest::ManifestErrors {
    let text = missing.to_string();
    let (what, hint) = text
        .split_once("\nhint: ")
        .map_or((text.as_str(), None), |(w, h)| (w, Some(h)));
    let span = crate::manifest::span_of(exp, &["compare".to_owned(), "primary".to_owned()], false);
    let message = format!(
        "run {run_id} stopped after its first block: {what} (the {} that ran {} stored, as a stopped run)",
        crate::report::format::plural(stored, "trial"),
        if stored == 1 { "is" } else { "are" }
    );
    let error = crate::manifest::ManifestError::new(message, span)
        .label("no trial produced it")
        .hint(match hint {
            Some(h) => format!("{h} Correct `primary` in [compare] and run again"),
            None => "name a metric the stage prints, or `<stage>.seconds`, its time".to_owned(),
        });
    crate::manifest::located(exp, vec![error])
}

impl BlockJudge for PrimaryCheck<'_> {
    fn after_block(&mut self, block: u32, ran: &[TrialRecord]) -> BlockJudgement {
        if !std::mem::replace(&mut self.checked, true) {
            let missing = crate::produced::unproduced(self.exp, ran)
                .into_iter()
                .find(|u| u.named_in == crate::produced::PRIMARY);
            if let Some(u) = missing {
                self.missing = Some(u);
                return BlockJudgement {
                    blocks: crate::rundata::complete_blocks(ran, self.exp.configs.len()),
                    look: None,
                    stop: Some(format!(
                        "no trial produced the primary metric `{}`",
                        self.exp.compare.primary
                    )),
                };
            }
        }
        match self.inner.as_deref_mut() {
            Some(judge) => judge.after_block(block, ran),
            None => BlockJudgement::default(),
        }
    }

    fn wants_trials(&self) -> bool {
        !self.checked || self.inner.as_deref().is_some_and(|j| j.wants_trials())
    }
}
