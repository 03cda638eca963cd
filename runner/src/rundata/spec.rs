//! The stored `[compare]` settings as the report's own types (`store::spec` -> **rundata** ->
//! `report::CompareSpec`), so that the report reads no type of the store.

use crate::report::{ClaimSpec, CompareSpec, GuardSpec};
use crate::store::spec as stored;

/// The report's view of a run's stored `[compare]` settings.
pub(crate) fn compare_spec(spec: &stored::CompareSpec) -> CompareSpec {
    CompareSpec {
        baseline: spec.baseline.clone(),
        primary: spec.primary.clone(),
        direction: spec.direction,
        alpha: spec.alpha,
        band: spec.band,
        resamples: spec.resamples,
        seed: spec.seed,
        guards: spec
            .guards
            .iter()
            .map(|g| GuardSpec {
                metric: g.metric.clone(),
                tolerance: g.tolerance,
            })
            .collect(),
        claims: spec.claims.iter().map(claim_spec).collect(),
        sweep_neighbours: spec.sweep_neighbours,
        quality_under_test: spec.quality_under_test,
    }
}

fn claim_spec(c: &stored::ClaimSpec) -> ClaimSpec {
    ClaimSpec {
        metric: c.metric.clone(),
        variant: c.variant.clone(),
        claim: c.claim,
        text: c.text.clone(),
        source: c.source.clone(),
        requires: c.requires.clone(),
        quote: c.quote.clone(),
        change: c.change.clone(),
        variant_change: c.variant_change.clone(),
        source_metric: c.source_metric.clone(),
        untestable: c.untestable.clone(),
        differs: c.differs.clone(),
        made_on: c.made_on.clone(),
    }
}
