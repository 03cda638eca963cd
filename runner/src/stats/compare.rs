//! Candidate-vs-baseline comparisons (stats core: samples of two configs -> ratio, CI, p, verdict).

use serde::Serialize;

use super::bootstrap::{percentile_interval, ratio_of_medians_replicates};
use super::dist::normal_isf;
use super::paired::{min_values_for_interval, WalshAverages};
use super::rank::{mann_whitney_u, min_attainable_p, wilcoxon_signed_rank};
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
        self.detectable = detectable(lo, hi, self.confidence, self.alpha, self.band);
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
        } else if lo >= low_edge && hi <= high_edge {
            Verdict::NoChange
        } else {
            let paired = self.design == Design::Paired;
            let n = self.n_baseline.min(self.n_candidate);
            self.reps_needed = reps_needed(self.ratio, (lo, hi), p, n, paired, self);
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
    if !(lo > 0.0 && ratio > 0.0) || n == 0 {
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
        confidence: 1.0 - INTERVAL_ERROR,
        look: None,
        alpha: settings.alpha,
        band: settings.band,
    }
}

/// Compares independent samples: ratio of medians with a percentile-bootstrap 95% interval and
/// the Mann-Whitney U p-value. Degenerate input gives an inconclusive verdict with a reason.
pub fn compare(baseline: &[f64], candidate: &[f64], direction: Direction, settings: &CompareSettings) -> Comparison {
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
    let reps = ratio_of_medians_replicates(baseline, candidate, settings.resamples, settings.seed);
    match percentile_interval(reps, 0.95) {
        Some(ci) => {
            c.ratio_ci = Some(ci);
            (c.speedup, c.speedup_ci) = oriented(c.ratio, c.ratio_ci, direction);
            c.decide();
            c
        }
        None => degenerate(c, "bootstrap resamples hit zero medians; the ratio is unstable"),
    }
}

/// Compares a block design: `pairs` holds `(baseline, candidate)` per block. The ratio is the
/// exponential of the Hodges-Lehmann estimate of the per-block log ratios, its interval the
/// Walsh averages that invert the signed-rank test, and p the signed-rank test's (see
/// `stats::paired`). With `settings.sequential`, the test and interval use the levels of
/// that look (see `stats::sequential`).
pub fn compare_paired(pairs: &[(f64, f64)], direction: Direction, settings: &CompareSettings) -> Comparison {
    let mut c = skeleton(direction, settings, Design::Paired);
    let mut error = INTERVAL_ERROR;
    if let Some(seq) = settings.sequential {
        let look = seq.plan.look(seq.blocks, settings.alpha, INTERVAL_ERROR);
        c.alpha = look.alpha;
        error = look.error;
        c.confidence = 1.0 - error;
        c.look = Some(look);
    }
    c.n_baseline = pairs.len();
    c.n_candidate = pairs.len();
    if pairs.iter().any(|(a, b)| !a.is_finite() || !b.is_finite()) {
        return degenerate(c, "samples contain non-finite values");
    }
    let base: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let cand: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    c.baseline_median = median(&base);
    c.candidate_median = median(&cand);
    if pairs.len() < 2 {
        return degenerate(c, "needs at least 2 blocks");
    }
    if pairs.iter().any(|(a, b)| *a <= 0.0 || *b <= 0.0) {
        return degenerate(c, "per-block ratios need positive values");
    }
    let logs: Vec<f64> = pairs.iter().map(|(a, b)| (b / a).ln()).collect();
    let mut walsh = WalshAverages::of(&logs);
    c.ratio = walsh.median().exp();
    c.p_value = wilcoxon_signed_rank(&logs).1;
    (c.speedup, _) = oriented(c.ratio, None, direction);
    match walsh.interval(error) {
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
mod tests {
    use super::*;

    fn settings() -> CompareSettings {
        CompareSettings {
            resamples: 2_000,
            ..CompareSettings::default()
        }
    }

    #[test]
    fn clear_speedup_is_faster() {
        let base = [10.0, 10.1, 9.9, 10.2, 10.05, 9.95, 10.0, 10.1];
        let cand: Vec<f64> = base.iter().map(|v| v * 0.7).collect();
        let c = compare(&base, &cand, Direction::LowerIsBetter, &settings());
        assert_eq!(c.verdict, Verdict::Faster, "{c:?}");
        assert!((c.speedup - 1.0 / 0.7).abs() < 1e-9);
        let (lo, hi) = c.speedup_ci.unwrap();
        assert!(lo <= c.speedup && c.speedup <= hi);
        // Same data as a throughput metric: lower is worse.
        let t = compare(&base, &cand, Direction::HigherIsBetter, &settings());
        assert_eq!(t.verdict, Verdict::Slower);
    }

    #[test]
    fn identical_samples_are_no_change() {
        let v = [3.0; 6];
        let c = compare(&v, &v, Direction::LowerIsBetter, &settings());
        assert_eq!(c.verdict, Verdict::NoChange);
        assert_eq!(c.ratio_ci, Some((1.0, 1.0)));
        assert_eq!(c.p_value, 1.0);
    }

    #[test]
    fn degenerate_inputs_are_inconclusive_with_reason() {
        let s = settings();
        for (a, b) in [
            (vec![1.0], vec![1.0, 2.0]),
            (vec![], vec![]),
            (vec![0.0, 0.0, 0.0], vec![1.0, 1.0, 1.0]),
            (vec![1.0, f64::NAN], vec![1.0, 2.0]),
        ] {
            let c = compare(&a, &b, Direction::LowerIsBetter, &s);
            assert_eq!(c.verdict, Verdict::Inconclusive);
            assert!(c.reason.is_some() && c.ratio_ci.is_none());
        }
        let p = compare_paired(&[(1.0, 2.0)], Direction::LowerIsBetter, &s);
        assert_eq!(p.verdict, Verdict::Inconclusive);
        let z = compare_paired(&[(1.0, 0.0), (1.0, 1.0)], Direction::LowerIsBetter, &s);
        assert!(z.reason.unwrap().contains("positive"));
    }

    #[test]
    fn small_noisy_sample_asks_for_more_reps() {
        let base = [10.0, 11.5, 9.0, 10.8];
        let cand = [9.6, 10.9, 8.9, 10.2];
        let c = compare(&base, &cand, Direction::LowerIsBetter, &settings());
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(c.reps_needed.unwrap() > 4, "{c:?}");
    }

    #[test]
    fn paired_blocks_remove_block_noise() {
        // Block-to-block drift of ±30% hides a 10% effect from an unpaired test, but every
        // block shows the candidate 10% faster.
        let drift = [1.0, 1.3, 0.7, 1.2, 0.8, 1.25, 0.75, 1.1, 0.9, 1.15, 0.85, 1.05];
        let noise = [
            1.0, 1.004, 0.997, 1.002, 0.999, 1.003, 0.996, 1.001, 1.0, 0.998, 1.002, 0.999,
        ];
        let pairs: Vec<(f64, f64)> = drift.iter().zip(noise).map(|(d, e)| (10.0 * d, 9.0 * d * e)).collect();
        let c = compare_paired(&pairs, Direction::LowerIsBetter, &settings());
        assert_eq!(c.verdict, Verdict::Faster, "{c:?}");
        assert!((c.ratio - 0.9).abs() < 0.01);
        let (b, a): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        let unpaired = compare(&b, &a, Direction::LowerIsBetter, &settings());
        assert_eq!(unpaired.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn adjusted_p_can_demote_a_verdict() {
        let base = [10.0, 10.1, 9.9, 10.2, 10.05, 9.95];
        let cand = [9.0, 9.1, 8.9, 9.2, 9.05, 8.95];
        let c = compare(&base, &cand, Direction::LowerIsBetter, &settings());
        assert_eq!(c.verdict, Verdict::Faster);
        let adj = c.with_adjusted_p(0.05);
        assert_eq!(adj.verdict, Verdict::Inconclusive);
        assert!(adj.reps_needed.is_some());
    }
}
