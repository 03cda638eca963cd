//! The console summary a run prints: one row per config, median seconds per stage.

use crate::manifest::Experiment;
use crate::record::TrialRecord;
use std::fmt::Write as _;

/// The median, or `None` for no values (shown as `-`).
fn median_of(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| crate::stats::median(v))
}

/// Median seconds per config and stage over measured (non-warm-up), successful trials.
pub fn summary_table(exp: &Experiment, trials: &[TrialRecord]) -> String {
    let stage_names: Vec<&str> = exp.order.iter().map(|&i| exp.stages[i].name.as_str()).collect();
    let mut out = String::new();
    let width = exp.configs.iter().map(|c| c.name.len()).max().unwrap_or(6).max(6);
    let _ = write!(out, "{:<width$}  {:>3}  {:>12}", "config", "n", "trial");
    for s in &stage_names {
        let _ = write!(out, "  {:>12}", truncate(s, 12));
    }
    out.push('\n');
    for c in &exp.configs {
        let ok: Vec<&TrialRecord> = trials
            .iter()
            .filter(|t| t.config == c.name && !t.warmup && t.ok)
            .collect();
        let totals: Vec<f64> = ok.iter().map(|t| t.seconds).collect();
        let _ = write!(
            out,
            "{:<width$}  {:>3}  {:>12}",
            c.name,
            ok.len(),
            fmt_secs(median_of(&totals))
        );
        for s in &stage_names {
            let v: Vec<f64> = ok
                .iter()
                .filter_map(|t| {
                    t.stages
                        .iter()
                        .find(|r| r.name == *s && !r.cache_hit)
                        .map(|r| r.seconds)
                })
                .collect();
            let _ = write!(out, "  {:>12}", fmt_secs(median_of(&v)));
        }
        out.push('\n');
    }
    out.push_str("(median wall time per config and stage over measured trials)");
    out
}

pub(super) fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Seconds with a unit that keeps 3-4 significant digits.
pub fn fmt_secs(s: Option<f64>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s >= 100.0 => format!("{s:.1} s"),
        Some(s) if s >= 1.0 => format!("{s:.3} s"),
        Some(s) if s >= 1e-3 => format!("{:.3} ms", s * 1e3),
        Some(s) => format!("{:.1} µs", s * 1e6),
    }
}

/// What a comparison found, in one line: `slower, speedup 0.909x (repeated 95% CI
/// 0.908x-0.910x), 15 blocks`.
pub fn evidence(c: &crate::stats::Comparison) -> String {
    let interval = c.speedup_ci.map_or_else(
        || "no interval".to_owned(),
        |(lo, hi)| format!("{} {lo:.3}x-{hi:.3}x", crate::report::ci_label(c)),
    );
    let n = match c.design {
        crate::stats::Design::Paired => "blocks",
        crate::stats::Design::Independent => "runs each",
        crate::stats::Design::Runs => "runs",
    };
    format!(
        "{}, speedup {:.3}x ({interval}), {} {n}",
        c.verdict.as_str(),
        c.speedup,
        c.n_candidate.min(c.n_baseline)
    )
}
