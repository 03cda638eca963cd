//! The run chart (its plot -> SVG): the primary metric against trial order, one marker per
//! config, every other block shaded. Drift shows as a slope or a step across the bands,
//! jitter as scatter within them, and the pairing as configs sharing a band.

use plotters::prelude::*;

use super::style::{caption_size, color, draw_legend, number_label, padded_range, quantity, DrawResult, FONT};
use crate::report::model::{RunPlot, TrialPoint as Point};

/// The run chart of the run's primary metric.
pub(super) fn run_chart(plot: &RunPlot, title: &str) -> DrawResult<String> {
    let per_config = &plot.points;
    let all = || per_config.iter().flatten();
    let first = all().map(|p| p.index).min().unwrap_or(0);
    let last = all().map(|p| p.index).max().unwrap_or(1).max(first + 1);
    let (y0, y1) = padded_range(all().map(|p| p.value));
    let y1 = y1 + (y1 - y0) * 0.25;
    let unit = &plot.unit;
    // Blocks as index ranges, in time order.
    let mut blocks: std::collections::BTreeMap<u32, (u32, u32)> = Default::default();
    for p in all() {
        let e = blocks.entry(p.block).or_insert((p.index, p.index));
        e.0 = e.0.min(p.index);
        e.1 = e.1.max(p.index);
    }
    let width = 960;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, 460)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, caption_size(title, width)))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d((first as f64 - 0.5)..(last as f64 + 0.5), y0..y1)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_label_formatter(&|v: &f64| format!("{v:.0}"))
            .y_label_formatter(&number_label(y0, y1))
            .x_desc("trial, in the order it ran (shaded bands: every other block)")
            .y_desc(quantity(&plot.metric, unit))
            .draw()?;
        let bands = blocks
            .values()
            .enumerate()
            .filter(|(k, _)| k % 2 == 1)
            .map(|(_, (a, b))| {
                Rectangle::new(
                    [(f64::from(*a) - 0.5, y0), (f64::from(*b) + 0.5, y1)],
                    BLACK.mix(0.06).filled(),
                )
            });
        chart.draw_series(bands)?;
        for (i, (name, pts)) in plot.configs.iter().zip(per_config).enumerate() {
            if pts.is_empty() {
                continue;
            }
            let c = color(i);
            let name = name.as_str();
            let at = |p: &Point| (f64::from(p.index), p.value);
            // Filled circles, triangles and squares in turn, each config in its colour.
            match i % 3 {
                0 => {
                    chart
                        .draw_series(pts.iter().map(|p| Circle::new(at(p), 4, c.filled())))?
                        .label(name)
                        .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
                }
                1 => {
                    chart
                        .draw_series(pts.iter().map(|p| TriangleMarker::new(at(p), 5, c.filled())))?
                        .label(name)
                        .legend(move |(x, y)| TriangleMarker::new((x + 8, y), 5, c.filled()));
                }
                _ => {
                    chart
                        .draw_series(
                            pts.iter()
                                .map(|p| EmptyElement::at(at(p)) + Rectangle::new([(-4, -4), (4, 4)], c.filled())),
                        )?
                        .label(name)
                        .legend(move |(x, y)| Rectangle::new([(x + 4, y - 4), (x + 12, y + 4)], c.filled()));
                }
            }
        }
        draw_legend(&mut chart)?;
        root.present()?;
    }
    Ok(buf)
}
