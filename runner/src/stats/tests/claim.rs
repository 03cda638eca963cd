//! Tests of claim parsing and the claim verdicts (`stats::claim`).
use super::*;
use crate::stats::{CompareSettings, Design, Verdict};

fn c(text: &str) -> Claim {
    Claim::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn close(a: (f64, f64), b: (f64, f64)) -> bool {
    let eq = |x: f64, y: f64| (x == y) || (x - y).abs() < 1e-9;
    eq(a.0, b.0) && eq(a.1, b.1)
}

#[test]
fn claims_beyond_any_measurement_are_refused() {
    for text in ["1e308x", "2000000x", "1x..1e9x", ">= 1e7x", "1e308%", "5-1e7%"] {
        let e = Claim::parse(text).unwrap_err();
        assert!(
            e.message.contains("not a claim anything here can measure"),
            "{text}: {e}"
        );
    }
    assert!(Claim::parse("1000000x").is_ok());
    assert!(Claim::parse(">= 1.5x").is_ok());
}

#[test]
fn parses_every_form() {
    let lower = Direction::LowerIsBetter;
    let higher = Direction::HigherIsBetter;
    let inf = f64::INFINITY;
    let cases: &[(&str, Direction, (f64, f64))] = &[
        ("3x..4x", lower, (3.0, 4.0)),
        ("3..4x", lower, (3.0, 4.0)),
        ("3-4x", lower, (3.0, 4.0)),
        ("20-50x", higher, (20.0, 50.0)),
        ("1.5x", lower, (1.35, 1.65)),
        ("~2x", lower, (1.8, 2.2)),
        ("2×", lower, (1.8, 2.2)),
        (">= 1.5x", lower, (1.5, inf)),
        ("<2x", lower, (0.0, 2.0)),
        // 20% less time = candidate/baseline 0.8 = speedup 1.25
        (">= 20%", lower, (1.25, inf)),
        (">= 20%", higher, (1.2, inf)),
        ("5-15%", higher, (1.05, 1.15)),
        ("5%..15%", lower, (1.0 / 0.95, 1.0 / 0.85)),
        // 90% less time = 10x
        ("90%", lower, (9.0, 11.0)),
        ("90%", higher, (1.9 * 0.9, 1.9 * 1.1)),
        ("-5..10%", higher, (0.95, 1.1)),
    ];
    for (text, dir, want) in cases {
        let got = c(text).speedup_interval(*dir);
        assert!(close(got, *want), "{text} {dir:?}: {got:?} != {want:?}");
    }
    assert!(c("~2x").point && !c("3-4x").point);
}

#[test]
fn rejects_malformed_claims_with_hint() {
    for bad in [
        "", "fast", "3", "4x..3x", "3x..4%", "~>2x", "~3-4x", "-2x", "0x", "abc%", "3..4",
    ] {
        let e = Claim::parse(bad).expect_err(bad);
        assert!(e.hint.contains("1.5x"), "{bad}");
        assert!(!e.message.is_empty());
    }
}

fn measured(lo: f64, hi: f64) -> Comparison {
    measured_n(lo, hi, MIN_CLAIM_REPETITIONS)
}

fn measured_n(lo: f64, hi: f64, n: usize) -> Comparison {
    let sample: Vec<f64> = (1..=n).map(|i| i as f64).collect();
    let mut cmp = crate::stats::compare(
        &sample,
        &sample,
        Direction::LowerIsBetter,
        &CompareSettings {
            resamples: 10,
            ..CompareSettings::default()
        },
    );
    cmp.design = Design::Independent;
    cmp.speedup = (lo * hi).sqrt();
    cmp.speedup_ci = Some((lo, hi));
    cmp.verdict = Verdict::Faster;
    cmp
}

#[test]
fn a_claim_needs_five_repetitions_per_side() {
    let claim = c("3x..4x");
    let few = assess(&claim, &measured_n(3.5, 3.9, 4));
    assert_eq!(few.verdict, ClaimVerdict::Inconclusive);
    assert!(
        few.reason.contains("at least 5 repetitions per side (this has 4 vs 4)"),
        "{}",
        few.reason
    );
    assert_eq!(evaluate(&claim, &measured_n(3.5, 3.9, 5)), ClaimVerdict::Supported);
}

#[test]
fn verdicts_need_the_interval_inside_or_outside_the_widened_claim() {
    let claim = c("3x..4x");
    // Inside 3x..4x widened away from 1 by the 2% band (3x..4.08x): supported.
    assert_eq!(evaluate(&claim, &measured(3.5, 3.9)), ClaimVerdict::Supported);
    assert_eq!(evaluate(&claim, &measured(3.0, 4.05)), ClaimVerdict::Supported);
    // The band never lowers the edge toward 1: just below 3x is not support.
    assert_eq!(evaluate(&claim, &measured(2.95, 3.5)), ClaimVerdict::Inconclusive);
    // Straddling an edge: not settled either way.
    let straddle = assess(&claim, &measured(3.9, 4.5));
    assert_eq!(straddle.verdict, ClaimVerdict::Inconclusive);
    assert!(
        straddle.reason.contains("upper edge") && straddle.reps_needed.is_some(),
        "{straddle:?}"
    );
    // Wholly outside: refuted.
    assert_eq!(evaluate(&claim, &measured(1.2, 1.4)), ClaimVerdict::Refuted);
    assert_eq!(evaluate(&claim, &measured(4.2, 5.0)), ClaimVerdict::Refuted);
    // Too wide: contains both the claim and "no effect".
    assert_eq!(evaluate(&claim, &measured(0.8, 3.5)), ClaimVerdict::Inconclusive);
    // A claim that includes 1 is supported by an interval around 1.
    assert_eq!(evaluate(&c("<= 1.5x"), &measured(0.9, 1.1)), ClaimVerdict::Supported);
    // Point claims get ±10%: 1.5x covers 1.35..1.65, widened away from 1 to 1.35..1.683.
    assert_eq!(evaluate(&c("1.5x"), &measured(1.6, 1.68)), ClaimVerdict::Supported);
    assert_eq!(evaluate(&c("1.5x"), &measured(1.7, 1.8)), ClaimVerdict::Refuted);
    // 100% less time is not a finite speedup.
    assert_eq!(evaluate(&c("100%"), &measured(2.0, 3.0)), ClaimVerdict::Untestable);
    // An overlap is not support: 1.17x-1.60x against a 5-15% improvement.
    assert_eq!(evaluate(&c("5-15%"), &measured(1.17, 1.60)), ClaimVerdict::Inconclusive);
}

/// One row per verdict rule: the claim, the measured interval, the verdict and its reason.
#[test]
fn every_verdict_rule_in_one_table() {
    let mut rows = vec![
        "| claim | measured 95% CI | verdict | why |".to_owned(),
        "|---|---|---|---|".to_owned(),
    ];
    let cases: [(&str, Option<(f64, f64)>); 13] = [
        ("1-2%", Some((0.99, 1.01))),
        ("2-4%", Some((1.00, 1.01))),
        ("5-15%", Some((1.00, 1.20))),
        ("5-15%", Some((1.06, 1.12))),
        ("5-15%", Some((0.97, 1.02))),
        ("5-15%", Some((1.07, 1.12))),
        ("5-15%", Some((1.17, 1.60))),
        ("5-15%", Some((1.25, 1.40))),
        ("1-5%", Some((1.011, 1.019))),
        ("3x..4x", Some((3.0, 4.05))),
        ("3x..4x", Some((2.95, 3.5))),
        ("100%", Some((2.0, 3.0))),
        ("2x", None),
    ];
    for (text, ci) in cases {
        let e = match ci {
            // The comparison's own verdict for the interval, as the report gives it.
            Some((lo, hi)) => {
                let mut m = measured(lo, hi);
                let band = m.band;
                if 1.0 / hi >= 1.0 - band && 1.0 / lo <= 1.0 + band {
                    m.verdict = Verdict::NoChange;
                }
                assess(&c(text), &m)
            }
            None => assess(
                &c(text),
                &crate::stats::compare(&[], &[1.0, 2.0], Direction::LowerIsBetter, &CompareSettings::default()),
            ),
        };
        rows.push(format!(
            "| {text} | {} | {} | {}{} |",
            ci.map_or_else(|| "—".to_owned(), |(lo, hi)| format!("{lo:.2}x-{hi:.2}x")),
            e.verdict.as_str(),
            e.reason,
            e.reps_needed
                .map(|n| format!(" (about {n} per side)"))
                .unwrap_or_default()
        ));
    }
    insta::assert_snapshot!("claim_verdicts", rows.join("\n"));
}

/// The rule of the noise band, one row each: a null result never supports a small claim.
#[test]
fn the_noise_band_cannot_support_a_null() {
    let no_change = |lo: f64, hi: f64| {
        let mut m = measured(lo, hi);
        m.verdict = Verdict::NoChange;
        m
    };
    // 1-2% faster lies within the ±2% band: no verdict, and the reason says what would judge it.
    let within = assess(&c("1-2%"), &no_change(0.99, 1.01));
    assert_eq!(within.verdict, ClaimVerdict::Untestable);
    assert!(within.reason.contains("within the ±2% noise band"), "{within:?}");
    // 2-4%: the widened range no longer starts at 1.000; 1.00x-1.01x is below it.
    assert_eq!(evaluate(&c("2-4%"), &no_change(1.00, 1.01)), ClaimVerdict::Refuted);
    // 5-15% against an interval holding 1: not support.
    assert_eq!(evaluate(&c("5-15%"), &measured(1.00, 1.20)), ClaimVerdict::Inconclusive);
    assert_eq!(evaluate(&c("5-15%"), &measured(1.06, 1.12)), ClaimVerdict::Supported);
    assert_eq!(evaluate(&c("5-15%"), &measured(0.97, 1.02)), ClaimVerdict::Refuted);
    // An interval the comparison calls "no change" never supports a claimed effect.
    let inside = assess(&c("1-5%"), &no_change(1.011, 1.019));
    assert_eq!(inside.verdict, ClaimVerdict::Inconclusive, "{inside:?}");
    assert!(within_band(
        c("1-2%").speedup_interval(Direction::LowerIsBetter),
        0.02,
        Direction::LowerIsBetter
    ));
    assert!(!within_band(
        c("2-4%").speedup_interval(Direction::LowerIsBetter),
        0.02,
        Direction::LowerIsBetter
    ));
}

#[test]
fn a_comparison_without_interval_is_inconclusive_and_one_without_samples_untestable() {
    let cmp = crate::stats::compare(&[1.0], &[2.0], Direction::LowerIsBetter, &CompareSettings::default());
    let a = assess(&c("2x"), &cmp);
    assert_eq!(a.verdict, ClaimVerdict::Inconclusive);
    assert!(a.reason.contains("2 repetitions"));
    let none = crate::stats::compare(&[], &[2.0], Direction::LowerIsBetter, &CompareSettings::default());
    assert_eq!(evaluate(&c("2x"), &none), ClaimVerdict::Untestable);
}
