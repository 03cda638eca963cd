//! Plain-English verdict sentences and cells (model comparisons -> the words at the top of
//! reports). Both later layers use them: `assemble` writes the plain summaries into the model
//! (`Report::summary`, a comparison's summary lines), `render` the Markdown ones and the cells.

use super::format;
use super::model::{ClaimRow, ComparisonRecord, GuardRow, Method, PAdjustment, RankTestKind, Report};
use crate::stats::ClaimVerdict;
use crate::stats::{Comparison, Design, GuardVerdict, Tolerance, Verdict};

/// Larger repetition estimates are shown as "more than" this.
const MAX_REPS_SHOWN: usize = 1000;

/// "faster"/"slower" for time and rate metrics, "better"/"worse" for anything else.
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
        Design::Independent | Design::Runs => format!("n={} vs {}", c.n_baseline, c.n_candidate),
    }
}

/// What the printing of the values hides, when it limits the comparison: `values printed at 1
/// ms, 10% of the median: effects below ~10% cannot be seen` (empty otherwise).
pub(crate) fn resolution_clause(c: &Comparison, unit: &str) -> String {
    match c.resolution {
        Some(r) if r.limits(c.band) => {
            let pct = format::sig(r.relative * 100.0, 2);
            format!(
                "; values printed at {}, {pct}% of the median: effects below ~{pct}% cannot be seen (print more digits)",
                format::value(r.step(), unit)
            )
        }
        _ => String::new(),
    }
}

/// What a comparison's interval is: `95% CI`, or for a look of a sequential run `repeated 95%
/// CI` (one of the looks' intervals, which hold the truth together with 95% probability).
pub(crate) fn ci_label(c: &Comparison) -> &'static str {
    if c.look.is_some() {
        "repeated 95% CI"
    } else {
        "95% CI"
    }
}

/// `repetitions per side` or `blocks`, for how many more a comparison needs.
fn units_needed(c: &Comparison) -> &'static str {
    match c.design {
        Design::Paired => "blocks",
        Design::Independent => "repetitions per side",
        Design::Runs => "runs",
    }
}

/// One plain-English sentence for a comparison of `cand` against `base` on `metric`.
pub(crate) fn comparison_sentence(cand: &str, base: &str, metric: &str, unit: &str, c: &Comparison) -> String {
    let (better, worse) = verdict_words(unit);
    let p = format::p_clause(c.p_for_verdict());
    let adjusted = if c.p_adjusted.is_some() { " BH-adjusted" } else { "" };
    let label = ci_label(c);
    let note = c.note.as_deref().map(|n| format!("; {n}")).unwrap_or_default();
    let stats = format!(
        "{label} {}, {p}{adjusted}, {}{}{note}",
        format::factor_interval(c.speedup_ci),
        n_clause(c),
        resolution_clause(c, unit)
    );
    match c.verdict {
        Verdict::Faster => format!(
            "{cand} is {} {better} than {base} on {metric} ({stats})",
            format::factor(c.speedup)
        ),
        Verdict::Slower => {
            let inverted = c.speedup_ci.map(|(lo, hi)| (1.0 / hi, 1.0 / lo));
            format!(
                "{cand} is {} {worse} than {base} on {metric} ({label} {}, {p}{adjusted}, {}{}{note})",
                format::factor(1.0 / c.speedup),
                format::factor_interval(inverted),
                n_clause(c),
                resolution_clause(c, unit)
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
                    "; more than {MAX_REPS_SHOWN} {} would be needed: any effect is close to the ±{}% noise band",
                    units_needed(c),
                    format::trimmed(c.band * 100.0)
                ),
                Some(n) => format!("; about {n} {} would settle it", units_needed(c)),
                None => String::new(),
            };
            let detectable = c
                .detectable
                .map(|d| {
                    format!(
                        "; at this n and noise it could detect a speedup of {} or more ({:.0}% power)",
                        format::factor(d),
                        crate::stats::DETECTABLE_POWER * 100.0
                    )
                })
                .unwrap_or_default();
            format!(
                "{cand} vs {base} on {metric} is inconclusive (speedup {}, {stats}){detectable}{more}",
                format::factor(c.speedup)
            )
        }
    }
}

/// How sentences mark emphasis and names: `report.json` and the terminal get plain text,
/// `report.md` gets Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    Markdown,
}

impl Style {
    pub(crate) fn strong(self, text: &str) -> String {
        match self {
            Style::Plain => text.to_owned(),
            Style::Markdown => format!("**{text}**"),
        }
    }

    pub(crate) fn code(self, text: &str) -> String {
        match self {
            Style::Plain => text.to_owned(),
            Style::Markdown => format!("`{text}`"),
        }
    }
}

/// A guard's difference (or a bound of its interval) as tables and sentences show it: a
/// percentage of the baseline mean for a relative tolerance, else an amount in the metric's unit.
pub(crate) fn guard_amount(g: &GuardRow, d: f64) -> String {
    if !d.is_finite() {
        return "—".to_owned();
    }
    match g.tolerance {
        Tolerance::Relative(_) => format::percent(d / g.baseline_mean.unwrap_or(f64::NAN).abs()),
        Tolerance::Absolute(_) => format!("{:+}", format::sig(d, 3).parse::<f64>().unwrap_or(d)),
    }
}

pub(crate) fn guard_clause(rows: &[&GuardRow], style: Style) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let failed: Vec<&&GuardRow> = rows.iter().filter(|g| g.result.verdict == GuardVerdict::Fail).collect();
    if !failed.is_empty() {
        let what: Vec<String> = failed
            .iter()
            .map(|g| {
                format!(
                    "{} (changed by {}, allowed {})",
                    g.metric,
                    guard_amount(g, g.result.diff),
                    g.tolerance.display()
                )
            })
            .collect();
        return format!(
            " — {}: guard {} failed",
            style.strong("but changed results"),
            what.join(", ")
        );
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

/// The Markdown verdict cell of a compared config.
pub(crate) fn verdict_cell(verdict: Verdict, reps_needed: Option<usize>, failed_guard: bool) -> String {
    match (verdict, reps_needed) {
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

/// Why a claim on `variant` could not be tested at all.
pub(crate) fn no_comparison_reason(variant: &str, style: Style) -> String {
    format!("variant {} has no comparison in this run", style.code(variant))
}

/// A claim's reason in `style` (the stored reason is plain text), and where the experiment
/// deliberately differs from the source, that too.
pub(crate) fn claim_reason(row: &ClaimRow, style: Style) -> String {
    let reason = match row.against {
        None if row.verdict == ClaimVerdict::Untestable && row.quote.is_none() => {
            no_comparison_reason(&row.config, style)
        }
        _ => row.reason.clone(),
    };
    match &row.differs {
        Some(how) if reason.is_empty() => format!("Unlike the source: {how}"),
        Some(how) => format!("{}. Unlike the source: {how}", reason.trim_end_matches('.')),
        None => reason,
    }
}

/// What a claim states, as its table cell shows it: a speedup range (`1.20x–1.50x`), or for a
/// value claim the range of the metric's value (`2.000 ms–10.00 ms`).
pub(crate) fn claimed_range(c: &ClaimRow) -> String {
    match &c.value {
        Some(v) => format::value_interval(c.claimed, &v.unit),
        None => format::factor_interval(c.claimed),
    }
}

/// What was measured for a claim: the speedup with its interval, or for a value claim the
/// config's median with its interval; a dash without a comparison.
pub(crate) fn claim_measurement(c: &ClaimRow) -> String {
    match (&c.value, &c.against) {
        (Some(v), _) => format!(
            "median {} ({})",
            v.median.map_or_else(|| "—".to_owned(), |m| format::value(m, &v.unit)),
            format::value_interval(v.median_ci, &v.unit)
        ),
        (None, Some(_)) => measured_speedup(c.speedup, c.speedup_ci),
        (None, None) => "—".to_owned(),
    }
}

/// `1.31x (1.30x–1.31x)`: a measured speedup with its interval.
pub(crate) fn measured_speedup(speedup: Option<f64>, ci: Option<(f64, f64)>) -> String {
    format!(
        "{} ({})",
        format::factor(speedup.unwrap_or(f64::NAN)),
        format::factor_interval(ci)
    )
}

/// The verdict lines of a report: one per comparison, then one per claim.
pub(crate) fn summary(r: &Report, style: Style) -> Vec<String> {
    let mut lines = Vec::new();
    for rec in &r.comparisons {
        let mine: Vec<&GuardRow> = r
            .guards
            .iter()
            .filter(|g| g.config == rec.config && g.against != super::model::QUALITY_AGAINST)
            .collect();
        lines.push(format!(
            "{}{}.",
            comparison_sentence(&rec.config, &rec.against, &rec.metric, &r.primary.unit, &rec.comparison),
            guard_clause(&mine, style)
        ));
    }
    if r.comparisons.is_empty() {
        lines.push(format!(
            "No comparison: the run has one config ({}), so there is nothing to compare it with.",
            style.code(&r.baseline)
        ));
    }
    for q in r.quality.iter().filter(|q| !q.shown_better) {
        lines.push(format!(
            "Model quality of {}: validation MSE {} x that of predicting zero (median over {} seeds{}), not shown \
             better than predicting zero: {}.",
            style.code(&q.config),
            q.mse_vs_zero.map_or_else(|| "—".to_owned(), |v| format::sig(v, 4)),
            q.n,
            q.mse_vs_zero_ci
                .map(|(lo, hi)| format!("; interval of the mean {}–{}", format::sig(lo, 4), format::sig(hi, 4)))
                .unwrap_or_default(),
            if r.quality_under_test {
                style.strong("guard failed")
            } else {
                "quality not under test ([compare] quality = \"not_under_test\")".to_owned()
            }
        ));
    }
    for row in &r.claims {
        // `"<quote>" (<source>; claimed <speedup>)`, or for runs stored before claims quoted
        // their sources, `"<speedup>" (<source>)`.
        let (claim, source) = match &row.quote {
            Some(q) => (
                q.clone(),
                match &row.source {
                    Some(s) => format!(" ({s}; claimed {})", row.claim),
                    None => format!(" (claimed {})", row.claim),
                },
            ),
            None => (
                row.claim.clone(),
                row.source.as_ref().map(|s| format!(" ({s})")).unwrap_or_default(),
            ),
        };
        let measured = row.speedup_ci.is_some() || row.value.as_ref().is_some_and(|v| v.median_ci.is_some());
        let verdict = format!("{}: ", row.verdict.as_str());
        let detail = match (row.against.is_some() || row.value.is_some(), measured) {
            // The claim is not judged: why, then the measurement as context.
            (true, true)
                if matches!(
                    row.verdict,
                    ClaimVerdict::NotThisExperiment | ClaimVerdict::NotReproduced | ClaimVerdict::Untestable
                ) && !row.reason.is_empty() =>
            {
                // The reason may open with the verdict's own words, which the line already says.
                format!(
                    "{}; measured {}",
                    row.reason.strip_prefix(&verdict).unwrap_or(&row.reason),
                    claim_measurement(row)
                )
            }
            (true, true) if row.verdict == ClaimVerdict::Inconclusive => format!(
                "measured {} against claimed {}: {}{}",
                claim_measurement(row),
                claimed_range(row),
                row.reason,
                row.reps_needed
                    .map(|n| format!("; about {n} repetitions per side (blocks) would settle it"))
                    .unwrap_or_default()
            ),
            (true, true) => format!(
                "measured {} against claimed {}",
                claim_measurement(row),
                claimed_range(row)
            ),
            _ => {
                let reason = claim_reason(row, style);
                reason.strip_prefix(&verdict).map(str::to_owned).unwrap_or(reason)
            }
        };
        lines.push(format!(
            "Claim \"{claim}\"{source} for {} on {}: {}, {detail}.",
            row.config,
            row.metric,
            style.strong(row.verdict.as_str())
        ));
    }
    lines
}

/// The verdict line of one config of a before/after comparison.
pub(crate) fn compare_summary_line(rec: &ComparisonRecord, unit: &str, style: Style) -> String {
    let sentence = comparison_sentence(
        &format!("{}: after", rec.config),
        "before",
        &rec.metric,
        unit,
        &rec.comparison,
    );
    if rec.failed_guards.is_empty() {
        format!("{sentence}.")
    } else {
        format!(
            "{sentence} — {}: guard {} failed.",
            style.strong("but changed results"),
            rec.failed_guards.join(", ")
        )
    }
}

/// The statistical settings in one sentence, naming the tests that ran and why.
pub(crate) fn method_sentence(m: &Method) -> String {
    let adjust = match m.p_adjustment {
        Some(PAdjustment::BenjaminiHochberg) => {
            format!(" (Benjamini-Hochberg adjusted across {} comparisons)", m.comparisons)
        }
        None => String::new(),
    };
    let level = format::trimmed(m.confidence * 100.0);
    let bootstrap = format!("{} resamples, seed {}", format::thousands(m.resamples), m.seed);
    let several = m.tests.len() > 1;
    let mut parts = Vec::new();
    for t in &m.tests {
        let count = if several {
            format!(
                " ({} comparison{})",
                t.comparisons,
                if t.comparisons == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        parts.push(match t.test {
            RankTestKind::MannWhitneyU => format!(
                "unpaired Mann-Whitney U{count}, ratio of medians with a {level}% percentile-bootstrap CI \
                 ({bootstrap}); unpaired because {}",
                t.reason
            ),
            RankTestKind::WilcoxonSignedRank => format!(
                "paired Wilcoxon signed-rank over blocks{count}, speedup from the Hodges-Lehmann median of the \
                 per-block log ratios with the {level}% interval that inverts the test (exact to 50 blocks); \
                 paired because {}",
                t.reason
            ),
            RankTestKind::RunLevelT => format!(
                "a test of one run's log median against the other's{count}, whose variance is the variation of a \
                 whole run's level from run to run (measured by earlier runs on this machine, or assumed where there \
                 are none: each verdict says which), with a {level}% interval; across runs because {}",
                t.reason
            ),
        });
    }
    let tests = if parts.is_empty() {
        format!("No comparison ran ({level}% percentile-bootstrap CIs of medians, {bootstrap})")
    } else {
        let mut first = parts.join("; ");
        first[..1].make_ascii_uppercase();
        first
    };
    let sequential = m.sequential.as_ref().map(sequential_clause).unwrap_or_default();
    let family = if m.questions > 1 {
        format!(
            " Each of the {} questions (comparisons and judged claims) is controlled on its own: its verdict is wrong \
             at most {}% of the time, so any of them at most {}% (the union bound).",
            m.questions,
            format::trimmed(m.question_error * 100.0),
            format::trimmed(m.family_error * 100.0)
        )
    } else {
        String::new()
    };
    format!(
        "{tests}; alpha {}{adjust}; noise band ±{}%.{sequential}{family}",
        m.alpha,
        format::trimmed(m.band * 100.0)
    )
}

/// What a sequential run's looks did, for the method sentence.
fn sequential_clause(s: &super::model::SequentialSummary) -> String {
    let looks = s.looks_taken.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    format!(
        " Sequential: blocks were added from {} up to {}{}, with looks after {looks} blocks ({} planned); alpha and \
         the intervals' 5% are spent over the looks (Lan-DeMets, Pocock-type spending, summed by the union \
         bound), so this look tested at alpha {} and its interval is a {}% interval, one of a set that holds \
         the truth together with 95% probability whenever the run stops.",
        s.min,
        s.max,
        s.max_time_seconds
            .map(|t| format!(" within {}", format::duration(t.round() as i64)))
            .unwrap_or_default(),
        s.looks_planned.len(),
        format::sig(s.alpha_at_look, 2),
        crate::stats::percent_level(s.confidence_at_look)
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
        assert_eq!(
            verdict_cell(c.verdict, c.reps_needed, false),
            "inconclusive (>1000 reps/side needed)"
        );
        c.reps_needed = Some(12);
        assert!(comparison_sentence("b", "a", "m", "s", &c).contains("about 12 repetitions per side"));
    }
}
