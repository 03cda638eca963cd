//! Reports on blocked runs: the H200 A/A trace analysed in its blocks and without them, the
//! run chart's one marker per trial, drift and jitter flags, and a sequential run's stop.

use crate::report::tests::{base_run, config, metric};
use crate::report::*;
use crate::stats::SequentialPlan;

/// The H200 A/A trace as a run of two configs (`baseline`, `same`): each measured trial with
/// its time-order index and block, `train.epoch_seconds` as recorded. `paired` says whether
/// the report may use the blocks.
fn h200_run(paired: bool) -> RunData {
    let text = include_str!("../../../tests/fixtures/traces/h200-aa-epoch-seconds.csv");
    let mut by_config: Vec<(&str, Vec<TrialData>)> = vec![("baseline", Vec::new()), ("same", Vec::new())];
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f[3] == "1" {
            continue;
        }
        let (index, block): (u32, u32) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        let seconds: f64 = f[4].parse().unwrap();
        let trial = TrialData {
            index,
            repetition: block - 1,
            block: paired.then_some(block),
            scheduled_block: block,
            host: "h200".to_owned(),
            ok: true,
            error: None,
            stages: vec![StageData {
                name: "train".to_owned(),
                kind: "train".to_owned(),
                ok: true,
                seconds: 2.0 * seconds,
                peak_rss_bytes: None,
                metrics: vec![metric("epoch_seconds", seconds, "s", None)],
                facts: Default::default(),
            }],
        };
        by_config.iter_mut().find(|c| c.0 == f[2]).unwrap().1.push(trial);
    }
    let configs = by_config
        .into_iter()
        .map(|(name, t)| config(name, name, None, t))
        .collect();
    let mut run = base_run(configs);
    run.compare.baseline = "baseline".to_owned();
    run.compare.claims.clear();
    run.compare.guards.clear();
    run.design.paired = paired;
    run.design.blocks = 20;
    run
}

/// The A/A trace drifts from about 30 ms to 47 ms within the run. Compared within its blocks
/// the ratio's interval stays inside 0.97x-1.03x; compared as independent samples (what
/// reports did before runs on one host were paired) it spreads wider than 0.90x-1.10x.
#[test]
fn the_h200_trace_is_narrow_paired_and_wide_unpaired() {
    let paired = build_report(&h200_run(true));
    let c = &paired.comparisons[0].comparison;
    assert_eq!(c.design, crate::stats::Design::Paired);
    let (lo, hi) = c.ratio_ci.unwrap();
    assert!(0.97 < lo && hi < 1.03, "paired ratio CI {lo}-{hi}");
    assert_eq!(c.verdict, crate::stats::Verdict::Inconclusive, "{c:?}");

    let unpaired = build_report(&h200_run(false));
    let u = &unpaired.comparisons[0].comparison;
    assert_eq!(u.design, crate::stats::Design::Independent);
    let (ulo, uhi) = u.ratio_ci.unwrap();
    assert!(ulo < 0.90 && uhi > 1.10, "unpaired ratio CI {ulo}-{uhi}");
    eprintln!(
        "H200 A/A trace: paired {:.4} ({lo:.4}-{hi:.4}), unpaired {:.4} ({ulo:.4}-{uhi:.4})",
        c.ratio, u.ratio
    );

    // The trace's baseline climbs by 43% from its first third to its last, in a jump and a dip
    // rather than a line: over 20 trials its residuals are strongly autocorrelated (lag 1 about
    // 0.67), so the interval of the change, which counts that memory, is too wide to call the
    // machine drifting rather than wandering. The change is still shown, with its interval.
    let s = paired.stability.expect("20 trials per config");
    let base = &s.rows[0].figures;
    assert!((base.level_change - 1.4288).abs() < 1e-3, "{s:?}");
    let (lo, hi) = base.level_change_ci.unwrap();
    assert!(lo < 1.0 && hi > base.level_change, "{s:?}");
    assert!(!s.drifting && s.jittery, "{s:?}");
}

/// Markers of `fill` colour among the SVG's circles, polygons and rectangles.
fn markers(svg: &str, fill: &str) -> usize {
    svg.lines()
        .filter(|l| l.contains("<circle") || l.contains("<polygon") || l.contains("<rect"))
        .filter(|l| {
            l.to_ascii_lowercase()
                .contains(&format!("fill=\"{}\"", fill.to_ascii_lowercase()))
        })
        .count()
}

/// The run chart has one marker per measured trial, each config in its colour, plus one
/// legend entry per config.
#[test]
fn the_run_chart_has_one_point_per_measured_trial() {
    let run = h200_run(true);
    let charts = super::super::render::charts::render_charts(&super::super::build_report(&run)).unwrap();
    let (_, svg) = charts.iter().find(|(f, _)| f == "run_chart.svg").expect("a run chart");
    for (i, c) in run.configs.iter().enumerate() {
        let fill = super::super::render::charts::palette_color(i);
        assert_eq!(markers(svg, &fill), c.trials.len() + 1, "{} ({fill})", c.name);
    }
    assert!(svg.contains("trial, in the order it ran"), "x axis named");
}

/// A sequential run stopped at a look says after how many blocks and at what levels.
#[test]
fn a_decided_sequential_run_says_when_it_stopped() {
    let mut run = h200_run(true);
    run.design.sequential = Some(SequentialPlan { min: 8, max: 200 });
    let report = build_report(&run);
    let seq = report.method.sequential.as_ref().expect("a sequential summary");
    assert_eq!(seq.looks_taken, vec![8, 12, 18, 20]);
    assert!(seq.confidence_at_look > 0.99 && seq.alpha_at_look < 0.001, "{seq:?}");
    // 20 blocks of an A/A run straddle the band: still open, and the plan allows more.
    assert_eq!(seq.stop, super::super::model::StopKind::TimeBudget);
    assert!(
        seq.stop_sentence().contains("still open: same against baseline"),
        "{}",
        seq.stop_sentence()
    );
    let md = render_markdown(&report, None).unwrap();
    assert!(md.contains("Sequential: blocks were added from 8 up to 200"), "{md}");
    assert!(md.contains("repeated 95% CI"), "{md}");
}
