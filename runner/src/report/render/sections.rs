//! The Markdown views of the report's smaller sections (typed bandwidth-by-size comparisons,
//! sweep neighbours, stability and what each config ran on -> the strings `report.md.j2`
//! prints).

use serde::Serialize;

use crate::report::format::{self, level_change};
use crate::report::model::{ConfigFacts, NeighbourTable, SizeComparison, StabilityReport};
use crate::report::prose::verdict_cell;

/// The Markdown cells of one size.
#[derive(Debug, Clone, Serialize)]
pub struct SizeRowView {
    pub size: String,
    pub n: String,
    pub speedup: String,
    pub speedup_ci: String,
    pub p: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeComparisonView {
    pub stage: String,
    pub metric: String,
    pub config: String,
    pub against: String,
    pub rows: Vec<SizeRowView>,
}

pub(crate) fn size_comparison_view(t: &SizeComparison) -> SizeComparisonView {
    SizeComparisonView {
        stage: t.stage.clone(),
        metric: t.metric.clone(),
        config: t.config.clone(),
        against: t.against.clone(),
        rows: t
            .rows
            .iter()
            .map(|r| SizeRowView {
                size: format::size(r.size_bytes as f64),
                n: format!("{} vs {}", r.n.0, r.n.1),
                speedup: format::factor(r.speedup.unwrap_or(f64::NAN)),
                speedup_ci: format::factor_interval(r.speedup_ci),
                p: r.p.map_or_else(|| "—".to_owned(), format::p_value),
                verdict: verdict_cell(r.verdict, None, false),
            })
            .collect(),
    }
}

/// The Markdown cells of one row.
#[derive(Debug, Clone, Serialize)]
pub struct NeighbourRowView {
    pub variant: String,
    pub step: String,
    pub speedup: String,
    pub speedup_ci: String,
    pub p: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct NeighbourView {
    pub axis: String,
    pub metric: String,
    /// Some rows' p-values are adjusted across the table.
    pub adjusted: bool,
    pub rows: Vec<NeighbourRowView>,
}

pub(crate) fn neighbour_view(t: &NeighbourTable) -> NeighbourView {
    NeighbourView {
        axis: t.axis.clone(),
        metric: t.metric.clone(),
        adjusted: t.rows.len() > 1,
        rows: t
            .rows
            .iter()
            .map(|r| NeighbourRowView {
                variant: r.variant.clone(),
                step: format!("{} → {}", r.from, r.to),
                speedup: format::factor(r.speedup.unwrap_or(f64::NAN)),
                speedup_ci: format::factor_interval(r.speedup_ci),
                p: r.p.map_or_else(|| "—".to_owned(), format::p_value),
                verdict: verdict_cell(r.verdict, r.reps_needed, false),
            })
            .collect(),
    }
}

/// The Stability section as `report.md` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct StabilityView {
    pub metric: String,
    pub band: String,
    pub jitter_cv: String,
    pub rows: Vec<StabilityRowView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StabilityRowView {
    pub config: String,
    pub trials: usize,
    pub level_change: String,
    pub level_change_ci: String,
    pub cv: String,
    pub flags: String,
}

/// The Markdown view of `s`.
pub(crate) fn stability_view(s: &StabilityReport) -> StabilityView {
    StabilityView {
        metric: s.metric.clone(),
        band: format::trimmed(s.band * 100.0),
        jitter_cv: format::percent_abs(s.jitter_cv),
        rows: s
            .rows
            .iter()
            .map(|r| {
                let f = &r.figures;
                let flags: Vec<&str> = [(f.drifting, "drifting"), (f.jittery, "jittery")]
                    .iter()
                    .filter(|(on, _)| *on)
                    .map(|(_, word)| *word)
                    .collect();
                StabilityRowView {
                    config: r.config.clone(),
                    trials: f.trials,
                    level_change: level_change(f.level_change),
                    level_change_ci: f.level_change_ci.map_or_else(
                        || "—".to_owned(),
                        |(lo, hi)| format!("{} to {}", level_change(lo), level_change(hi)),
                    ),
                    cv: format::percent_abs(f.cv),
                    flags: if flags.is_empty() {
                        "steady".to_owned()
                    } else {
                        flags.join(", ")
                    },
                }
            })
            .collect(),
    }
}

/// The "What ran" section: one row per fact, one column per config, and the fallbacks.
#[derive(Debug, Clone, Serialize)]
pub struct FactsView {
    pub configs: Vec<String>,
    pub rows: Vec<FactRowView>,
    /// `` `train` (baseline, reuse): cuDNN self-check failed: ...; ran on the dfdx path ``: a
    /// faster path a stage fell back from, and why (its `*_fallback` facts).
    pub fallbacks: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FactRowView {
    pub fact: String,
    /// Aligned with `configs`: the value every trial agreed on, each value with its trials
    /// where they differed, or a dash where the config did not record it.
    pub cells: Vec<String>,
}

/// Facts named `<what>_fallback` say why a stage fell back to another path; the table leaves
/// them out and the view lists them under it.
const FALLBACK_SUFFIX: &str = "_fallback";

/// The section's view; `None` when no config recorded a fact (runs stored before facts were).
pub(crate) fn facts_view(facts: &[ConfigFacts]) -> Option<FactsView> {
    if facts.is_empty() {
        return None;
    }
    let cell_of = |c: &ConfigFacts, fact: &str| -> Option<String> {
        if let Some(v) = c.agreed.get(fact) {
            return Some(v.clone());
        }
        let differing = c.differed.iter().find(|d| d.fact == fact)?;
        let parts: Vec<String> = differing
            .values
            .iter()
            .map(|v| {
                let value = v.value.as_deref().unwrap_or("not recorded");
                format!("{value} ({})", crate::metrics::count(v.trials, "trial"))
            })
            .collect();
        Some(parts.join(", "))
    };
    let names: std::collections::BTreeSet<&str> = facts
        .iter()
        .flat_map(|c| {
            c.agreed
                .keys()
                .map(String::as_str)
                .chain(c.differed.iter().map(|d| d.fact.as_str()))
        })
        .collect();
    let rows = names
        .iter()
        .filter(|n| !n.ends_with(FALLBACK_SUFFIX))
        .map(|&fact| FactRowView {
            fact: format::cell(fact),
            cells: facts
                .iter()
                .map(|c| cell_of(c, fact).map_or_else(|| "—".to_owned(), |v| format::cell(&v)))
                .collect(),
        })
        .collect();
    // One line per stage and reason, with the configs that gave it.
    let mut fallbacks: Vec<(String, String, Vec<String>)> = Vec::new();
    for &fact in names.iter().filter(|n| n.ends_with(FALLBACK_SUFFIX)) {
        let stage = fact.split_once('.').map_or(fact, |(stage, _)| stage);
        for c in facts {
            let Some(reason) = cell_of(c, fact) else { continue };
            match fallbacks.iter_mut().find(|(s, r, _)| s == stage && *r == reason) {
                Some((_, _, configs)) => configs.push(c.config.clone()),
                None => fallbacks.push((stage.to_owned(), reason, vec![c.config.clone()])),
            }
        }
    }
    Some(FactsView {
        configs: facts.iter().map(|c| format::cell(&c.config)).collect(),
        rows,
        fallbacks: fallbacks
            .into_iter()
            .map(|(stage, reason, configs)| {
                // A list item, as the stage notes are: no table cell to escape for.
                format!("`{stage}` ({}): {reason}", crate::metrics::named_list(&configs))
            })
            .collect(),
    })
}
