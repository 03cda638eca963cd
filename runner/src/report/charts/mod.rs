//! SVG charts of a run (run data -> plotters SVG strings -> files beside report.md).

mod history;
mod scaling;
mod series;

pub(crate) use history::history_chart;

use std::error::Error;

use plotters::prelude::*;

use super::bandwidth::bandwidth_stages;
use super::model::ChartRef;
use super::samples::metric_samples;
use super::scaling::AxisKind;
use super::{ReportError, RunData};
use crate::paths::file_safe;
use crate::stats::median;

type DrawResult<T> = Result<T, Box<dyn Error>>;

/// Tableau-10: distinguishable, colour-blind friendlier than plotters' default palette.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const FONT: &str = "sans-serif";

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

enum ChartKind {
    StageBreakdown,
    Distribution,
    Sweep,
    Loss { stage: String, metric: String },
    Bandwidth { stage: String },
    Scaling { axis: AxisKind, parameter: String },
}

struct ChartSpec {
    kind: ChartKind,
    file: String,
    title: String,
}

/// Stage metrics recorded as series whose name ends in `loss`, in order of first appearance.
fn loss_series(run: &RunData) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for stage in run.configs.iter().flat_map(|c| &c.trials).flat_map(|t| &t.stages) {
        for m in &stage.metrics {
            let key = (stage.name.clone(), m.name.clone());
            if m.step.is_some() && m.name.ends_with("loss") && !found.contains(&key) {
                found.push(key);
            }
        }
    }
    found
}

fn chart_plan(run: &RunData) -> Vec<ChartSpec> {
    let mut specs = Vec::new();
    if run.configs.iter().flat_map(|c| &c.trials).any(|t| t.ok) {
        specs.push(ChartSpec {
            kind: ChartKind::StageBreakdown,
            file: "stage_breakdown.svg".to_owned(),
            title: "Median time per stage".to_owned(),
        });
    }
    if run
        .configs
        .iter()
        .any(|c| !metric_samples(c, &run.compare.primary).values.is_empty())
    {
        specs.push(ChartSpec {
            kind: ChartKind::Distribution,
            file: "primary_distribution.svg".to_owned(),
            title: format!("Distribution of {}", run.compare.primary),
        });
        if run.configs.iter().any(|c| !c.sweep.is_empty()) {
            specs.push(ChartSpec {
                kind: ChartKind::Sweep,
                file: "sweep.svg".to_owned(),
                title: format!("{} across the sweep (median, 95% CI)", run.compare.primary),
            });
        }
    }
    for (stage, metric) in loss_series(run) {
        let unit = series::step_unit(run, &stage);
        specs.push(ChartSpec {
            file: format!("loss_{}_{}.svg", file_safe(&stage), file_safe(&metric)),
            title: format!("{stage}.{metric} per {unit} (mean over trials)"),
            kind: ChartKind::Loss { stage, metric },
        });
    }
    for b in bandwidth_stages(run) {
        specs.push(ChartSpec {
            file: bandwidth_file(&b.stage),
            title: format!("{} bandwidth by copy size (median over trials)", b.stage),
            kind: ChartKind::Bandwidth { stage: b.stage },
        });
    }
    for (axis, parameter) in super::scaling::chart_axes(run) {
        specs.push(ChartSpec {
            file: scaling_file(axis, &parameter),
            title: match axis {
                AxisKind::Threads => format!("Parallel efficiency over {parameter} (95% CI; dashed: Amdahl fit)"),
                AxisKind::Size => format!("Time against {parameter}, log-log, with the fitted power law"),
            },
            kind: ChartKind::Scaling { axis, parameter },
        });
    }
    specs
}

/// File of the scaling chart of `parameter`; the Scaling section links to it by this name.
pub(crate) fn scaling_file(axis: AxisKind, parameter: &str) -> String {
    let what = match axis {
        AxisKind::Threads => "threads",
        AxisKind::Size => "size",
    };
    let short = parameter.strip_prefix("stages.").unwrap_or(parameter);
    format!("scaling_{what}_{}.svg", file_safe(short))
}

/// File of the bandwidth chart of `stage`; the bandwidth tables link to it by this name.
pub(crate) fn bandwidth_file(stage: &str) -> String {
    format!("bandwidth_{}.svg", file_safe(stage))
}

/// The charts `render_charts` will produce, for the report to link to.
pub(crate) fn chart_refs(run: &RunData) -> Vec<ChartRef> {
    chart_plan(run)
        .into_iter()
        .map(|s| ChartRef {
            kind: match s.kind {
                ChartKind::StageBreakdown => "stages",
                ChartKind::Distribution => "distribution",
                ChartKind::Sweep => "sweep",
                ChartKind::Loss { .. } => "loss",
                ChartKind::Bandwidth { .. } => "bandwidth",
                ChartKind::Scaling { .. } => "scaling",
            }
            .to_owned(),
            title: s.title,
            file: s.file,
        })
        .collect()
}

/// Renders every chart of the run as `(file name, SVG text)`.
pub(crate) fn render_charts(run: &RunData) -> Result<Vec<(String, String)>, ReportError> {
    chart_plan(run)
        .into_iter()
        .map(|spec| {
            let drawn = match &spec.kind {
                ChartKind::StageBreakdown => stage_breakdown(run, &spec.title),
                ChartKind::Distribution => distribution(run, &spec.title),
                ChartKind::Sweep => series::sweep(run, &spec.title),
                ChartKind::Loss { stage, metric } => series::loss(run, &spec.title, stage, metric),
                ChartKind::Bandwidth { stage } => series::bandwidth(run, &spec.title, stage),
                ChartKind::Scaling { axis, parameter } => scaling::chart(run, &spec.title, *axis, parameter),
            };
            drawn
                .map(|svg| (spec.file.clone(), svg))
                .map_err(|e| ReportError::Chart {
                    file: spec.file,
                    message: e.to_string(),
                })
        })
        .collect()
}

/// Width in pixels reserved for category labels (about 7 px per character).
fn label_width(names: &[String]) -> u32 {
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(4) as u32;
    (longest * 7 + 16).clamp(60, 320)
}

/// Category axis with exactly `n` slots: plotters' segmented range is inclusive of its end.
fn categories(n: usize) -> plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordi32> {
    (0..(n.max(1) as i32 - 1)).into_segmented()
}

fn segment_label(names: &[String]) -> impl Fn(&SegmentValue<i32>) -> String + '_ {
    move |v| match v {
        SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    }
}

fn stage_breakdown(run: &RunData, title: &str) -> DrawResult<String> {
    let mut stages: Vec<String> = Vec::new();
    for s in run.configs.iter().flat_map(|c| &c.trials).flat_map(|t| &t.stages) {
        if !stages.contains(&s.name) {
            stages.push(s.name.clone());
        }
    }
    let names: Vec<String> = run.configs.iter().map(|c| c.name.clone()).collect();
    // medians[config][stage], 0 where a stage never succeeded so the bar still stacks.
    let medians: Vec<Vec<f64>> = run
        .configs
        .iter()
        .map(|c| {
            stages
                .iter()
                .map(|name| {
                    let v: Vec<f64> = c
                        .trials
                        .iter()
                        .filter(|t| t.ok)
                        .filter_map(|t| t.stages.iter().find(|s| &s.name == name).map(|s| s.seconds))
                        .collect();
                    let m = median(&v);
                    if m.is_finite() {
                        m
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect();
    let max_total = medians.iter().map(|r| r.iter().sum::<f64>()).fold(0.0, f64::max);
    let x_max = if max_total > 0.0 { max_total * 1.3 } else { 1.0 };
    let n = names.len() as i32;
    // Slot 0 is at the bottom; list configs top-down in plan order.
    let slot_names: Vec<String> = names.iter().rev().cloned().collect();
    let height = 140 + 46 * names.len() as u32;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (860, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(label_width(&names))
            .build_cartesian_2d(0f64..x_max, categories(names.len()))?;
        let labels = segment_label(&slot_names);
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_desc("seconds (median over successful trials)")
            .y_labels(names.len())
            .y_label_formatter(&labels)
            .draw()?;
        for (si, stage) in stages.iter().enumerate() {
            let c = color(si);
            let bars = medians.iter().enumerate().map(|(ci, row)| {
                let x0: f64 = row[..si].iter().sum();
                let slot = n - 1 - ci as i32;
                let mut bar = Rectangle::new(
                    [
                        (x0, SegmentValue::Exact(slot)),
                        (x0 + row[si], SegmentValue::Exact(slot + 1)),
                    ],
                    c.filled(),
                );
                bar.set_margin(8, 8, 0, 0);
                bar
            });
            chart
                .draw_series(bars)?
                .label(stage.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], c.filled()));
        }
        draw_legend(&mut chart)?;
        root.present()?;
    }
    Ok(buf)
}

/// Padded value range covering `values`.
/// The legend box of every chart that labels its series: upper right, on a light background.
fn draw_legend<'a, CT: CoordTranslate>(chart: &mut ChartContext<'a, SVGBackend<'a>, CT>) -> DrawResult<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.5))
        .label_font((FONT, 14))
        .draw()?;
    Ok(())
}

fn padded_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo {
        (hi - lo) * 0.1
    } else {
        lo.abs().max(1e-9) * 0.05
    };
    (lo - pad, hi + pad)
}

fn distribution(run: &RunData, title: &str) -> DrawResult<String> {
    let primary = &run.compare.primary;
    let samples: Vec<_> = run.configs.iter().map(|c| metric_samples(c, primary)).collect();
    let unit = samples.iter().find_map(|s| s.unit.clone()).unwrap_or_default();
    let names: Vec<String> = run.configs.iter().map(|c| c.name.clone()).collect();
    let (y0, y1) = padded_range(samples.iter().flat_map(|s| s.values.iter().copied()));
    // Room for every category label side by side, so long config names do not collide.
    let slot = (label_width(&names) + 12).max(110);
    let width = (100 + slot * names.len() as u32).clamp(520, 1800);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, 460)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(categories(names.len()), y0..y1)?;
        let labels = segment_label(&names);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_labels(names.len())
            .x_label_formatter(&labels)
            .y_desc(format!("{primary} ({unit})"))
            .draw()?;
        for (i, s) in samples.iter().enumerate() {
            let c = color(i);
            // Deterministic horizontal jitter (golden-ratio sequence) so equal values stay visible.
            chart.draw_series(s.values.iter().enumerate().map(|(k, v)| {
                let dx = ((k as f64 * 0.618_034).fract() - 0.5) * 36.0;
                EmptyElement::at((SegmentValue::CenterOf(i as i32), *v))
                    + Circle::new((dx as i32, 0), 4, c.mix(0.7).filled())
            }))?;
            let m = median(&s.values);
            if m.is_finite() {
                chart.draw_series(std::iter::once(
                    EmptyElement::at((SegmentValue::CenterOf(i as i32), m))
                        + PathElement::new(vec![(-28, 0), (28, 0)], BLACK.stroke_width(2)),
                ))?;
            }
        }
        root.present()?;
    }
    Ok(buf)
}
