//! Plain-English verdict sentences and cells (comparisons -> the words at the top of reports).

use super::format;
use super::model::GuardRow;
use super::RunData;
use crate::stats::{Comparison, Design, GuardVerdict, Verdict};

/// "faster"/"slower" for time and rate metrics, "better"/"worse" for anything else.
/// Larger repetition estimates are shown as "more than" this.
const MAX_REPS_SHOWN: usize = 1000;

pub(crate) fn verdict_words(unit: &str) -> (&'static str, &'static str) {
    if unit == "s" || unit.ends_with("/s") {
        ("faster", "slower")
    } else {
        ("better", "worse")
    }
}

pub(crate) fn n_clause(c: &Comparison) -> String {
    match c.design {
        Design::Paired => format!("n={} blocks", c.n_baseline),
        Design::Independent => format!("n={} vs {}", c.n_baseline, c.n_candidate),
    }
}

/// One plain-English sentence for a comparison of `cand` against `base` on `metric`.
pub(crate) fn comparison_sentence(cand: &str, base: &str, metric: &str, unit: &str, c: &Comparison) -> String {
    let (better, worse) = verdict_words(unit);
    let p = format::p_clause(c.p_for_verdict());
    let adjusted = if c.p_adjusted.is_some() { " BH-adjusted" } else { "" };
    let stats = format!(
        "95% CI {}, {p}{adjusted}, {}",
        format::factor_interval(c.speedup_ci),
        n_clause(c)
    );
    match c.verdict {
        Verdict::Faster => format!(
            "{cand} is {} {better} than {base} on {metric} ({stats})",
            format::factor(c.speedup)
        ),
        Verdict::Slower => {
            let inverted = c.speedup_ci.map(|(lo, hi)| (1.0 / hi, 1.0 / lo));
            format!(
                "{cand} is {} {worse} than {base} on {metric} (95% CI {}, {p}{adjusted}, {})",
                format::factor(1.0 / c.speedup),
                format::factor_interval(inverted),
                n_clause(c)
            )
        }
        Verdict::NoChange => format!(
            "{cand} shows no change against {base} on {metric} (speedup {}, {stats}; inside the ±{}% noise band)",
            format::factor(c.speedup),
            format::trimmed(c.band * 100.0)
        ),
        Verdict::Inconclusive if c.speedup_ci.is_none() => format!(
            "{cand} vs {base} on {metric} is inconclusive: {} ({})",
            c.reason.as_deref().unwrap_or("no interval"),
            n_clause(c)
        ),
        Verdict::Inconclusive => {
            let more = match c.reps_needed {
                // Past a thousand the estimate mostly says the effect sits at the noise band's
                // edge; a precise-looking large number would overstate what it knows.
                Some(n) if n > MAX_REPS_SHOWN => format!(
                    "; more than {MAX_REPS_SHOWN} repetitions per side would be needed: any effect is close to the ±{}% noise band",
                    format::trimmed(c.band * 100.0)
                ),
                Some(n) => format!("; about {n} repetitions per side would settle it"),
                None => String::new(),
            };
            format!(
                "{cand} vs {base} on {metric} is inconclusive (speedup {}, {stats}){more}",
                format::factor(c.speedup)
            )
        }
    }
}

pub(crate) fn guard_clause(rows: &[&GuardRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let failed: Vec<&&GuardRow> = rows.iter().filter(|g| g.result.verdict == GuardVerdict::Fail).collect();
    if !failed.is_empty() {
        let what: Vec<String> = failed
            .iter()
            .map(|g| format!("{} (changed by {}, allowed {})", g.metric, g.diff, g.tolerance))
            .collect();
        return format!(" — **but changed results**: guard {} failed", what.join(", "));
    }
    let names = |v: GuardVerdict| -> Vec<String> {
        rows.iter()
            .filter(|g| g.result.verdict == v)
            .map(|g| g.metric.clone())
            .collect()
    };
    let mut parts = Vec::new();
    let passed = names(GuardVerdict::Pass);
    if !passed.is_empty() {
        parts.push(format!("guard {} passed", passed.join(", ")));
    }
    let open = names(GuardVerdict::Inconclusive);
    if !open.is_empty() {
        parts.push(format!("guard {} inconclusive", open.join(", ")));
    }
    format!("; {}", parts.join("; "))
}

pub(crate) fn verdict_cell(c: &Comparison, failed_guard: bool) -> String {
    match (c.verdict, c.reps_needed) {
        (Verdict::Faster, _) if failed_guard => "**faster but changed results**".to_owned(),
        (Verdict::Faster, _) => "**faster**".to_owned(),
        (Verdict::Slower, _) => "**slower**".to_owned(),
        (Verdict::Inconclusive, Some(n)) if n > MAX_REPS_SHOWN => {
            format!("inconclusive (>{MAX_REPS_SHOWN} reps/side needed)")
        }
        (Verdict::Inconclusive, Some(n)) => format!("inconclusive (~{n} reps/side needed)"),
        (v, _) => v.as_str().to_owned(),
    }
}

pub(crate) fn method_sentence(run: &RunData, comparisons: usize) -> String {
    let adjust = if comparisons > 1 {
        format!(" (Benjamini-Hochberg adjusted across {comparisons} comparisons)")
    } else {
        String::new()
    };
    format!(
        "Ratio of medians with a 95% percentile-bootstrap CI ({} resamples, seed {}); Mann-Whitney U (Wilcoxon signed-rank for blocked pairs); alpha {}{adjust}; noise band ±{}%.",
        format::thousands(run.compare.resamples),
        run.compare.seed,
        run.compare.alpha,
        format::trimmed(run.compare.band * 100.0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{compare, CompareSettings, Direction};

    #[test]
    fn huge_repetition_estimates_are_not_printed_as_precise_numbers() {
        let base = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0];
        let cand = [1.02, 1.12, 0.92, 1.07, 0.97, 1.02];
        let mut c = compare(&base, &cand, Direction::LowerIsBetter, &CompareSettings::default());
        c.verdict = Verdict::Inconclusive;
        c.reps_needed = Some(120_871);
        let s = comparison_sentence("b", "a", "m", "s", &c);
        assert!(s.contains("more than 1000 repetitions per side"), "{s}");
        assert!(!s.contains("120871"), "{s}");
        assert_eq!(verdict_cell(&c, false), "inconclusive (>1000 reps/side needed)");
        c.reps_needed = Some(12);
        assert!(comparison_sentence("b", "a", "m", "s", &c).contains("about 12 repetitions per side"));
    }
}
