//! The charts with one bar or column per config (their plots + the report's results rows -> SVG):
//! seconds per stage, stacked, and the primary metric's distribution with its median and CI.

use plotters::prelude::*;

use super::style::{
    caption_size, categories, color, draw_legend, label_width, number_label, on_axis, padded_range, quantity,
    segment_label, DrawResult, FONT,
};
use crate::report::model::{DistributionPlot, Interval, ResultRow, StageBreakdownPlot};

/// Seconds per stage, one stacked bar per config.
pub(crate) fn stage_breakdown(plot: &StageBreakdownPlot, title: &str) -> DrawResult<String> {
    let (stages, names, medians) = (&plot.stages, &plot.configs, &plot.medians);
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
            .y_label_area_size(label_width(names) + 24)
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

/// Horizontal offset in pixels of the distribution chart's CI bar from its config's centre: right
/// of the jittered dots (within 18 px of the centre) and of the median line (24 px).
pub(crate) const CI_DX: i32 = 32;

/// The distribution chart: every trial's value per config, beside its median and the
/// percentile-bootstrap 95% CI of the median from its row of `results` (one per config).
pub(crate) fn distribution(plot: &DistributionPlot, results: &[ResultRow], title: &str) -> DrawResult<String> {
    let (primary, unit, names, samples) = (&plot.metric, &plot.unit, &plot.configs, &plot.values);
    // Per config: the median (`None` where not finite) and its interval, as in the results table.
    let medians: Vec<(Option<f64>, Option<Interval>)> = results.iter().map(|r| (r.median, r.median_ci)).collect();
    let (y0, y1) = padded_range(
        samples
            .iter()
            .flat_map(|s| s.iter().copied())
            .chain(medians.iter().filter_map(|(_, ci)| *ci).flat_map(|(lo, hi)| [lo, hi])),
    );
    // Headroom above the data for the legend box.
    let y1 = y1 + (y1 - y0) * 0.3;
    // Room for every category label side by side, so long config names do not collide.
    let slot = (label_width(names) + 12).max(110);
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
        let labels = segment_label(names);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_labels(names.len())
            .x_label_formatter(&labels)
            .y_label_formatter(&number_label(y0, y1))
            .x_desc("config")
            .y_desc(quantity(primary, unit))
            .draw()?;
        // Legend entries (trial dots, CI bar, median line), each attached to its first drawing.
        let mut labelled = [false; 3];
        for (i, (s, (m, ci))) in samples.iter().zip(&medians).enumerate() {
            let c = color(i);
            let at = || SegmentValue::CenterOf(i as i32);
            // Deterministic horizontal jitter (golden-ratio sequence) so equal values stay visible.
            let dots = chart.draw_series(s.iter().enumerate().map(|(k, v)| {
                let dx = ((k as f64 * 0.618_034).fract() - 0.5) * 36.0;
                EmptyElement::at((at(), *v)) + Circle::new((dx as i32, 0), 4, c.mix(0.7).filled())
            }))?;
            if !s.is_empty() && !std::mem::replace(&mut labelled[0], true) {
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
