//! What every chart shares (-> the SVG charts of `render::charts`): the palette, the font, axis
//! ranges, tick labels, captions and the legend box.

use std::error::Error;

use plotters::prelude::*;

pub(crate) type DrawResult<T> = Result<T, Box<dyn Error>>;

/// Tableau-10: distinguishable, colour-blind friendlier than plotters' default palette.
pub(crate) const PALETTE: [RGBColor; 10] = [
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

pub(crate) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The `i`th colour of the charts' palette, as `#rrggbb`.
pub(crate) fn palette_color(i: usize) -> String {
    let RGBColor(r, g, b) = color(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Width in pixels reserved for category labels (about 7 px per character).
pub(crate) fn label_width(names: &[String]) -> u32 {
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(4) as u32;
    (longest * 7 + 16).clamp(60, 320)
}

/// Category axis with exactly `n` slots: plotters' segmented range is inclusive of its end.
pub(crate) fn categories(
    n: usize,
) -> plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordi32> {
    (0..(n.max(1) as i32 - 1)).into_segmented()
}

pub(crate) fn segment_label(names: &[String]) -> impl Fn(&SegmentValue<i32>) -> String + '_ {
    move |v| match v {
        SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    }
}

/// Axis description of a quantity: `name (unit)`, or the bare name when it has no unit.
pub(crate) fn quantity(name: &str, unit: &str) -> String {
    if unit.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({unit})")
    }
}

/// Tick labels for a linear value axis over `lo..hi`: as many decimals as the finest tick step
/// plotters picks (at least a tenth of the range) needs, so neighbouring labels never read alike.
pub(crate) fn number_label(lo: f64, hi: f64) -> impl Fn(&f64) -> String {
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
pub(crate) fn integer_ticks(first: i64, last: i64, max: usize) -> Vec<i64> {
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
pub(crate) fn caption_size(title: &str, width: u32) -> u32 {
    let fit = f64::from(width.saturating_sub(24)) / (0.55 * title.chars().count().max(1) as f64);
    (fit.floor() as u32).clamp(12, 20)
}

/// Padded value range covering `values`.
/// The legend box of every chart that labels its series: upper right, on a light background.
pub(crate) fn draw_legend<'a, CT: CoordTranslate>(chart: &mut ChartContext<'a, SVGBackend<'a>, CT>) -> DrawResult<()> {
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
