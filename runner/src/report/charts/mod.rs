//! SVG charts of a run (run data -> plotters SVG strings -> files beside report.md).

mod history;
mod run;
mod scaling;
mod series;

pub(crate) use history::history_chart;

use std::error::Error;

use plotters::prelude::*;

use super::bandwidth::bandwidth_stages;
use super::model::{ChartRef, Interval, Report, ResultRow};
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
pub(crate) const FONT: &str = "sans-serif";

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The `i`th colour of the charts' palette, as `#rrggbb`.
pub(crate) fn palette_color(i: usize) -> String {
    let RGBColor(r, g, b) = color(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

enum ChartKind {
    StageBreakdown,
    Distribution,
    Run,
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
            title: "Seconds per stage, stacked per config: median over successful trials".to_owned(),
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
            title: format!(
                "{}: one dot per trial; median and its 95% CI per config",
                run.compare.primary
            ),
        });
        specs.push(ChartSpec {
            kind: ChartKind::Run,
            file: RUN_CHART.to_owned(),
            title: format!(
                "{} in the order the trials ran: one marker per trial",
                run.compare.primary
            ),
        });
        if run.configs.iter().any(|c| !c.sweep.is_empty()) {
            specs.push(ChartSpec {
                kind: ChartKind::Sweep,
                file: "sweep.svg".to_owned(),
                title: format!(
                    "{} across the sweep: median over trials per point, 95% CI",
                    run.compare.primary
                ),
            });
        }
    }
    for (stage, metric) in loss_series(run) {
        let unit = series::step_unit(run, &stage);
        specs.push(ChartSpec {
            file: format!("loss_{}_{}.svg", file_safe(&stage), file_safe(&metric)),
            title: format!("{stage}.{metric} per {unit}: mean over successful trials"),
            kind: ChartKind::Loss { stage, metric },
        });
    }
    for b in bandwidth_stages(run) {
        specs.push(ChartSpec {
            file: bandwidth_file(&b.stage),
            title: format!(
                "{} bandwidth by copy size: median over successful trials per size",
                b.stage
            ),
            kind: ChartKind::Bandwidth { stage: b.stage },
        });
    }
    for (axis, parameter) in super::scaling::chart_axes(run) {
        specs.push(ChartSpec {
            file: scaling_file(axis, &parameter),
            title: match axis {
                AxisKind::Threads => {
                    format!("Parallel efficiency over {parameter}: from median times, 95% CI; dashed: Amdahl fit")
                }
                AxisKind::Size => format!("Median time against {parameter}, log-log, 95% CI; dashed: fitted power law"),
            },
            kind: ChartKind::Scaling { axis, parameter },
        });
    }
    specs
}

/// File of the run chart: the primary metric in trial order.
pub(crate) const RUN_CHART: &str = "run_chart.svg";

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
                ChartKind::Run => "run",
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

/// Renders every chart of the run as `(file name, SVG text)`; `report` is the run's model, whose
/// medians, intervals and scaling fits the charts draw.
pub(crate) fn render_charts(run: &RunData, report: &Report) -> Result<Vec<(String, String)>, ReportError> {
    chart_plan(run)
        .into_iter()
        .map(|spec| {
            let drawn = match &spec.kind {
                ChartKind::StageBreakdown => stage_breakdown(run, &spec.title),
                ChartKind::Distribution => distribution(run, &report.results, &spec.title),
                ChartKind::Run => run::run_chart(run, &spec.title),
                ChartKind::Sweep => series::sweep(run, &report.results, &spec.title),
                ChartKind::Loss { stage, metric } => series::loss(run, &spec.title, stage, metric),
                ChartKind::Bandwidth { stage } => series::bandwidth(run, &spec.title, stage),
                ChartKind::Scaling { axis, parameter } => {
                    scaling::chart(report.scaling.as_ref(), &spec.title, *axis, parameter)
                }
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

/// Axis description of a quantity: `name (unit)`, or the bare name when it has no unit.
fn quantity(name: &str, unit: &str) -> String {
    if unit.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({unit})")
    }
}

/// Tick labels for a linear value axis over `lo..hi`: as many decimals as the finest tick step
/// plotters picks (at least a tenth of the range) needs, so neighbouring labels never read alike.
fn number_label(lo: f64, hi: f64) -> impl Fn(&f64) -> String {
    let step = (hi - lo).abs() / 10.0;
    let decimals = if step > 0.0 && step.is_finite() {
        (-step.log10()).ceil().clamp(0.0, 12.0) as usize
    } else {
        3
    };
    move |v| {
        // No "-0.000" where a tick lands a rounding error below zero.
        let v = if v.abs() < 0.5 * 10f64.powi(-(decimals as i32)) {
            0.0
        } else {
            *v
        };
        format!("{v:.decimals$}")
    }
}

/// Tick positions for integer steps `first..=last`: every step while at most `max` fit, else
/// the multiples of the smallest 1-2-5 stride that fits.
fn integer_ticks(first: i64, last: i64, max: usize) -> Vec<i64> {
    if last < first {
        return Vec::new();
    }
    let max = max.max(2) as i64;
    // Multiples of `stride` in first..=last: floor(last / stride) - ceil(first / stride) + 1.
    let count = |stride: i64| last.div_euclid(stride) - (first + stride - 1).div_euclid(stride) + 1;
    let mut k = 0u32;
    let stride = loop {
        let stride = [1, 2, 5][(k % 3) as usize] * 10i64.pow(k / 3);
        if count(stride) <= max {
            break stride;
        }
        k += 1;
    };
    (first..=last).filter(|s| s.rem_euclid(stride) == 0).collect()
}

/// Caption font size that fits `title` into `width` pixels (about 0.55 em per character), at
/// most 20 px and at least 12 px.
fn caption_size(title: &str, width: u32) -> u32 {
    let fit = f64::from(width.saturating_sub(24)) / (0.55 * title.chars().count().max(1) as f64);
    (fit.floor() as u32).clamp(12, 20)
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
    let max_total = on_axis(medians.iter().map(|r| r.iter().sum::<f64>()).fold(0.0, f64::max));
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
            .caption(title, (FONT, caption_size(title, 860)))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(label_width(&names) + 24)
            .build_cartesian_2d(0f64..x_max, categories(names.len()))?;
        let labels = segment_label(&slot_names);
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_desc("seconds per stage (median over successful trials), stacked")
            .y_desc("config")
            .x_label_formatter(&number_label(0.0, x_max))
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

/// The largest magnitude a chart axis reaches: values beyond it (a program can print 1e308)
/// are drawn at the edge, so that every axis stays finite and its ticks can be computed.
pub(crate) const AXIS_LIMIT: f64 = f64::MAX / 16.0;

/// `v` within `±AXIS_LIMIT`.
pub(crate) fn on_axis(v: f64) -> f64 {
    v.clamp(-AXIS_LIMIT, AXIS_LIMIT)
}

pub(crate) fn padded_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .map(on_axis)
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

/// Horizontal offset in pixels of the distribution chart's CI bar from its config's centre: right
/// of the jittered dots (within 18 px of the centre) and of the median line (24 px).
const CI_DX: i32 = 32;

/// The distribution chart: every trial's value per config, beside its median and the
/// percentile-bootstrap 95% CI of the median from its row of `results` (one per config).
fn distribution(run: &RunData, results: &[ResultRow], title: &str) -> DrawResult<String> {
    let primary = &run.compare.primary;
    let samples: Vec<_> = run.configs.iter().map(|c| metric_samples(c, primary)).collect();
    let unit = samples.iter().find_map(|s| s.unit.clone()).unwrap_or_default();
    let names: Vec<String> = run.configs.iter().map(|c| c.name.clone()).collect();
    // Per config: the median (`None` where not finite) and its interval, as in the results table.
    let medians: Vec<(Option<f64>, Option<Interval>)> = results.iter().map(|r| (r.median, r.median_ci)).collect();
    let (y0, y1) = padded_range(
        samples
            .iter()
            .flat_map(|s| s.values.iter().copied())
            .chain(medians.iter().filter_map(|(_, ci)| *ci).flat_map(|(lo, hi)| [lo, hi])),
    );
    // Headroom above the data for the legend box.
    let y1 = y1 + (y1 - y0) * 0.3;
    // Room for every category label side by side, so long config names do not collide.
    let slot = (label_width(&names) + 12).max(110);
    let width = (100 + slot * names.len() as u32).clamp(760, 1800);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, caption_size(title, width)))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d(categories(names.len()), y0..y1)?;
        let labels = segment_label(&names);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_labels(names.len())
            .x_label_formatter(&labels)
            .y_label_formatter(&number_label(y0, y1))
            .x_desc("config")
            .y_desc(quantity(primary, &unit))
            .draw()?;
        // Legend entries (trial dots, CI bar, median line), each attached to its first drawing.
        let mut labelled = [false; 3];
        for (i, (s, (m, ci))) in samples.iter().zip(&medians).enumerate() {
            let c = color(i);
            let at = || SegmentValue::CenterOf(i as i32);
            // Deterministic horizontal jitter (golden-ratio sequence) so equal values stay visible.
            let dots = chart.draw_series(s.values.iter().enumerate().map(|(k, v)| {
                let dx = ((k as f64 * 0.618_034).fract() - 0.5) * 36.0;
                EmptyElement::at((at(), *v)) + Circle::new((dx as i32, 0), 4, c.mix(0.7).filled())
            }))?;
            if !s.values.is_empty() && !std::mem::replace(&mut labelled[0], true) {
                dots.label("one trial")
                    .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.mix(0.7).filled()));
            }
            if let (Some((lo, hi)), Some(m)) = (ci, m) {
                // Beside the dots, not over them: a vertical bar with end caps, in pixels
                // relative to the median.
                let (_, y_m) = chart.backend_coord(&(at(), *m));
                let (_, y_lo) = chart.backend_coord(&(at(), *lo));
                let (_, y_hi) = chart.backend_coord(&(at(), *hi));
                let (lo_px, hi_px) = (y_lo - y_m, y_hi - y_m);
                let style = BLACK.stroke_width(2);
                let bar = chart.draw_series(std::iter::once(
                    EmptyElement::at((at(), *m))
                        + PathElement::new(vec![(CI_DX, lo_px), (CI_DX, hi_px)], style)
                        + PathElement::new(vec![(CI_DX - 6, lo_px), (CI_DX + 6, lo_px)], style)
                        + PathElement::new(vec![(CI_DX - 6, hi_px), (CI_DX + 6, hi_px)], style),
                ))?;
                if !std::mem::replace(&mut labelled[1], true) {
                    bar.label("95% CI of the median")
                        .legend(|(x, y)| PathElement::new(vec![(x + 8, y - 7), (x + 8, y + 7)], BLACK.stroke_width(2)));
                }
            }
            if let Some(m) = m {
                let line = chart.draw_series(std::iter::once(
                    EmptyElement::at((at(), *m)) + PathElement::new(vec![(-24, 0), (24, 0)], BLACK.stroke_width(3)),
                ))?;
                if !std::mem::replace(&mut labelled[2], true) {
                    line.label("median")
                        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.stroke_width(3)));
                }
            }
        }
        draw_legend(&mut chart)?;
        root.present()?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests;
