//! Scaling charts: parallel efficiency against the thread count (95% CI bars, the ideal E = 1
//! and the Amdahl fit), and time against problem size on log-log axes with the fitted power law.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

use super::style::{caption_size, color, DrawResult, FONT};
use crate::report::format;
use crate::report::model::{AxisKind, Scaling, SizeAxis, ThreadAxis};

/// The scaling chart of `parameter`, drawn from the report's Scaling section.
pub(super) fn chart(scaling: Option<&Scaling>, title: &str, axis: AxisKind, parameter: &str) -> DrawResult<String> {
    let s = scaling.ok_or("the run varies no thread count or problem size")?;
    let missing = || format!("{parameter} has no scaling curve");
    match axis {
        AxisKind::Threads => efficiency(
            s.threads
                .iter()
                .find(|a| a.parameter == parameter)
                .ok_or_else(missing)?,
            title,
        ),
        AxisKind::Size => sizes(
            s.sizes.iter().find(|a| a.parameter == parameter).ok_or_else(missing)?,
            &s.metric,
            title,
        ),
    }
}

/// Log-axis bounds covering `values` with half a step of `base` on each side, so the end
/// markers stay clear of the frame.
fn log_bounds(values: impl Iterator<Item = f64>, base: f64) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return (1.0, base);
    }
    let pad = base.sqrt();
    (lo / pad, hi * pad)
}

/// `n` points spread evenly in log space over `lo..=hi`, for drawing fitted curves.
fn log_spaced(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| lo * (hi / lo).powf(i as f64 / (n - 1) as f64)).collect()
}

/// A base-10 logarithmic axis over `lo..hi` (both positive) with ticks on the 1-2-5 multiples
/// of each power of ten: plotters' own log axis labels only the powers of ten once the range
/// spans two decades, which can leave two labels on an axis.
struct Log10 {
    lo: f64,
    hi: f64,
}

impl Log10 {
    /// The multiples `ms` of every power of ten inside the range.
    fn multiples(&self, ms: &[f64]) -> Vec<f64> {
        let (first, last) = (self.lo.log10().floor() as i32, self.hi.log10().ceil() as i32);
        (first..=last)
            .flat_map(|k| ms.iter().map(move |m| m * 10f64.powi(k)))
            .filter(|v| (self.lo..=self.hi).contains(v))
            .collect()
    }
}

impl Ranged for Log10 {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = (value.max(f64::MIN_POSITIVE).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10());
        limit.0 + (frac * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let max = hint.max_num_points().max(3);
        let every = self.multiples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        let one_two_five = self.multiples(&[1.0, 2.0, 5.0]);
        let powers = self.multiples(&[1.0]);
        [every, one_two_five]
            .into_iter()
            .find(|t| (3..=max).contains(&t.len()))
            .unwrap_or(powers)
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Tick labels on the log axes: whole numbers as such, other key points left blank.
fn whole_label(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        String::new()
    }
}

fn efficiency(axis: &ThreadAxis, title: &str) -> DrawResult<String> {
    let (x0, x1) = log_bounds(
        axis.groups
            .iter()
            .flat_map(|g| g.points.iter().map(|p| p.threads as f64)),
        2.0,
    );
    // Efficiency from zero, so a halving reads as one; room above 1 for the ideal line and CIs.
    let top = axis
        .groups
        .iter()
        .flat_map(|g| &g.points)
        .flat_map(|p| [p.efficiency, p.efficiency_ci.map(|c| c.1)])
        .flatten()
        .filter(|v| v.is_finite())
        .map(super::style::on_axis)
        .fold(1.0, f64::max)
        * 1.15;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (860, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, caption_size(title, 860)))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d((x0..x1).log_scale().base(2.0), 0f64..top)?;
        chart
            .configure_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_label_formatter(&whole_label)
            .x_desc(format!("{}: threads (log2 scale)", axis.parameter))
            .y_desc("parallel efficiency E = S(p)·p0/p (1 = ideal)")
            .draw()?;
        chart
            .draw_series(DashedLineSeries::new(
                [(x0, 1.0), (x1, 1.0)],
                6,
                4,
                BLACK.mix(0.6).stroke_width(1),
            ))?
            .label("ideal (E = 1)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.6).stroke_width(1)));
        for (gi, g) in axis.groups.iter().enumerate() {
            let c = color(gi);
            let pts: Vec<(f64, f64)> = g
                .points
                .iter()
                .filter_map(|p| Some((p.threads as f64, p.efficiency?)))
                .collect();
            chart.draw_series(g.points.iter().filter_map(|p| {
                let (lo, hi) = p.efficiency_ci?;
                Some(ErrorBar::new_vertical(
                    p.threads as f64,
                    lo,
                    p.efficiency?,
                    hi,
                    c.stroke_width(1),
                    8,
                ))
            }))?;
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
                .label(g.label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
            // The fitted model's efficiency against the same reference (T1 cancels out).
            let medians: Vec<(f64, f64)> = g
                .points
                .iter()
                .filter_map(|p| Some((p.threads as f64, p.median_seconds?)))
                .collect();
            if let (Some(fit), Some(p0)) = (g.fit, g.reference_threads) {
                let p0 = p0 as f64;
                let (lo, hi) = (medians[0].0, medians[medians.len() - 1].0);
                let curve: Vec<(f64, f64)> = log_spaced(lo, hi, 40)
                    .into_iter()
                    .map(|p| (p, fit.time(p0) * p0 / (fit.time(p) * p)))
                    .filter(|(_, e)| e.is_finite() && (0.0..=top).contains(e))
                    .collect();
                chart.draw_series(DashedLineSeries::new(curve, 4, 4, c.mix(0.8).stroke_width(1)))?;
            }
        }
        // Efficiency falls to the right of 1 thread: the lower left is where the curves are not.
        legend(&mut chart, SeriesLabelPosition::LowerLeft)?;
        root.present()?;
    }
    Ok(buf)
}

/// The legend box at `position`, styled like the other charts' legends.
fn legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> DrawResult<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.5))
        .label_font((FONT, 14))
        .draw()?;
    Ok(())
}

fn sizes(axis: &SizeAxis, metric: &str, title: &str) -> DrawResult<String> {
    let (x0, x1) = log_bounds(axis.groups.iter().flat_map(|g| g.points.iter().map(|p| p.size)), 10.0);
    let ys = axis
        .groups
        .iter()
        .flat_map(|g| &g.points)
        .flat_map(|p| [p.median_seconds, p.median_ci.map(|c| c.0), p.median_ci.map(|c| c.1)])
        .flatten();
    let (y0, y1) = log_bounds(ys, 2.0);
    let bytes = axis.unit == "B";
    let x_label = move |v: &f64| {
        if bytes {
            format::size(*v)
        } else {
            // The axis' 1-2-5 ticks: every one gets its number, fractions included.
            format::trimmed(*v)
        }
    };
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (860, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, caption_size(title, 860)))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(Log10 { lo: x0, hi: x1 }, Log10 { lo: y0, hi: y1 })?;
        chart
            .configure_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_label_formatter(&x_label)
            .y_label_formatter(&|v: &f64| format::seconds(*v))
            .x_desc(if axis.unit.is_empty() {
                format!("{} (log scale)", axis.parameter)
            } else {
                format!("{} ({}, log scale)", axis.parameter, axis.unit)
            })
            .y_desc(format!("{metric}, median (seconds, log scale)"))
            .draw()?;
        for (gi, g) in axis.groups.iter().enumerate() {
            let c = color(gi);
            let pts: Vec<(f64, f64)> = g
                .points
                .iter()
                .filter_map(|p| Some((p.size, p.median_seconds?)))
                .collect();
            chart.draw_series(g.points.iter().filter_map(|p| {
                let (lo, hi) = p.median_ci?;
                Some(ErrorBar::new_vertical(
                    p.size,
                    lo,
                    p.median_seconds?,
                    hi,
                    c.stroke_width(1),
                    8,
                ))
            }))?;
            let legend = match g.exponent {
                Some(b) => format!("{} (b = {})", g.label, format::sig(b, 3)),
                None => g.label.clone(),
            };
            let dots = chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
            let fit = g.fit;
            if fit.is_none() {
                dots.label(legend.clone())
                    .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
            }
            if let Some(fit) = fit {
                let (lo, hi) = (pts[0].0, pts[pts.len() - 1].0);
                chart
                    .draw_series(DashedLineSeries::new(
                        [(lo, fit.time(lo)), (hi, fit.time(hi))],
                        6,
                        4,
                        c.stroke_width(2),
                    ))?
                    .label(legend)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            }
        }
        // Rising curves leave the lower right empty, falling ones the upper right.
        let rising = axis.groups.iter().filter_map(|g| g.exponent).sum::<f64>() >= 0.0;
        legend(
            &mut chart,
            if rising {
                SeriesLabelPosition::LowerRight
            } else {
                SeriesLabelPosition::UpperRight
            },
        )?;
        root.present()?;
    }
    Ok(buf)
}
