//! Bandwidth-by-size tests on a hand-built transfer run: Markdown snapshot, table medians and
//! which series the chart draws.

use crate::report::assemble::bandwidth;
use crate::report::model::BandwidthKind;
use crate::report::render::view::view;
use crate::report::tests::{base_run, config, metric, noise, sweep_run, write_and_check};
use crate::report::*;

const SIZES: [i64; 3] = [4096, 1 << 20, 1 << 28];
const MODES: [&str; 2] = ["h2d_pageable_reuse", "h2d_pinned_reuse"];

/// Fixture bandwidth of a mode at a size: a latency-bound ramp towards `scale` x 12 GB/s,
/// perturbed per trial.
fn fixture_gbps(scale: f64, size: i64, k: u32) -> f64 {
    let s = size as f64;
    scale * 12.0 * s / (s + 65_536.0) * (1.0 + 0.04 * noise(k))
}

/// One transfer trial: per size, every mode's seconds, GB/s and % of peak, then `peak_gbps`.
/// `pageable` scales the pageable mode (what the `prefault` variant improves).
fn transfer_trial(rep: u32, pageable: f64, seed: u32) -> TrialData {
    let mut metrics = Vec::new();
    for (si, &size) in SIZES.iter().enumerate() {
        let k = rep * 31 + si as u32 * 7 + seed;
        let peak = fixture_gbps(1.0, size, k);
        for (mi, mode) in MODES.iter().enumerate() {
            let scale = if mi == 0 { pageable } else { 0.9 };
            let gbps = fixture_gbps(scale, size, k + 3 + mi as u32);
            metrics.push(metric(
                &format!("{mode}_seconds"),
                size as f64 / gbps / 1e9,
                "s",
                Some(size),
            ));
            metrics.push(metric(&format!("{mode}_gbps"), gbps, "GB/s", Some(size)));
            metrics.push(metric(
                &format!("{mode}_pct_peak"),
                100.0 * gbps / peak,
                "%",
                Some(size),
            ));
        }
        metrics.push(metric("peak_gbps", peak, "GB/s", Some(size)));
        metrics.push(metric("pinned_locked", 1.0, "count", Some(size)));
    }
    TrialData {
        index: rep,
        repetition: rep,
        block: Some(rep),
        scheduled_block: rep,
        host: "bench-01".to_owned(),
        ok: true,
        error: None,
        stages: vec![StageData {
            name: "transfer".to_owned(),
            kind: "transfer".to_owned(),
            ok: true,
            seconds: 2.5 + 0.05 * noise(rep + seed),
            peak_rss_bytes: Some(600 << 20),
            metrics,
            facts: Default::default(),
        }],
    }
}

/// Two configs x 3 trials x 3 sizes of the transfer stage; `prefault` speeds up pageable copies.
pub(crate) fn transfer_run() -> RunData {
    let mut run = base_run(vec![
        config(
            "baseline",
            "baseline",
            None,
            (0..3).map(|r| transfer_trial(r, 0.5, 1)).collect(),
        ),
        config(
            "prefault",
            "prefault",
            None,
            (0..3).map(|r| transfer_trial(r, 0.65, 5)).collect(),
        ),
    ]);
    run.experiment = "transfer-prefault".to_owned();
    run.description = "Does prefaulting pageable buffers speed up host-to-device copies?".to_owned();
    run.manifest_path = "experiments/transfer-prefault.toml".to_owned();
    run.reproduce = "measured run experiments/transfer-prefault.toml --seed 42".to_owned();
    run.data_hashes.clear();
    run.stock_data = None;
    run.compare.primary = "transfer.h2d_pageable_reuse_gbps".to_owned();
    run.compare.guards.clear();
    run.compare.claims.clear();
    run
}

#[test]
fn transfer_report_markdown_snapshot() {
    let report = build_report(&transfer_run());
    let md = render_markdown(&report, None).unwrap();
    insta::assert_snapshot!("report_transfer_md", md);
}

/// The median of a fixture cell over its three trials, computed from the generator directly.
fn fixture_median(pageable: f64, seed: u32, size_idx: usize, mode_idx: usize) -> f64 {
    let scale = if mode_idx == 0 { pageable } else { 0.9 };
    let v: Vec<f64> = (0..3)
        .map(|rep| {
            fixture_gbps(
                scale,
                SIZES[size_idx],
                rep * 31 + size_idx as u32 * 7 + seed + 3 + mode_idx as u32,
            )
        })
        .collect();
    crate::stats::median(&v)
}

#[test]
fn bandwidth_tables_hold_medians_shares_and_the_peak() {
    let mut run = transfer_run();
    // A failed trial with absurd values must not move any median.
    let mut failed = transfer_trial(3, 50.0, 9);
    failed.ok = false;
    run.configs[1].trials.push(failed);
    let report = build_report(&run);
    assert_eq!(report.bandwidth.len(), 1);
    let table = &report.bandwidth[0];
    assert_eq!(table.stage, "transfer");
    assert_eq!(table.chart, "bandwidth_transfer.svg");
    let labels: Vec<&str> = table.columns.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        vec![
            "baseline · h2d_pageable_reuse",
            "baseline · h2d_pageable_reuse % of peak",
            "baseline · h2d_pinned_reuse",
            "baseline · h2d_pinned_reuse % of peak",
            "prefault · h2d_pageable_reuse",
            "prefault · h2d_pageable_reuse % of peak",
            "prefault · h2d_pinned_reuse",
            "prefault · h2d_pinned_reuse % of peak",
            "baseline · peak",
            "prefault · peak",
        ]
    );
    let kinds: Vec<BandwidthKind> = table.columns.iter().map(|c| c.kind).collect();
    assert_eq!(kinds[..2], [BandwidthKind::Bandwidth, BandwidthKind::PctPeak]);
    assert_eq!(
        (table.columns[1].unit.as_str(), table.columns[9].kind),
        ("%", BandwidthKind::Peak)
    );
    let sizes: Vec<i64> = table.rows.iter().map(|r| r.size_bytes).collect();
    assert_eq!(sizes, SIZES);
    for (size_idx, row) in table.rows.iter().enumerate() {
        assert_eq!(row.cells.len(), table.columns.len());
        let expect = |pageable, seed, mode| Some(fixture_median(pageable, seed, size_idx, mode));
        assert_eq!(row.cells[0], expect(0.5, 1, 0));
        assert_eq!(row.cells[2], expect(0.5, 1, 1));
        assert_eq!(row.cells[4], expect(0.65, 5, 0));
        assert_eq!(row.cells[6], expect(0.65, 5, 1));
    }
    // Pinned copies run at about 90% of the reference in the fixture.
    let pinned_share = table.rows[2].cells[3].unwrap();
    assert!((80.0..100.0).contains(&pinned_share), "{pinned_share}");
    let shown = view(&report).bandwidth[0].rows[2].clone();
    assert_eq!(shown.size, "256 MiB");
    assert!(shown.cells[3].ends_with('%'), "{}", shown.cells[3]);
}

#[test]
fn peak_is_drawn_only_when_it_is_the_only_bandwidth_series() {
    let run = transfer_run();
    let stages = bandwidth::bandwidth_stages(&run);
    let lines: Vec<String> = stages[0].lines().iter().map(|l| l.label()).collect();
    assert_eq!(
        lines,
        vec![
            "baseline · h2d_pageable_reuse",
            "baseline · h2d_pinned_reuse",
            "prefault · h2d_pageable_reuse",
            "prefault · h2d_pinned_reuse"
        ]
    );

    let mut peak_only = transfer_run();
    for t in peak_only.configs.iter_mut().flat_map(|c| &mut c.trials) {
        t.stages[0]
            .metrics
            .retain(|m| m.unit != "GB/s" || m.name == "peak_gbps");
    }
    let stages = bandwidth::bandwidth_stages(&peak_only);
    let lines: Vec<String> = stages[0].lines().iter().map(|l| l.label()).collect();
    assert_eq!(lines, vec!["baseline · peak", "prefault · peak"]);
    let report = build_report(&peak_only);
    let labels: Vec<&str> = report.bandwidth[0].columns.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, vec!["baseline · peak", "prefault · peak"]);
    let (_dir, charts) = write_and_check(&peak_only);
    assert!(charts.contains(&"bandwidth_transfer.svg".to_owned()));

    // Stepped metrics in other units (seconds, loss) are not bandwidth.
    assert!(bandwidth::bandwidth_stages(&sweep_run()).is_empty());
}

/// A config whose copies are 3x slower at the largest size only, with 6 trials per side.
fn slow_at_the_top_run() -> RunData {
    let trial = |rep: u32, top: f64| {
        let mut t = transfer_trial(rep, 0.5, 1);
        t.stages[0].metrics = SIZES
            .iter()
            .map(|&size| {
                let base = size as f64 / 10e9 * (1.0 + 0.01 * noise(rep + size as u32 % 97));
                let secs = if size == SIZES[2] { base * top } else { base };
                metric("h2d_seconds", secs, "s", Some(size))
            })
            .chain(std::iter::once(metric("h2d_gbps_at_max", 1.0, "GB/s", None)))
            .chain(
                SIZES
                    .iter()
                    .map(|&s| metric("h2d_pinned_reuse_gbps", 1.0, "GB/s", Some(s))),
            )
            .collect();
        t
    };
    let mut run = base_run(vec![
        config("reuse", "reuse", None, (0..6).map(|r| trial(r, 1.0)).collect()),
        config(
            "per_copy",
            "per_copy",
            None,
            (0..6).map(|r| trial(r + 10, 3.0)).collect(),
        ),
    ]);
    run.compare.primary = "transfer.h2d_gbps_at_max".to_owned();
    run.compare.baseline = "reuse".to_owned();
    run.compare.guards.clear();
    run.compare.claims.clear();
    run
}

#[test]
fn copies_are_compared_size_by_size_with_a_verdict_each() {
    let report = build_report(&slow_at_the_top_run());
    assert_eq!(report.bandwidth_by_size.len(), 1, "{:?}", report.bandwidth_by_size);
    let t = &report.bandwidth_by_size[0];
    assert_eq!(
        (
            t.stage.as_str(),
            t.metric.as_str(),
            t.config.as_str(),
            t.against.as_str()
        ),
        ("transfer", "h2d_seconds", "per_copy", "reuse")
    );
    let sizes: Vec<i64> = t.rows.iter().map(|r| r.size_bytes).collect();
    assert_eq!(sizes, SIZES);
    // Unchanged at the small sizes; about 3x slower (speedup ~0.33) at the largest only.
    for r in &t.rows[..2] {
        assert_ne!(r.verdict, crate::stats::Verdict::Slower, "{r:?}");
        assert!((r.speedup.unwrap() - 1.0).abs() < 0.05, "{r:?}");
    }
    let top = &t.rows[2];
    assert_eq!(top.verdict, crate::stats::Verdict::Slower, "{top:?}");
    assert!((top.speedup.unwrap() - 1.0 / 3.0).abs() < 0.02, "{top:?}");
    assert_eq!(top.n, (6, 6));
    let md = render_markdown(&report, None).unwrap();
    assert!(
        md.contains("**per_copy against reuse** (`transfer.h2d_seconds`)"),
        "{md}"
    );
    // The per-size series is compared there, not averaged over sizes in the Metrics table.
    assert!(!md.contains("| `transfer.h2d_seconds` (series)"), "{md}");
}
