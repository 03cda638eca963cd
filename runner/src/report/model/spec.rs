//! What a run compares, as the report reads it (run data -> assemble): the `[compare]` settings
//! with their guards and claims. `rundata` fills them from the run's stored spec, so the report
//! never reads the store's types.

use crate::stats::{Claim, ClaimConditions, ClaimVerdict, Direction, MadeOn, Tolerance};

/// A run's `[compare]` settings: its baseline, primary metric, statistical settings, guards and
/// claims.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareSpec {
    /// Baseline variant name.
    pub baseline: String,
    /// `<stage>.<metric>`, `<stage>.seconds` or `trial.seconds`.
    pub primary: String,
    /// Overrides the direction inferred from the primary metric's unit.
    pub direction: Option<Direction>,
    /// Significance level of every test.
    pub alpha: f64,
    /// Relative change under which a difference counts as equivalent.
    pub band: f64,
    /// Bootstrap resamples per interval.
    pub resamples: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
    pub guards: Vec<GuardSpec>,
    pub claims: Vec<ClaimSpec>,
    /// The report also compares neighbouring sweep points.
    pub sweep_neighbours: bool,
    /// Whether the trained model's quality is under test: a model no better than predicting
    /// zero is then a failed guard.
    pub quality_under_test: bool,
}

/// A guard: `metric` may not get worse by more than `tolerance`.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardSpec {
    pub metric: String,
    pub tolerance: Tolerance,
}

/// A claim the run tests: what its source says `variant` does to `metric`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimSpec {
    pub metric: String,
    pub variant: String,
    pub claim: Claim,
    /// The claim as written in the manifest.
    pub text: String,
    /// Where the claim comes from: `<document>, section "<section>"` (runs stored before
    /// claims named their sources hold the manifest's free text).
    pub source: Option<String>,
    /// What the claim was made under (empty: anywhere).
    pub requires: ClaimConditions,
    /// The claim word for word, as its source states it.
    pub quote: Option<String>,
    /// The change the claim is about, and the change its variant makes.
    pub change: Option<String>,
    pub variant_change: Option<String>,
    /// What the source measured, when it is not `metric`.
    pub source_metric: Option<String>,
    /// Why the experiment cannot test the claim.
    pub untestable: Option<String>,
    /// Where the experiment deliberately measures differently from the source.
    pub differs: Option<String>,
    /// A value claim's hardware: judged only there, context elsewhere.
    pub made_on: Option<MadeOn>,
}

impl ClaimSpec {
    /// Why this experiment does not judge the claim whatever it measures: it says it cannot
    /// test it (`untestable`), or the claim is about another change or another measurement
    /// than the one its variant makes.
    pub fn not_judged(&self) -> Option<(ClaimVerdict, String)> {
        if let Some(why) = &self.untestable {
            return Some((ClaimVerdict::Untestable, format!("not testable here: {why}")));
        }
        let mut differs = Vec::new();
        if let (Some(claim), Some(ours)) = (&self.change, &self.variant_change) {
            if claim != ours {
                differs.push(format!(
                    "the claim is about {claim}; variant `{}` changes {ours}",
                    self.variant
                ));
            }
        }
        if let Some(theirs) = &self.source_metric {
            differs.push(format!(
                "the source measured {theirs}; this experiment measures `{}`",
                self.metric
            ));
        }
        (!differs.is_empty()).then(|| (ClaimVerdict::NotThisExperiment, differs.join("; ")))
    }
}
