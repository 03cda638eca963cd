//! Claims bound to the configs that meet their conditions: a claim made on 8 cores is judged
//! at the 8-thread config only, and only on a machine with the cores for it.

use crate::report::tests::{base_run, metric};
use crate::report::*;
use crate::stats::ClaimSpec;
use crate::stats::{Claim, ClaimConditions, ClaimVerdict};

/// A normalization run at 1, 2, 4 and 8 threads, sequential against parallel, on a machine
/// with `cores` cores: the parallel config's time falls with its threads.
fn thread_sweep(cores: &str) -> RunData {
    let mut configs = Vec::new();
    for (variant, parallel) in [("sequential", false), ("parallel", true)] {
        for threads in [1u32, 2, 4, 8] {
            let seconds = if parallel {
                10.0 / f64::from(threads).powf(0.6)
            } else {
                10.0
            };
            let trials = (0..8u32)
                .map(|r| TrialData {
                    index: r * 8 + threads,
                    repetition: r,
                    block: Some(r),
                    scheduled_block: r,
                    host: "bench-01".to_owned(),
                    ok: true,
                    error: None,
                    stages: vec![StageData {
                        name: "features".to_owned(),
                        kind: "normalize".to_owned(),
                        ok: true,
                        seconds: seconds * (1.0 + 0.01 * f64::from(r % 3)),
                        peak_rss_bytes: None,
                        metrics: vec![metric("windows", 1000.0, "count", None)],
                        facts: Default::default(),
                    }],
                })
                .collect();
            let mut params = indexmap::IndexMap::new();
            params.insert(
                "features".to_owned(),
                serde_json::json!({ "parallel": parallel, "threads": threads }),
            );
            configs.push(ConfigData {
                name: format!("{variant}[threads={threads}]"),
                variant: variant.to_owned(),
                sweep: vec![("stages.features.threads".to_owned(), threads.to_string())],
                params,
                trials,
            });
        }
    }
    let mut run = base_run(configs);
    run.compare.baseline = "sequential".to_owned();
    run.compare.primary = "features.seconds".to_owned();
    run.compare.guards.clear();
    run.compare.claims = vec![ClaimSpec {
        metric: "features.seconds".to_owned(),
        variant: "parallel".to_owned(),
        claim: Claim::parse("3x..4x").unwrap(),
        text: "3x..4x".to_owned(),
        source: Some("stock-trainer".to_owned()),
        requires: ClaimConditions {
            device: Some("cpu".to_owned()),
            min_cores: Some(8),
            ..Default::default()
        },
        quote: Some("**Expected Impact:** 3-4x speedup on 8-core CPU".to_owned()),
        change: None,
        variant_change: None,
        source_metric: None,
        untestable: None,
        differs: None,
        made_on: None,
    }];
    run.environment.insert("cores".to_owned(), cores.to_owned());
    run.environment.insert("gpu".to_owned(), "none (CPU build)".to_owned());
    run
}

#[test]
fn a_claim_made_on_eight_cores_is_judged_at_the_eight_thread_config_only() {
    // A machine with 16 cores: only parallel[threads=8] is judged, the others are context.
    let report = build_report(&thread_sweep("16"));
    let rows: Vec<(&str, ClaimVerdict)> = report.claims.iter().map(|c| (c.config.as_str(), c.verdict)).collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, "parallel[threads=8]");
    assert!(
        matches!(
            rows[0].1,
            ClaimVerdict::Supported | ClaimVerdict::Refuted | ClaimVerdict::Inconclusive
        ),
        "{rows:?}"
    );
    assert!(
        report.notes.iter().any(|n| n.contains("is for 8 threads or more")
            && n.contains("`parallel[threads=1]`, `parallel[threads=2]`, `parallel[threads=4]` are not judged")),
        "{:?}",
        report.notes
    );
    // The same run on 2 cores: the 8-thread config ran oversubscribed and judges nothing.
    let report = build_report(&thread_sweep("2"));
    assert_eq!(report.claims.len(), 1);
    let c = &report.claims[0];
    assert_eq!(
        (c.config.as_str(), c.verdict),
        ("parallel[threads=8]", ClaimVerdict::NotReproduced)
    );
    assert!(
        c.reason
            .contains("stages.features.threads = 8 on 2 cores (oversubscribed)"),
        "{}",
        c.reason
    );
    assert!(c.speedup_ci.is_some(), "the measurement stays as context");
}

/// A claim made for a workload where one quantity is below another (`holds`): judged where the
/// baseline's medians say it holds, *not reproduced here* with both medians where they do not.
#[test]
fn a_claim_whose_workload_condition_fails_in_the_baseline_is_not_reproduced() {
    let with = |metric: &str, below: &str| {
        let mut run = thread_sweep("16");
        run.compare.claims[0].requires.holds = Some(crate::stats::MetricBelow {
            metric: metric.to_owned(),
            below: below.to_owned(),
        });
        build_report(&run).claims.remove(0)
    };
    // 10 s of features against 1,000 windows (the units differ only in this test).
    let held = with("features.seconds", "features.windows");
    assert_eq!(held.config, "parallel[threads=8]");
    assert_ne!(held.verdict, ClaimVerdict::NotReproduced, "{}", held.reason);
    let failed = with("features.windows", "features.seconds");
    assert_eq!(failed.verdict, ClaimVerdict::NotReproduced);
    assert!(
        failed.reason.ends_with(
            "this run had features.windows = 1000, not below features.seconds = 10.10 s \
             (medians in `sequential[threads=8]`)"
        ),
        "{}",
        failed.reason
    );
    assert!(failed.speedup_ci.is_some(), "the measurement stays as context");
}

/// A value claim stated for other hardware (`made_on`) is context, never a verdict: its median
/// is given, scaled to the claim's link by this run's own rate; on the claim's GPU it is judged.
#[test]
fn a_value_stated_for_other_hardware_is_context_scaled_to_its_link() {
    let with = |gpu: &str| {
        let mut run = thread_sweep("16");
        run.environment.insert("gpu".to_owned(), gpu.to_owned());
        let spec = &mut run.compare.claims[0];
        spec.requires = ClaimConditions::default();
        spec.claim = Claim::parse_value("5s..8s", "s").unwrap();
        spec.text = "5s..8s".to_owned();
        // The "link rate" is the windows count here (1000), and the claim's link is 2000: the
        // median of 10.1 s scales to 5.05 s.
        spec.made_on = Some(crate::stats::MadeOn {
            hardware: "a V100 on a PCIe 3.0 x16 link".to_owned(),
            gpu: Some("V100".to_owned()),
            link_gbps: Some(2000.0),
            link_metric: Some("features.windows".to_owned()),
        });
        spec.differs = Some("the copies are from pageable memory".to_owned());
        build_report(&run).claims
    };
    let rows = with("NVIDIA H200");
    let row = rows.iter().find(|c| c.config == "parallel[threads=1]").unwrap();
    assert_eq!(row.verdict, ClaimVerdict::NotReproduced, "{}", row.reason);
    assert_eq!(
        row.reason,
        "not reproduced here: the figure was stated for a V100 on a PCIe 3.0 x16 link; this run had NVIDIA H200, \
         so its median (10.10 s) is context, not a verdict; scaled from this link's 1000 GB/s to the claim's \
         2000 GB/s, it is 5.050 s, inside the claimed range"
    );
    assert_eq!(
        crate::report::prose::claim_reason(row, crate::report::prose::Style::Plain),
        format!("{}. Unlike the source: the copies are from pageable memory", row.reason)
    );
    // On a V100 the same figures are judged: 10.1 s is outside 5-8 s.
    let rows = with("Tesla V100-SXM2-16GB");
    let row = rows.iter().find(|c| c.config == "parallel[threads=1]").unwrap();
    assert_eq!(row.verdict, ClaimVerdict::Refuted, "{}", row.reason);
}
