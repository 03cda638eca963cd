//! The model-quality guard: passed only when a model is shown better than predicting zero, one
//! verdict for a model no better than chance, and never a "changed results" comparison.

use super::*;

/// A model no better than chance, seed after seed: whether its mean ratio to predicting zero
/// lands a little below 1 or a little above, its interval reaches 1, and the verdict is the same
/// every time: not shown better than predicting zero.
#[test]
fn a_model_no_better_than_chance_gets_one_quality_verdict() {
    let verdicts: std::collections::BTreeSet<bool> =
        [0.9985, 0.9995, 1.0, 1.0005, 1.0015, 0.999, 1.001, 0.998, 1.002, 1.0]
            .iter()
            .map(|&r| {
                let report = build_report(&quality_run(r));
                let q = report.quality.iter().find(|q| q.config == "reuse").unwrap();
                let (lo, hi) = q.mse_vs_zero_ci.unwrap();
                assert!(lo < 1.0 && hi > 1.0, "{r}: {lo}..{hi}");
                q.shown_better
            })
            .collect();
    assert_eq!(verdicts, [false].into_iter().collect());
}

/// `simple_run` whose `check` stage also records the model-quality metrics: `reuse` trains a
/// model whose validation MSE is `reuse_ratio` x that of predicting zero, the baseline 0.9 x.
pub(super) fn quality_run(reuse_ratio: f64) -> RunData {
    let mut run = simple_run("q", 1.0, 0.5);
    for (c, ratio) in run.configs.iter_mut().zip([0.9, reuse_ratio]) {
        for (k, t) in c.trials.iter_mut().enumerate() {
            let check = t.stages.iter_mut().find(|s| s.name == "check").unwrap();
            let r = ratio + 0.01 * noise(k as u32);
            check.metrics.extend([
                metric("mse_vs_zero", r, "ratio", None),
                metric("mse_vs_mean", r + 0.001, "ratio", None),
                metric("ic_per_date", 0.3, "score", None),
                metric("ic_t", 15.0, "score", None),
                metric("direction_accuracy", 0.61, "score", None),
            ]);
        }
    }
    run
}

#[test]
fn a_model_no_better_than_predicting_zero_fails_a_guard_unless_quality_is_not_under_test() {
    let good = build_report(&quality_run(0.92));
    assert_eq!(good.quality.len(), 2);
    assert_eq!(good.quality[0].stage, "check");
    assert!(good.quality.iter().all(|q| q.shown_better));
    let quality_guards: Vec<_> = good.guards.iter().filter(|g| g.against == "predicting zero").collect();
    assert_eq!(quality_guards.len(), 2);
    assert!(quality_guards.iter().all(|g| g.result.verdict == GuardVerdict::Pass));
    assert!(!regression(&good));

    let bad = build_report(&quality_run(1.03));
    let flagged: Vec<&str> = bad
        .quality
        .iter()
        .filter(|q| !q.shown_better)
        .map(|q| q.config.as_str())
        .collect();
    assert_eq!(flagged, ["reuse"]);
    // The quality guard judges one config, not a change between configs: no comparison is
    // "faster but changed results" for it.
    assert!(bad.results.iter().all(|r| !r.changed_results), "{:?}", bad.results);
    assert!(bad.comparisons.iter().all(|c| c.failed_guards.is_empty()));
    let failed: Vec<_> = bad
        .guards
        .iter()
        .filter(|g| g.result.verdict == GuardVerdict::Fail)
        .map(|g| (g.config.as_str(), g.metric.as_str()))
        .collect();
    assert_eq!(failed, [("reuse", "check.mse_vs_zero")]);
    assert!(regression(&bad), "a failed quality guard fails the verdict");
    assert!(bad
        .summary
        .iter()
        .any(|l| l.contains("not shown better than predicting zero") && l.contains("guard failed")));
    let md = render_markdown(&bad, None).unwrap();
    assert!(md.contains("## Model quality"), "{md}");
    assert!(md.contains("**not shown better than predicting zero**"), "{md}");
    assert!(!md.contains("but changed results"), "{md}");
    assert!(md.contains("| reuse | predicting zero | `check.mse_vs_zero` |"), "{md}");

    let mut spared = quality_run(1.03);
    spared.compare.quality_under_test = false;
    let spared = build_report(&spared);
    assert!(spared.guards.iter().all(|g| g.against != "predicting zero"));
    assert!(!regression(&spared));
    assert!(spared.quality.iter().any(|q| !q.shown_better), "still shown");
    let md = render_markdown(&spared, None).unwrap();
    assert!(md.contains("Quality is not under test"), "{md}");
}
