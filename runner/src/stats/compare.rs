//! Candidate-vs-baseline comparisons (stats core: samples of two configs -> ratio, CI, p, verdict).

use serde::Serialize;

use super::bootstrap::{percentile_interval, ratio_of_medians_replicates};
use super::dist::normal_isf;
use super::paired::{bounded, min_values_for_interval};
use super::rank::{mann_whitney_u, min_attainable_p};
use super::resolution::{log_ratio_bounds, resolution, Resolution};
use super::sequential::Look;
use super::summary::median;
use super::{CompareSettings, Direction, Verdict};

/// Two-sided error of every interval a comparison reports: 95% intervals. A sequential run
/// spends it over its looks.
pub const INTERVAL_ERROR: f64 = 0.05;

/// Power at which [`Comparison::detectable`] is stated.
pub const DETECTABLE_POWER: f64 = 0.8;

/// How the two sides were sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// Independent repetitions per side (Mann-Whitney U, ratio of medians).
    Independent,
    /// Blocks that ran both sides back to back (signed-rank on the per-block log ratios,
    /// Hodges-Lehmann estimate with the interval that inverts the test).
    Paired,
    /// One config's level in two runs, judged against the run-to-run variation of earlier runs
    /// of its series (a t-test of one run against one, `stats::runs`).
    Runs,
}

/// Result of comparing a candidate against a baseline on one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub design: Design,
    pub direction: Direction,
    pub n_baseline: usize,
    pub n_candidate: usize,
    pub baseline_median: f64,
    pub candidate_median: f64,
    /// candidate / baseline: the ratio of medians (independent), or the exponential of the
    /// Hodges-Lehmann median of the per-block log ratios (paired); NaN when undefined.
    pub ratio: f64,
    /// Interval of `ratio` at level `confidence`; `None` when it could not be computed.
    pub ratio_ci: Option<(f64, f64)>,
    /// Nominal level of `ratio_ci`: 0.95, or a sequential look's share of it (the interval is
    /// then one of a set that holds the truth together with 95% probability).
    pub confidence: f64,
    /// The look of a sequential run this comparison was made at; `None` for a fixed design.
    pub look: Option<Look>,
    /// > 1 means better in the metric's direction.
    pub speedup: f64,
    pub speedup_ci: Option<(f64, f64)>,
    /// Raw two-sided p-value of the rank test.
    pub p_value: f64,
    /// Benjamini-Hochberg adjusted p-value when this comparison is one of a family.
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
    /// For an inconclusive verdict: estimated repetitions per side (or blocks) that would settle it.
    pub reps_needed: Option<usize>,
    /// The smallest speedup (> 1) this comparison would have called faster with 80% power, at
    /// its n and the noise its interval shows; `None` without an interval.
    pub detectable: Option<f64>,
    /// Why the verdict is what it is, when that is not evident from the numbers.
    pub reason: Option<String>,
    /// How finely the values were printed, when they were not measured to the last digit; the
    /// interval then includes what the rounding may hide (`stats::resolution`).
    pub resolution: Option<Resolution>,
    /// What a reader must know beside the verdict and its numbers (that the interval leaves
    /// out the variation from run to run, say); shown in the verdict's sentence.
    pub note: Option<String>,
    /// Significance level the verdict used: the run's alpha, or a sequential look's share.
    pub alpha: f64,
    pub band: f64,
}

impl Comparison {
    /// The p-value the verdict uses: adjusted when part of a family.
    pub fn p_for_verdict(&self) -> f64 {
        self.p_adjusted.unwrap_or(self.p_value)
    }

    /// A family of comparisons with Benjamini-Hochberg adjusted p-values and the verdicts they
    /// give; a family of one is left as it is.
    pub fn adjust_family(family: Vec<Comparison>) -> Vec<Comparison> {
        if family.len() < 2 {
            return family;
        }
        let adjusted = super::benjamini_hochberg(&family.iter().map(|c| c.p_value).collect::<Vec<_>>());
        family
            .into_iter()
            .zip(adjusted)
            .map(|(c, p)| c.with_adjusted_p(p))
            .collect()
    }

    /// Re-derives the verdict with a family-adjusted p-value.
    pub fn with_adjusted_p(mut self, p_adjusted: f64) -> Comparison {
        self.p_adjusted = Some(p_adjusted);
        if self.ratio_ci.is_some() {
            self.decide();
        }
        self
    }

    fn decide(&mut self) {
        let (lo, hi) = match self.ratio_ci {
            Some(ci) => ci,
            None => return,
        };
        let limited = self.resolution.is_some_and(|r| r.limits(self.band));
        self.detectable = if limited {
            None
        } else {
            detectable(lo, hi, self.confidence, self.alpha, self.band)
        };
        let p = self.p_for_verdict();
        let (low_edge, high_edge) = (1.0 - self.band, 1.0 + self.band);
        let below = hi < low_edge;
        let above = lo > high_edge;
        let lower_better = self.direction == Direction::LowerIsBetter;
        self.reps_needed = None;
        self.reason = None;
        self.verdict = if p < self.alpha && (below || above) {
            if below == lower_better {
                Verdict::Faster
            } else {
                Verdict::Slower
            }
        } else if lo >= low_edge && hi <= high_edge && hi > lo {
            Verdict::NoChange
        } else if hi <= lo {
            // Values that did not vary at all say nothing about an effect smaller than their
            // resolution; a zero-width interval is never "no change".
            self.reason = Some("the interval has no width: the values did not vary".to_owned());
            Verdict::Inconclusive
        } else if self.resolution.is_some_and(|r| r.coarse(self.band)) {
            // More blocks cannot narrow the interval below what the printing hides.
            self.reason = Some("the values' resolution is coarser than the noise band".to_owned());
            Verdict::Inconclusive
        } else {
            let paired = self.design == Design::Paired;
            let n = self.n_baseline.min(self.n_candidate);
            self.reps_needed = match self.design {
                // More trials would not narrow an interval made of the spread between runs.
                Design::Runs => None,
                _ => reps_needed(self.ratio, (lo, hi), p, n, paired, self),
            };
            self.reason = Some(if below || above {
                format!(
                    "interval is outside the noise band but p = {p:.3} is not below alpha = {}",
                    self.alpha
                )
            } else {
                "interval straddles the noise band".to_owned()
            });
            Verdict::Inconclusive
        };
    }
}

/// Estimates the repetitions per side that would settle an inconclusive comparison (see the
/// module docs for the model). `None` when the estimate is meaningless (effect exactly on the
/// band edge, or beyond a million repetitions).
fn reps_needed(ratio: f64, (lo, hi): (f64, f64), p: f64, n: usize, paired: bool, c: &Comparison) -> Option<usize> {
    // A look that spends no error (alpha 0) can reject at no size: nothing to estimate.
    if !(lo > 0.0 && ratio > 0.0) || n == 0 || c.alpha.is_nan() || c.alpha <= 0.0 {
        return None;
    }
    let center = ratio.ln();
    let half = (hi.ln() - lo.ln()) / 2.0;
    let edge = if center < 0.0 {
        (1.0 - c.band).ln()
    } else {
        (1.0 + c.band).ln()
    };
    let gap = (center - edge).abs();
    if gap < 1e-9 {
        return None;
    }
    let nf = n as f64;
    let mut needed = (nf * (half / gap).powi(2)).ceil();
    let outside = hi < 1.0 - c.band || lo > 1.0 + c.band;
    if outside && p >= c.alpha && p < 1.0 {
        // The interval already clears the band; the test statistic's z grows with sqrt(n).
        let z_obs = normal_isf(p / 2.0);
        let z_need = normal_isf(c.alpha / 2.0);
        if z_obs > 0.0 {
            needed = needed.max((nf * (z_need / z_obs).powi(2)).ceil());
        }
    }
    let mut needed = needed.max(nf + 1.0);
    // Bounded before the search below: an effect a hair from the band edge asks for ~1e11
    // repetitions, and walking up to that many one by one never ends.
    if needed.is_nan() || needed > MAX_REPS_NEEDED {
        return None;
    }
    if paired {
        // 2 / 2^n < alpha from n = floor(log2(2 / alpha)) + 1 on.
        needed = needed.max((2.0 / c.alpha).log2().floor() + 1.0);
    }
    while min_attainable_p(needed as usize, paired) >= c.alpha {
        needed += 1.0;
        if needed > MAX_REPS_NEEDED {
            return None;
        }
    }
    Some(needed as usize)
}

/// `0.95` as `95`, `0.9937` as `99.37`: a level in percent with the digits it has, up to two.
pub fn percent_level(level: f64) -> String {
    let s = format!("{:.2}", level * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Beyond this many repetitions an estimate is not worth stating (shown as "more than").
const MAX_REPS_NEEDED: f64 = 1e6;

/// The smallest speedup the verdict rule would call faster with [`DETECTABLE_POWER`], given
/// a ratio interval `(lo, hi)` at level `confidence`: its half-width in log space gives the
/// standard error `se`, and "faster" needs the interval's near end past the band edge and the
/// estimate past the test's critical value, so the effect must reach
/// `max(ln(1 + band) + z_ci se, z_alpha se) + z_power se`. A normal approximation, stated as
/// such; `None` for an interval that is not positive and finite.
fn detectable(lo: f64, hi: f64, confidence: f64, alpha: f64, band: f64) -> Option<f64> {
    if !(lo > 0.0 && hi.is_finite() && hi >= lo && confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let z_ci = normal_isf((1.0 - confidence) / 2.0);
    let se = (hi.ln() - lo.ln()) / (2.0 * z_ci);
    let needed =
        ((1.0 + band).ln() + z_ci * se).max(normal_isf(alpha / 2.0) * se) + normal_isf(1.0 - DETECTABLE_POWER) * se;
    Some(needed.exp())
}

fn oriented(ratio: f64, ci: Option<(f64, f64)>, direction: Direction) -> (f64, Option<(f64, f64)>) {
    match direction {
        Direction::LowerIsBetter => (1.0 / ratio, ci.map(|(lo, hi)| (1.0 / hi, 1.0 / lo))),
        Direction::HigherIsBetter => (ratio, ci),
    }
}

fn degenerate(mut c: Comparison, reason: &str) -> Comparison {
    c.verdict = Verdict::Inconclusive;
    c.ratio_ci = None;
    c.speedup_ci = None;
    c.reason = Some(reason.to_owned());
    c
}

fn skeleton(design: Direction, settings: &CompareSettings, kind: Design) -> Comparison {
    Comparison {
        design: kind,
        direction: design,
        n_baseline: 0,
        n_candidate: 0,
        baseline_median: f64::NAN,
        candidate_median: f64::NAN,
        ratio: f64::NAN,
        ratio_ci: None,
        speedup: f64::NAN,
        speedup_ci: None,
        p_value: 1.0,
        p_adjusted: None,
        verdict: Verdict::Inconclusive,
        reps_needed: None,
        detectable: None,
        reason: None,
        resolution: None,
        note: None,
        confidence: 1.0 - INTERVAL_ERROR,
        look: None,
        alpha: settings.alpha,
        band: settings.band,
    }
}

/// The most often a single comparison or claim gives a wrong verdict: `alpha` for "faster" or
/// "slower" with no true effect, and one side of a 95% interval's error (2.5%) for any verdict
/// that reads the interval ("no change", "supported", "refuted", a direction beyond the band).
pub fn question_error(alpha: f64) -> f64 {
    alpha.max(INTERVAL_ERROR / 2.0)
}

/// The most often any of `questions` comparisons and claims gives a wrong verdict: the sum of
/// their own levels (the union bound), at most 1. Each question is controlled on its own;
/// reports state this figure for the family.
pub fn family_error(questions: usize, alpha: f64) -> f64 {
    (questions as f64 * question_error(alpha)).min(1.0)
}

/// The default run-to-run spread `measured compare` assumes where no earlier runs measure it:
/// 5% (one standard deviation of a whole run's level), above the 3% seen across reboots and
/// neighbours on shared machines.
pub const ASSUMED_RUN_SPREAD: f64 = 0.05;

/// One config's level in two runs. `trials` is the comparison of their trials as independent
/// samples (before as the baseline), kept for its medians. The level is judged against
/// `spread`, the run-to-run variation of a whole run's level (`stats::runs`): a test of one
/// run's log median against the other's, its interval the change with that spread. A shift of
/// a whole run's level is then no code change unless it is larger than the runs' own variation.
/// The verdict's note says where the spread came from.
pub fn compare_run_levels(trials: Comparison, spread: &super::RunSpread) -> Comparison {
    let mut c = trials;
    let Some(t) = spread.judge(c.baseline_median.ln(), c.candidate_median.ln()) else {
        return c;
    };
    if !(c.baseline_median > 0.0 && c.candidate_median > 0.0) {
        return c;
    }
    c.design = Design::Runs;
    c.ratio = t.ratio;
    c.ratio_ci = Some(t.ratio_ci);
    c.p_value = t.p;
    c.p_adjusted = None;
    c.confidence = 1.0 - INTERVAL_ERROR;
    c.look = None;
    c.resolution = None;
    (c.speedup, c.speedup_ci) = oriented(c.ratio, c.ratio_ci, c.direction);
    c.decide();
    c.detectable = None;
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    c.note = Some(match spread.source {
        super::SpreadSource::Series => format!(
            "judged against the run-to-run variation of {} earlier runs of this config on this machine (±{})",
            spread.runs,
            pct(spread.sd)
        ),
        super::SpreadSource::Machine => format!(
            "judged against the run-to-run variation of {} earlier runs of other configs on this machine (±{})",
            spread.runs,
            pct(spread.sd)
        ),
        super::SpreadSource::Assumed => format!(
            "judged against an assumed run-to-run variation of ±{}: no earlier runs on this machine measured it \
             (--run-spread sets it; a run of both revisions with --rev pairs them instead)",
            pct(spread.sd)
        ),
    });
    c
}

/// Compares independent samples: ratio of medians with a percentile-bootstrap 95% interval and
/// the Mann-Whitney U p-value, each side's resolution read off its values. Degenerate input
/// gives an inconclusive verdict with a reason.
pub fn compare(baseline: &[f64], candidate: &[f64], direction: Direction, settings: &CompareSettings) -> Comparison {
    compare_at(
        baseline,
        candidate,
        (resolution(baseline), resolution(candidate)),
        direction,
        settings,
    )
}

/// [`compare`] with each side's resolution given: `steps` as printed (`stats::resolution`), 0
/// for values that are exact or continuous (counts and sizes are exact whole numbers).
pub fn compare_at(
    baseline: &[f64],
    candidate: &[f64],
    steps: (f64, f64),
    direction: Direction,
    settings: &CompareSettings,
) -> Comparison {
    let mut c = skeleton(direction, settings, Design::Independent);
    c.n_baseline = baseline.len();
    c.n_candidate = candidate.len();
    if baseline.iter().chain(candidate).any(|v| !v.is_finite()) {
        return degenerate(c, "samples contain non-finite values");
    }
    c.baseline_median = median(baseline);
    c.candidate_median = median(candidate);
    if baseline.len() < 2 || candidate.len() < 2 {
        return degenerate(c, "needs at least 2 repetitions per side");
    }
    if c.baseline_median <= 0.0 || c.candidate_median <= 0.0 {
        return degenerate(c, "a ratio needs positive medians on both sides");
    }
    c.ratio = c.candidate_median / c.baseline_median;
    (c.speedup, _) = oriented(c.ratio, None, direction);
    c.p_value = mann_whitney_u(candidate, baseline).1;
    c.resolution = Resolution::of(steps.0, steps.1, c.baseline_median, c.candidate_median);
    let reps = ratio_of_medians_replicates(baseline, candidate, settings.resamples, settings.seed);
    match percentile_interval(reps, 0.95) {
        Some(ci) => {
            c.ratio_ci = match c.resolution {
                // Each median is known to within half its side's step: the ratio's interval
                // widens by the ratios those bounds allow.
                Some(r) => {
                    let (hb, hc) = (r.baseline / 2.0, r.candidate / 2.0);
                    let (mb, mc) = (c.baseline_median, c.candidate_median);
                    if mb - hb <= 0.0 || mc - hc <= 0.0 {
                        return degenerate(c, "the medians are within half a printed step of zero");
                    }
                    Some((
                        ci.0 * (mc - hc) / mc * mb / (mb + hb),
                        ci.1 * (mc + hc) / mc * mb / (mb - hb),
                    ))
                }
                None => Some(ci),
            };
            (c.speedup, c.speedup_ci) = oriented(c.ratio, c.ratio_ci, direction);
            c.decide();
            c
        }
        None => degenerate(c, "bootstrap resamples hit zero medians; the ratio is unstable"),
    }
}

/// Compares a block design: `pairs` holds `(baseline, candidate)` per block, one value of each
/// per block, whose resolution is read off the pairs themselves. See [`compare_paired_at`].
pub fn compare_paired(pairs: &[(f64, f64)], direction: Direction, settings: &CompareSettings) -> Comparison {
    let base: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let cand: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    compare_paired_at(pairs, (resolution(&base), resolution(&cand)), direction, settings)
}

/// Compares a block design: `pairs` holds `(baseline, candidate)` per block (a block's mean
/// where it ran a config more than once), and `steps` the resolution of each side's values as
/// printed (`stats::resolution`; 0 for continuous values). The ratio is the exponential of the
/// Hodges-Lehmann estimate of the per-block log ratios, its interval the Walsh averages that
/// invert the signed-rank test, widened by what the printing may hide, and p that test's (see
/// `stats::paired`). With `settings.sequential`, the test and interval use the levels of that
/// look (see `stats::sequential`).
pub fn compare_paired_at(
    pairs: &[(f64, f64)],
    steps: (f64, f64),
    direction: Direction,
    settings: &CompareSettings,
) -> Comparison {
    let mut c = skeleton(direction, settings, Design::Paired);
    let mut error = INTERVAL_ERROR;
    c.n_baseline = pairs.len();
    c.n_candidate = pairs.len();
    if pairs.iter().any(|(a, b)| !a.is_finite() || !b.is_finite()) {
        return degenerate(c, "samples contain non-finite values");
    }
    let base: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let cand: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    c.baseline_median = median(&base);
    c.candidate_median = median(&cand);
    if let Some(seq) = settings.sequential {
        let look = seq.plan.look(seq.blocks, settings.alpha, INTERVAL_ERROR);
        c.alpha = look.alpha;
        error = look.error;
        c.confidence = 1.0 - error;
        c.look = Some(look);
        if error <= 0.0 {
            let first = seq.plan.first_deciding_look(settings.alpha, INTERVAL_ERROR);
            let reason = match first {
                Some(f) => format!(
                    "a look after {} blocks cannot decide (it spends none of alpha); the first that can is after {f}",
                    seq.blocks
                ),
                None => format!("no look of this plan can decide (after {} blocks)", seq.blocks),
            };
            return degenerate(c, &reason);
        }
    }
    if pairs.len() < 2 {
        return degenerate(c, "needs at least 2 blocks");
    }
    if pairs.iter().any(|(a, b)| *a <= 0.0 || *b <= 0.0) {
        return degenerate(c, "per-block ratios need positive values");
    }
    let logs: Vec<f64> = pairs.iter().map(|(a, b)| (b / a).ln()).collect();
    c.resolution = Resolution::of(steps.0, steps.1, c.baseline_median, c.candidate_median);
    let (lower, upper) = match c.resolution {
        Some(_) => match log_ratio_bounds(pairs, steps) {
            Some(bounds) => bounds,
            None => return degenerate(c, "a value is within half a printed step of zero"),
        },
        None => (logs.clone(), logs.clone()),
    };
    let b = bounded(&logs, &lower, &upper, error);
    c.ratio = b.estimate.exp();
    c.p_value = b.p;
    (c.speedup, _) = oriented(c.ratio, None, direction);
    match b.interval {
        Some((lo, hi)) => {
            c.ratio_ci = Some((lo.exp(), hi.exp()));
            (c.speedup, c.speedup_ci) = oriented(c.ratio, c.ratio_ci, direction);
            c.decide();
            c
        }
        None => {
            let reason = format!(
                "too few blocks for a {}% interval, which needs {}",
                percent_level(c.confidence),
                min_values_for_interval(error)
            );
            degenerate(c, &reason)
        }
    }
}

#[cfg(test)]
#[path = "tests/compare.rs"]
mod tests;
