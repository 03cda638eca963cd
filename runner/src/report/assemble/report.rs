//! Building the typed report (run data + stats -> **`Report`** -> render): comparisons of the primary metric
//! (Benjamini-Hochberg adjusted across the report), guards, claims, tables and provenance.

use super::bandwidth::bandwidth_tables;
use super::charts;
use super::others::other_metric_rows;
use super::samples::{compare_configs, comparison_plan, direction_of, metric_samples, settings_of};
use super::tables::{claim_rows, failed_trials, guard_row, stage_table, sweep_tables};
use crate::report::model::{
    finite, ComparisonRecord, Databases, GuardRow, Method, PAdjustment, Primary, RankTest, RankTestKind, Report,
    Reproduction, ResultRow, RunData, SCHEMA_VERSION,
};
use crate::report::prose::{summary, Style};
use crate::stats::{bootstrap_median_ci, median, Comparison, Design, GuardVerdict, Verdict};

/// Level of every interval the statistics module computes.
const CONFIDENCE: f64 = 0.95;

/// What the compared samples come from, for the reason a rank test was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Samples {
    /// Configs of one run.
    OneRun,
    /// The same config in two runs (`measured compare`).
    TwoRuns,
}

/// The statistical settings of `run` for a report of these primary-metric comparisons, with
/// the tests that actually ran and why.
pub(crate) fn method(run: &RunData, comparisons: &[Comparison], samples: Samples) -> Method {
    let n = comparisons.len();
    let hosts: std::collections::BTreeSet<&str> = run
        .configs
        .iter()
        .flat_map(|c| &c.trials)
        .map(|t| t.host.as_str())
        .collect();
    let mut tests = Vec::new();
    for (design, test) in [
        (Design::Independent, RankTestKind::MannWhitneyU),
        (Design::Paired, RankTestKind::WilcoxonSignedRank),
        (Design::Runs, RankTestKind::RunLevelT),
    ] {
        let count = comparisons.iter().filter(|c| c.design == design).count();
        if count == 0 {
            continue;
        }
        let reason = match (design, samples) {
            (Design::Independent, Samples::OneRun) if !run.design.paired => {
                "the schedule ran each config's repetitions one after another (order = \"sequential\"), so no \
                 block holds both sides"
                    .to_owned()
            }
            (Design::Independent, Samples::OneRun) => {
                "the blocks do not hold both sides of these comparisons (their trials failed or did not record the \
                 metric)"
                    .to_owned()
            }
            (Design::Independent, Samples::TwoRuns) => {
                "the two runs' trials are independent samples of each config; with no earlier runs of a config on \
                 this machine to show how much a whole run's level varies, they give an interval but no verdict"
                    .to_owned()
            }
            (Design::Runs, _) => {
                "a run's level moves as a whole from run to run, so a config's change between two runs is judged \
                 against that variation, not against the trials inside each run"
                    .to_owned()
            }
            (Design::Paired, _) if hosts.len() > 1 => format!(
                "trials ran in blocks on {} hosts: each block ran both sides on one host, back to back",
                hosts.len()
            ),
            (Design::Paired, _) => format!(
                "the run was interleaved: each of its {} blocks ran every config once, back to back, in shuffled \
                 order, so a drift between blocks cancels",
                run.design.blocks
            ),
        };
        tests.push(RankTest {
            test,
            comparisons: count,
            reason,
        });
    }
    Method {
        confidence: CONFIDENCE,
        resamples: run.compare.resamples,
        seed: run.compare.seed,
        alpha: run.compare.alpha,
        band: run.compare.band,
        comparisons: n,
        p_adjustment: (n > 1).then_some(PAdjustment::BenjaminiHochberg),
        tests,
        sequential: None,
        questions: n,
        question_error: crate::stats::question_error(run.compare.alpha),
        family_error: crate::stats::family_error(n, run.compare.alpha),
    }
}

/// The primary metric's unit and direction, the comparison plan, and its comparisons
/// (Benjamini-Hochberg adjusted across them).
pub(crate) struct PrimaryComparisons {
    pub unit: String,
    pub direction: crate::stats::Direction,
    pub plan: Vec<(usize, usize)>,
    pub comparisons: Vec<Comparison>,
}

pub(crate) fn primary_comparisons(run: &RunData) -> PrimaryComparisons {
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
    PrimaryComparisons {
        unit,
        direction,
        plan,
        comparisons: Comparison::adjust_family(raw),
    }
}

/// The comparison records of `p`: each with its configs' names and the guards it failed.
fn comparison_records(run: &RunData, p: &PrimaryComparisons, guards: &[GuardRow]) -> Vec<ComparisonRecord> {
    p.plan
        .iter()
        .zip(&p.comparisons)
        .map(|(&(i, j), c)| {
            let cand = &run.configs[i].name;
            ComparisonRecord {
                config: cand.clone(),
                against: run.configs[j].name.clone(),
                metric: run.compare.primary.clone(),
                comparison: c.clone(),
                // The quality guard judges a config on its own, not a change between configs.
                failed_guards: guards
                    .iter()
                    .filter(|g| &g.config == cand && g.result.verdict == GuardVerdict::Fail)
                    .filter(|g| g.against != crate::report::model::QUALITY_AGAINST)
                    .map(|g| g.metric.clone())
                    .collect(),
            }
        })
        .collect()
}

/// The questions `run` answers as it stands: its primary comparisons and the claims it can
/// judge, each decided or open. What a sequential run looks at after each planned block.
pub fn questions(run: &RunData) -> Vec<crate::report::model::Question> {
    let p = primary_comparisons(run);
    let records = comparison_records(run, &p, &[]);
    let (claims, _) = claim_rows(run, &p.plan, &settings_of(run), None);
    super::sequential::questions(&records, &claims)
}

// Long because: it assembles the report model section by section, each a short computation over the
// same run.
/// Builds the report model of one run.
pub fn build_report(run: &RunData) -> Report {
    let settings = settings_of(run);
    let primary = &run.compare.primary;
    let p = primary_comparisons(run);
    let (unit, direction) = (p.unit.clone(), p.direction);
    let plan = p.plan.clone();
    let comparisons = p.comparisons.clone();

    let quality = super::quality::quality_rows(run);
    let mut guards: Vec<GuardRow> = plan
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
    if run.compare.quality_under_test {
        guards.extend(super::quality::quality_guards(run, &quality));
    }

    let records = comparison_records(run, &p, &guards);

    // Each config's median and its interval are computed here, once: the sweep tables, value
    // claims and scaling points on the primary metric, and the charts read them from these rows.
    let results: Vec<ResultRow> = run
        .configs
        .iter()
        .enumerate()
        .map(|(idx, c)| {
            let s = metric_samples(c, primary);
            let mut row = ResultRow {
                config: c.name.clone(),
                n: s.values.len(),
                unit: unit.clone(),
                median: finite(median(&s.values)),
                median_ci: bootstrap_median_ci(&s.values, settings.resamples, settings.seed),
                baseline: plan.iter().any(|&(_, j)| j == idx),
                against: None,
                speedup: None,
                speedup_ci: None,
                p: None,
                p_adjusted: false,
                verdict: None,
                changed_results: false,
                reps_needed: None,
            };
            if let Some(k) = plan.iter().position(|&(i, _)| i == idx) {
                let cmp = &comparisons[k];
                row.against = Some(records[k].against.clone());
                row.speedup = finite(cmp.speedup);
                row.speedup_ci = cmp.speedup_ci;
                row.p = finite(cmp.p_for_verdict());
                row.p_adjusted = cmp.p_adjusted.is_some();
                row.verdict = Some(cmp.verdict);
                row.changed_results = !records[k].failed_guards.is_empty();
                row.reps_needed = cmp.reps_needed;
            }
            row
        })
        .collect();

    let sweeps = sweep_tables(run, &unit, &results);
    let scaling = super::scaling::scaling(run, &results);
    let charts = charts::charts(run, &results);
    let (stage_columns, stages) = stage_table(run);
    let (claims, claim_notes) = claim_rows(run, &plan, &settings, Some(&results));
    let mut notes = run.notes.clone();
    notes.extend(claim_notes);
    let stability = super::stability::stability_report(run);
    notes.extend(stability.iter().flat_map(|s| s.warnings()));
    let mut method = method(run, &comparisons, Samples::OneRun);
    method.sequential = super::sequential::sequential_summary(run, &super::sequential::questions(&records, &claims));
    method.questions = comparisons.len() + claims.iter().filter(|c| c.verdict.judged()).count();
    method.family_error = crate::stats::family_error(method.questions, run.compare.alpha);
    if !run.finished {
        notes.insert(
            0,
            format!("Run status is {}: results cover the trials that completed.", run.status),
        );
    }
    let regression =
        records.iter().any(|r| r.comparison.verdict == Verdict::Slower) || guards.iter().any(|g| g.result.fails_gate());
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        experiment: run.experiment.clone(),
        description: run.description.clone(),
        run_id: run.run_id.clone(),
        status: run.status.clone(),
        started_at: run.started_at,
        finished_at: run.finished_at,
        duration_seconds: run.finished_at.map(|t| (t - run.started_at).num_seconds()),
        baseline: run.compare.baseline.clone(),
        primary: Primary {
            metric: primary.clone(),
            unit: unit.clone(),
            direction,
            about: about_metric(run, primary),
        },
        method,
        summary: Vec::new(),
        results,
        guards,
        quality,
        quality_under_test: run.compare.quality_under_test,
        gpu: super::gpu::gpu_rows(run),
        claims,
        stage_columns,
        stages,
        sweeps,
        sweep_neighbours: super::neighbours::neighbour_table(run, &unit),
        bandwidth_by_size: super::by_size::size_comparisons(
            run,
            &plan,
            &super::bandwidth::bandwidth_stages(run)
                .into_iter()
                .map(|b| b.stage)
                .collect::<Vec<_>>(),
        ),
        bandwidth: bandwidth_tables(run, charts::bandwidth_file),
        other_metrics: other_metric_rows(run, &plan, &settings),
        scaling,
        failed_trials: failed_trials(run),
        environment: run.environment.clone(),
        data_hashes: run.data_hashes.clone(),
        stock_data: run.stock_data.clone(),
        databases: Databases {
            results: run.results_database.clone(),
            stock: run.stock_database.clone(),
        },
        manifest_path: run.manifest_path.clone(),
        manifest_hash: run.manifest_hash.clone(),
        reproduce: run.reproduce.clone(),
        reproduction: Reproduction::of(run),
        dirty: Reproduction::of(run).dirty(),
        notes,
        load: run.machine.load.clone(),
        cpu_frequency: run.machine.frequency.clone(),
        stage_notes: run.stage_notes.clone(),
        facts: run.facts.clone(),
        stability,
        charts,
        comparisons: records,
        regression,
    };
    report.summary = summary(&report, Style::Plain);
    report
}

/// What `metric` measures, from the stage catalog of the kind that recorded it.
pub(crate) fn about_metric(run: &RunData, metric: &str) -> Option<String> {
    use crate::kinds::catalog;
    let parts = crate::metrics::summed(metric);
    if parts.len() > 1 {
        return Some(format!("the sum of {} in each trial", parts.join(", ")));
    }
    if metric == "trial.seconds" {
        return Some("the trial's wall time, every stage together".to_owned());
    }
    let (stage, name) = metric.split_once('.')?;
    match catalog::find_in(run.stage_kind(stage)?, name) {
        Some(decl) => Some(decl.about_one_value()),
        None => (name == "seconds").then(|| catalog::STAGE_SECONDS.about.to_owned()),
    }
}
