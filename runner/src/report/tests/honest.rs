//! What a report says about itself: the tests that ran and why, a dirty tree, what a rerun
//! needs.

use crate::report::model::RankTestKind;
use crate::report::render::view::view;
use crate::report::tests::{base_run, config, simple_run, trials};
use crate::report::*;

/// The method sentence of a report on `run`.
fn method_text(run: &RunData) -> String {
    view(&build_report(run)).method
}

#[test]
fn one_host_reports_name_the_unpaired_test_and_why() {
    let run = simple_run("one-host", 0.8, 0.5);
    let report = build_report(&run);
    assert_eq!(report.method.tests.len(), 1);
    assert_eq!(report.method.tests[0].test, RankTestKind::MannWhitneyU);
    insta::assert_snapshot!("method_unpaired", method_text(&run));
}

#[test]
fn blocks_on_several_hosts_name_the_paired_test_and_why() {
    let mut run = simple_run("two-hosts", 0.8, 0.5);
    for c in &mut run.configs {
        for t in &mut c.trials {
            t.block = Some(t.repetition);
            t.host = format!("node-{}", t.repetition % 2);
        }
    }
    let report = build_report(&run);
    assert_eq!(report.method.tests.len(), 1);
    assert_eq!(report.method.tests[0].test, RankTestKind::WilcoxonSignedRank);
    assert_eq!(report.method.tests[0].comparisons, 1);
    insta::assert_snapshot!("method_paired", method_text(&run));
}

#[test]
fn a_dirty_tree_is_flagged_under_the_title_and_in_json() {
    let clean = build_report(&simple_run("clean", 0.8, 0.5));
    assert!(!clean.dirty);
    let md = render_markdown(&clean, None).unwrap();
    assert!(!md.contains("Dirty tree"), "{md}");

    let mut run = simple_run("dirty", 0.8, 0.5);
    run.environment.insert("git_dirty".into(), "true".into());
    run.environment.insert("build_commit".into(), "0c1d2e3f4a5b".into());
    run.environment.insert("build_dirty".into(), "true".into());
    run.results_database = "postgres://bench:***@db.example/results".into();
    let report = build_report(&run);
    assert!(report.dirty);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["dirty"], true);
    assert_eq!(json["reproduction"]["build_commit"], "0c1d2e3f4a5b");
    assert_eq!(json["reproduction"]["results_database"], "postgres");
    let md = render_markdown(&report, None).unwrap();
    let head: Vec<&str> = md.lines().take(6).collect();
    let start = md.find("## Reproduce").unwrap();
    let end = md[start..].find("Manifest `").unwrap() + start;
    insta::assert_snapshot!(
        "dirty_head_and_reproduce",
        format!("{}\n[...]\n{}", head.join("\n"), &md[start..end])
    );
}

#[test]
fn neighbouring_sweep_points_are_compared_when_asked() {
    // One variant swept over four batch sizes, as experiments/batch-size.toml does.
    let points = [("64", 8.0), ("256", 6.0), ("1024", 5.9), ("4096", 7.0)];
    let configs = points
        .iter()
        .enumerate()
        .map(|(k, &(b, secs))| {
            config(
                &format!("baseline[batch_size={b}]"),
                "baseline",
                Some(b),
                trials(secs, 0.5, 1.0, false, 3 + k as u32),
            )
        })
        .collect();
    let mut run = base_run(configs);
    run.compare.claims.clear();
    assert!(build_report(&run).sweep_neighbours.is_none());
    run.compare.sweep_neighbours = true;
    let report = build_report(&run);
    let table = report.sweep_neighbours.as_ref().unwrap();
    let steps: Vec<(&str, &str)> = table.rows.iter().map(|r| (r.from.as_str(), r.to.as_str())).collect();
    assert_eq!(steps, [("64", "256"), ("256", "1024"), ("1024", "4096")]);
    // 8 s -> 6 s per epoch is faster; 5.9 s -> 7 s slower.
    assert_eq!(table.rows[0].verdict, crate::stats::Verdict::Faster);
    assert_eq!(table.rows[2].verdict, crate::stats::Verdict::Slower);
    let md = render_markdown(&report, None).unwrap();
    let start = md.find("## Neighbouring sweep points").unwrap();
    let end = md[start + 3..].find("\n## ").map_or(md.len(), |e| e + start + 4);
    insta::assert_snapshot!("sweep_neighbours", &md[start..end]);
}
