//! Neighbouring sweep points (`[compare] sweep = "neighbours"`): each point of a variant
//! against the one before it in the manifest's sweep order (64 -> 256, 256 -> 1024, ...), on
//! the primary metric, so a report says where along the sweep things change, not only how
//! far each point is from the first.

use serde::Serialize;

use super::format;
use super::model::Interval;
use super::prose::verdict_cell;
use super::samples::{compare_configs, direction_of, settings_of, sweep_axis, sweep_label};
use super::RunData;
use crate::stats::{Comparison, Verdict};

/// One step along the sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NeighbourRow {
    pub variant: String,
    /// The sweep point stepped from and to, as the sweep table labels them.
    pub from: String,
    pub to: String,
    /// `to` against `from` on the primary metric: > 1 means `to` is better; `null` when it
    /// could not be computed.
    pub speedup: Option<f64>,
    pub speedup_ci: Option<Interval>,
    /// Rank-test p-value, Benjamini-Hochberg adjusted across the table's rows when there are
    /// several.
    pub p: Option<f64>,
    pub verdict: Verdict,
    pub reps_needed: Option<usize>,
}

/// The neighbour table of a run; `None` unless the manifest asks for it and the run sweeps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NeighbourTable {
    pub axis: String,
    pub metric: String,
    pub rows: Vec<NeighbourRow>,
}

pub(crate) fn neighbour_table(run: &RunData, unit: &str) -> Option<NeighbourTable> {
    if !run.compare.sweep_neighbours || run.configs.iter().all(|c| c.sweep.is_empty()) {
        return None;
    }
    let primary = &run.compare.primary;
    let direction = direction_of(run, primary, Some(unit));
    let settings = settings_of(run);
    let mut variants: Vec<&str> = Vec::new();
    for c in &run.configs {
        if !variants.contains(&c.variant.as_str()) {
            variants.push(&c.variant);
        }
    }
    let mut steps: Vec<(&str, usize, usize)> = Vec::new();
    for v in variants {
        let points: Vec<usize> = (0..run.configs.len())
            .filter(|&i| run.configs[i].variant == v)
            .collect();
        steps.extend(points.windows(2).map(|w| (v, w[0], w[1])));
    }
    let raw: Vec<Comparison> = steps
        .iter()
        .map(|&(_, from, to)| compare_configs(&run.configs[from], &run.configs[to], primary, direction, &settings))
        .collect();
    let rows = steps
        .iter()
        .zip(Comparison::adjust_family(raw))
        .map(|(&(v, from, to), c)| NeighbourRow {
            variant: v.to_owned(),
            from: sweep_label(&run.configs[from]),
            to: sweep_label(&run.configs[to]),
            speedup: super::model::finite(c.speedup),
            speedup_ci: c.speedup_ci,
            p: super::model::finite(c.p_for_verdict()),
            verdict: c.verdict,
            reps_needed: c.reps_needed,
        })
        .collect();
    Some(NeighbourTable {
        axis: sweep_axis(run),
        metric: primary.clone(),
        rows,
    })
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
