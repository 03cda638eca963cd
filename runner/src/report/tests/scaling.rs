//! The Scaling section on hand-built runs with known scaling: thread sweeps, size sweeps,
//! thread counts set by variants, and runs stored without their parameters.

use serde_json::json;

use crate::report::tests::{base_run, write_and_check};
use crate::report::*;

/// Ten trials whose `load` and `features` stages take 20% and 80% of `seconds`, with ±2%
/// deterministic noise in an order that depends on `seed`. The median is exactly `seconds`, so
/// the known truth is the point estimate and an interval must cover it.
fn trials(seconds: f64, seed: u32) -> Vec<TrialData> {
    (0..10)
        .map(|r| {
            let t = seconds * (1.0 + 0.01 * (f64::from((r + seed) % 5) - 2.0));
            let stage = |name: &str, kind: &str, s: f64| StageData {
                name: name.to_owned(),
                kind: kind.to_owned(),
                ok: true,
                seconds: s,
                peak_rss_bytes: None,
                metrics: vec![],
                facts: Default::default(),
            };
            TrialData {
                index: r,
                repetition: r,
                block: None,
                scheduled_block: r,
                host: "bench-01".to_owned(),
                ok: true,
                error: None,
                stages: vec![stage("load", "load", 0.2 * t), stage("features", "normalize", 0.8 * t)],
            }
        })
        .collect()
}

fn config(name: &str, variant: &str, sweep: &[(&str, &str)], symbols: u32, threads: u32, seconds: f64) -> ConfigData {
    ConfigData {
        name: name.to_owned(),
        variant: variant.to_owned(),
        sweep: sweep.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        params: [
            ("load".to_owned(), json!({ "symbols": { "first": symbols } })),
            (
                "features".to_owned(),
                json!({ "seq_len": 30, "parallel": true, "threads": threads }),
            ),
        ]
        .into_iter()
        .collect(),
        trials: trials(seconds, symbols + threads),
    }
}

fn run_of(configs: Vec<ConfigData>, primary: &str) -> RunData {
    let mut run = base_run(configs);
    run.experiment = "scaling".to_owned();
    run.compare.primary = primary.to_owned();
    run.compare.guards.clear();
    run.compare.claims.clear();
    run.compare.baseline = run.configs[0].variant.clone();
    run
}

/// One variant over `stages.features.threads` = 1, 2, 4, 8 with T(p) = 2 s · (0.1 + 0.9/p).
pub(crate) fn thread_sweep() -> RunData {
    let configs = [1u32, 2, 4, 8]
        .iter()
        .map(|&p| {
            let v = p.to_string();
            config(
                &format!("parallel[threads={p}]"),
                "parallel",
                &[("stages.features.threads", &v)],
                100,
                p,
                2.0 * (0.1 + 0.9 / f64::from(p)),
            )
        })
        .collect();
    run_of(configs, "features.seconds")
}

/// The Markdown from `## Scaling` up to the next section.
fn scaling_section(md: &str) -> &str {
    let start = md.find("## Scaling").expect("a Scaling section");
    let end = md[start + 3..].find("\n## ").map_or(md.len(), |i| start + 3 + i + 1);
    &md[start..end]
}

#[test]
fn a_thread_sweep_reports_the_serial_fraction_efficiency_and_a_chart() {
    let run = thread_sweep();
    let report = build_report(&run);
    let s = report.scaling.as_ref().expect("scaling");
    // The primary metric is a time, so it is the one scaled.
    assert_eq!(s.metric, "features.seconds");
    assert!(s.sizes.is_empty() && s.notes.is_empty(), "{s:#?}");
    assert_eq!(s.threads.len(), 1);
    let axis = &s.threads[0];
    assert_eq!(axis.parameter, "stages.features.threads");
    assert_eq!(axis.chart, "scaling_threads_features_threads.svg");
    let g = &axis.groups[0];
    assert_eq!(
        (g.reference.as_deref(), g.reference_threads, g.n_points),
        (Some("parallel[threads=1]"), Some(1), 4)
    );
    let threads: Vec<u64> = g.points.iter().map(|p| p.threads).collect();
    assert_eq!(threads, vec![1, 2, 4, 8]);
    let (lo, hi) = g.serial_fraction_ci.unwrap();
    assert!(lo <= 0.1 && 0.1 <= hi, "{g:#?}");
    for p in &g.points[1..] {
        let (s, e) = (p.speedup.unwrap(), p.efficiency.unwrap());
        assert!((e - s / p.threads as f64).abs() < 1e-12, "{p:#?}");
        let (elo, ehi) = p.efficiency_ci.unwrap();
        assert!(elo <= e && e <= ehi, "{p:#?}");
    }
    assert_eq!(g.points[0].speedup, Some(1.0));

    let md = render_markdown(&report, None).unwrap();
    let section = scaling_section(&md);
    assert!(section.contains("Serial fraction f = "), "{section}");
    assert!(section.contains("a model fit, not a measurement"), "{section}");
    assert!(section.contains("n = 4 thread counts"), "{section}");
    assert!(!section.contains("With 2 points"), "{section}");
    insta::assert_snapshot!("scaling_threads_md", section);

    let (dir, charts) = write_and_check(&run);
    assert!(
        charts.contains(&"scaling_threads_features_threads.svg".to_owned()),
        "{charts:?}"
    );
    let svg = std::fs::read_to_string(dir.path().join("scaling_threads_features_threads.svg")).unwrap();
    assert!(
        svg.contains("ideal (E = 1)") && svg.contains("parallel"),
        "efficiency chart lacks its labels"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    let group = &json["scaling"]["threads"][0]["groups"][0];
    assert!(group["serial_fraction"].is_f64(), "{group}");
    assert!(group["points"][3]["efficiency_ci"][1].is_f64(), "{group}");
}

/// Variants set the thread count (1 or 2) and a sweep the symbols (10, 100, 1000), with
/// T = 1 ms · symbols^0.9 · (0.3 + 0.7/p) on `trial.seconds`.
pub(crate) fn variants_and_symbols() -> RunData {
    let mut configs = Vec::new();
    for (variant, p) in [("one_thread", 1u32), ("two_threads", 2)] {
        for n in [10u32, 100, 1000] {
            let point = format!("{{ first = {n} }}");
            configs.push(config(
                &format!("{variant}[symbols={point}]"),
                variant,
                &[("stages.load.symbols", &point)],
                n,
                p,
                1e-3 * f64::from(n).powf(0.9) * (0.3 + 0.7 / f64::from(p)),
            ));
        }
    }
    run_of(configs, "trial.seconds")
}

#[test]
fn a_symbols_sweep_gives_the_cost_exponent_and_variants_give_thread_groups() {
    let run = variants_and_symbols();
    let report = build_report(&run);
    let s = report.scaling.as_ref().expect("scaling");
    assert_eq!(s.metric, "trial.seconds");
    let sizes = &s.sizes[0];
    assert_eq!(
        (sizes.parameter.as_str(), sizes.unit.as_str()),
        ("stages.load.symbols", "count")
    );
    let labels: Vec<&str> = sizes.groups.iter().map(|g| g.label.as_str()).collect();
    assert_eq!(labels, vec!["one_thread", "two_threads"]);
    for g in &sizes.groups {
        let sizes: Vec<f64> = g.points.iter().map(|p| p.size).collect();
        assert_eq!(sizes, vec![10.0, 100.0, 1000.0]);
        let (lo, hi) = g.exponent_ci.unwrap();
        assert!(lo <= 0.9 && 0.9 <= hi, "{g:#?}");
    }
    // The thread count comes from the variants: one group per symbols point, two points each.
    let threads = &s.threads[0];
    assert_eq!(threads.parameter, "stages.features.threads");
    assert_eq!(threads.groups.len(), 3);
    assert_eq!(
        threads.groups[0].label,
        "one_thread, two_threads at symbols={ first = 10 }"
    );
    assert!(threads
        .groups
        .iter()
        .all(|g| g.n_points == 2 && g.serial_fraction_ci.is_some()));

    let md = render_markdown(&report, None).unwrap();
    let section = scaling_section(&md);
    assert!(section.contains("Cost exponent b = "), "{section}");
    assert!(section.contains("n = 3 sizes"), "{section}");
    assert!(
        section.contains("With 2 points the fit is exact, so the CI comes only from trial noise"),
        "{section}"
    );
    insta::assert_snapshot!("scaling_symbols_md", section);

    let (dir, charts) = write_and_check(&run);
    assert!(
        charts.contains(&"scaling_size_load_symbols.svg".to_owned()),
        "{charts:?}"
    );
    let svg = std::fs::read_to_string(dir.path().join("scaling_size_load_symbols.svg")).unwrap();
    assert!(svg.contains("one_thread (b = "), "size chart lacks its fitted exponent");
}

#[test]
fn runs_without_stored_parameters_use_the_sweep_and_non_counts_are_left_out() {
    let mut run = thread_sweep();
    for c in &mut run.configs {
        c.params.clear();
    }
    run.configs[0].sweep[0].1 = "0".to_owned();
    let report = build_report(&run);
    let s = report.scaling.as_ref().expect("scaling from the sweep point");
    let g = &s.threads[0].groups[0];
    // Without a 1-thread config, the smallest count is the reference.
    assert_eq!(
        (g.reference.as_deref(), g.reference_threads, g.n_points),
        (Some("parallel[threads=2]"), Some(2), 3)
    );
    let e = g.points[1].efficiency.unwrap();
    assert!((e - g.points[1].speedup.unwrap() * 2.0 / 4.0).abs() < 1e-12);
    assert_eq!(
        s.notes,
        vec![
            "parallel[threads=1] is left out of stages.features.threads: 0 is not a thread count (0 means every core)."
        ]
    );
    let md = render_markdown(&report, None).unwrap();
    assert!(md.contains("no 1-thread config"), "{md}");

    // A run that varies neither gets no section; batch sizes are not problem sizes.
    let plain = build_report(&crate::report::tests::sweep_run());
    assert!(plain.scaling.is_none());
    assert!(!render_markdown(&plain, None).unwrap().contains("## Scaling"));
}
