//! Statistics over stored trial samples (store -> **stats** -> report): summaries, bootstrap
//! intervals, rank tests, verdicts, guards and claims.
//!
//! # Formulas
//!
//! **Summary** ([`Summary::of`]): `median` is the middle order statistic (mean of the two middle
//! ones for even n); `stddev` is the sample standard deviation (divisor n - 1, 0 when n < 2);
//! `MAD = median(|x_i - median|)` (unscaled). A value is flagged as an outlier when its modified
//! z-score `0.6745 * |x_i - median| / MAD` exceeds 3.5 (Iglewicz & Hoaglin). When MAD is 0 the
//! score is infinite for any value that differs from the median, so those are flagged. Outliers
//! are reported by index and never dropped.
//!
//! **Ratio of medians** ([`compare`]): `ratio = median(candidate) / median(baseline)`. Its 95%
//! interval is a seeded *percentile* bootstrap: each of `resamples` rounds draws both samples
//! with replacement (independently) and recomputes the ratio; the interval is the 2.5% and 97.5%
//! empirical quantiles (linear interpolation between order statistics). Percentile rather than
//! BCa because the jackknife acceleration estimate is unreliable for the median; the coverage test
//! in this module's tests checks the percentile interval directly.
//!
//! **Speedup**: oriented so that > 1 means better. For lower-is-better metrics
//! `speedup = 1 / ratio` (its interval is the inverted ratio interval); for higher-is-better
//! metrics `speedup = ratio`.
//!
//! **Mann-Whitney U** (two-sided), matching `scipy.stats.mannwhitneyu(method="auto")`: the exact
//! null distribution of U is used when there are no ties and at least one sample has n <= 8;
//! otherwise the normal approximation with tie correction
//! `sigma^2 = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1)))` and continuity correction
//! `z = (max(U1, U2) - n1 n2 / 2 - 0.5) / sigma`, `p = 2 * (1 - Phi(z))`, capped at 1.
//!
//! **Paired design** ([`compare_paired`], [`compare_paired_at`]): per block `r_i =
//! ln(candidate_i / baseline_i)`. The ratio is `exp(HL(r))`, the Hodges-Lehmann estimate
//! (median of the Walsh averages `(r_i + r_j) / 2`, `i <= j`); its interval holds the Walsh
//! averages between the `k`-th smallest and the `k`-th largest, `k` the largest count with
//! `F(k - 1) <= error / 2`, `F` the null CDF of the signed-rank statistic `W+` (exact to 50
//! blocks, normal beyond). The p-value is read off the same averages (`W+` counts the positive
//! ones): `2 min(F(m - A), F(m - B))`, `A` and `B` the averages above and below zero, so test and
//! interval invert each other exactly, with ties and zeros too (those count on neither side).
//! Because each block's configs run in shuffled order, `r_i` is symmetric about the true
//! effect under any drift, which is all these need (`stats::paired` explains why not a
//! bootstrap of the mean).
//!
//! **Printed values** ([`resolution`]): values printed at a step `q` (whole milliseconds, say)
//! are read as `v ± q/2`; each end of an interval is computed from the bound on its side, so
//! coverage holds whatever the rounding hid (`stats::resolution`, `stats::paired`).
//!
//! **Sequential runs** ([`SequentialPlan`]): paired comparisons at a look use that look's share
//! of alpha for the test and of the 5% for the interval (Pocock-type alpha spending over the
//! looks, summed by the union bound); a look that cannot reject, or cannot give an interval,
//! spends nothing (`stats::sequential`).
//!
//! **Across runs** ([`steps`], [`compare_run_levels`], [`ratio_of_ratios`]): one value per run
//! (a config's median, on a log scale), judged against the run-to-run variation the runs
//! themselves show; a whole run's shift is not a code change (`stats::runs`).
//!
//! **Stability** ([`stability`]): the baseline's level change (median of the last third of its
//! trials over the first third's, with an interval that allows for autocorrelated noise) and its
//! trial-to-trial CV from successive differences (`stats::drift`).
//!
//! **Verdict** with the noise band `[1 - band, 1 + band]` on the ratio:
//! better/worse when `p < alpha` and the whole ratio interval lies outside the band on one side;
//! `NoChange` when the interval lies inside the band and has some width (a zero-width interval
//! says nothing below the values' resolution); otherwise `Inconclusive`. For an inconclusive
//! result, `reps_needed` assumes the interval's half-width in log space shrinks with
//! `1 / sqrt(n)`: with half-width `h` at `n` repetitions and gap `g` between the log point
//! estimate and the nearest band edge, `n' = ceil(n * (h / g)^2)`. It is also raised to the
//! smallest n at which the rank test can reach `p < alpha` at all. None is given when the
//! values' resolution is coarser than the band, since more blocks cannot help.
//!
//! **Multiple comparisons** ([`benjamini_hochberg`]): step-up adjusted p-values
//! `p_(i) * m / i`, made monotone from the largest rank down and capped at 1. Each question
//! (comparison or claim) is controlled on its own, at [`question_error`]; a report states the
//! union bound over its questions ([`family_error`]).
//!
//! **Guard** ([`guard`]): two one-sided tests via the `(1 - 2 alpha)` Welch interval of the
//! difference of means `candidate - baseline`; pass when it lies within `±tolerance`, fail when
//! it lies entirely outside, else inconclusive. A relative tolerance is taken relative to
//! `|mean(baseline)|`.
//!
//! **Claim** ([`Claim::parse`], [`evaluate`]): a claimed speedup range is widened by the noise
//! band only at its edges away from 1 (never across it). *Supported* when the measured interval
//! lies inside the widened range, holds no 1 (for a claim of an effect) and is not "no change";
//! *refuted* when it lies wholly outside it; *inconclusive* when it straddles an edge or holds
//! 1; *untestable* when nothing could be measured, the claim is no finite speedup, or its whole
//! range lies inside the noise band.
//!
//! **Scaling** ([`serial_fraction`], [`cost_exponent`]): Amdahl's serial fraction by weighted
//! least squares of `T = T1 (f + (1 - f)/p)` and the exponent `b` of `T ∝ size^b` by least squares
//! in log-log space, both fitted to per-config medians, with percentile-bootstrap intervals that
//! resample trials within each config; the choice of estimators is explained in that module.

mod bootstrap;
mod claim;
mod claim_value;
mod compare;
mod conditions;
mod dist;
mod drift;
mod guard;
mod hardware;
mod paired;
mod rank;
mod resolution;
mod runs;
mod scaling;
mod sequential;
mod spec;
mod summary;

#[cfg(test)]
mod tests;

pub use bootstrap::{bootstrap_median_ci, quantile_sorted};
pub use claim::MIN_CLAIM_REPETITIONS;
pub use claim::{assess, evaluate, Claim, ClaimEvaluation, ClaimParseError, ClaimUnit, ClaimVerdict};
pub use claim_value::assess_value;
pub use compare::{
    compare, compare_at, compare_paired, compare_paired_at, compare_run_levels, family_error, percent_level,
    question_error, Comparison, Design, ASSUMED_RUN_SPREAD, DETECTABLE_POWER, INTERVAL_ERROR,
};
pub use conditions::{
    params_unmet, thread_counts, unmet, ClaimConditions, Measured, MetricBelow, Ran, RanFacts, PARALLELISM_PARAMS,
};
pub(crate) use dist::student_t_quantile;
pub use drift::{stability, Stability, JITTER_CV, MIN_DRIFT_TRIALS, MIN_STABILITY_TRIALS};
pub use guard::{guard, guard_paired, GuardResult, GuardVerdict, Tolerance, ToleranceParseError};
pub use hardware::MadeOn;
pub use paired::{hodges_lehmann, min_values_for_interval, walsh_interval};
pub use rank::{benjamini_hochberg, mann_whitney_u, min_attainable_p, wilcoxon_signed_rank};
pub use resolution::{resolution, Resolution};
pub use runs::{level_test, moved, ratio_of_ratios, steps, LevelTest, RunSpread, SpreadSource, StepCall, STEP_WINDOW};
pub use scaling::{amdahl_fit, cost_exponent, power_fit, serial_fraction, speedup, AmdahlFit, Estimate, PowerFit};
pub use sequential::{spent, Look, LookLevel, SequentialPlan, LOOK_GROWTH};
pub use spec::{ClaimSpec, CompareSpec, GuardSpec};
pub use summary::{median, Summary};

use serde::{Deserialize, Serialize};

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    LowerIsBetter,
    HigherIsBetter,
}

impl Direction {
    /// Infers the direction from a metric unit: rates (`*/s`) and `score` improve upwards;
    /// `s`, `B`, `count`, `loss` and anything unknown improve downwards, since most measured
    /// quantities are costs.
    pub fn from_unit(unit: &str) -> Self {
        if unit.ends_with("/s") || unit == "score" {
            Direction::HigherIsBetter
        } else {
            Direction::LowerIsBetter
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Direction::LowerIsBetter => "lower is better",
            Direction::HigherIsBetter => "higher is better",
        }
    }
}

/// Knobs of a comparison; the defaults are the documented production values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CompareSettings {
    /// Significance level of the rank test.
    pub alpha: f64,
    /// Half-width of the noise band around a ratio of 1 (0.02 = ±2%).
    pub band: f64,
    /// Bootstrap resamples; at least 10,000 for reported results.
    pub resamples: usize,
    /// Seed of the bootstrap RNG, so reports are reproducible.
    pub seed: u64,
    /// A sequential run's plan and the blocks it has completed: paired comparisons then use
    /// the levels of that look. `None` for a fixed number of repetitions.
    pub sequential: Option<SequentialState>,
}

/// Where a sequential run stands: its plan and how many blocks are complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SequentialState {
    pub plan: SequentialPlan,
    pub blocks: u32,
}

impl Default for CompareSettings {
    fn default() -> Self {
        Self {
            alpha: 0.01,
            band: 0.02,
            resamples: 10_000,
            seed: 0x6d65_6173_7572_6564,
            sequential: None,
        }
    }
}

/// Outcome of a comparison, oriented by the metric's direction: `Faster` means better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    NoChange,
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoChange => "no change",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}
