//! How a bisect step judges a commit, how many steps a line takes, and what the end says.

use super::*;
use crate::stats::{Design, Verdict};

fn comparison(verdict: Verdict, speedup: f64) -> Comparison {
    Comparison {
        design: Design::Paired,
        direction: crate::stats::Direction::LowerIsBetter,
        n_baseline: 12,
        n_candidate: 12,
        baseline_median: 1.0,
        candidate_median: 1.0 / speedup,
        ratio: 1.0 / speedup,
        ratio_ci: None,
        confidence: 0.95,
        look: None,
        speedup,
        speedup_ci: Some((speedup * 0.99, speedup * 1.01)),
        p_value: 0.001,
        p_adjusted: None,
        verdict,
        reps_needed: None,
        detectable: None,
        reason: None,
        resolution: None,
        note: None,
        alpha: 0.01,
        band: 0.02,
    }
}

#[test]
fn a_step_is_bad_when_any_point_is_slower_good_when_none_moved_and_undecided_otherwise() {
    use Verdict::*;
    let judged = |vs: &[Verdict]| judge(&vs.iter().map(|&v| comparison(v, 1.0)).collect::<Vec<_>>());
    assert_eq!(judged(&[Slower]), Judged::Bad);
    assert_eq!(judged(&[NoChange, Slower]), Judged::Bad);
    assert_eq!(judged(&[NoChange]), Judged::Good);
    assert_eq!(judged(&[Faster, NoChange]), Judged::Good);
    assert_eq!(judged(&[Inconclusive]), Judged::Undecided);
    assert_eq!(judged(&[NoChange, Inconclusive]), Judged::Undecided);
    assert_eq!(judged(&[]), Judged::Undecided);
}

#[test]
fn a_line_takes_the_end_check_the_halvings_and_one_comparison_of_neighbours() {
    // good + 1 commit: the end check, and the neighbours already compared.
    assert_eq!(steps_at_most(2), 2);
    assert_eq!(steps_at_most(3), 3);
    assert_eq!(steps_at_most(9), 5);
    assert_eq!(steps_at_most(17), 6);
}

fn line(n: usize) -> Vec<LineCommit> {
    (0..n)
        .map(|i| LineCommit {
            sha: format!("{i:040x}"),
            short: format!("{i:012x}"),
            subject: format!("change {i}"),
        })
        .collect()
}

fn step(candidate: usize, against: usize, verdict: Verdict, speedup: f64, judged: Judged) -> Step {
    Step {
        candidate,
        against,
        judged,
        comparisons: vec![comparison(verdict, speedup)],
        run_id: Some(format!("20261127-10000{candidate}-abcd")),
        report: Some(format!("20261127-10000{candidate}-abcd/report.md").into()),
    }
}

#[test]
fn the_end_names_the_first_bad_commit_with_its_interval_or_why_nothing_was_found() {
    let line = line(5);
    let steps = vec![
        step(4, 0, Verdict::Slower, 0.5, Judged::Bad),
        step(2, 0, Verdict::NoChange, 1.0, Judged::Good),
        step(3, 2, Verdict::Slower, 0.5, Judged::Bad),
    ];
    let lines: Vec<String> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| log::step_line(i + 1, &line, s))
        .collect();
    let found = log::conclusion(&line, &steps, &Found::FirstBad { commit: 3, step: 2 });
    let none = log::conclusion(
        &line,
        &[step(4, 0, Verdict::Inconclusive, 0.99, Judged::Undecided)],
        &Found::Undecidable { step: 0 },
    );
    let nothing = log::conclusion(
        &line,
        &[step(4, 0, Verdict::NoChange, 1.0, Judged::Good)],
        &Found::Undecidable { step: 0 },
    );
    insta::assert_snapshot!(format!("{}\n{found}{none}{nothing}", lines.join("\n")));
}
