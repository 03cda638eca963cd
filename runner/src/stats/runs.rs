//! Across runs (stats: one level per run -> steps in a history and level changes between runs,
//! judged against the variation from run to run).
//!
//! Two runs of identical code do not measure the same level: a machine that rebooted, a
//! neighbour on a shared host, a different page-cache state move a whole run by a few percent.
//! Comparing the trials of two runs as if they were one sample counts that shift as a code
//! change: in 30 runs of identical code with a 3% run-to-run spread, such a test flags about
//! half the steps. The unit of replication across runs is the run, so this module works on one
//! value per run (a config's median in that run, on a log scale) and estimates the spread from
//! the runs themselves.
//!
//! **A step** between run `k - 1` and run `k` of a series compares the runs before it with the
//! runs from it on, up to [`STEP_WINDOW`] on each side and never across a break (a changed
//! config, see `report::assemble::history`): a pooled two-sample t-test on the log levels, whose
//! variance is the run-to-run variance those runs show. The change is `exp(mean after - mean
//! before)` with its 95% t-interval. A step is a candidate when `p < alpha` and the interval
//! lies wholly outside the noise band, like every other verdict; a real step makes its
//! neighbours candidates too (their windows straddle it), so only the candidate with the
//! smallest p within [`STEP_WINDOW`] runs of another is flagged.
//!
//! **False flags.** Under identical code with normally distributed run levels, each step's test
//! is exact: a step is a candidate with probability at most `alpha`, and keeping only the
//! smallest p of neighbours can only lower that. So the expected number of false flags is at
//! most `alpha` times the number of steps tested, the figure the history states; the
//! simulations in `stats/tests/runs.rs` check it with a 3% run-to-run spread.
//!
//! **Two runs alone** cannot tell a code change from run-to-run variation: one value a side
//! has no spread. A level comparison uses the run-to-run spread of earlier runs of the same
//! series when there are any, else that of the machine's other series, else an assumed spread
//! the caller states (`measured compare --run-spread`, 5% by default): ([`RunSpread`]).
//! Whichever it is, the verdict says so.

use serde::Serialize;

use super::dist::{normal_sf, student_t_quantile, student_t_sf};

/// Runs on each side of a step that its test reads, and the distance within which only the
/// most significant of neighbouring candidate steps is flagged.
pub const STEP_WINDOW: usize = 8;

/// The pooled two-sample t-test of the log levels of the runs after a point against those
/// before it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LevelTest {
    pub before: usize,
    pub after: usize,
    /// `exp(mean(after) - mean(before))` of the log levels: after over before.
    pub ratio: f64,
    /// 95% t-interval of `ratio`.
    pub ratio_ci: (f64, f64),
    /// Two-sided p-value of the t-test.
    pub p: f64,
    /// The pooled run-to-run standard deviation of the log levels (about the relative spread).
    pub spread: f64,
    /// Its degrees of freedom.
    pub df: f64,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn sum_squares(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum()
}

/// The t-test of `after` against `before` (log levels); `None` with fewer than three runs in
/// all (no spread to judge by) or a spread of exactly zero.
pub fn level_test(before: &[f64], after: &[f64]) -> Option<LevelTest> {
    let (nb, na) = (before.len(), after.len());
    if nb == 0 || na == 0 || nb + na < 3 {
        return None;
    }
    let df = (nb + na - 2) as f64;
    let spread = ((sum_squares(before) + sum_squares(after)) / df).sqrt();
    if !(spread > 0.0 && spread.is_finite()) {
        return None;
    }
    Some(t_test(mean(after) - mean(before), spread, df, nb, na))
}

fn t_test(diff: f64, spread: f64, df: f64, nb: usize, na: usize) -> LevelTest {
    let se = spread * (1.0 / nb as f64 + 1.0 / na as f64).sqrt();
    let t = diff / se;
    let (quantile, tail) = if df.is_finite() {
        (student_t_quantile(0.975, df), student_t_sf(t.abs(), df))
    } else {
        (super::dist::normal_isf(0.025), normal_sf(t.abs()))
    };
    let half = quantile * se;
    LevelTest {
        before: nb,
        after: na,
        ratio: diff.exp(),
        ratio_ci: ((diff - half).exp(), (diff + half).exp()),
        p: (2.0 * tail).min(1.0),
        spread,
        df,
    }
}

/// Whether a level test says the level moved: `p < alpha` and the interval wholly outside the
/// band `[1 - band, 1 + band]`.
pub fn moved(t: &LevelTest, alpha: f64, band: f64) -> bool {
    t.p < alpha && (t.ratio_ci.1 < 1.0 - band || t.ratio_ci.0 > 1.0 + band)
}

/// What a history says about one step of a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum StepCall {
    /// The level moved here.
    Flagged(LevelTest),
    /// Tested; not a step (or a neighbour of a more significant one).
    Steady(LevelTest),
    /// Too few runs around it to test (fewer than three in its windows).
    Untested,
    /// The series breaks here (a changed config): nothing is compared across it.
    Break,
}

/// The steps of a series of log levels `levels` (oldest first): entry `k - 1` is the step into
/// run `k`. `breaks[k]` is true where run `k` starts a new segment (its config changed), so no
/// window reaches across it.
pub fn steps(levels: &[f64], breaks: &[bool], alpha: f64, band: f64) -> Vec<StepCall> {
    let n = levels.len();
    let segment_start = |k: usize| {
        (0..=k)
            .rev()
            .find(|&i| i == 0 || breaks.get(i) == Some(&true))
            .unwrap_or(0)
    };
    let segment_end = |k: usize| (k + 1..n).find(|&i| breaks.get(i) == Some(&true)).unwrap_or(n);
    let mut calls: Vec<StepCall> = (1..n)
        .map(|k| {
            if breaks.get(k) == Some(&true) {
                return StepCall::Break;
            }
            let (start, end) = (segment_start(k), segment_end(k));
            let before = &levels[start.max(k.saturating_sub(STEP_WINDOW))..k];
            let after = &levels[k..end.min(k + STEP_WINDOW)];
            match level_test(before, after) {
                Some(t) => StepCall::Steady(t),
                None => StepCall::Untested,
            }
        })
        .collect();
    // Candidates, most significant first; each one flagged unless a flagged one is near.
    let mut candidates: Vec<(usize, f64)> = calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match c {
            StepCall::Steady(t) if moved(t, alpha, band) => Some((i, t.p)),
            _ => None,
        })
        .collect();
    candidates.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut flagged: Vec<usize> = Vec::new();
    for (i, _) in candidates {
        if flagged.iter().all(|&f| f.abs_diff(i) >= STEP_WINDOW) {
            flagged.push(i);
        }
    }
    for i in flagged {
        if let StepCall::Steady(t) = calls[i] {
            calls[i] = StepCall::Flagged(t);
        }
    }
    calls
}

/// Where a run-to-run spread comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpreadSource {
    /// Earlier runs of the same config on the same machine.
    Series,
    /// Earlier runs of other configs of the experiment on the same machine.
    Machine,
    /// Nothing measured it: the caller's assumption.
    Assumed,
}

/// The run-to-run spread of a config's level: estimated from earlier runs (the pooled standard
/// deviation of the log levels within each stretch of unchanged parameters), or assumed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunSpread {
    /// Standard deviation of the log levels (about the relative spread).
    pub sd: f64,
    /// Degrees of freedom (runs less one per stretch); infinite for an assumed spread.
    pub df: f64,
    /// Runs it was estimated from (0 when assumed).
    pub runs: usize,
    pub source: SpreadSource,
}

impl RunSpread {
    /// The pooled spread of `stretches` (each the log levels of runs with one config); `None`
    /// without at least one degree of freedom or with no spread at all.
    pub fn of(stretches: &[Vec<f64>]) -> Option<RunSpread> {
        let used: Vec<&Vec<f64>> = stretches.iter().filter(|s| s.len() >= 2).collect();
        let df: usize = used.iter().map(|s| s.len() - 1).sum();
        if df == 0 {
            return None;
        }
        let ss: f64 = used.iter().map(|s| sum_squares(s)).sum();
        let sd = (ss / df as f64).sqrt();
        (sd.is_finite() && sd > 0.0).then_some(RunSpread {
            sd,
            df: df as f64,
            runs: used.iter().map(|s| s.len()).sum(),
            source: SpreadSource::Series,
        })
    }

    /// An assumed spread of `sd` (a fraction: 0.05 for 5%), with no degrees of freedom to pay.
    pub fn assumed(sd: f64) -> RunSpread {
        RunSpread {
            sd,
            df: f64::INFINITY,
            runs: 0,
            source: SpreadSource::Assumed,
        }
    }

    /// The change from one run's log level to another's, judged against this spread: a test of
    /// one run against one whose variance is the spread's (Student's t with the spread's
    /// degrees of freedom, the normal for an assumed spread).
    pub fn judge(&self, before: f64, after: f64) -> Option<LevelTest> {
        (self.sd > 0.0).then(|| t_test(after - before, self.sd, self.df, 1, 1))
    }
}

/// The two-sided p-value of a normal `z`, for [`ratio_of_ratios`].
fn normal_p(z: f64) -> f64 {
    (2.0 * normal_sf(z.abs())).min(1.0)
}

/// The change between two runs' within-run ratios (each a candidate over the baseline config of
/// the same run, with its interval at `confidence`): `after / before` with a 95% interval and a
/// two-sided p-value, from the intervals' widths as standard errors on the log scale (a normal
/// approximation, stated as such). A run's own level cancels inside each ratio, so this needs
/// no run-to-run spread. `None` without two finite positive intervals.
pub fn ratio_of_ratios(
    before: (f64, (f64, f64), f64),
    after: (f64, (f64, f64), f64),
) -> Option<(f64, (f64, f64), f64)> {
    let se = |(r, (lo, hi), conf): (f64, (f64, f64), f64)| -> Option<f64> {
        if !(r > 0.0 && lo > 0.0 && hi >= lo && hi.is_finite() && conf > 0.0 && conf < 1.0) {
            return None;
        }
        let z = super::dist::normal_isf((1.0 - conf) / 2.0);
        Some((hi.ln() - lo.ln()) / (2.0 * z))
    };
    let (sb, sa) = (se(before)?, se(after)?);
    let diff = after.0.ln() - before.0.ln();
    let se = (sb * sb + sa * sa).sqrt();
    if se.is_nan() || se <= 0.0 {
        return None;
    }
    let half = 1.959_963_984_540_054 * se;
    Some((
        diff.exp(),
        ((diff - half).exp(), (diff + half).exp()),
        normal_p(diff / se),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_test_is_the_pooled_t_test() {
        // scipy 1.17: ttest_ind([0.1, 0.12, 0.09], [0, 0.02, -0.01, 0.01]) gives t = 9.25953,
        // p = 0.000246924, df = 5 (equal variances).
        let before = [0.0, 0.02, -0.01, 0.01];
        let after = [0.1, 0.12, 0.09];
        let t = level_test(&before, &after).unwrap();
        let d = 0.31f64 / 3.0 - 0.005;
        assert!((t.ratio.ln() - d).abs() < 1e-12);
        assert_eq!(t.df, 5.0);
        let tstat = d / (t.spread * (0.25f64 + 1.0 / 3.0).sqrt());
        assert!((tstat - 9.259_531_103).abs() < 1e-6, "{tstat}");
        assert!((t.p - 0.000_246_924_139).abs() < 1e-9, "{}", t.p);
        assert!(level_test(&[0.0], &[0.1]).is_none());
        assert!(level_test(&[0.0, 0.0], &[0.0]).is_none());
    }

    #[test]
    fn a_step_is_flagged_once_where_it_happened() {
        // Steady at 0 +- 1%, then 10% higher from run 6 on.
        let noise = [
            0.01, -0.01, 0.005, -0.005, 0.0, 0.01, -0.01, 0.005, -0.005, 0.0, 0.01, -0.01,
        ];
        let levels: Vec<f64> = noise
            .iter()
            .enumerate()
            .map(|(i, e)| e + if i >= 6 { 0.1f64.ln_1p() } else { 0.0 })
            .collect();
        let calls = steps(&levels, &[false; 12], 0.01, 0.02);
        let flagged: Vec<usize> = calls
            .iter()
            .enumerate()
            .filter(|(_, c)| matches!(c, StepCall::Flagged(_)))
            .map(|(i, _)| i + 1)
            .collect();
        assert_eq!(flagged, vec![6], "{calls:?}");
        if let StepCall::Flagged(t) = &calls[5] {
            assert!(t.ratio_ci.0 < 1.1 && 1.1 < t.ratio_ci.1, "{t:?}");
        }
    }

    #[test]
    fn a_break_stops_the_windows() {
        // The config changed at run 3: the jump there is a break, not a step, and the runs on
        // each side are each too few to test against their own neighbours at first.
        let levels = [0.0, 0.01, -0.01, 0.9, 0.91, 0.89];
        let mut breaks = [false; 6];
        breaks[3] = true;
        let calls = steps(&levels, &breaks, 0.01, 0.02);
        assert_eq!(calls[2], StepCall::Break);
        assert!(calls.iter().all(|c| !matches!(c, StepCall::Flagged(_))), "{calls:?}");
    }

    #[test]
    fn the_spread_of_earlier_runs_judges_two_runs() {
        let spread = RunSpread::of(&[vec![0.0, 0.03, -0.03, 0.01], vec![0.5, 0.52]]).unwrap();
        assert_eq!(spread.df, 4.0);
        assert_eq!(spread.runs, 6);
        let t = spread.judge(0.0, 0.02).unwrap();
        assert!(t.p > 0.1, "{t:?}");
        let far = spread.judge(0.0, 0.3).unwrap();
        assert!(far.p < 0.01, "{far:?}");
        assert!(RunSpread::of(&[vec![0.0], vec![1.0]]).is_none());
        // Assumed 5%: one run against one, a normal test; 30% is far beyond it, 3% is not.
        let assumed = RunSpread::assumed(0.05);
        assert!(assumed.judge(0.0, 0.3).unwrap().p < 1e-4);
        let near = assumed.judge(0.0, 0.03).unwrap();
        assert!(
            near.p > 0.5 && near.ratio_ci.0 < 1.0 && near.ratio_ci.1 > 1.0,
            "{near:?}"
        );
    }

    #[test]
    fn a_ratio_of_ratios_cancels_each_runs_level() {
        // Both runs measured 1.10 (1.05-1.15): no change between them.
        let (r, (lo, hi), p) = ratio_of_ratios((1.1, (1.05, 1.15), 0.95), (1.1, (1.05, 1.15), 0.95)).unwrap();
        assert!((r - 1.0).abs() < 1e-12 && lo < 1.0 && hi > 1.0 && (p - 1.0).abs() < 1e-12);
        let (r, (lo, _), p) = ratio_of_ratios((1.0, (0.98, 1.02), 0.95), (1.2, (1.17, 1.23), 0.95)).unwrap();
        assert!((r - 1.2).abs() < 1e-12 && lo > 1.1 && p < 1e-6);
        assert!(ratio_of_ratios((1.0, (1.0, 1.0), 0.95), (1.0, (1.0, 1.0), 0.95)).is_none());
    }
}
