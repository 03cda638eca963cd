//! Report tests on hand-built runs: Markdown snapshots, chart validity, comparison rules.

pub(crate) mod bandwidth;
mod blocked;
mod claims;
mod facts;
mod files;
mod honest;
mod json;
mod quality;
pub(crate) mod scaling;

use std::collections::BTreeMap;

use chrono::{TimeZone, Utc};

use super::assemble::samples;
use super::render::compare_view::CompareReport;
use super::render::view::view;
use super::*;
use crate::metrics::Metric;
use crate::stats::CompareSpec;
use crate::stats::{Claim, GuardVerdict, Tolerance, Verdict};
use crate::stats::{ClaimSpec, GuardSpec};
use bandwidth::transfer_run;
pub(super) use files::write_and_check;

/// Compares run `b` ("after") against run `a` ("before") and returns the Markdown view.
fn build_comparison(a: &RunData, b: &RunData, allow_different_data: bool) -> Result<CompareReport, ReportError> {
    build_comparison_after(a, b, allow_different_data, &[])
}

/// [`build_comparison`] with `history`, earlier runs of the experiment.
fn build_comparison_after(
    a: &RunData,
    b: &RunData,
    allow_different_data: bool,
    history: &[RunData],
) -> Result<CompareReport, ReportError> {
    let options = crate::report::CompareOptions {
        allow_different_data,
        ..Default::default()
    };
    compare_runs(a, b, options, history).map(|m| compare_view(&m))
}

/// Earlier runs of `simple_run`'s experiment whose train metric sits at these levels: what the
/// run-to-run variation of a comparison is estimated from.
fn earlier_runs(levels: &[f64]) -> Vec<RunData> {
    levels
        .iter()
        .enumerate()
        .map(|(i, level)| {
            let mut r = simple_run(&format!("earlier-{i}"), 0.8, 0.5);
            for c in &mut r.configs {
                for t in &mut c.trials {
                    for s in t.stages.iter_mut().filter(|s| s.name == "train") {
                        s.metrics[0].value *= level;
                    }
                }
            }
            r
        })
        .collect()
}

/// Deterministic noise in [-0.5, 0.5) so fixtures need no RNG.
pub(super) fn noise(k: u32) -> f64 {
    f64::from((k * 7919 + 13) % 101) / 101.0 - 0.5
}

pub(super) fn metric(name: &str, value: f64, unit: &str, step: Option<i64>) -> Metric {
    Metric {
        name: name.to_owned(),
        value,
        unit: unit.to_owned(),
        step,
    }
}

/// One trial: load, features, train (epoch_seconds + a train_loss series), check (val_loss).
fn trial(rep: u32, block: Option<u32>, train_s: f64, val_loss: f64, loss_scale: f64) -> TrialData {
    let stage = |name: &str, kind: &str, seconds: f64, rss: u64, metrics: Vec<Metric>| StageData {
        name: name.to_owned(),
        kind: kind.to_owned(),
        ok: true,
        seconds,
        peak_rss_bytes: Some(rss),
        metrics,
        facts: Default::default(),
    };
    let mut train_metrics = vec![
        metric("epoch_seconds", train_s / 2.0, "s", None),
        metric("samples_per_second", 4096.0 / train_s, "samples/s", None),
    ];
    train_metrics.extend((0..5).map(|s| {
        metric(
            "train_loss",
            loss_scale * (1.0 + 1.5 / (1.0 + s as f64)),
            "loss",
            Some(s),
        )
    }));
    TrialData {
        index: rep,
        repetition: rep,
        block,
        scheduled_block: rep,
        host: "bench-01".to_owned(),
        ok: true,
        error: None,
        stages: vec![
            stage("load", "load", 0.40 + 0.01 * noise(rep), 180 << 20, vec![]),
            stage("features", "normalize", 0.90 + 0.02 * noise(rep + 3), 420 << 20, vec![]),
            stage("train", "train", train_s, 910 << 20, train_metrics),
            stage(
                "check",
                "validate",
                0.12,
                400 << 20,
                vec![metric("val_loss", val_loss, "loss", None)],
            ),
        ],
    }
}

pub(super) fn config(name: &str, variant: &str, batch: Option<&str>, trials: Vec<TrialData>) -> ConfigData {
    ConfigData {
        name: name.to_owned(),
        variant: variant.to_owned(),
        sweep: batch
            .map(|b| vec![("stages.train.batch_size".to_owned(), b.to_owned())])
            .unwrap_or_default(),
        params: Default::default(),
        trials,
    }
}

pub(super) fn trials(train_s: f64, val_loss: f64, loss_scale: f64, blocked: bool, seed: u32) -> Vec<TrialData> {
    (0..8)
        .map(|r| {
            trial(
                r,
                blocked.then_some(r),
                train_s * (1.0 + 0.02 * noise(r * 5 + seed)),
                val_loss,
                loss_scale,
            )
        })
        .collect()
}

pub(super) fn base_run(configs: Vec<ConfigData>) -> RunData {
    let environment: BTreeMap<String, String> = [
        ("git_commit", "3f2a9c1"),
        ("git_dirty", "false"),
        ("host", "bench-01"),
        ("cpu", "AMD EPYC 7B13"),
        ("cores", "16"),
        ("os", "linux 6.8"),
        ("rustc", "1.85.0"),
        ("measured_version", "0.1.0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let design = crate::report::RunDesign {
        paired: configs.iter().flat_map(|c| &c.trials).any(|t| t.block.is_some()),
        blocks: configs.iter().map(|c| c.trials.len() as u32).min().unwrap_or(0),
        sequential: None,
        max_time_seconds: None,
    };
    RunData {
        design,
        run_id: "20250301-101500-a1b2".to_owned(),
        experiment: "buffer-reuse".to_owned(),
        description: "Does reusing device input buffers speed up the training loop?".to_owned(),
        status: "finished".to_owned(),
        finished: true,
        started_at: Utc.with_ymd_and_hms(2025, 3, 1, 10, 15, 0).unwrap(),
        finished_at: Some(Utc.with_ymd_and_hms(2025, 3, 1, 10, 21, 30).unwrap()),
        manifest_path: "experiments/buffer-reuse.toml".to_owned(),
        manifest_hash: "sha256:9d1e77".to_owned(),
        environment,
        data_hashes: [("load".to_owned(), "sha256:51c0ff".to_owned())].into_iter().collect(),
        stock_data: Some(crate::market::DataIdentity {
            symbols: 40,
            rows: 28_120,
            first_date: chrono::NaiveDate::from_ymd_opt(2021, 1, 4),
            last_date: chrono::NaiveDate::from_ymd_opt(2023, 11, 24),
            sources: vec![crate::market::DataSource::Synth {
                symbols: 50,
                days: 750,
                start: chrono::NaiveDate::from_ymd_opt(2021, 1, 4).unwrap(),
                seed: 20_240_601,
                style: "mixed".to_owned(),
                generator: 2,
            }],
            versions: vec![crate::market::VersionRef {
                id: 1,
                label: "synth-50x750-2021-01-04-s20240601-mixed@1".to_owned(),
            }],
        }),
        configs,
        compare: CompareSpec {
            baseline: "baseline".to_owned(),
            primary: "train.epoch_seconds".to_owned(),
            direction: None,
            alpha: 0.01,
            band: 0.02,
            resamples: 10_000,
            seed: 42,
            guards: vec![GuardSpec {
                metric: "check.val_loss".to_owned(),
                tolerance: Tolerance::Relative(0.005),
            }],
            claims: vec![
                claim("train.epoch_seconds", "reuse", "1.2x..1.5x", Some("report 002")),
                claim("train.epoch_seconds", "reuse", "3-4x", Some("vendor blog")),
                claim("train.epoch_seconds", "fused", "~2x", None),
            ],
            sweep_neighbours: false,
            quality_under_test: true,
        },
        reproduce: "measured run experiments/buffer-reuse.toml --seed 42".to_owned(),
        results_database: "results/measured.sqlite".to_owned(),
        stock_database: Some("results/measured.sqlite".to_owned()),
        notes: vec!["CPU-only run".to_owned()],
        machine: Default::default(),
        stage_notes: Vec::new(),
        facts: Vec::new(),
    }
}

fn claim(metric: &str, variant: &str, text: &str, source: Option<&str>) -> ClaimSpec {
    ClaimSpec {
        metric: metric.to_owned(),
        variant: variant.to_owned(),
        claim: Claim::parse(text).unwrap(),
        text: text.to_owned(),
        source: source.map(str::to_owned),
        requires: Default::default(),
        quote: None,
        change: None,
        variant_change: None,
        source_metric: None,
        untestable: None,
        differs: None,
        made_on: None,
    }
}

/// Baseline and reuse at two batch sizes, blocked (paired) design. reuse@64 is 1.3x faster with
/// identical validation loss; reuse@256 is faster but changes the validation loss by 2%; one
/// baseline trial failed.
pub(super) fn sweep_run() -> RunData {
    let mut base256 = trials(6.0, 0.5, 1.02, true, 2);
    base256.push(TrialData {
        index: 8,
        repetition: 8,
        block: Some(8),
        scheduled_block: 8,
        host: "bench-01".to_owned(),
        ok: false,
        error: Some("stage `train` failed: CUDA out of memory | retry with smaller batch".to_owned()),
        stages: vec![StageData {
            name: "train".to_owned(),
            kind: "train".to_owned(),
            ok: false,
            seconds: 0.3,
            peak_rss_bytes: None,
            metrics: vec![],
            facts: Default::default(),
        }],
    });
    base_run(vec![
        config(
            "baseline[batch_size=64]",
            "baseline",
            Some("64"),
            trials(8.0, 0.5, 1.0, true, 1),
        ),
        config(
            "reuse[batch_size=64]",
            "reuse",
            Some("64"),
            trials(8.0 / 1.3, 0.5, 0.98, true, 7),
        ),
        config("baseline[batch_size=256]", "baseline", Some("256"), base256),
        config(
            "reuse[batch_size=256]",
            "reuse",
            Some("256"),
            trials(6.0 / 1.25, 0.51, 1.05, true, 11),
        ),
    ])
}

#[test]
fn report_markdown_snapshot() {
    let report = build_report(&sweep_run());
    let md = render_markdown(&report, None).unwrap();
    insta::assert_snapshot!("report_md", md);
}

#[test]
fn report_verdicts_guards_and_claims() {
    let report = build_report(&sweep_run());
    let verdicts: Vec<Verdict> = report.comparisons.iter().map(|c| c.comparison.verdict).collect();
    assert_eq!(verdicts, vec![Verdict::Faster, Verdict::Faster]);
    assert!(report.comparisons.iter().all(|c| c.comparison.p_adjusted.is_some()));
    assert!(
        report.summary[0].starts_with("reuse[batch_size=64] is 1."),
        "{}",
        report.summary[0]
    );
    assert!(report.summary[0].contains("x faster than baseline[batch_size=64] on train.epoch_seconds (95% CI "));
    let speedup = report.comparisons[0].comparison.speedup;
    assert!((speedup - 1.3).abs() < 0.03, "{speedup}");
    assert!(
        report.summary[0].contains("guard check.val_loss passed"),
        "{}",
        report.summary[0]
    );
    assert!(
        report.summary[1].contains("but changed results"),
        "{}",
        report.summary[1]
    );
    assert_eq!(report.results[3].verdict, Some(Verdict::Faster));
    assert!(report.results[3].changed_results && !report.results[1].changed_results);
    assert_eq!(view(&report).results[3].verdict, "**faster but changed results**");
    let guards: Vec<GuardVerdict> = report.guards.iter().map(|g| g.result.verdict).collect();
    assert_eq!(guards, vec![GuardVerdict::Pass, GuardVerdict::Fail]);
    let claims: Vec<&str> = report.claims.iter().map(|c| c.verdict.as_str()).collect();
    assert_eq!(
        claims,
        vec!["supported", "supported", "refuted", "refuted", "untestable"]
    );
    assert_eq!(report.failed_trials.len(), 1);
    assert!(regression(&report), "a failed guard is a regression");
    let files: Vec<&str> = report.charts.iter().map(|c| c.file.as_str()).collect();
    assert_eq!(
        files,
        vec![
            "stage_breakdown.svg",
            "primary_distribution.svg",
            "run_chart.svg",
            "sweep.svg",
            "loss_train_train_loss.svg"
        ]
    );
}

/// Independent (unblocked) runs for before/after comparisons; `factor` scales the train time.
pub(super) fn simple_run(run_id: &str, factor: f64, val_loss: f64) -> RunData {
    let mut run = base_run(vec![
        config("baseline", "baseline", None, trials(5.0, 0.5, 1.0, false, 3)),
        config("reuse", "reuse", None, trials(5.0 * factor, val_loss, 1.0, false, 9)),
    ]);
    run.run_id = run_id.to_owned();
    run.compare.claims.clear();
    run
}

#[test]
fn compare_markdown_snapshot() {
    let before = simple_run("run-a", 0.8, 0.5);
    let mut after = simple_run("run-b", 0.8, 0.5);
    for t in &mut after.configs[1].trials {
        for s in &mut t.stages {
            if s.name == "train" {
                s.metrics[0].value *= 1.15;
            }
        }
    }
    after.environment.insert("git_commit".to_owned(), "77b0e4d".to_owned());
    // Two runs alone: the levels are judged against an assumed ±5% from run to run, which a 15%
    // change does not clear at alpha 0.01; the verdicts say what they were judged against.
    let alone = build_comparison(&before, &after, false).unwrap();
    assert!(alone
        .comparisons
        .iter()
        .all(|c| c.comparison.verdict == Verdict::Inconclusive
            && c.comparison
                .note
                .as_deref()
                .is_some_and(|n| n.contains("assumed run-to-run variation of ±5.0%"))));
    assert!(!alone.regression);
    // With four earlier runs within ±0.1% of each other, the levels are judged against that.
    let history = earlier_runs(&[0.999, 1.001, 1.0005, 0.9995]);
    let cmp = build_comparison_after(&before, &after, false, &history).unwrap();
    assert_eq!(cmp.comparisons[1].comparison.verdict, Verdict::Slower);
    assert_eq!(cmp.comparisons[0].comparison.verdict, Verdict::NoChange);
    assert!(cmp.regression);
    // Within each run, reuse against baseline: 15% slower after, so its advantage shrank.
    assert_eq!(cmp.relative.len(), 1);
    assert_eq!(cmp.relative[0].verdict, "**shrank**");
    let md = render_compare_markdown(&cmp, None).unwrap();
    insta::assert_snapshot!("compare_md", md);
}

#[test]
fn comparison_refuses_different_data_unless_allowed() {
    let a = simple_run("a", 0.8, 0.5);
    let mut b = simple_run("b", 0.8, 0.5);
    b.data_hashes.insert("load".to_owned(), "sha256:000000".to_owned());
    if let Some(crate::market::DataSource::Synth { seed, .. }) =
        b.stock_data.as_mut().and_then(|d| d.sources.first_mut())
    {
        *seed = 7;
    }
    let err = build_comparison(&a, &b, false).unwrap_err();
    assert!(err.to_string().contains("seed 20240601 vs 7"), "{err}");
    assert!(matches!(&err, ReportError::DataMismatch { stages, .. } if stages == &vec!["load".to_owned()]));
    let allowed = build_comparison(&a, &b, true).unwrap();
    assert!(allowed.data_warning.unwrap().contains("load"));
    let mut c = simple_run("c", 0.8, 0.5);
    for cfg in &mut c.configs {
        cfg.name.push_str("-renamed");
    }
    assert!(matches!(
        build_comparison(&a, &c, false),
        Err(ReportError::NoCommonConfigs { .. })
    ));
}

#[test]
fn slower_primary_is_a_regression_and_no_change_is_not() {
    let slower = build_report(&simple_run("s", 1.3, 0.5));
    assert_eq!(slower.comparisons[0].comparison.verdict, Verdict::Slower);
    assert!(
        slower.summary[0].contains("x slower than baseline"),
        "{}",
        slower.summary[0]
    );
    assert!(regression(&slower));
    let same = build_report(&simple_run("n", 1.0, 0.5));
    assert_eq!(same.comparisons[0].comparison.verdict, Verdict::NoChange);
    assert!(!regression(&same));
}

#[test]
fn single_variant_sweep_compares_against_first_point() {
    let mut run = sweep_run();
    run.configs.retain(|c| c.variant == "baseline");
    let report = build_report(&run);
    assert_eq!(report.comparisons.len(), 1);
    assert_eq!(report.comparisons[0].against, "baseline[batch_size=64]");
    assert_eq!(report.comparisons[0].config, "baseline[batch_size=256]");
}

#[test]
fn degenerate_runs_render_without_panicking() {
    let mut run = simple_run("d", 0.8, 0.5);
    run.configs[1].trials.truncate(1);
    run.configs[0].trials.iter_mut().for_each(|t| t.ok = false);
    run.status = "interrupted".to_owned();
    run.finished = false;
    let report = build_report(&run);
    assert_eq!(report.comparisons[0].comparison.verdict, Verdict::Inconclusive);
    assert!(report.summary[0].contains("inconclusive"), "{}", report.summary[0]);
    assert!(report.notes[0].contains("interrupted"));
    render_markdown(&report, None).unwrap();
    let empty = build_report(&base_run(vec![]));
    assert!(empty.summary[0].starts_with("No comparison"));
    render_markdown(&empty, None).unwrap();
}

#[test]
fn metric_lookup_rules() {
    let t = trial(0, None, 4.0, 0.5, 1.0);
    assert_eq!(
        samples::trial_value(&t, "train.epoch_seconds").unwrap(),
        (2.0, "s".to_owned())
    );
    assert_eq!(samples::trial_value(&t, "train.seconds").unwrap().0, 4.0);
    let total: f64 = t.stages.iter().map(|s| s.seconds).sum();
    assert_eq!(samples::trial_value(&t, "trial.seconds").unwrap().0, total);
    // Series only: mean over steps.
    let mean = (0..5).map(|s| 1.0 + 1.5 / (1.0 + s as f64)).sum::<f64>() / 5.0;
    assert!((samples::trial_value(&t, "train.train_loss").unwrap().0 - mean).abs() < 1e-12);
    assert!(samples::trial_value(&t, "train.missing").is_none());
    assert!(samples::trial_value(&t, "nostage.seconds").is_none());
}

#[test]
fn user_templates_override_the_builtin_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("report.md.j2"),
        "custom {{ r.experiment }}: {{ r.results | length }} rows, schema {{ data.schema_version }}\n",
    )
    .unwrap();
    let report = build_report(&simple_run("t", 0.8, 0.5));
    assert_eq!(
        render_markdown(&report, Some(dir.path())).unwrap(),
        "custom buffer-reuse: 2 rows, schema 3\n"
    );
    // A directory without the template falls back to the built-in copy.
    let other = tempfile::tempdir().unwrap();
    assert!(render_markdown(&report, Some(other.path()))
        .unwrap()
        .starts_with("# buffer-reuse"));
}

/// A run whose `train` stage recorded GPU telemetry (as on CUDA): the section shows each
/// config's utilization summary and flags the config with a throttled trial; a run without
/// telemetry has no such section.
#[test]
fn gpu_telemetry_section_shows_utilization_and_the_throttle_flag() {
    let mut run = simple_run("gpu", 0.8, 0.5);
    for (c, util) in run.configs.iter_mut().zip([55.0, 80.0]) {
        let name = c.name.clone();
        for (k, t) in c.trials.iter_mut().enumerate() {
            let train = t.stages.iter_mut().find(|s| s.name == "train").unwrap();
            let throttled = name == "reuse" && k == 1;
            let k = k as f64;
            train.metrics.extend([
                metric("gpu_samples", 200.0 + k, "count", None),
                metric("gpu_util_mean", util + k, "%", None),
                metric("gpu_util_max", util + 15.0, "%", None),
                metric("gpu_mem_peak", 3.2e9 + 1e8 * k, "B", None),
                metric("gpu_sm_clock_min", if throttled { 1200.0 } else { 1850.0 }, "MHz", None),
                metric("gpu_sm_clock_max", 1980.0, "MHz", None),
                metric("gpu_power_mean", 280.0 + k, "W", None),
                metric("gpu_temp_max", 61.0 + k, "C", None),
                metric("gpu_throttled_share", if throttled { 0.1 } else { 0.0 }, "ratio", None),
                metric("gpu_throttled", if throttled { 1.0 } else { 0.0 }, "count", None),
            ]);
        }
    }
    let report = build_report(&run);
    let flags: Vec<(&str, usize)> = report.gpu.iter().map(|g| (g.config.as_str(), g.throttled)).collect();
    assert_eq!(flags, [("baseline", 0), ("reuse", 1)]);
    let md = render_markdown(&report, None).unwrap();
    let section = md
        .split("## GPU telemetry")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a GPU telemetry section");
    insta::assert_snapshot!(section);
    let plain = render_markdown(&build_report(&simple_run("plain", 0.8, 0.5)), None).unwrap();
    assert!(!plain.contains("GPU telemetry"));
}
