//! The Markdown view of a report (typed `Report` -> the strings `report.md.j2` prints).
//!
//! Every figure a reader of `report.md` sees is formatted here (with `format` and `prose`), so
//! the template only lays them out and the typed model stays free of presentation.

use serde::Serialize;

use crate::report::format;
use crate::report::model::{BandwidthKind, ChartRef, ComparisonRecord, GuardRow, Report};
use crate::report::prose::{self, guard_amount, verdict_cell, Style};
use crate::stats::GuardVerdict;

const DASH: &str = "—";

#[derive(Debug, Clone, Serialize)]
pub struct ReportView<'a> {
    pub experiment: &'a str,
    pub description: &'a str,
    pub run_id: &'a str,
    pub status: &'a str,
    pub started_at: String,
    pub finished_at: String,
    pub duration: String,
    pub primary: &'a str,
    pub primary_unit: &'a str,
    pub primary_about: Option<&'a str>,
    pub direction: &'static str,
    pub method: String,
    pub summary: Vec<String>,
    pub results: Vec<ResultRowView>,
    pub stage_columns: &'a [String],
    pub stages: Vec<StageRowView>,
    /// The peak-RSS column's header: `Peak RSS`, or `Process peak RSS` where the kernel did not
    /// allow resetting the high-water mark per stage.
    pub peak_rss_header: &'static str,
    /// What that column holds, in a sentence.
    pub peak_rss_meaning: &'static str,
    pub guards: Vec<GuardRowView>,
    pub quality: Vec<QualityRowView>,
    pub quality_under_test: bool,
    pub gpu: Vec<GpuRowView>,
    pub claims: Vec<ClaimRowView>,
    pub sweeps: Vec<TableView>,
    pub sweep_neighbours: Option<super::sections::NeighbourView>,
    pub bandwidth: Vec<BandwidthView>,
    pub bandwidth_by_size: Vec<super::sections::SizeComparisonView>,
    pub other_metrics: Vec<OtherMetricView>,
    /// Some row of `other_metrics` is a series summarized by its mean over steps.
    pub other_metrics_series: bool,
    pub scaling: Option<super::scaling_view::ScalingView>,
    pub failed_trials: Vec<FailedTrialView>,
    pub environment: Vec<KeyValue>,
    pub data_hashes: Vec<KeyValue>,
    /// The stock data in a sentence, leading the Data section; `None` when the run reads none.
    pub stock_data: Option<String>,
    pub databases: DatabasesView,
    pub manifest_path: &'a str,
    pub manifest_hash: &'a str,
    pub reproduce: &'a str,
    /// Build commit, experiment commit, data and database kinds, one line each.
    pub reproduction: Vec<String>,
    /// The dirty-tree warning under the title; `None` for a run from committed code.
    pub dirty: Option<String>,
    pub notes: &'a [String],
    pub stage_notes: Vec<StageNoteView>,
    /// The What ran section; `None` when no stage recorded a fact.
    pub facts: Option<super::sections::FactsView>,
    /// The Stability section; `None` when the baseline has too few trials.
    pub stability: Option<super::sections::StabilityView>,
    /// Why a sequential run stopped, in a sentence; `None` for a fixed design.
    pub stop: Option<String>,
    pub charts: &'a [ChartRef],
    pub comparisons: &'a [ComparisonRecord],
    pub regression: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResultRowView {
    pub config: String,
    pub n: usize,
    pub median: String,
    pub median_ci: String,
    pub against: String,
    pub speedup: String,
    pub speedup_ci: String,
    pub p: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageRowView {
    pub config: String,
    pub cells: Vec<String>,
    pub total: String,
    pub peak_rss: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct GuardRowView {
    pub config: String,
    pub against: String,
    pub metric: String,
    pub baseline_mean: String,
    pub candidate_mean: String,
    pub diff: String,
    pub ci: String,
    pub tolerance: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct QualityRowView {
    pub config: String,
    pub stage: String,
    pub n: usize,
    pub mse_vs_zero: String,
    pub mse_vs_mean: String,
    pub ic_per_date: String,
    pub ic_t: String,
    pub direction_accuracy: String,
    /// `worse than predicting zero` for a flagged model, else empty.
    pub flag: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct GpuRowView {
    pub config: String,
    pub stage: String,
    pub n: usize,
    pub samples: String,
    pub util_mean: String,
    pub util_max: String,
    pub mem_peak: String,
    pub sm_clock: String,
    pub power_mean: String,
    pub temp_max: String,
    /// `**throttled in k of n trials**`, or `no`.
    pub throttled: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClaimRowView {
    pub claim: String,
    pub source: String,
    pub config: String,
    pub metric: String,
    pub claimed: String,
    pub measured: String,
    pub verdict: &'static str,
    pub reason: String,
}

/// A sweep table: a header cell per variant, a row per sweep point.
#[derive(Debug, Clone, Serialize)]
pub struct TableView {
    pub axis: String,
    pub metric: String,
    pub variants: Vec<String>,
    pub rows: Vec<RowView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RowView {
    pub point: String,
    pub cells: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BandwidthView {
    pub stage: String,
    pub chart: String,
    pub columns: Vec<String>,
    pub rows: Vec<SizeRowView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeRowView {
    pub size: String,
    pub cells: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OtherMetricView {
    pub metric: String,
    pub series: bool,
    pub unit: String,
    pub config: String,
    pub n: usize,
    pub median: String,
    pub median_ci: String,
    pub against: String,
    pub ratio: String,
    pub ratio_ci: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailedTrialView {
    pub config: String,
    pub repetition: u32,
    pub block: String,
    pub host: String,
    pub stage: String,
    pub error: String,
}

/// A distinct stage note and where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct StageNoteView {
    pub stage: String,
    pub note: String,
    /// `2 trials of a, b`.
    pub source: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct DatabasesView {
    pub results: String,
    /// `None`: not recorded with the run.
    pub stock: Option<String>,
    /// The run read its stock data from its results database.
    pub stock_is_results: bool,
}

fn or_dash(s: Option<&str>) -> String {
    s.map_or_else(|| DASH.to_owned(), str::to_owned)
}

fn value(v: Option<f64>, unit: &str) -> String {
    format::value(v.unwrap_or(f64::NAN), unit)
}

fn factor(v: Option<f64>) -> String {
    format::factor(v.unwrap_or(f64::NAN))
}

fn timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// Map entries as table rows, values made safe for a Markdown cell.
pub(crate) fn key_values(map: &std::collections::BTreeMap<String, String>) -> Vec<KeyValue> {
    map.iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: format::cell(v),
        })
        .collect()
}

// Long because: one struct literal with a field per template variable; each field is a short
// formatting expression.
/// The Markdown view of `r`.
pub fn view(r: &Report) -> ReportView<'_> {
    let unit = r.primary.unit.as_str();
    let process_peak = r
        .stage_notes
        .iter()
        .any(|n| n.note == crate::measure::PROCESS_PEAK_NOTE);
    ReportView {
        experiment: &r.experiment,
        description: &r.description,
        run_id: &r.run_id,
        status: &r.status,
        started_at: timestamp(r.started_at),
        finished_at: r.finished_at.map_or_else(|| DASH.to_owned(), timestamp),
        duration: r.duration_seconds.map_or_else(|| DASH.to_owned(), format::duration),
        primary: &r.primary.metric,
        primary_unit: unit,
        primary_about: r.primary.about.as_deref(),
        direction: r.primary.direction.as_str(),
        method: prose::method_sentence(&r.method),
        summary: prose::summary(r, Style::Markdown),
        results: r
            .results
            .iter()
            .map(|row| ResultRowView {
                config: row.config.clone(),
                n: row.n,
                median: value(row.median, unit),
                median_ci: format::value_interval(row.median_ci, unit),
                against: or_dash(row.against.as_deref()),
                speedup: row
                    .against
                    .as_ref()
                    .map_or_else(|| DASH.to_owned(), |_| factor(row.speedup)),
                speedup_ci: format::factor_interval(row.speedup_ci),
                p: row.p.map_or_else(|| DASH.to_owned(), format::p_value),
                verdict: match row.verdict {
                    Some(v) => verdict_cell(v, row.reps_needed, row.changed_results),
                    None if row.baseline => "baseline".to_owned(),
                    None => DASH.to_owned(),
                },
            })
            .collect(),
        stage_columns: &r.stage_columns,
        stages: r
            .stages
            .iter()
            .map(|row| StageRowView {
                config: row.config.clone(),
                cells: row.median_seconds.iter().map(|s| value(*s, "s")).collect(),
                total: value(row.total_seconds, "s"),
                peak_rss: row
                    .peak_rss_bytes
                    .map_or_else(|| DASH.to_owned(), |b| format::bytes(b as f64)),
            })
            .collect(),
        guards: r.guards.iter().map(guard_view).collect(),
        quality: r
            .quality
            .iter()
            .map(|q| {
                let cell = |v: Option<f64>| v.map_or_else(|| DASH.to_owned(), |v| format::sig(v, 4));
                QualityRowView {
                    config: q.config.clone(),
                    stage: q.stage.clone(),
                    n: q.n,
                    mse_vs_zero: cell(q.mse_vs_zero),
                    mse_vs_mean: cell(q.mse_vs_mean),
                    ic_per_date: cell(q.ic_per_date),
                    ic_t: cell(q.ic_t),
                    direction_accuracy: cell(q.direction_accuracy),
                    flag: if !q.shown_better {
                        "**not shown better than predicting zero**".to_owned()
                    } else {
                        String::new()
                    },
                }
            })
            .collect(),
        quality_under_test: r.quality_under_test,
        gpu: r.gpu.iter().map(gpu_view).collect(),
        claims: r
            .claims
            .iter()
            .map(|c| ClaimRowView {
                claim: format::cell(c.quote.as_deref().unwrap_or(&c.claim)),
                source: format::cell(c.source.as_deref().unwrap_or(DASH)),
                config: c.config.clone(),
                metric: c.metric.clone(),
                claimed: prose::claimed_range(c),
                measured: prose::claim_measurement(c),
                verdict: c.verdict.as_str(),
                reason: prose::claim_reason(c, Style::Markdown),
            })
            .collect(),
        sweep_neighbours: r.sweep_neighbours.as_ref().map(super::sections::neighbour_view),
        sweeps: r
            .sweeps
            .iter()
            .map(|t| TableView {
                axis: t.axis.clone(),
                metric: t.metric.clone(),
                variants: t.variants.clone(),
                rows: t
                    .rows
                    .iter()
                    .map(|row| RowView {
                        point: row.point.clone(),
                        cells: row
                            .cells
                            .iter()
                            .map(|cell| match cell {
                                Some(c) => format!(
                                    "{} ({})",
                                    value(c.median, &t.unit),
                                    format::value_interval(c.median_ci, &t.unit)
                                ),
                                None => DASH.to_owned(),
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
        bandwidth: r.bandwidth.iter().map(bandwidth_view).collect(),
        bandwidth_by_size: r
            .bandwidth_by_size
            .iter()
            .map(super::sections::size_comparison_view)
            .collect(),
        other_metrics: r
            .other_metrics
            .iter()
            .map(|m| OtherMetricView {
                // Command stages name their metrics freely; keep the table intact.
                metric: format::cell(&m.metric),
                series: m.series,
                unit: if m.unit.is_empty() {
                    DASH.to_owned()
                } else {
                    format::cell(&m.unit)
                },
                config: m.config.clone(),
                n: m.n,
                median: format::cell(&value(m.median, &m.unit)),
                median_ci: format::cell(&format::value_interval(m.median_ci, &m.unit)),
                against: or_dash(m.against.as_deref()),
                ratio: m.against.as_ref().map_or_else(|| DASH.to_owned(), |_| factor(m.ratio)),
                ratio_ci: format::factor_interval(m.ratio_ci),
            })
            .collect(),
        other_metrics_series: r.other_metrics.iter().any(|m| m.series),
        scaling: r
            .scaling
            .as_ref()
            .map(|s| super::scaling_view::view(s, &r.primary.metric)),
        failed_trials: r
            .failed_trials
            .iter()
            .map(|t| FailedTrialView {
                config: t.config.clone(),
                repetition: t.repetition,
                block: t.block.map_or_else(|| DASH.to_owned(), |b| b.to_string()),
                host: format::cell(&t.host),
                stage: or_dash(t.stage.as_deref()),
                error: format::cell(t.error.as_deref().unwrap_or("(no message)")),
            })
            .collect(),
        environment: key_values(&r.environment),
        data_hashes: key_values(&r.data_hashes),
        stock_data: match &r.stock_data {
            Some(d) if !d.versions.is_empty() => Some(format!(
                "Stock data: {}; source: {}; dataset version{} {} (read again with `--data`).",
                d.extent(),
                d.origin(),
                if d.versions.len() == 1 { "" } else { "s" },
                d.versions
                    .iter()
                    .map(|v| format!("`{}`", v.label))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Some(d) => Some(format!("Stock data: {}; source: {}.", d.extent(), d.origin())),
            None if !r.data_hashes.is_empty() => Some(
                "Stock data: unknown (not recorded with the run: it was stored before runs named their data).".into(),
            ),
            None => None,
        },
        databases: DatabasesView {
            results: r.databases.results.clone(),
            stock_is_results: r.databases.stock.as_ref() == Some(&r.databases.results),
            stock: r.databases.stock.clone(),
        },
        manifest_path: &r.manifest_path,
        manifest_hash: &r.manifest_hash,
        reproduce: &r.reproduce,
        peak_rss_header: if process_peak { "Process peak RSS" } else { "Peak RSS" },
        peak_rss_meaning: if process_peak {
            "Peak RSS is the process's peak since it started, not per stage: the kernel did not allow resetting it."
        } else {
            "Peak RSS is the largest per-stage peak over the config's trials (the kernel's high-water mark, reset before each stage), which includes what the process holds between trials."
        },
        reproduction: r.reproduction.lines(),
        dirty: r.reproduction.dirty_warning(),
        notes: &r.notes,
        stage_notes: r
            .stage_notes
            .iter()
            .map(|n| StageNoteView {
                stage: n.stage.clone(),
                note: n.note.clone(),
                source: format!(
                    "{} of {}",
                    crate::metrics::count(n.trials, "trial"),
                    crate::metrics::named_list(&n.configs)
                ),
            })
            .collect(),
        facts: super::sections::facts_view(&r.facts),
        stability: r.stability.as_ref().map(super::sections::stability_view),
        stop: r.method.sequential.as_ref().map(|s| s.stop_sentence()),
        charts: &r.charts,
        comparisons: &r.comparisons,
        regression: r.regression,
    }
}

fn guard_view(g: &GuardRow) -> GuardRowView {
    let res = &g.result;
    GuardRowView {
        config: g.config.clone(),
        against: g.against.clone(),
        metric: g.metric.clone(),
        baseline_mean: value(g.baseline_mean, &g.unit),
        candidate_mean: value(g.candidate_mean, &g.unit),
        diff: guard_amount(g, res.diff),
        ci: res.ci.map_or_else(
            || DASH.to_owned(),
            |(lo, hi)| format!("{} to {}", guard_amount(g, lo), guard_amount(g, hi)),
        ),
        tolerance: g.tolerance.display(),
        verdict: match &res.reason {
            Some(reason) if res.verdict != GuardVerdict::Pass => format!("{} ({reason})", res.verdict.as_str()),
            _ => res.verdict.as_str().to_owned(),
        },
    }
}

fn bandwidth_view(t: &crate::report::model::BandwidthTable) -> BandwidthView {
    BandwidthView {
        stage: t.stage.clone(),
        chart: t.chart.clone(),
        columns: t.columns.iter().map(|c| format::cell(&c.label)).collect(),
        rows: t
            .rows
            .iter()
            .map(|row| SizeRowView {
                size: format::size(row.size_bytes as f64),
                cells: row
                    .cells
                    .iter()
                    .zip(&t.columns)
                    .map(|(v, c)| match (c.kind, v) {
                        // Shares are recorded in percent: three significant digits, like the rest.
                        (BandwidthKind::PctPeak, Some(p)) => format!("{}%", format::sig(*p, 3)),
                        (BandwidthKind::PctPeak, None) => DASH.to_owned(),
                        (_, v) => value(*v, &c.unit),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn gpu_view(g: &crate::report::model::GpuRow) -> GpuRowView {
    let num =
        |v: Option<f64>, unit: &str| v.map_or_else(|| DASH.to_owned(), |v| format!("{} {unit}", format::sig(v, 3)));
    GpuRowView {
        config: g.config.clone(),
        stage: g.stage.clone(),
        n: g.n,
        samples: g.samples.map_or_else(|| DASH.to_owned(), |v| format::sig(v, 4)),
        util_mean: num(g.util_mean, "%"),
        util_max: num(g.util_max, "%"),
        mem_peak: g.mem_peak.map_or_else(|| DASH.to_owned(), format::bytes),
        sm_clock: format!("{} / {}", num(g.sm_clock_min, "MHz"), num(g.sm_clock_max, "MHz")),
        power_mean: num(g.power_mean, "W"),
        temp_max: num(g.temp_max, "°C"),
        throttled: if g.throttled > 0 {
            format!("**throttled in {} of {} trials**", g.throttled, g.n)
        } else {
            "no".to_owned()
        },
    }
}
