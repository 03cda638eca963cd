//! The SVG of one metric over an experiment's runs (metric chart -> plotters axes + series
//! layer). plotters draws the frame: caption, axes with their ticks and descriptions, grid.
//! The series are drawn on top as SVG groups, so that the page can hide a machine's or a
//! branch's series, and every point is a link to its run with a text alternative (`<title>`,
//! shown on hover).

use std::fmt::Write as _;

use minijinja::HtmlEscape;
use plotters::prelude::*;

use super::series::MetricChart;
use crate::report::format;
use crate::report::{padded_range, palette_color};

const WIDTH: u32 = 900;
const HEIGHT: u32 = 380;

// Long because: it draws the chart in layers (axes by plotters, then the series and their links as
// SVG) that share one pixel mapping.
/// Draws `chart`; `run_href` gives a run's page (by slug) relative to the page the SVG is in.
/// `label` is the chart's text alternative.
pub fn metric_svg(chart: &MetricChart, label: &str, run_href: &dyn Fn(&str) -> String) -> Result<String, String> {
    let n = chart.ticks.len().max(1);
    let (y0, y1) = padded_range(chart.series.iter().flat_map(|s| &s.points).flat_map(|p| {
        let (lo, hi) = p.ci.unwrap_or((p.median, p.median));
        [p.median, lo, hi]
    }));
    let mut svg = String::new();
    let mut to_px: Vec<(i32, i32)> = Vec::new();
    let (top, bottom);
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut c = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y0..y1)
            .map_err(|e| e.to_string())?;
        let labels: Vec<&str> = chart.ticks.iter().map(|t| t.label.as_str()).collect();
        let x_label = |x: &f64| {
            let i = x.round();
            if (x - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            labels.get(i as usize).map_or(String::new(), |s| (*s).to_owned())
        };
        let y_label = |y: &f64| format::value(*y, &chart.unit);
        c.configure_mesh()
            .disable_x_mesh()
            .light_line_style(BLACK.mix(0.05))
            .x_labels(n.min(10))
            .y_labels(6)
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_desc("run, oldest first (commit, or date when the commit is unknown)")
            .y_desc(format!("{} ({}), median and 95% CI", chart.metric, chart.unit))
            .label_style((crate::report::CHART_FONT, 12))
            .draw()
            .map_err(|e| e.to_string())?;
        for s in &chart.series {
            for p in &s.points {
                to_px.push(c.backend_coord(&(p.x as f64, p.median)));
                if let Some((lo, hi)) = p.ci {
                    to_px.push(c.backend_coord(&(p.x as f64, lo)));
                    to_px.push(c.backend_coord(&(p.x as f64, hi)));
                }
            }
        }
        top = c.backend_coord(&(0.0, y1)).1;
        bottom = c.backend_coord(&(0.0, y0)).1;
        root.present().map_err(|e| e.to_string())?;
    }
    let Some(end) = svg.rfind("</svg>") else {
        return Err("plotters wrote no closing </svg>".to_owned());
    };
    svg.truncate(end);
    // A picture with a text alternative, scaled to the page's width.
    if let Some(rest) = svg.strip_prefix("<svg ") {
        svg = format!(
            r#"<svg role="img" aria-label="{}" class="chart" preserveAspectRatio="xMinYMin meet" {rest}"#,
            HtmlEscape(label)
        );
    }
    let mut px = to_px.into_iter();
    let mut layer = String::new();
    for (si, s) in chart.series.iter().enumerate() {
        let colour = palette_color(si);
        let mut line = String::new();
        let mut upper = Vec::new();
        let mut lower = Vec::new();
        let mut dots = String::new();
        let mut at = Vec::with_capacity(s.points.len());
        for p in &s.points {
            let (x, y) = px.next().unwrap_or_default();
            at.push((p.x, x));
            let _ = write!(line, "{x},{y} ");
            let ci =
                p.ci.map(|_| (px.next().unwrap_or_default(), px.next().unwrap_or_default()));
            if let Some(((_, ylo), (_, yhi))) = ci {
                lower.push((x, ylo));
                upper.push((x, yhi));
            }
            let title = format!(
                "{} · run {} · commit {} · median {} · 95% CI {} · n = {}",
                s.config,
                p.run,
                p.commit,
                format::value(p.median, &chart.unit),
                format::value_interval(p.ci, &chart.unit),
                p.n
            );
            let _ = write!(
                dots,
                r#"<a class="pt" href="{href}" data-run="{run}" data-commit="{commit}" aria-label="{t}"><circle cx="{x}" cy="{y}" r="4" fill="{colour}"/><title>{t}</title></a>"#,
                href = HtmlEscape(&run_href(&p.slug)),
                run = HtmlEscape(&p.run),
                commit = HtmlEscape(&p.commit),
                t = HtmlEscape(&title),
            );
        }
        let _ = write!(
            layer,
            r#"<g class="series" data-series="{si}" data-env="e{env}" data-branch="b{branch}">"#,
            env = s.env,
            branch = s.branch
        );
        if !upper.is_empty() {
            let mut band = String::new();
            for (x, y) in upper.iter().chain(lower.iter().rev()) {
                let _ = write!(band, "{x},{y} ");
            }
            let _ = write!(
                layer,
                r#"<polygon class="band" points="{band}" fill="{colour}" fill-opacity="0.15" stroke="none"/>"#
            );
        }
        let _ = write!(
            layer,
            r#"<polyline class="line" points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>{dots}"#
        );
        for step in chart.steps.iter().filter(|st| st.series == si) {
            let Some(&(_, x)) = at.iter().find(|(tick, _)| *tick == step.x) else {
                continue;
            };
            let text = match step.speedup {
                Some(sp) => format!(
                    "{} {} ({}), {} → {}",
                    step.verdict,
                    format::factor(sp),
                    format::factor_interval(step.speedup_ci),
                    step.from_commit,
                    step.to_commit
                ),
                None => format!("{}, {} → {}", step.verdict, step.from_commit, step.to_commit),
            };
            let _ = write!(
                layer,
                r#"<g class="step" data-commit="{to}" data-from-commit="{from}" data-run="{run}"><line x1="{x}" y1="{top}" x2="{x}" y2="{bottom}" stroke="{colour}" stroke-width="2" stroke-dasharray="6 4"/><path d="M{x0},{top} l6,-10 h-12 z" fill="{colour}"/><title>{t}</title></g>"#,
                to = HtmlEscape(&step.to_commit),
                from = HtmlEscape(&step.from_commit),
                run = HtmlEscape(&step.to_run),
                x0 = x + 6,
                t = HtmlEscape(&text),
            );
        }
        layer.push_str("</g>");
    }
    svg.push_str(&layer);
    svg.push_str("</svg>\n");
    Ok(svg)
}
