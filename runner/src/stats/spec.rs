//! What a run compares: its `[compare]` settings (baseline, primary metric, statistical
//! settings, guards and claims), as the store builds them from a validated manifest and keeps them with the run
//! (serialized inside its spec: a field added later needs `#[serde(default)]` so that older
//! runs still read) and the report reads them. Made of this module's own types only, so the
//! store and the report share them without either using the other.

use super::{Claim, ClaimConditions, ClaimVerdict, Direction, MadeOn, Tolerance};

/// The `[compare]` section, validated.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompareSpec {
    /// Baseline variant name.
    pub baseline: String,
    /// `<stage>.<metric>`, `<stage>.seconds` or `trial.seconds`.
    pub primary: String,
    /// Overrides the direction inferred from the primary metric's unit.
    pub direction: Option<Direction>,
    pub alpha: f64,
    pub band: f64,
    pub resamples: usize,
    pub seed: u64,
    pub guards: Vec<GuardSpec>,
    pub claims: Vec<ClaimSpec>,
    /// `[compare] sweep = "neighbours"`: the report also compares neighbouring sweep points.
    #[serde(default)]
    pub sweep_neighbours: bool,
    /// Whether the trained model's quality is under test (`[compare] quality`, default
    /// `"under_test"`): a model no better than predicting zero is then a failed guard. Runs
    /// stored before the key existed read as under test.
    #[serde(default = "under_test")]
    pub quality_under_test: bool,
}

fn under_test() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GuardSpec {
    pub metric: String,
    pub tolerance: Tolerance,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    #[serde(default)]
    pub requires: ClaimConditions,
    /// The claim word for word, as its source states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// The change the claim is about, and the change its variant makes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_change: Option<String>,
    /// What the source measured, when it is not `metric`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_metric: Option<String>,
    /// Why the experiment cannot test the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untestable: Option<String>,
    /// Where the experiment deliberately measures differently from the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differs: Option<String>,
    /// A value claim's hardware: judged only there, context elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
