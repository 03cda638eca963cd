//! Claimed speedups (manifest `[compare].claims` text -> speedup interval -> verdict in reports).

use serde::{Deserialize, Serialize};

use super::{Comparison, Direction};

/// Width of the tolerance around a point claim ("1.5x", "~2x", "90%"): the claim becomes
/// `[0.9 v, 1.1 v]` on the speedup scale, since nobody claiming "1.5x" means exactly 1.500x.
pub const POINT_CLAIM_TOLERANCE: f64 = 0.10;

/// Largest speedup factor a claim may state: beyond it no measurement here could tell.
pub const MAX_CLAIM_FACTOR: f64 = 1e6;
/// Largest change in percent a claim may state.
pub const MAX_CLAIM_PERCENT: f64 = 1e6;

/// What the claimed numbers mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimUnit {
    /// A speedup factor, `3x`.
    Multiplier,
    /// An improvement in percent: `1 - candidate/baseline` for lower-is-better metrics (so
    /// "90%" means 90% less time), `candidate/baseline - 1` for higher-is-better ones.
    Percent,
    /// A range for the metric's own value, in the metric's unit (a time in seconds): `value =
    /// "2ms..10ms"`, judged on the interval of the variant's median rather than a speedup.
    Value,
}

/// A parsed claim, in the units it was written in. `high` may be infinite (`>= 20%`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub unit: ClaimUnit,
    pub low: f64,
    /// `null` in JSON when unbounded (JSON has no infinity).
    #[serde(with = "unbounded")]
    pub high: f64,
    /// A single value (with or without `~`): widened by [`POINT_CLAIM_TOLERANCE`].
    pub point: bool,
}

/// An upper bound that may be infinite, as `null` in JSON, which has no infinity.
mod unbounded {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_some(v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

/// A claim that does not parse; the manifest validator attaches the location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid claim `{input}`: {message}")]
pub struct ClaimParseError {
    pub input: String,
    pub message: String,
    pub hint: String,
}

const HINT: &str = "write a speedup like \"1.5x\", \"~2x\", \"3x..4x\" or \"3-4x\", or an \
                    improvement like \"20%\", \"5-15%\" or \">= 20%\"";

pub(super) fn parse_number(s: &str) -> Option<f64> {
    let v: f64 = s.trim().parse().ok()?;
    v.is_finite().then_some(v)
}

/// Splits a value into its number and unit (`"3x"` -> (3, Multiplier)); `None` unit when bare.
fn split_unit(s: &str) -> (&str, Option<ClaimUnit>) {
    let s = s.trim();
    if let Some(n) = s.strip_suffix('x').or_else(|| s.strip_suffix('×')) {
        (n, Some(ClaimUnit::Multiplier))
    } else if let Some(n) = s.strip_suffix('%') {
        (n, Some(ClaimUnit::Percent))
    } else {
        (s, None)
    }
}

impl Claim {
    // Long because: one parser for the claim grammar, a branch per form.
    /// Parses the claim forms `"1.5x"`, `"~2x"`, `"3x..4x"`, `"3-4x"`, `"20-50x"`, `"90%"`,
    /// `"5-15%"`, `"5%..15%"`, `">= 20%"` (also `>`, `<=`, `<`, and `>= 1.5x`).
    pub fn parse(text: &str) -> Result<Claim, ClaimParseError> {
        let err = |message: &str| ClaimParseError {
            input: text.to_owned(),
            message: message.to_owned(),
            hint: HINT.to_owned(),
        };
        let mut s = text.trim();
        let mut approx = false;
        let mut bound = None;
        if let Some(rest) = s.strip_prefix('~') {
            approx = true;
            s = rest.trim_start();
        }
        for op in [">=", "<=", ">", "<"] {
            if let Some(rest) = s.strip_prefix(op) {
                bound = Some(op);
                s = rest.trim_start();
                break;
            }
        }
        if approx && bound.is_some() {
            return Err(err("`~` cannot be combined with a comparison"));
        }
        // A range is "a..b" or "a-b"; the '-' search starts after the first character so that a
        // negative lower bound ("-5..10%") is not taken for the separator.
        let range = s.split_once("..").or_else(|| {
            s.char_indices()
                .skip(1)
                .find(|&(_, c)| c == '-')
                .map(|(i, _)| (&s[..i], &s[i + 1..]))
        });
        let claim = match range {
            Some((a, b)) => {
                if approx || bound.is_some() {
                    return Err(err("a range cannot also have `~` or a comparison"));
                }
                let (na, ua) = split_unit(a);
                let (nb, ub) = split_unit(b);
                let unit = match (ua, ub) {
                    (_, None) => return Err(err("the range needs a unit: `x` or `%`")),
                    (Some(u1), Some(u2)) if u1 != u2 => return Err(err("both ends of a range must use the same unit")),
                    (_, Some(u)) => u,
                };
                let low = parse_number(na).ok_or_else(|| err("the lower end is not a number"))?;
                let high = parse_number(nb).ok_or_else(|| err("the upper end is not a number"))?;
                if low > high {
                    return Err(err("the range is reversed (lower end above upper end)"));
                }
                Claim {
                    unit,
                    low,
                    high,
                    point: false,
                }
            }
            None => {
                let (n, unit) = split_unit(s);
                let unit = unit.ok_or_else(|| err("missing unit: `x` or `%`"))?;
                let v = parse_number(n).ok_or_else(|| err("not a number"))?;
                let lowest = match unit {
                    ClaimUnit::Multiplier | ClaimUnit::Value => 0.0,
                    ClaimUnit::Percent => f64::NEG_INFINITY,
                };
                match bound {
                    Some(">=") | Some(">") => Claim {
                        unit,
                        low: v,
                        high: f64::INFINITY,
                        point: false,
                    },
                    Some(_) => Claim {
                        unit,
                        low: lowest,
                        high: v,
                        point: false,
                    },
                    None => Claim {
                        unit,
                        low: v,
                        high: v,
                        point: true,
                    },
                }
            }
        };
        let largest = match claim.unit {
            ClaimUnit::Multiplier | ClaimUnit::Value => MAX_CLAIM_FACTOR,
            ClaimUnit::Percent => MAX_CLAIM_PERCENT,
        };
        if [claim.low, claim.high]
            .iter()
            .any(|v| v.is_finite() && v.abs() > largest)
        {
            return Err(err(match claim.unit {
                ClaimUnit::Multiplier | ClaimUnit::Value => {
                    "a speedup above 1,000,000x is not a claim anything here can measure"
                }
                ClaimUnit::Percent => "a change above 1,000,000% is not a claim anything here can measure",
            }));
        }
        if claim.unit == ClaimUnit::Multiplier && claim.low < 0.0 {
            return Err(err("a speedup factor must be positive"));
        }
        if claim.unit == ClaimUnit::Multiplier && claim.point && claim.low == 0.0 {
            return Err(err("a speedup factor must be positive"));
        }
        Ok(claim)
    }

    /// The claim on the speedup scale (> 1 = better), for a metric with `direction`.
    pub fn speedup_interval(&self, direction: Direction) -> (f64, f64) {
        let to_speedup = |v: f64| match (self.unit, direction) {
            (ClaimUnit::Multiplier | ClaimUnit::Value, _) => v,
            (ClaimUnit::Percent, Direction::HigherIsBetter) => (1.0 + v / 100.0).max(0.0),
            (ClaimUnit::Percent, Direction::LowerIsBetter) => {
                // improvement p => candidate/baseline = 1 - p, speedup = 1 / (1 - p).
                let remaining = 1.0 - v / 100.0;
                if remaining <= 0.0 {
                    f64::INFINITY
                } else {
                    1.0 / remaining
                }
            }
        };
        if self.unit == ClaimUnit::Value {
            return self.value_interval();
        }
        let (lo, hi) = (to_speedup(self.low), to_speedup(self.high));
        if self.point {
            (lo * (1.0 - POINT_CLAIM_TOLERANCE), hi * (1.0 + POINT_CLAIM_TOLERANCE))
        } else {
            (lo, hi)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimVerdict {
    /// The measured interval lies inside the claimed range (widened by the noise band).
    Supported,
    /// The measured interval lies wholly outside the claimed range (widened by the band).
    Refuted,
    /// The measured interval overlaps the claim's edge: more repetitions would settle it.
    Inconclusive,
    /// No run of this experiment could test the claim (the reason says why).
    Untestable,
    /// The run did not meet the conditions the claim was made under (device, cores, the
    /// parameters it names): it can neither support nor refute it.
    NotReproduced,
    /// The claim is about another change, or another measurement, than the experiment's: the
    /// measurement is context for it, never evidence for or against it.
    #[serde(rename = "not_this_experiments_claim")]
    NotThisExperiment,
}

impl ClaimVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimVerdict::Supported => "supported",
            ClaimVerdict::Refuted => "refuted",
            ClaimVerdict::Inconclusive => "inconclusive",
            ClaimVerdict::Untestable => "untestable",
            ClaimVerdict::NotReproduced => "not reproduced here",
            ClaimVerdict::NotThisExperiment => "not this experiment's claim",
        }
    }
}

/// A claim held against a measurement, with the intervals behind the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimEvaluation {
    pub verdict: ClaimVerdict,
    /// The claim on the speedup scale.
    pub claimed: (f64, f64),
    /// The measured 95% speedup interval, when there is one.
    pub measured: Option<(f64, f64)>,
    pub reason: String,
    /// For an inconclusive verdict: estimated repetitions per side (or blocks) that would
    /// settle it.
    pub reps_needed: Option<usize>,
}

impl ClaimVerdict {
    /// Whether the claim is settled: supported or refuted.
    pub fn decided(self) -> bool {
        matches!(self, ClaimVerdict::Supported | ClaimVerdict::Refuted)
    }

    /// Whether the claim was held against a measurement (decided or not): a question the
    /// report answers, as opposed to one it could not take up here.
    pub fn judged(self) -> bool {
        matches!(
            self,
            ClaimVerdict::Supported | ClaimVerdict::Refuted | ClaimVerdict::Inconclusive
        )
    }
}

/// Fewest measured repetitions per side for a claim to be judged.
pub const MIN_CLAIM_REPETITIONS: usize = 5;

/// Verdict of `claim` against a comparison (see [`assess`] for the details behind it).
pub fn evaluate(claim: &Claim, comparison: &Comparison) -> ClaimVerdict {
    assess(claim, comparison).verdict
}

/// The claimed speedup range widened by the noise band at the edges away from 1 (no effect),
/// never at an edge toward it and never across it: a measurement within the band beyond the
/// claim's far edge is as close as the experiment can tell, but the band must never let an
/// interval near "no effect" count for a claimed effect.
pub fn widened(claimed: (f64, f64), band: f64) -> (f64, f64) {
    let lo = if claimed.0 < 1.0 {
        claimed.0 * (1.0 - band)
    } else {
        claimed.0
    };
    let hi = if claimed.1 > 1.0 {
        claimed.1 * (1.0 + band)
    } else {
        claimed.1
    };
    (lo, hi)
}

/// Whether the claimed speedup range lies wholly inside the noise band, on the scale the band
/// is held on (candidate over baseline, `[1 - band, 1 + band]`): a claim the comparison cannot
/// tell from no effect at this band, whatever the data.
pub fn within_band(claimed: (f64, f64), band: f64, direction: Direction) -> bool {
    let ratio = |s: f64| match direction {
        Direction::LowerIsBetter => 1.0 / s,
        Direction::HigherIsBetter => s,
    };
    let eps = 1e-12;
    [claimed.0, claimed.1]
        .iter()
        .all(|s| s.is_finite() && *s > 0.0 && ratio(*s) >= 1.0 - band - eps && ratio(*s) <= 1.0 + band + eps)
}

// Long because: one match over every case a claim can be in, each with its reason.
/// Supported when the measured speedup interval lies inside the claimed range widened away from
/// 1 by the noise band, and neither holds 1 (for a claim that excludes it) nor lies inside the
/// band; refuted when it lies wholly outside that range; inconclusive otherwise (it straddles
/// an edge of the claim), with the repetitions that would settle it. A claim whose whole range
/// lies inside the band gets no verdict (untestable at this band, and the reason says what
/// would judge it). Untestable also when nothing could be measured or the claim is not a finite
/// speedup.
pub fn assess(claim: &Claim, comparison: &Comparison) -> ClaimEvaluation {
    let claimed = claim.speedup_interval(comparison.direction);
    let measured = comparison.speedup_ci;
    let n = comparison.n_baseline.min(comparison.n_candidate);
    let band = format!("±{}%", super::compare::percent_level(comparison.band));
    let mut reps_needed = None;
    let (verdict, reason) = match measured {
        _ if !claimed.0.is_finite() => (
            ClaimVerdict::Untestable,
            "the claim is not a finite speedup (an improvement of 100% or more in a cost)".to_owned(),
        ),
        _ if claim.unit != ClaimUnit::Value && within_band(claimed, comparison.band, comparison.direction) => (
            ClaimVerdict::Untestable,
            format!(
                "the claim lies within the {band} noise band: set a narrower `band` in [compare] and more blocks \
                 to judge it"
            ),
        ),
        // The percentile bootstrap covers less than it claims on tiny samples (about 88% at
        // n = 3 per side in simulation, 96% or more from n = 5): too few to settle a claim.
        Some(_) if n < MIN_CLAIM_REPETITIONS => (
            ClaimVerdict::Inconclusive,
            format!(
                "a claim needs at least {MIN_CLAIM_REPETITIONS} repetitions per side (this has {} vs {}): \
                 below that the 95% interval covers the truth less often than it says",
                comparison.n_baseline, comparison.n_candidate
            ),
        ),
        None if n == 0 => (
            ClaimVerdict::Untestable,
            comparison
                .reason
                .clone()
                .unwrap_or_else(|| "the metric has no sample on one side".to_owned()),
        ),
        None => (
            ClaimVerdict::Inconclusive,
            comparison
                .reason
                .clone()
                .unwrap_or_else(|| "no interval could be computed".to_owned()),
        ),
        Some((lo, hi)) => {
            let (wlo, whi) = widened(claimed, comparison.band);
            let excludes_one = claimed.0 > 1.0 || claimed.1 < 1.0;
            if hi < wlo {
                (ClaimVerdict::Refuted, "measured speedup is below the claim".to_owned())
            } else if lo > whi {
                (ClaimVerdict::Refuted, "measured speedup is above the claim".to_owned())
            } else if excludes_one && lo <= 1.0 && hi >= 1.0 {
                reps_needed = claim_reps_needed(comparison.speedup, (lo, hi), (wlo, whi), n);
                (
                    ClaimVerdict::Inconclusive,
                    "the measured interval holds 1.0 (no effect), which the claim excludes".to_owned(),
                )
            } else if excludes_one && comparison.verdict == super::Verdict::NoChange {
                (
                    ClaimVerdict::Inconclusive,
                    format!(
                        "the measured interval lies inside the {band} noise band, which cannot tell this effect \
                         from none"
                    ),
                )
            } else if lo >= wlo && hi <= whi {
                (
                    ClaimVerdict::Supported,
                    format!(
                        "the measured interval lies inside the claim (widened away from 1 by the {band} noise band)"
                    ),
                )
            } else {
                reps_needed = claim_reps_needed(comparison.speedup, (lo, hi), (wlo, whi), n);
                let edge = if lo < wlo { "lower" } else { "upper" };
                (
                    ClaimVerdict::Inconclusive,
                    format!(
                        "the measured interval straddles the claim's {edge} edge (widened away from 1 by the {band} \
                         noise band)"
                    ),
                )
            }
        }
    };
    ClaimEvaluation {
        verdict,
        claimed,
        measured,
        reason,
        reps_needed,
    }
}

/// Repetitions (or blocks) at which an interval shrinking with `1 / sqrt(n)` around
/// `speedup` would clear the nearest edge of `(wlo, whi)`: lie inside it when the estimate is
/// inside, wholly outside when it is outside. `None` when the estimate sits on an edge.
pub(super) fn claim_reps_needed(speedup: f64, (lo, hi): (f64, f64), (wlo, whi): (f64, f64), n: usize) -> Option<usize> {
    if !(speedup > 0.0 && lo > 0.0 && hi.is_finite()) || n == 0 {
        return None;
    }
    let centre = speedup.ln();
    let half = (hi.ln() - lo.ln()) / 2.0;
    let gap = [wlo, whi]
        .iter()
        .filter(|e| e.is_finite() && **e > 0.0)
        .map(|e| (centre - e.ln()).abs())
        .fold(f64::INFINITY, f64::min);
    if !(gap > 1e-9 && gap.is_finite()) {
        return None;
    }
    let needed = (n as f64 * (half / gap).powi(2)).ceil().max(n as f64 + 1.0);
    (needed <= 1e6).then_some(needed as usize)
}

#[cfg(test)]
#[path = "tests/claim.rs"]
mod tests;
