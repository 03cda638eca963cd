//! A metric's history rendered (typed `History` -> Markdown through `history.md.j2`, and the
//! SVG chart).

use serde::Serialize;

use super::charts;
use crate::report::error::ReportError;
use crate::report::format;
use crate::report::model::History;

/// What the history template shows: every cell already formatted.
#[derive(Serialize)]
struct HistoryView<'a> {
    h: &'a History,
    /// One sentence per flagged step.
    flagged: Vec<String>,
    rows: Vec<Vec<String>>,
    chart: Option<&'a str>,
}

/// The history as Markdown (`templates/history.md.j2`): the flagged steps, a table of every
/// point with the step into it, the chart and the method.
pub fn render_history_markdown(
    h: &History,
    chart_file: Option<&str>,
    templates_dir: Option<&std::path::Path>,
) -> Result<String, ReportError> {
    let flagged = h
        .steps
        .iter()
        .filter(|s| s.flagged)
        .map(|s| {
            format!(
                "**{}** in `{}`: {} → {}, speedup {} ({}, {}; {} runs before, {} from it on).",
                s.verdict,
                s.config,
                s.from_run,
                s.to_run,
                format::factor(s.speedup),
                format::factor_interval(s.speedup_ci),
                format::p_clause(s.p.unwrap_or(f64::NAN)),
                s.runs_before,
                s.runs_after
            )
        })
        .chain(h.steps.iter().filter(|s| !s.changes.is_empty()).map(|s| {
            format!(
                "**config changed** in `{}` at {}: {}. The runs before and after it are not compared.",
                s.config,
                s.to_run,
                s.changes.join("; ")
            )
        }))
        .collect();
    let several_machines = h.points.iter().any(|p| p.machine != h.points[0].machine);
    let rows = h
        .points
        .iter()
        .map(|p| {
            let step = h
                .steps
                .iter()
                .find(|s| s.to_run == p.run_id && s.config == p.config && s.machine == p.machine);
            let (ratio, ci, pv, verdict) = match step {
                Some(s) => (
                    format::factor(s.speedup),
                    format::factor_interval(s.speedup_ci),
                    s.p.map_or_else(|| "—".to_owned(), format::p_value),
                    if s.flagged || !s.changes.is_empty() {
                        format!("**{}**", s.verdict)
                    } else {
                        s.verdict.clone()
                    },
                ),
                None => ("—".into(), "—".into(), "—".into(), "—".into()),
            };
            let config = if several_machines {
                format!("{} on {}", p.config, p.machine)
            } else {
                p.config.clone()
            };
            vec![
                (p.run_index + 1).to_string(),
                format!("`{}`", p.run_id),
                p.started_at.format("%Y-%m-%d %H:%M").to_string(),
                format!("`{}`", p.commit),
                format::cell(&config),
                p.n.to_string(),
                p.median.map_or("—".into(), |m| format::value(m, &h.unit)),
                format::value_interval(p.median_ci, &h.unit),
                ratio,
                ci,
                pv,
                verdict,
            ]
        })
        .collect();
    let view = HistoryView {
        h,
        flagged,
        rows,
        chart: chart_file,
    };
    super::markdown::render_named(
        HISTORY_TEMPLATE,
        BUILTIN_HISTORY,
        templates_dir,
        &minijinja::context! { v => view },
    )
}

const HISTORY_TEMPLATE: &str = "history.md.j2";

const BUILTIN_HISTORY: &str = include_str!("../../../../templates/history.md.j2");

/// The SVG chart of a history.
pub fn history_svg(h: &History) -> Result<String, ReportError> {
    charts::history_chart(h).map_err(|e| ReportError::Chart {
        file: "history".to_owned(),
        message: e.to_string(),
    })
}
