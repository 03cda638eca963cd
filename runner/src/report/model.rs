//! The report model (run data + stats -> `Report`, a Serialize struct the templates and
//! `report.json` share). Every number is formatted in code (here, `prose`, `tables`), never in a
//! template.

use serde::Serialize;

use super::bandwidth::bandwidth_tables;
use super::format;
use super::prose::{comparison_sentence, guard_clause, method_sentence, verdict_cell};
use super::samples::{compare_configs, comparison_plan, direction_of, metric_samples, settings_of};
use super::tables::{claim_rows, failed_trials, guard_row, key_values, stage_table, sweep_tables};
use super::{charts, RunData};
use crate::stats::{
    benjamini_hochberg, bootstrap_median_ci, median, ClaimEvaluation, Comparison, GuardResult, GuardVerdict, Verdict,
};

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub experiment: String,
    pub description: String,
    pub run_id: String,
    pub status: String,
    pub started_at: String,
    pub finished_at: String,
    pub duration: String,
    pub primary: String,
    pub primary_unit: String,
    pub direction: String,
    /// The statistical settings in one sentence.
    pub method: String,
    /// Plain-English verdicts, one per comparison, then claims.
    pub summary: Vec<String>,
    pub results: Vec<ResultRow>,
    pub stage_columns: Vec<String>,
    pub stages: Vec<StageRow>,
    pub guards: Vec<GuardRow>,
    pub claims: Vec<ClaimRow>,
    pub sweeps: Vec<SweepTable>,
    /// One table per stage that recorded `GB/s` series over copy sizes.
    pub bandwidth: Vec<BandwidthTable>,
    pub failed_trials: Vec<FailedTrialRow>,
    pub environment: Vec<KeyValue>,
    pub data_hashes: Vec<KeyValue>,
    pub manifest_path: String,
    pub manifest_hash: String,
    pub reproduce: String,
    pub notes: Vec<String>,
    pub charts: Vec<ChartRef>,
    /// Raw statistics of every primary-metric comparison, for machines.
    pub comparisons: Vec<ComparisonRecord>,
    pub regression: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResultRow {
    pub config: String,
    pub n: String,
    pub median: String,
    /// 95% interval of the median.
    pub median_ci: String,
    /// `baseline`, or the config it is compared against.
    pub against: String,
    pub speedup: String,
    pub speedup_ci: String,
    pub p: String,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ComparisonRecord {
    pub config: String,
    pub against: String,
    pub metric: String,
    pub comparison: Comparison,
    /// Guards this config failed against the same baseline.
    pub failed_guards: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageRow {
    pub config: String,
    /// Median seconds per stage, aligned with `Report::stage_columns`.
    pub cells: Vec<String>,
    pub total: String,
    pub peak_rss: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct GuardRow {
    pub config: String,
    pub against: String,
    pub metric: String,
    pub baseline_mean: String,
    pub candidate_mean: String,
    pub diff: String,
    pub ci: String,
    pub tolerance: String,
    pub verdict: String,
    pub result: GuardResult,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClaimRow {
    pub claim: String,
    pub source: String,
    pub config: String,
    pub metric: String,
    pub claimed: String,
    pub measured: String,
    pub verdict: String,
    pub reason: String,
    pub evaluation: Option<ClaimEvaluation>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepTable {
    pub axis: String,
    pub metric: String,
    pub variants: Vec<String>,
    pub rows: Vec<SweepRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    pub point: String,
    pub cells: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BandwidthTable {
    pub stage: String,
    /// File of the chart drawn from the same series, for the template to place beside it.
    pub chart: String,
    /// Per series its median GB/s and, where recorded, `% of peak`; then each config's peak.
    pub columns: Vec<String>,
    pub rows: Vec<BandwidthRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BandwidthRow {
    /// Copy size (`4 KiB`).
    pub size: String,
    /// Aligned with `BandwidthTable::columns`.
    pub cells: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailedTrialRow {
    pub config: String,
    pub repetition: u32,
    pub block: String,
    pub host: String,
    pub stage: String,
    pub error: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChartRef {
    /// `stages`, `distribution`, `sweep`, `loss` or `bandwidth`: where the template places the chart.
    pub kind: String,
    pub title: String,
    pub file: String,
}

/// Builds the report model of one run: comparisons of the primary metric (Benjamini-Hochberg
/// adjusted across the report), guards, claims, stage breakdown, sweep and bandwidth tables and
/// provenance.
pub fn build_report(run: &RunData) -> Report {
    let settings = settings_of(run);
    let primary = &run.compare.primary;
    let unit = run
        .configs
        .iter()
        .find_map(|c| metric_samples(c, primary).unit)
        .unwrap_or_else(|| "s".to_owned());
    let direction = direction_of(run, primary, Some(&unit));
    let plan = comparison_plan(run);

    let raw: Vec<Comparison> = plan
        .iter()
        .map(|&(i, j)| compare_configs(&run.configs[j], &run.configs[i], primary, direction, &settings))
        .collect();
    let adjusted_p = benjamini_hochberg(&raw.iter().map(|c| c.p_value).collect::<Vec<_>>());
    let comparisons: Vec<Comparison> = if raw.len() > 1 {
        raw.into_iter()
            .zip(adjusted_p)
            .map(|(c, p)| c.with_adjusted_p(p))
            .collect()
    } else {
        raw
    };

    let guards: Vec<GuardRow> = plan
        .iter()
        .flat_map(|&(i, j)| {
            run.compare.guards.iter().map(move |g| {
                guard_row(
                    &run.configs[i],
                    &run.configs[j],
                    &g.metric,
                    g.tolerance,
                    run.compare.alpha,
                )
            })
        })
        .collect();

    let mut summary = Vec::new();
    let mut records = Vec::new();
    for (&(i, j), c) in plan.iter().zip(&comparisons) {
        let (cand, base) = (&run.configs[i], &run.configs[j]);
        let mine: Vec<&GuardRow> = guards.iter().filter(|g| g.config == cand.name).collect();
        summary.push(format!(
            "{}{}.",
            comparison_sentence(&cand.name, &base.name, primary, &unit, c),
            guard_clause(&mine)
        ));
        records.push(ComparisonRecord {
            config: cand.name.clone(),
            against: base.name.clone(),
            metric: primary.clone(),
            comparison: c.clone(),
            failed_guards: mine
                .iter()
                .filter(|g| g.result.verdict == GuardVerdict::Fail)
                .map(|g| g.metric.clone())
                .collect(),
        });
    }

    if plan.is_empty() {
        summary.push(format!(
            "No comparison: the run has no config to compare against baseline `{}`.",
            run.compare.baseline
        ));
    }
    let claims = claim_rows(run, &plan, &settings);
    for row in &claims {
        let source = if row.source == "—" {
            String::new()
        } else {
            format!(" ({})", row.source)
        };
        let detail = match &row.evaluation {
            Some(e) if e.measured.is_some() => {
                format!("measured {} against claimed {}", row.measured, row.claimed)
            }
            _ => row.reason.clone(),
        };
        summary.push(format!(
            "Claim \"{}\"{source} for {} on {}: **{}**, {detail}.",
            row.claim, row.config, row.metric, row.verdict
        ));
    }

    let results = run
        .configs
        .iter()
        .enumerate()
        .map(|(idx, c)| {
            let s = metric_samples(c, primary);
            let ci = bootstrap_median_ci(&s.values, settings.resamples, settings.seed);
            let mut row = ResultRow {
                config: c.name.clone(),
                n: s.values.len().to_string(),
                median: format::value(median(&s.values), &unit),
                median_ci: format::value_interval(ci, &unit),
                against: "—".to_owned(),
                speedup: "—".to_owned(),
                speedup_ci: "—".to_owned(),
                p: "—".to_owned(),
                verdict: if plan.iter().any(|&(_, j)| j == idx) {
                    "baseline".to_owned()
                } else {
                    "—".to_owned()
                },
            };
            if let Some(k) = plan.iter().position(|&(i, _)| i == idx) {
                let cmp = &comparisons[k];
                row.against = run.configs[plan[k].1].name.clone();
                row.speedup = format::factor(cmp.speedup);
                row.speedup_ci = format::factor_interval(cmp.speedup_ci);
                row.p = format::p_value(cmp.p_for_verdict());
                row.verdict = verdict_cell(cmp, !records[k].failed_guards.is_empty());
            }
            row
        })
        .collect();

    let (stage_columns, stages) = stage_table(run);
    let mut notes = run.notes.clone();
    if run.status != "finished" {
        notes.insert(
            0,
            format!(
                "Run status is `{}`: results cover the trials that completed.",
                run.status
            ),
        );
    }
    let report_regression =
        records.iter().any(|r| r.comparison.verdict == Verdict::Slower) || guards.iter().any(|g| g.result.fails_gate());
    Report {
        experiment: run.experiment.clone(),
        description: run.description.clone(),
        run_id: run.run_id.clone(),
        status: run.status.clone(),
        started_at: run.started_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        finished_at: run
            .finished_at
            .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
            .unwrap_or_else(|| "—".to_owned()),
        duration: run
            .finished_at
            .map(|t| format::duration((t - run.started_at).num_seconds()))
            .unwrap_or_else(|| "—".to_owned()),
        primary: primary.clone(),
        primary_unit: unit.clone(),
        direction: direction.as_str().to_owned(),
        method: method_sentence(run, comparisons.len()),
        summary,
        results,
        stage_columns,
        stages,
        guards,
        claims,
        sweeps: sweep_tables(run, &unit),
        bandwidth: bandwidth_tables(run, charts::bandwidth_file),
        failed_trials: failed_trials(run),
        environment: key_values(&run.environment),
        data_hashes: key_values(&run.data_hashes),
        manifest_path: run.manifest_path.clone(),
        manifest_hash: run.manifest_hash.clone(),
        reproduce: run.reproduce.clone(),
        notes,
        charts: charts::chart_refs(run),
        comparisons: records,
        regression: report_regression,
    }
}
