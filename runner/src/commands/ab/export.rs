//! What `measured ab` writes for other tools (ab -> **export**): `--export-markdown`, a table
//! for a pull request or a README, and `--export-json`, hyperfine's `results` layout (command,
//! mean, stddev, median, min, max, times, in seconds) with measured's comparisons beside it.

use super::results::{verdict_line, Results, Row, Unit};
use crate::stats::Verdict;
use std::fmt::Write as _;

/// A Markdown table: one row per config, with its speedup over the one it is compared with.
pub(super) fn markdown(r: &Results) -> String {
    let unit = Unit::of(r.rows.iter().map(|row| row.summary.mean).fold(f64::NAN, f64::min));
    let mut out = format!(
        "| Command | Mean [{0}] | Median [{0}] | Min [{0}] | Max [{0}] | Runs | Speedup (95% CI) | Verdict |\n\
         |:---|---:|---:|---:|---:|---:|---:|:---|\n",
        unit.name
    );
    let number = |s: f64| {
        if s.is_finite() {
            format!("{:.3}", s * unit.per_second)
        } else {
            "-".to_owned()
        }
    };
    for row in &r.rows {
        let s = &row.summary;
        let compared = r.comparisons.iter().find(|(config, _, _)| *config == row.config);
        let (speedup, verdict) = match compared {
            Some((_, against, c)) => (
                match c.speedup_ci {
                    Some((lo, hi)) => format!("{:.3}x ({lo:.3}x–{hi:.3}x)", c.speedup),
                    None => format!("{:.3}x", c.speedup),
                },
                match c.verdict {
                    Verdict::Faster | Verdict::Slower => format!("{} than `{against}`", c.verdict.as_str()),
                    Verdict::NoChange => format!("no change from `{against}`"),
                    Verdict::Inconclusive => format!("inconclusive against `{against}`"),
                },
            ),
            None if r.comparisons.iter().any(|(_, against, _)| *against == row.config) => {
                ("1 (baseline)".to_owned(), String::new())
            }
            None => (String::new(), String::new()),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} ± {} | {} | {} | {} | {} | {speedup} | {verdict} |",
            cell(&label(row)),
            number(s.mean),
            number(s.stddev),
            number(s.median),
            number(s.min),
            number(s.max),
            s.n,
        );
    }
    for (config, against, c) in &r.comparisons {
        let _ = writeln!(out, "\n{}", verdict_line(config, against, c));
    }
    out
}

/// The command with its parameter values, as the row's label.
fn label(row: &Row) -> String {
    if row.parameters.is_empty() {
        row.command.clone()
    } else {
        let values: Vec<String> = row.parameters.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{} ({})", row.command, values.join(", "))
    }
}

/// Text that stays inside one table cell and one code span.
fn cell(s: &str) -> String {
    crate::printable::printable(s).replace('|', "\\|").replace('`', "'")
}

/// hyperfine's layout: `{"results": [{"command", "mean", "stddev", "median", "min", "max",
/// "times", "parameters"}]}`, plus `name`, measured's `comparisons`, the run and its report.
pub(super) fn json(r: &Results) -> String {
    let finite = |v: f64| v.is_finite().then_some(v);
    let results: Vec<serde_json::Value> = r
        .rows
        .iter()
        .map(|row| {
            let s = &row.summary;
            serde_json::json!({
                "command": row.command,
                "name": row.config,
                "mean": finite(s.mean),
                "stddev": finite(s.stddev),
                "median": finite(s.median),
                "min": finite(s.min),
                "max": finite(s.max),
                "times": row.times,
                "parameters": row
                    .parameters
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                    .collect::<serde_json::Map<String, serde_json::Value>>(),
            })
        })
        .collect();
    let comparisons: Vec<serde_json::Value> = r
        .comparisons
        .iter()
        .map(|(config, against, c)| {
            serde_json::json!({
                "name": config,
                "against": against,
                "verdict": c.verdict.as_str(),
                "speedup": finite(c.speedup),
                "speedup_ci": c.speedup_ci.map(|(lo, hi)| [lo, hi]),
                "confidence": c.confidence,
                "p_value": finite(c.p_value),
                "blocks": c.n_candidate.min(c.n_baseline),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "results": results,
        "comparisons": comparisons,
        "run_id": r.run_id,
        "report": r.report.as_ref().map(|p| p.display().to_string()),
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}
