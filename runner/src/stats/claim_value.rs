//! Claims on a metric's value (`value = "2ms..10ms"` in a manifest claim -> a range in the
//! metric's unit -> a verdict on the interval of a config's median), by the rules speedup claims
//! follow (`stats::claim`).

use super::claim::POINT_CLAIM_TOLERANCE;
use super::claim::{claim_reps_needed, parse_number, Claim, ClaimEvaluation, ClaimParseError, ClaimUnit, ClaimVerdict};

/// A value's unit as a claim writes it, with what it is in the metric's unit: `ms` is 1e-3 of
/// a metric in `s`; `%` is a metric in `%`; no unit is the metric's own.
fn value_unit(s: &str) -> (&str, Option<(&'static str, f64)>) {
    let s = s.trim();
    for (suffix, unit, scale) in [
        ("ns", "s", 1e-9),
        ("us", "s", 1e-6),
        ("µs", "s", 1e-6),
        ("ms", "s", 1e-3),
        ("s", "s", 1.0),
        ("%", "%", 1.0),
    ] {
        if let Some(n) = s.strip_suffix(suffix) {
            return (n.trim(), Some((unit, scale)));
        }
    }
    (s, None)
}

const VALUE_HINT: &str = "write a range of the metric's value like \"2ms..10ms\", \"0.5-2ms\", \"60%..90%\", \
                          \"~5ms\" or \">= 60%\", in the metric's unit (times in ns, us, ms or s)";

impl Claim {
    /// Parses a claim on a metric's value (`value = "..."`): a range `"2ms..10ms"` or
    /// `"0.5-2ms"`, a point `"~5ms"` (widened by [`POINT_CLAIM_TOLERANCE`]) or a bound
    /// `">= 60%"`. Times are converted to seconds and need a metric in `s`; percentages need a
    /// metric in `%`; a bare number is in the metric's own unit.
    pub fn parse_value(text: &str, metric_unit: &str) -> Result<Claim, ClaimParseError> {
        let err = |message: String| ClaimParseError {
            input: text.to_owned(),
            message,
            hint: VALUE_HINT.to_owned(),
        };
        let mut s = text.trim();
        let approx = s.starts_with('~');
        s = s.trim_start_matches('~').trim_start();
        let mut bound = None;
        for op in [">=", "<=", ">", "<"] {
            if let Some(rest) = s.strip_prefix(op) {
                bound = Some(op);
                s = rest.trim_start();
                break;
            }
        }
        let range = s.split_once("..").or_else(|| {
            s.char_indices()
                .skip(1)
                .find(|&(_, c)| c == '-')
                .map(|(i, _)| (&s[..i], &s[i + 1..]))
        });
        let (a, b) = range.unwrap_or((s, s));
        let ((na, ua), (nb, ub)) = (value_unit(a), value_unit(b));
        // One unit for the claim: the right end's, which a range may leave off its left end.
        let (unit, scale) = match (ua, ub) {
            (Some(x), Some(y)) if x.0 != y.0 => return Err(err("both ends of the range must be in one unit".into())),
            (_, Some(u)) | (Some(u), None) => u,
            (None, None) => (metric_unit, 1.0),
        };
        if unit != metric_unit {
            return Err(err(format!(
                "the claim is in {}, but the metric is in {}",
                if unit == "s" { "time units" } else { unit },
                if metric_unit.is_empty() { "no unit" } else { metric_unit }
            )));
        }
        let number = |t: &str| parse_number(t).filter(|v| *v >= 0.0).map(|v| v * scale);
        let (low, high) = match (number(na), number(nb)) {
            (Some(l), Some(h)) if l <= h => (l, h),
            (Some(_), Some(_)) => return Err(err("the range is reversed (lower end above upper end)".into())),
            _ => return Err(err("not a non-negative number".into())),
        };
        let claim = match (bound, range.is_some()) {
            (Some(_), true) => return Err(err("a range cannot also have a comparison".into())),
            (Some(">=") | Some(">"), false) => Claim {
                unit: ClaimUnit::Value,
                low,
                high: f64::INFINITY,
                point: false,
            },
            (Some(_), false) => Claim {
                unit: ClaimUnit::Value,
                low: 0.0,
                high,
                point: false,
            },
            (None, true) => Claim {
                unit: ClaimUnit::Value,
                low,
                high,
                point: false,
            },
            (None, false) => Claim {
                unit: ClaimUnit::Value,
                low,
                high,
                point: approx || low == high,
            },
        };
        Ok(claim)
    }

    /// The claimed range of a value claim, a point widened by [`POINT_CLAIM_TOLERANCE`].
    pub fn value_interval(&self) -> (f64, f64) {
        if self.point {
            (
                self.low * (1.0 - POINT_CLAIM_TOLERANCE),
                self.high * (1.0 + POINT_CLAIM_TOLERANCE),
            )
        } else {
            (self.low, self.high)
        }
    }
}

/// A value claim held against the interval of a config's median (`n` trials), by the rules of
/// [`assess`]: supported inside the claimed range widened by the band, refuted wholly outside
/// it, inconclusive across an edge.
pub fn assess_value(claim: &Claim, median: f64, median_ci: Option<(f64, f64)>, n: usize, band: f64) -> ClaimEvaluation {
    let claimed = claim.value_interval();
    let (verdict, reason, reps_needed) = match median_ci {
        None => (
            if n == 0 {
                ClaimVerdict::Untestable
            } else {
                ClaimVerdict::Inconclusive
            },
            if n == 0 {
                "the metric has no sample".to_owned()
            } else {
                "too few trials for an interval of the median".to_owned()
            },
            None,
        ),
        Some((lo, hi)) => {
            // A value has no "no effect" to keep clear of: the band widens both edges.
            let (wlo, whi) = (claimed.0 * (1.0 - band), claimed.1 * (1.0 + band));
            let band = format!("±{}%", super::compare::percent_level(band));
            if lo >= wlo && hi <= whi {
                (
                    ClaimVerdict::Supported,
                    format!("the measured median's interval lies inside the claim (widened by the {band} noise band)"),
                    None,
                )
            } else if hi < wlo {
                (
                    ClaimVerdict::Refuted,
                    "the measured value is below the claim".to_owned(),
                    None,
                )
            } else if lo > whi {
                (
                    ClaimVerdict::Refuted,
                    "the measured value is above the claim".to_owned(),
                    None,
                )
            } else {
                (
                    ClaimVerdict::Inconclusive,
                    format!(
                        "the measured median's interval straddles the claim's {} edge (widened by the {band} noise band)",
                        if lo < wlo { "lower" } else { "upper" }
                    ),
                    claim_reps_needed(median, (lo, hi), (wlo, whi), n),
                )
            }
        }
    };
    ClaimEvaluation {
        verdict,
        claimed,
        measured: median_ci,
        reason,
        reps_needed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: (f64, f64), b: (f64, f64)) -> bool {
        let eq = |x: f64, y: f64| (x == y) || (x - y).abs() < 1e-12;
        eq(a.0, b.0) && eq(a.1, b.1)
    }

    #[test]
    fn value_claims_parse_into_the_metrics_unit() {
        let v = Claim::parse_value("~2-10ms", "s").unwrap();
        assert_eq!(
            (v.unit, v.low, v.high, v.point),
            (ClaimUnit::Value, 0.002, 0.010, false)
        );
        let p = Claim::parse_value("~0.5ms", "s").unwrap();
        assert!(p.point && close(p.value_interval(), (0.00045, 0.00055)));
        let u = Claim::parse_value("60%..90%", "%").unwrap();
        assert_eq!((u.low, u.high), (60.0, 90.0));
        assert_eq!(Claim::parse_value(">= 60%", "%").unwrap().high, f64::INFINITY);
        assert_eq!(Claim::parse_value("3..5", "count").unwrap().low, 3.0);
        for (bad, why) in [
            ("2ms..10ms", "%"),
            ("60%", "s"),
            ("10ms..2ms", "s"),
            ("2ms..10%", "s"),
            ("fast", "s"),
            ("-1ms", "s"),
        ] {
            let e = Claim::parse_value(bad, why).expect_err(bad);
            assert!(e.hint.contains("2ms..10ms"), "{bad}: {e:?}");
        }
    }

    #[test]
    fn value_claims_follow_the_same_rules_on_the_medians_interval() {
        let claim = Claim::parse_value("2ms..10ms", "s").unwrap();
        let at = |lo: f64, hi: f64| assess_value(&claim, (lo * hi).sqrt(), Some((lo, hi)), 8, 0.02).verdict;
        assert_eq!(at(0.004, 0.005), ClaimVerdict::Supported);
        assert_eq!(at(0.0005, 0.0008), ClaimVerdict::Refuted);
        assert_eq!(at(0.015, 0.020), ClaimVerdict::Refuted);
        assert_eq!(at(0.008, 0.012), ClaimVerdict::Inconclusive);
        assert_eq!(
            assess_value(&claim, f64::NAN, None, 0, 0.02).verdict,
            ClaimVerdict::Untestable
        );
    }
}
