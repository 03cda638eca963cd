//! Bandwidth by copy size (run data -> per-config series of stepped `GB/s` metrics -> the
//! bandwidth chart and the "Bandwidth by size" tables).
//!
//! A stage qualifies when a successful trial recorded a metric with unit `GB/s` and a step; the
//! step is the copy size in bytes (the `transfer` stage's `<mode>_gbps` and `peak_gbps`). Every
//! point is the median over the config's successful trials at that size.

use std::collections::BTreeMap;

use crate::report::model::{BandwidthColumn, BandwidthKind, BandwidthRow, BandwidthTable, ConfigData, RunData};
use crate::stats::median;

pub(crate) const UNIT: &str = "GB/s";
const SUFFIX: &str = "_gbps";
/// The per-size reference the `transfer` stage records next to its modes.
const PEAK: &str = "peak_gbps";
const PCT_SUFFIX: &str = "_pct_peak";
/// Unit of the `% of peak` columns (the stage records shares in percent).
const PCT_UNIT: &str = "%";

/// One config's stepped metric: `(size in bytes, median over successful trials)`, by size.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    pub config: String,
    pub metric: String,
    pub points: Vec<(i64, f64)>,
}

impl Series {
    /// `tuned · h2d_pinned_reuse`: the unit suffix adds nothing once the axis says GB/s.
    pub(crate) fn label(&self) -> String {
        let short = self.metric.strip_suffix(SUFFIX).unwrap_or(&self.metric);
        format!("{} · {short}", self.config)
    }

    fn at(&self, size: i64) -> Option<f64> {
        self.points.iter().find(|(s, _)| *s == size).map(|&(_, v)| v)
    }
}

/// The bandwidth series of one stage.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StageBandwidth {
    pub stage: String,
    /// Every `GB/s` series except `peak_gbps`, configs in plan order, metrics in recording order.
    pub series: Vec<Series>,
    /// `<mode>_pct_peak` of each entry of `series`, where the config recorded it.
    pub pct_peak: Vec<Option<Series>>,
    /// `peak_gbps` per config that recorded it.
    pub peaks: Vec<Series>,
}

impl StageBandwidth {
    /// The lines to draw: the reference alone carries no comparison, so it is drawn only when
    /// the stage recorded nothing else.
    pub(crate) fn lines(&self) -> &[Series] {
        if self.series.is_empty() {
            &self.peaks
        } else {
            &self.series
        }
    }

    /// Every size any series has a point at, ascending.
    pub(crate) fn sizes(&self) -> Vec<i64> {
        let mut sizes: Vec<i64> = self
            .series
            .iter()
            .chain(&self.peaks)
            .flat_map(|s| s.points.iter().map(|&(size, _)| size))
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }
}

/// Stepped metrics of `stage` in a config's successful trials: name -> size -> values.
pub(crate) fn stepped_values(config: &ConfigData, stage: &str) -> BTreeMap<String, BTreeMap<i64, Vec<f64>>> {
    let mut out: BTreeMap<String, BTreeMap<i64, Vec<f64>>> = BTreeMap::new();
    for s in config.trials.iter().filter(|t| t.ok).flat_map(|t| &t.stages) {
        if s.name != stage {
            continue;
        }
        for m in &s.metrics {
            if let Some(step) = m.step {
                out.entry(m.name.clone())
                    .or_default()
                    .entry(step)
                    .or_default()
                    .push(m.value);
            }
        }
    }
    out
}

fn series_of(config: &ConfigData, metric: &str, values: Option<&BTreeMap<i64, Vec<f64>>>) -> Option<Series> {
    let points: Vec<(i64, f64)> = values?
        .iter()
        .map(|(&size, v)| (size, median(v)))
        .filter(|(_, m)| m.is_finite())
        .collect();
    (!points.is_empty()).then(|| Series {
        config: config.name.clone(),
        metric: metric.to_owned(),
        points,
    })
}

/// Stages with stepped `GB/s` metrics, in order of first appearance, with their series.
pub(crate) fn bandwidth_stages(run: &RunData) -> Vec<StageBandwidth> {
    // (stage, GB/s metric names in recording order), successful trials only so that a stage
    // whose every trial failed does not produce an empty chart.
    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    for stage in run
        .configs
        .iter()
        .flat_map(|c| &c.trials)
        .filter(|t| t.ok)
        .flat_map(|t| &t.stages)
    {
        for m in stage.metrics.iter().filter(|m| m.step.is_some() && m.unit == UNIT) {
            let idx = match found.iter().position(|(s, _)| *s == stage.name) {
                Some(i) => i,
                None => {
                    found.push((stage.name.clone(), Vec::new()));
                    found.len() - 1
                }
            };
            if !found[idx].1.contains(&m.name) {
                found[idx].1.push(m.name.clone());
            }
        }
    }
    found
        .into_iter()
        .map(|(stage, metrics)| {
            let mut out = StageBandwidth {
                stage,
                series: Vec::new(),
                pct_peak: Vec::new(),
                peaks: Vec::new(),
            };
            for config in &run.configs {
                let values = stepped_values(config, &out.stage);
                for metric in &metrics {
                    let Some(series) = series_of(config, metric, values.get(metric)) else {
                        continue;
                    };
                    if metric == PEAK {
                        out.peaks.push(series);
                        continue;
                    }
                    let pct = metric
                        .strip_suffix(SUFFIX)
                        .map(|mode| format!("{mode}{PCT_SUFFIX}"))
                        .and_then(|name| series_of(config, &name, values.get(&name)));
                    out.series.push(series);
                    out.pct_peak.push(pct);
                }
            }
            out
        })
        .collect()
}

/// One table per bandwidth stage: a row per size; per series its median GB/s and, where
/// recorded, its median share of the peak; then each config's `peak_gbps`. `chart_file` names
/// the chart drawn from the same series.
pub(crate) fn bandwidth_tables(run: &RunData, chart_file: impl Fn(&str) -> String) -> Vec<BandwidthTable> {
    bandwidth_stages(run)
        .into_iter()
        .map(|b| {
            // (column, the series its cells come from)
            let mut columns: Vec<(BandwidthColumn, &Series)> = Vec::new();
            let column = |label: String, s: &Series, kind: BandwidthKind, unit: &str| BandwidthColumn {
                label,
                config: s.config.clone(),
                metric: s.metric.clone(),
                kind,
                unit: unit.to_owned(),
            };
            for (s, pct) in b.series.iter().zip(&b.pct_peak) {
                columns.push((column(s.label(), s, BandwidthKind::Bandwidth, UNIT), s));
                if let Some(pct) = pct {
                    let label = format!("{} % of peak", s.label());
                    columns.push((column(label, pct, BandwidthKind::PctPeak, PCT_UNIT), pct));
                }
            }
            for p in &b.peaks {
                let label = format!("{} · peak", p.config);
                columns.push((column(label, p, BandwidthKind::Peak, UNIT), p));
            }
            let rows = b
                .sizes()
                .into_iter()
                .map(|size| BandwidthRow {
                    size_bytes: size,
                    cells: columns.iter().map(|(_, s)| s.at(size)).collect(),
                })
                .collect();
            BandwidthTable {
                chart: chart_file(&b.stage),
                stage: b.stage.clone(),
                columns: columns.into_iter().map(|(c, _)| c).collect(),
                rows,
            }
        })
        .collect()
}

/// Every `<stage>.<metric>` a bandwidth table shows (series, shares of the peak, the peak).
pub(crate) fn bandwidth_metrics(run: &RunData) -> Vec<String> {
    let mut names = Vec::new();
    for b in bandwidth_stages(run) {
        let all = b.series.iter().chain(b.pct_peak.iter().flatten()).chain(&b.peaks);
        for s in all {
            let name = format!("{}.{}", b.stage, s.metric);
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}
