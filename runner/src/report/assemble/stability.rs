//! How steady the machine was over a run (run data -> each config's level change and
//! trial-to-trial jitter on the primary metric, the drifting and jittery flags, and the warnings
//! they add to the report's notes; `render::sections` formats the section). The flags come from the baseline, whose trials span the whole run.

use super::samples::{comparison_plan, trial_value};
use crate::report::format;
use crate::report::model::{ConfigData, RunData, StabilityReport, StabilityRow};
use crate::stats::{stability, Stability, JITTER_CV};

/// A config's successful values of `metric`, in trial order.
fn in_trial_order(config: &ConfigData, metric: &str) -> Vec<f64> {
    let mut trials: Vec<_> = config.trials.iter().filter(|t| t.ok).collect();
    trials.sort_by_key(|t| t.index);
    trials
        .iter()
        .filter_map(|t| trial_value(t, metric).map(|v| v.0))
        .collect()
}

/// The stability section of `run`; `None` when its baseline has too few trials to judge.
pub(crate) fn stability_report(run: &RunData) -> Option<StabilityReport> {
    let metric = &run.compare.primary;
    let baseline = comparison_plan(run).first().map_or(0, |&(_, j)| j);
    let band = run.compare.band;
    let rows: Vec<StabilityRow> = run
        .configs
        .iter()
        .filter_map(|c| {
            Some(StabilityRow {
                config: c.name.clone(),
                figures: stability(&in_trial_order(c, metric), band)?,
            })
        })
        .collect();
    let baseline_name = &run.configs.get(baseline)?.name;
    let base = rows.iter().find(|r| &r.config == baseline_name)?;
    Some(StabilityReport {
        metric: metric.clone(),
        baseline: base.config.clone(),
        band,
        jitter_cv: JITTER_CV,
        drifting: base.figures.drifting,
        jittery: base.figures.jittery,
        rows: rows.clone(),
    })
}

impl StabilityReport {
    fn baseline_figures(&self) -> Option<&Stability> {
        self.rows.iter().find(|r| r.config == self.baseline).map(|r| &r.figures)
    }

    /// "Drifting machine: ..." and "Jittery machine: ..." with the figures, when flagged.
    pub fn warnings(&self) -> Vec<String> {
        let Some(f) = self.baseline_figures() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if self.drifting {
            out.push(format!(
                "Drifting machine: {}'s {} moved {} from the first third of its {} trials to the last \
                 (95% CI {}), beyond the ±{}% noise band. Comparisons within blocks cancel a drift \
                 between blocks; times from different parts of the run are not comparable.",
                self.baseline,
                self.metric,
                format::level_change(f.level_change),
                f.trials,
                f.level_change_ci.map_or_else(
                    || "—".to_owned(),
                    |(lo, hi)| { format!("{} to {}", format::level_change(lo), format::level_change(hi)) }
                ),
                format::trimmed(self.band * 100.0)
            ));
        }
        if self.jittery {
            out.push(format!(
                "Jittery machine: {}'s {} varies by {} from one trial to the next (trial-to-trial CV, above \
                 {}); intervals are wider and a verdict needs more blocks.",
                self.baseline,
                self.metric,
                format::percent_abs(f.cv),
                format::percent_abs(self.jitter_cv)
            ));
        }
        out
    }
}
