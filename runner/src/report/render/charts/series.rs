//! Line charts over an ordered x axis: the sweep, per-step loss and bandwidth-by-size charts.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, KeyPointWeight, Ranged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{
    caption_size, categories, color, draw_legend, integer_ticks, label_width, number_label, padded_range, quantity,
    segment_label, DrawResult, FONT,
};
use crate::report::format;
use crate::report::model::{BandwidthPlot, LossPlot, SweepPlot};

/// The sweep chart: each variant's median and its interval at every sweep point.
pub(super) fn sweep(plot: &SweepPlot, title: &str) -> DrawResult<String> {
    let (primary, unit, axis) = (&plot.metric, &plot.unit, &plot.axis);
    let (points, variants, curves) = (&plot.points, &plot.variants, &plot.curves);
    let (y0, y1) = padded_range(curves.iter().flatten().flat_map(|&(_, _, lo, hi)| [lo, hi]));
    // Headroom above the data for the legend box.
    let y1 = y1 + (y1 - y0) * 0.25;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (860, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, caption_size(title, 860)))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(categories(points.len()), y0..y1)?;
        let labels = segment_label(points);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_labels(points.len())
            .x_label_formatter(&labels)
            .y_label_formatter(&number_label(y0, y1))
            .x_desc(axis)
            .y_desc(quantity(primary, unit))
            .draw()?;
        let mut ci_labelled = false;
        for (vi, (variant, curve)) in variants.iter().zip(curves).enumerate() {
            let c = color(vi);
            let at = |p: i32| SegmentValue::CenterOf(p);
            if curve.len() > 1 {
                let band: Vec<_> = curve
                    .iter()
                    .map(|&(p, _, _, hi)| (at(p), hi))
                    .chain(curve.iter().rev().map(|&(p, _, lo, _)| (at(p), lo)))
                    .collect();
                chart.draw_series(std::iter::once(Polygon::new(band, c.mix(0.18).filled())))?;
            }
            // The CI as a bar at every point too: a lone point has no band.
            let bars = chart.draw_series(
                curve
                    .iter()
                    .filter(|&&(_, _, lo, hi)| hi > lo)
                    .map(|&(p, m, lo, hi)| ErrorBar::new_vertical(at(p), lo, m, hi, c.stroke_width(1), 10)),
            )?;
            if !ci_labelled && curve.iter().any(|&(_, _, lo, hi)| hi > lo) {
                ci_labelled = true;
                bars.label("95% CI of the median (band and bars)")
                    .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], BLACK.mix(0.18).filled()));
            }
            chart
                .draw_series(LineSeries::new(
                    curve.iter().map(|&(p, m, _, _)| (at(p), m)),
                    c.stroke_width(2),
                ))?
                .label(format!("{variant}: median"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            chart.draw_series(curve.iter().map(|&(p, m, _, _)| Circle::new((at(p), m), 4, c.filled())))?;
        }
        draw_legend(&mut chart)?;
        root.present()?;
    }
    Ok(buf)
}

/// The per-step chart of a stage's series: one line per config.
pub(super) fn loss(plot: &LossPlot, title: &str) -> DrawResult<String> {
    let (stage, metric, value_unit, curves) = (&plot.stage, &plot.metric, &plot.value_unit, &plot.curves);
    let steps: Vec<f64> = curves.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).collect();
    let first = steps.iter().copied().fold(f64::INFINITY, f64::min);
    let last = steps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // Half a step of margin on each side, so the first and last steps get their labels and
    // points do not sit on the frame.
    let (x0, x1) = if first.is_finite() {
        (first - 0.5, last + 0.5)
    } else {
        (0.0, 1.0)
    };
    // Steps are integers: ticks on whole steps only, every one while they fit.
    let ticks: Vec<f64> = if first.is_finite() {
        integer_ticks(first as i64, last as i64, 15)
            .into_iter()
            .map(|s| s as f64)
            .collect()
    } else {
        vec![0.0, 1.0]
    };
    let unit = plot.step_unit.as_str();
    let (y0, y1) = padded_range(curves.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    // Headroom above the data for the legend box.
    let y1 = y1 + (y1 - y0) * 0.2;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (860, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, caption_size(title, 860)))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(Steps { lo: x0, hi: x1, ticks }, y0..y1)?;
        chart
            .configure_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_label_formatter(&|v: &f64| format!("{v:.0}"))
            .y_label_formatter(&number_label(y0, y1))
            .x_desc(unit)
            .y_desc(quantity(&format!("{stage}.{metric}"), value_unit))
            .draw()?;
        for (i, (name, pts)) in curves.iter().enumerate().filter(|(_, (_, p))| !p.is_empty()) {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            // A marker per step, so a single-step curve still shows.
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        draw_legend(&mut chart)?;
        root.present()?;
    }
    Ok(buf)
}

/// A linear axis over `lo..hi` whose key points are exactly `ticks` (whole steps), so plotters
/// neither labels fractional positions nor leaves the steps unlabelled.
struct Steps {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Steps {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (frac * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Copy sizes in bytes on a base-2 logarithmic axis spanning exponents `lo..hi`. Grid lines sit
/// on every power of two; labels only on every `stride`-th one, chosen so that at most
/// `MAX_SIZE_LABELS` fit and `256 MiB` never runs into its neighbour.
struct Log2Bytes {
    lo: f64,
    hi: f64,
}

const MAX_SIZE_LABELS: usize = 6;

impl Log2Bytes {
    /// Padded by half a power of two on each side so end markers stay clear of the frame.
    fn covering(sizes: &[i64]) -> Self {
        let exps = sizes.iter().filter(|&&s| s > 0).map(|&s| (s as f64).log2());
        let (lo, hi) = exps.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), e| (a.min(e), b.max(e)));
        match (lo.is_finite(), hi > lo) {
            (true, true) => Self {
                lo: lo - 0.5,
                hi: hi + 0.5,
            },
            (true, false) => Self {
                lo: lo - 1.0,
                hi: hi + 1.0,
            },
            (false, _) => Self { lo: 0.0, hi: 10.0 },
        }
    }

    fn powers(&self, stride: i32) -> Vec<f64> {
        (self.lo.ceil() as i32..=self.hi.floor() as i32)
            .filter(|e| e.rem_euclid(stride) == 0)
            .map(|e| 2f64.powi(e))
            .collect()
    }

    /// Every `stride`-th power of two, for the smallest power-of-two stride that fits `max`.
    fn thinned(&self, max: usize) -> Vec<f64> {
        let mut stride = 1;
        loop {
            let points = self.powers(stride);
            if points.len() <= max.max(1) || stride >= 64 {
                return points;
            }
            stride *= 2;
        }
    }
}

impl Ranged for Log2Bytes {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let e = value.max(f64::MIN_POSITIVE).log2();
        let frac = (e - self.lo) / (self.hi - self.lo);
        limit.0 + (frac * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let labelled = self.thinned(hint.bold_points().min(MAX_SIZE_LABELS));
        match hint.weight() {
            KeyPointWeight::Bold => labelled,
            KeyPointWeight::Any => {
                let all = self.powers(1);
                if all.len() <= hint.max_num_points() {
                    all
                } else {
                    labelled
                }
            }
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        2f64.powf(self.lo)..2f64.powf(self.hi)
    }
}

/// Draws `pts` with the marker of config number `shape`, so configs stay apart even where two
/// lines share a colour after the palette wraps.
fn markers<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Log2Bytes, plotters::coord::types::RangedCoordf64>>,
    pts: &[(f64, f64)],
    shape: usize,
    c: RGBColor,
) -> DrawResult<()>
where
    DB::ErrorType: 'static,
{
    match shape % 3 {
        0 => chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?,
        1 => chart.draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 6, c.filled())))?,
        _ => chart.draw_series(pts.iter().map(|&p| Cross::new(p, 5, c.stroke_width(2))))?,
    };
    Ok(())
}

/// Legend marker at pixel `(x, y)`, matching [`markers`].
fn legend_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    x: i32,
    y: i32,
    shape: usize,
    c: RGBColor,
) -> DrawResult<()>
where
    DB::ErrorType: 'static,
{
    match shape % 3 {
        0 => area.draw(&Circle::new((x, y), 4, c.filled()))?,
        1 => area.draw(&TriangleMarker::new((x, y), 6, c.filled()))?,
        _ => area.draw(&Cross::new((x, y), 5, c.stroke_width(2)))?,
    }
    Ok(())
}

/// The bandwidth-by-size chart of a stage: one line per config and mode, on a log2 size axis.
pub(super) fn bandwidth(plot: &BandwidthPlot, title: &str) -> DrawResult<String> {
    let (lines, unit) = (&plot.lines, &plot.unit);
    let shapes: Vec<usize> = lines.iter().map(|l| l.shape).collect();
    let labels: Vec<String> = lines.iter().map(|l| l.label.clone()).collect();
    let x = Log2Bytes::covering(&plot.sizes);
    // Bandwidth is a rate from zero: a truncated axis would exaggerate small differences.
    let y_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|&(_, v)| v))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y_max = if y_max > 0.0 {
        super::style::on_axis(y_max) * 1.08
    } else {
        1.0
    };
    // The legend gets its own column: with one line per (config, mode) it would cover the data.
    let legend_w = label_width(&labels) + 44;
    let row_h = 22;
    let height = (160 + row_h * lines.len() as u32).max(480);
    let width = 700 + legend_w;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let body = root.titled(title, (FONT, caption_size(title, width)))?;
        let (plot, legend) = body.split_horizontally(700);
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x, 0f64..y_max)?;
        let size_label = |v: &f64| format::size(*v);
        chart
            .configure_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_labels(MAX_SIZE_LABELS)
            .x_label_formatter(&size_label)
            .x_desc("copy size (bytes, log2 scale)")
            .y_desc(format!("bandwidth ({unit}), median over successful trials"))
            .draw()?;
        for (i, line) in lines.iter().enumerate() {
            let c = color(i);
            let pts: Vec<(f64, f64)> = line.points.iter().map(|&(s, v)| (s as f64, v)).collect();
            chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
            markers(&mut chart, &pts, shapes[i], c)?;
        }
        let text = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        for (i, label) in labels.iter().enumerate() {
            let (c, y) = (color(i), 24 + row_h as i32 * i as i32);
            legend.draw(&PathElement::new(vec![(4, y), (32, y)], c.stroke_width(2)))?;
            legend_marker(&legend, 18, y, shapes[i], c)?;
            legend.draw(&Text::new(label.as_str(), (40, y), text.clone()))?;
        }
        root.present()?;
    }
    Ok(buf)
}
