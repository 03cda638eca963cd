//! Correctness guards (stats: quality-metric samples of two configs -> equivalence verdict).

use serde::Serialize;

use super::dist::student_t_quantile;

/// Allowed difference between candidate and baseline on a guarded metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tolerance {
    /// Fraction of `|mean(baseline)|` (`"0.5%"` parses to `Relative(0.005)`).
    Relative(f64),
    /// In the metric's own unit (`"0.001"`).
    Absolute(f64),
}

/// A tolerance string that does not parse; `hint` tells the user what would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tolerance `{input}`: {message}")]
pub struct ToleranceParseError {
    pub input: String,
    pub message: String,
    pub hint: String,
}

impl Tolerance {
    /// Parses `"0.5%"` (relative) or `"0.001"` (absolute). Negative or non-finite values are
    /// rejected because an equivalence margin must be a non-negative width.
    pub fn parse(text: &str) -> Result<Tolerance, ToleranceParseError> {
        let t = text.trim();
        let err = |message: &str| ToleranceParseError {
            input: text.to_owned(),
            message: message.to_owned(),
            hint: "write a percentage like \"0.5%\" or an absolute amount like \"0.001\"".to_owned(),
        };
        let (number, relative) = match t.strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (t, false),
        };
        let v: f64 = number.parse().map_err(|_| err("not a number"))?;
        if !v.is_finite() || v < 0.0 {
            return Err(err("must be a non-negative finite number"));
        }
        Ok(if relative {
            Tolerance::Relative(v / 100.0)
        } else {
            Tolerance::Absolute(v)
        })
    }

    /// Absolute margin for a given baseline mean.
    pub fn margin(self, baseline_mean: f64) -> f64 {
        match self {
            Tolerance::Relative(f) => f * baseline_mean.abs(),
            Tolerance::Absolute(a) => a,
        }
    }

    /// Human form: `±0.5%` or `±0.001`.
    pub fn display(self) -> String {
        match self {
            Tolerance::Relative(f) => format!("±{}%", trim_float(f * 100.0)),
            Tolerance::Absolute(a) => format!("±{}", trim_float(a)),
        }
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardVerdict {
    Pass,
    Fail,
    Inconclusive,
}

impl GuardVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            GuardVerdict::Pass => "pass",
            GuardVerdict::Fail => "fail",
            GuardVerdict::Inconclusive => "inconclusive",
        }
    }
}

/// Outcome of an equivalence check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardResult {
    pub verdict: GuardVerdict,
    /// mean(candidate) - mean(baseline).
    pub diff: f64,
    /// `diff / |mean(baseline)|`; NaN when the baseline mean is 0.
    pub relative_diff: f64,
    /// The (1 - 2 alpha) Welch interval of `diff`; `None` for degenerate input.
    pub ci: Option<(f64, f64)>,
    /// Absolute margin the interval was held against.
    pub margin: f64,
    pub reason: Option<String>,
}

impl GuardResult {
    /// Whether this guard stops a `--fail-on-regression` gate: it failed, or it was never
    /// evaluated (no interval: a metric nothing produced, too few samples). A gate that
    /// cannot fail is no gate.
    pub fn fails_gate(&self) -> bool {
        self.verdict == GuardVerdict::Fail || self.ci.is_none()
    }

    /// Inconclusive, with nothing computed yet: where a check starts, and what it returns
    /// when its input cannot be judged.
    fn undecided() -> Self {
        GuardResult {
            verdict: GuardVerdict::Inconclusive,
            diff: f64::NAN,
            relative_diff: f64::NAN,
            ci: None,
            margin: f64::NAN,
            reason: None,
        }
    }
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// Equivalence test (TOST) of `candidate` against `baseline`: passes when the `(1 - 2 alpha)`
/// Welch interval of the difference of means lies within `±margin`, fails when it lies entirely
/// outside, and is inconclusive otherwise. With zero variance on both sides the interval is the
/// point difference, so a deterministic metric that did not change passes.
pub fn guard(baseline: &[f64], candidate: &[f64], tolerance: Tolerance, alpha: f64) -> GuardResult {
    let mut r = GuardResult::undecided();
    if baseline.iter().chain(candidate).any(|v| !v.is_finite()) {
        r.reason = Some("samples contain non-finite values".to_owned());
        return r;
    }
    if baseline.len() < 2 || candidate.len() < 2 {
        r.reason = Some("needs at least 2 repetitions per side".to_owned());
        return r;
    }
    let (ma, va) = mean_var(baseline);
    let (mb, vb) = mean_var(candidate);
    r.diff = mb - ma;
    r.relative_diff = if ma != 0.0 { r.diff / ma.abs() } else { f64::NAN };
    r.margin = tolerance.margin(ma);
    let (sa, sb) = (va / baseline.len() as f64, vb / candidate.len() as f64);
    let se = (sa + sb).sqrt();
    let half = if se == 0.0 {
        0.0
    } else {
        // Welch-Satterthwaite degrees of freedom.
        let df =
            (sa + sb).powi(2) / (sa.powi(2) / (baseline.len() - 1) as f64 + sb.powi(2) / (candidate.len() - 1) as f64);
        student_t_quantile(1.0 - alpha, df) * se
    };
    decide(&mut r, half);
    r
}

/// Sets the interval `diff ± half` and the verdict: inside ±margin passes, entirely outside
/// fails, anything else is inconclusive.
fn decide(r: &mut GuardResult, half: f64) {
    let (lo, hi) = (r.diff - half, r.diff + half);
    r.ci = Some((lo, hi));
    r.verdict = if lo >= -r.margin && hi <= r.margin {
        GuardVerdict::Pass
    } else if lo > r.margin || hi < -r.margin {
        GuardVerdict::Fail
    } else {
        r.reason = Some("interval overlaps the tolerance edge".to_owned());
        GuardVerdict::Inconclusive
    };
}

/// Equivalence test on paired samples `(baseline, candidate)`: trials of one repetition share
/// their seed and block, so the per-pair difference removes the seed-to-seed variance that
/// an unpaired test would have to see through. The (1 - 2 alpha) t-interval of the mean
/// difference must lie inside ±margin to pass, entirely outside to fail.
pub fn guard_paired(pairs: &[(f64, f64)], tolerance: Tolerance, alpha: f64) -> GuardResult {
    let mut r = GuardResult::undecided();
    if pairs.iter().any(|(a, b)| !a.is_finite() || !b.is_finite()) {
        r.reason = Some("samples contain non-finite values".to_owned());
        return r;
    }
    if pairs.len() < 2 {
        r.reason = Some("needs at least 2 paired repetitions".to_owned());
        return r;
    }
    let base: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let diffs: Vec<f64> = pairs.iter().map(|(a, b)| b - a).collect();
    let (ma, _) = mean_var(&base);
    let (md, vd) = mean_var(&diffs);
    r.diff = md;
    r.relative_diff = if ma != 0.0 { md / ma.abs() } else { f64::NAN };
    r.margin = tolerance.margin(ma);
    let se = (vd / diffs.len() as f64).sqrt();
    let half = if se == 0.0 {
        0.0
    } else {
        student_t_quantile(1.0 - alpha, (diffs.len() - 1) as f64) * se
    };
    decide(&mut r, half);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_guard_sees_through_seed_variance() {
        // Per-seed values vary by ±20%, but each pair differs by exactly 0 or by 5%.
        let same: Vec<(f64, f64)> = [1.0, 1.2, 0.8, 1.1, 0.9].iter().map(|&v| (v, v)).collect();
        let tol = Tolerance::Relative(0.01);
        assert_eq!(guard_paired(&same, tol, 0.05).verdict, GuardVerdict::Pass);
        let unpaired_a: Vec<f64> = same.iter().map(|p| p.0).collect();
        assert_eq!(
            guard(&unpaired_a, &unpaired_a, tol, 0.05).verdict,
            GuardVerdict::Inconclusive
        );
        let shifted: Vec<(f64, f64)> = [1.0, 1.2, 0.8, 1.1, 0.9].iter().map(|&v| (v, v * 1.05)).collect();
        assert_eq!(guard_paired(&shifted, tol, 0.05).verdict, GuardVerdict::Fail);
        assert_eq!(
            guard_paired(&shifted[..1], tol, 0.05).verdict,
            GuardVerdict::Inconclusive
        );
    }

    #[test]
    fn parses_relative_and_absolute() {
        assert_eq!(Tolerance::parse("0.5%").unwrap(), Tolerance::Relative(0.005));
        assert_eq!(Tolerance::parse(" 2 % ").unwrap(), Tolerance::Relative(0.02));
        assert_eq!(Tolerance::parse("0.001").unwrap(), Tolerance::Absolute(0.001));
        let e = Tolerance::parse("abc").unwrap_err();
        assert!(e.hint.contains("0.5%"));
        assert!(Tolerance::parse("-1%").is_err());
        assert_eq!(Tolerance::Relative(0.005).display(), "±0.5%");
    }

    #[test]
    fn deterministic_metric_passes() {
        let loss = [0.4321; 5];
        let g = guard(&loss, &loss, Tolerance::Relative(0.005), 0.01);
        assert_eq!(g.verdict, GuardVerdict::Pass);
        assert_eq!(g.diff, 0.0);
        assert_eq!(g.ci, Some((0.0, 0.0)));
    }

    #[test]
    fn clear_change_fails_and_noise_is_inconclusive() {
        let a = [1.0, 1.01, 0.99, 1.0, 1.005];
        let b = [1.1, 1.11, 1.09, 1.1, 1.105];
        assert_eq!(
            guard(&a, &b, Tolerance::Relative(0.005), 0.01).verdict,
            GuardVerdict::Fail
        );
        let noisy = [0.9, 1.1, 1.0, 0.95, 1.05];
        let g = guard(&a, &noisy, Tolerance::Absolute(0.01), 0.01);
        assert_eq!(g.verdict, GuardVerdict::Inconclusive);
        assert!(g.reason.is_some());
        let tiny = [1.0001, 1.0101, 0.9901, 1.0001, 1.0051];
        assert_eq!(
            guard(&a, &tiny, Tolerance::Absolute(0.02), 0.01).verdict,
            GuardVerdict::Pass
        );
        assert_eq!(
            guard(&[1.0], &[1.0], Tolerance::Absolute(0.1), 0.01).verdict,
            GuardVerdict::Inconclusive
        );
    }
}
