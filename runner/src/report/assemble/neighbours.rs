//! Neighbouring sweep points (`[compare] sweep = "neighbours"`): each point of a variant
//! against the one before it in the manifest's sweep order (64 -> 256, 256 -> 1024, ...), on
//! the primary metric, so a report says where along the sweep things change, not only how
//! far each point is from the first.

use super::samples::{compare_configs, direction_of, settings_of, sweep_axis, sweep_label};
use crate::report::model::{NeighbourRow, NeighbourTable, RunData};
use crate::stats::Comparison;

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
            speedup: crate::report::model::finite(c.speedup),
            speedup_ci: c.speedup_ci,
            p: crate::report::model::finite(c.p_for_verdict()),
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
