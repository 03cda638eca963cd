//! Which metrics a run's trials produced (exec records -> **produced** -> run end), to catch a
//! metric named in `[compare]` (primary, a guard, a claim) that nothing produced: a typo that
//! would otherwise turn into an "inconclusive" guard and a CI gate that cannot fail.

use crate::manifest::Experiment;
use crate::record::{StageStatus, TrialRecord};
use std::collections::BTreeSet;

/// A metric named in the manifest that no successful trial produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unproduced {
    pub metric: String,
    /// Where the manifest names it: `[compare] primary`, `[compare] guards`, `[compare] claims`.
    pub named_in: &'static str,
    /// What the named stage did produce (`<stage>.<metric>`), sorted.
    pub produced: Vec<String>,
}

impl std::fmt::Display for Unproduced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "metric `{}` ({}) was produced by no trial",
            self.metric, self.named_in
        )?;
        let stage = self.metric.split_once('.').map_or("", |(s, _)| s);
        if self.produced.is_empty() {
            write!(f, "; stage `{stage}` produced no metric")?;
        } else {
            write!(f, "; stage `{stage}` produced: {}", self.produced.join(", "))?;
            if let Some(best) = self
                .produced
                .iter()
                .map(|p| (strsim::jaro_winkler(p, &self.metric), p))
                .filter(|(score, _)| *score > 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0))
            {
                write!(f, "\nhint: did you mean `{}`?", best.1)?;
            }
        }
        Ok(())
    }
}

/// Where the manifest names its primary metric, as [`Unproduced::named_in`] says it.
pub const PRIMARY: &str = "[compare] primary";

/// Every metric the manifest's `[compare]` names that no successful trial produced. Empty when
/// no trial succeeded (those failures are reported on their own).
pub fn unproduced(exp: &Experiment, trials: &[TrialRecord]) -> Vec<Unproduced> {
    let ok: Vec<&TrialRecord> = trials.iter().filter(|t| t.ok).collect();
    if ok.is_empty() {
        return Vec::new();
    }
    let cmp = &exp.compare;
    let named = std::iter::once((cmp.primary.as_str(), PRIMARY))
        .chain(cmp.guards.iter().map(|g| (g.metric.as_str(), "[compare] guards")))
        .chain(cmp.claims.iter().map(|c| (c.metric.as_str(), "[compare] claims")));
    let mut out: Vec<Unproduced> = Vec::new();
    for (metric, named_in) in named.flat_map(|(m, n)| crate::metrics::summed(m).into_iter().map(move |p| (p, n))) {
        if metric == "trial.seconds" || out.iter().any(|u| u.metric == metric) {
            continue;
        }
        let Some((stage, name)) = metric.split_once('.') else {
            continue;
        };
        // A metric only a CUDA stage records (GPU telemetry, driver call counts) is missing from
        // a run on the CPU by design; its name was checked against the catalog already.
        if exp
            .stages
            .iter()
            .find(|s| s.name == stage)
            .and_then(|s| crate::kinds::catalog::find_in(s.kind, name))
            .is_some_and(|d| d.cuda_only())
        {
            continue;
        }
        let produced = produced_by(stage, &ok);
        if !produced.contains(metric) {
            out.push(Unproduced {
                metric: metric.to_owned(),
                named_in,
                produced: produced.into_iter().collect(),
            });
        }
    }
    out
}

/// Whether some successful trial produced every term of `metric` (a name, or a sum of names;
/// `trial.seconds` always).
pub fn produced(metric: &str, trials: &[TrialRecord]) -> bool {
    let ok: Vec<&TrialRecord> = trials.iter().filter(|t| t.ok).collect();
    crate::metrics::summed(metric).into_iter().all(|m| {
        m == "trial.seconds"
            || m.split_once('.')
                .is_some_and(|(stage, _)| produced_by(stage, &ok).contains(m))
    })
}

/// `<stage>.<metric>` names the successful trials recorded for `stage` (its wall time as
/// `<stage>.seconds` when it ran).
fn produced_by(stage: &str, trials: &[&TrialRecord]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for s in trials.iter().flat_map(|t| &t.stages).filter(|s| s.name == stage) {
        if s.status == StageStatus::Ok {
            names.insert(format!("{stage}.seconds"));
        }
        names.extend(s.metrics.iter().map(|m| format!("{stage}.{}", m.name)));
    }
    names
}
