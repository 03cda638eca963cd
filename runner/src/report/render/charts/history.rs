//! The history chart: a metric's median per run with its 95% CI, one line per series (a config
//! on one machine), and a ring around every point that a flagged step leads into.

use plotters::prelude::*;

use super::style::{
    caption_size, categories, color, draw_legend, number_label, padded_range, quantity, segment_label, DrawResult, FONT,
};
use crate::report::model::History;

pub(crate) fn history_chart(h: &History) -> DrawResult<String> {
    let runs = h.points.iter().map(|p| p.run_index).max().map_or(0, |m| m + 1);
    // X labels: run number and short commit, in run order.
    let mut labels = vec![String::new(); runs];
    for p in &h.points {
        let commit: String = p.commit.chars().take(7).collect();
        labels[p.run_index] = format!("{} {commit}", p.run_index + 1);
    }
    let several_machines = h.points.iter().any(|p| p.machine != h.points[0].machine);
    let mut configs: Vec<(&str, &str)> = Vec::new();
    for p in &h.points {
        if !configs.contains(&(p.config.as_str(), p.machine.as_str())) {
            configs.push((&p.config, &p.machine));
        }
    }
    let (y0, y1) = padded_range(h.points.iter().flat_map(|p| {
        let (lo, hi) = p.median_ci.unwrap_or((f64::NAN, f64::NAN));
        [p.median.unwrap_or(f64::NAN), lo, hi]
    }));
    // Headroom above the data for the legend box.
    let y1 = y1 + (y1 - y0) * 0.25;
    let title = format!("{} over runs: median over each run's trials, 95% CI", h.metric);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (860, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&title, (FONT, caption_size(&title, 860)))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(categories(runs), y0..y1)?;
        let formatter = segment_label(&labels);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(BLACK.mix(0.04))
            .x_labels(runs)
            .x_label_formatter(&formatter)
            .x_desc("run (oldest first) and commit")
            .y_label_formatter(&number_label(y0, y1))
            .y_desc(quantity(&h.metric, &h.unit))
            .draw()?;
        let at = |i: usize| SegmentValue::CenterOf(i as i32);
        for (ci, &(config, machine)) in configs.iter().enumerate() {
            let c = color(ci);
            let label = if several_machines {
                format!("{config} on {}", machine.split(" · ").next().unwrap_or(machine))
            } else {
                config.to_owned()
            };
            let mine: Vec<_> = h
                .points
                .iter()
                .filter(|p| p.config == config && p.machine == machine)
                .filter_map(|p| p.median.map(|m| (p, m)))
                .collect();
            chart
                .draw_series(LineSeries::new(
                    mine.iter().map(|(p, m)| (at(p.run_index), *m)),
                    c.stroke_width(2),
                ))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            let bars = chart.draw_series(mine.iter().filter_map(|(p, m)| {
                p.median_ci
                    .map(|(lo, hi)| ErrorBar::new_vertical(at(p.run_index), lo, *m, hi, c.stroke_width(1), 8))
            }))?;
            if ci == 0 && mine.iter().any(|(p, _)| p.median_ci.is_some()) {
                bars.label("95% CI of the median")
                    .legend(|(x, y)| PathElement::new(vec![(x + 8, y - 7), (x + 8, y + 7)], BLACK.stroke_width(1)));
            }
            chart.draw_series(
                mine.iter()
                    .map(|(p, m)| Circle::new((at(p.run_index), *m), 4, c.filled())),
            )?;
        }
        let flagged = h.steps.iter().filter(|s| s.flagged).filter_map(|s| {
            h.points
                .iter()
                .find(|p| p.run_id == s.to_run && p.config == s.config && p.machine == s.machine)
                .and_then(|p| p.median.map(|m| (p.run_index, m)))
        });
        chart
            .draw_series(flagged.map(|(i, m)| Circle::new((at(i), m), 9, RED.stroke_width(2))))?
            .label("significant step")
            .legend(|(x, y)| Circle::new((x + 8, y), 5, RED.stroke_width(2)));
        draw_legend(&mut chart)?;
        root.present()?;
    }
    Ok(buf)
}
