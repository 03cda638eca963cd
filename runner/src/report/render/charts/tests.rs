//! Chart content, read back from the SVG: axis descriptions, tick labels, titles and intervals.

use quick_xml::events::Event;

use super::configs::CI_DX;
use super::render_charts;
use super::style::{caption_size, integer_ticks, number_label};
use crate::report::tests::bandwidth::transfer_run;
use crate::report::tests::scaling::{thread_sweep, variants_and_symbols};
use crate::report::tests::{simple_run, sweep_run};
use crate::report::RunData;
use crate::report::{build_history, build_report};

/// One `<text>` of a chart.
#[derive(Debug, Clone)]
struct Text {
    x: i32,
    y: i32,
    anchor: String,
    rotated: bool,
    content: String,
}

/// One straight segment: a `<line>` or a two-point `<polyline>`.
#[derive(Debug, Clone)]
struct Segment {
    stroke: String,
    from: (i32, i32),
    to: (i32, i32),
}

/// The texts and straight segments of `svg`, parsed with an XML parser.
fn parse(svg: &str) -> (Vec<Text>, Vec<Segment>) {
    let mut reader = quick_xml::Reader::from_str(svg);
    let (mut texts, mut segments) = (Vec::new(), Vec::new());
    let mut open: Option<Text> = None;
    loop {
        match reader.read_event().unwrap() {
            Event::Start(e) | Event::Empty(e) => {
                let attr = |name: &str| {
                    e.attributes()
                        .map(|a| a.unwrap())
                        .find(|a| a.key.as_ref() == name.as_bytes())
                        .map(|a| a.unescape_value().unwrap().into_owned())
                };
                let int = |name: &str| attr(name).and_then(|v| v.parse::<f64>().ok()).map(|v| v as i32);
                match e.name().as_ref() {
                    b"text" => {
                        open = Some(Text {
                            x: int("x").unwrap(),
                            y: int("y").unwrap(),
                            anchor: attr("text-anchor").unwrap_or_default(),
                            rotated: attr("transform").is_some_and(|t| t.starts_with("rotate")),
                            content: String::new(),
                        })
                    }
                    b"line" => segments.push(Segment {
                        stroke: attr("stroke").unwrap_or_default(),
                        from: (int("x1").unwrap(), int("y1").unwrap()),
                        to: (int("x2").unwrap(), int("y2").unwrap()),
                    }),
                    b"polyline" => {
                        let points: Vec<(i32, i32)> = attr("points")
                            .unwrap()
                            .split_whitespace()
                            .map(|p| {
                                let (x, y) = p.split_once(',').unwrap();
                                (x.parse().unwrap(), y.parse().unwrap())
                            })
                            .collect();
                        if let [from, to] = points[..] {
                            segments.push(Segment {
                                stroke: attr("stroke").unwrap_or_default(),
                                from,
                                to,
                            });
                        }
                    }
                    _ => {}
                }
            }
            Event::Text(t) => {
                if let Some(text) = open.as_mut() {
                    text.content.push_str(t.decode().unwrap().trim());
                }
            }
            Event::GeneralRef(r) => {
                if let Some(text) = open.as_mut() {
                    let name = r.decode().unwrap();
                    text.content.push_str(match name.as_ref() {
                        "lt" => "<",
                        "gt" => ">",
                        "amp" => "&",
                        "apos" => "'",
                        "quot" => "\"",
                        other => panic!("unknown entity {other}"),
                    });
                }
            }
            Event::End(e) if e.name().as_ref() == b"text" => texts.extend(open.take()),
            Event::Eof => break,
            _ => {}
        }
    }
    (texts, segments)
}

/// What a reader of a chart sees of its axes and title.
#[derive(Debug)]
struct Chart {
    title: String,
    x_desc: String,
    y_desc: String,
    x_ticks: Vec<String>,
    y_ticks: Vec<String>,
    texts: Vec<Text>,
    segments: Vec<Segment>,
}

impl Chart {
    /// Reads `svg`: the title is its first text; the y description is the rotated text; the
    /// x description is the centred text below the tick labels; the x tick labels are the
    /// largest row of centred texts, the y tick labels the largest column of right-aligned ones.
    fn read(svg: &str) -> Self {
        let (texts, segments) = parse(svg);
        let visible: Vec<&Text> = texts.iter().filter(|t| !t.content.is_empty()).collect();
        let title = visible[0].content.clone();
        let rotated: Vec<&&Text> = visible.iter().filter(|t| t.rotated).collect();
        assert_eq!(rotated.len(), 1, "one rotated text (the y description): {rotated:?}");
        let y_desc = rotated[0].content.clone();
        let largest_group = |key: &dyn Fn(&Text) -> Option<i32>| -> Vec<&Text> {
            let mut groups: std::collections::BTreeMap<i32, Vec<&Text>> = Default::default();
            for t in visible.iter().skip(1) {
                if let Some(k) = key(t) {
                    groups.entry(k).or_default().push(t);
                }
            }
            groups.into_values().max_by_key(Vec::len).unwrap_or_default()
        };
        let mut x_row = largest_group(&|t| (t.anchor == "middle" && !t.rotated).then_some(t.y));
        let mut y_column = largest_group(&|t| (t.anchor == "end" && !t.rotated).then_some(t.x));
        // Left to right, top to bottom.
        x_row.sort_by_key(|t| t.x);
        y_column.sort_by_key(|t| t.y);
        let row_y = x_row.first().map_or(0, |t| t.y);
        let below: Vec<&&Text> = visible
            .iter()
            .skip(1)
            .filter(|t| t.anchor == "middle" && !t.rotated && t.y > row_y)
            .collect();
        assert_eq!(below.len(), 1, "one text below the x tick labels: {below:?}");
        Chart {
            title,
            x_desc: below[0].content.clone(),
            y_desc,
            x_ticks: x_row.iter().map(|t| t.content.clone()).collect(),
            y_ticks: y_column.iter().map(|t| t.content.clone()).collect(),
            texts: texts.clone(),
            segments,
        }
    }

    fn has_text(&self, content: &str) -> bool {
        self.texts.iter().any(|t| t.content == content)
    }

    /// Distinct tick labels must not read alike: that would hide the axis' resolution.
    fn assert_distinct_ticks(&self, name: &str) {
        for ticks in [&self.x_ticks, &self.y_ticks] {
            let mut sorted = ticks.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), ticks.len(), "{name}: repeated tick labels {ticks:?}");
        }
    }
}

fn charts_of(run: &RunData) -> Vec<(String, Chart)> {
    render_charts(&build_report(run))
        .unwrap()
        .into_iter()
        .map(|(file, svg)| {
            let chart = Chart::read(&svg);
            (file, chart)
        })
        .collect()
}

fn chart<'a>(charts: &'a [(String, Chart)], file: &str) -> &'a Chart {
    &charts
        .iter()
        .find(|(f, _)| f == file)
        .unwrap_or_else(|| panic!("no {file}"))
        .1
}

#[test]
fn stage_breakdown_labels_both_axes_and_says_bars_are_medians() {
    let run = sweep_run();
    let charts = charts_of(&run);
    let c = chart(&charts, "stage_breakdown.svg");
    assert!(c.title.contains("median over successful trials"), "{}", c.title);
    assert_eq!(c.y_desc, "config");
    assert!(c.x_desc.starts_with("seconds per stage"), "{}", c.x_desc);
    // One category label per config, top to bottom in plan order.
    let names: Vec<String> = run.configs.iter().map(|cf| cf.name.clone()).collect();
    assert_eq!(c.y_ticks, names);
    assert!(c.x_ticks.len() >= 3, "{:?}", c.x_ticks);
    c.assert_distinct_ticks("stage_breakdown");
}

#[test]
fn distribution_shows_every_trial_and_the_medians_ci_per_config() {
    let run = sweep_run();
    let charts = charts_of(&run);
    let c = chart(&charts, "primary_distribution.svg");
    assert!(
        c.title.contains("one dot per trial") && c.title.contains("95% CI"),
        "{}",
        c.title
    );
    assert_eq!(c.x_desc, "config");
    assert_eq!(c.y_desc, "train.epoch_seconds (s)");
    let names: Vec<String> = run.configs.iter().map(|cf| cf.name.clone()).collect();
    assert_eq!(c.x_ticks, names);
    assert!(c.y_ticks.len() >= 3, "{:?}", c.y_ticks);
    c.assert_distinct_ticks("distribution");
    for entry in ["one trial", "median", "95% CI of the median"] {
        assert!(c.has_text(entry), "legend lacks {entry}");
    }
    // One black vertical CI bar per config (plus the legend's), each capped at both ends, and
    // each to the right of its config's tick label.
    let bars: Vec<&super::tests::Segment> = c
        .segments
        .iter()
        .filter(|s| s.stroke == "#000000" && s.from.0 == s.to.0 && s.from.1 != s.to.1)
        .filter(|s| {
            let caps = |y: i32| {
                c.segments
                    .iter()
                    .any(|k| k.from.1 == y && k.to.1 == y && k.from.0 < s.from.0 && k.to.0 > s.from.0)
            };
            caps(s.from.1) && caps(s.to.1)
        })
        .collect();
    assert_eq!(bars.len(), names.len(), "CI bars: {bars:?}");
    let label_x: Vec<i32> = names
        .iter()
        .map(|n| c.texts.iter().find(|t| &t.content == n).unwrap().x)
        .collect();
    for (bar, x) in bars.iter().zip(&label_x) {
        assert_eq!(bar.from.0, x + CI_DX, "bar beside its config");
    }
}

#[test]
fn distribution_bar_spans_the_bootstrap_ci_of_the_median() {
    let run = sweep_run();
    let svg = render_charts(&build_report(&run))
        .unwrap()
        .into_iter()
        .find(|(f, _)| f == "primary_distribution.svg")
        .unwrap()
        .1;
    let c = Chart::read(&svg);
    // Map pixel rows back to values through two labelled y ticks.
    let ticks: Vec<(i32, f64)> = c
        .texts
        .iter()
        .filter(|t| t.anchor == "end" && c.y_ticks.contains(&t.content))
        .map(|t| (t.y, t.content.parse().unwrap()))
        .collect();
    let ((ya, va), (yb, vb)) = (ticks[0], ticks[ticks.len() - 1]);
    let value = |y: i32| va + (f64::from(y - ya)) * (vb - va) / f64::from(yb - ya);
    let settings = crate::report::settings_of(&run);
    let samples = crate::report::metric_samples(&run.configs[0], &run.compare.primary);
    let (lo, hi) = crate::stats::bootstrap_median_ci(&samples.values, settings.resamples, settings.seed).unwrap();
    let first_label = c.texts.iter().find(|t| t.content == run.configs[0].name).unwrap().x;
    let bar = c
        .segments
        .iter()
        .find(|s| s.stroke == "#000000" && s.from.0 == first_label + CI_DX && s.from.0 == s.to.0)
        .unwrap();
    let (bottom, top) = (value(bar.from.1.max(bar.to.1)), value(bar.from.1.min(bar.to.1)));
    // One pixel of the plot's height in value terms is the tolerance.
    let px = (vb - va).abs() / f64::from((yb - ya).abs());
    assert!((bottom - lo).abs() <= 1.5 * px, "bar bottom {bottom} vs CI low {lo}");
    assert!((top - hi).abs() <= 1.5 * px, "bar top {top} vs CI high {hi}");
}

#[test]
fn sweep_labels_every_point_and_names_its_interval() {
    let charts = charts_of(&sweep_run());
    let c = chart(&charts, "sweep.svg");
    assert!(c.title.contains("median over trials per point, 95% CI"), "{}", c.title);
    assert_eq!(c.x_desc, "stages.train.batch_size");
    assert_eq!(c.y_desc, "train.epoch_seconds (s)");
    assert_eq!(c.x_ticks, vec!["64", "256"]);
    assert!(c.y_ticks.len() >= 3, "{:?}", c.y_ticks);
    c.assert_distinct_ticks("sweep");
    assert!(c.has_text("95% CI of the median (band and bars)"));
    assert!(c.has_text("baseline: median") && c.has_text("reuse: median"));
}

#[test]
fn loss_labels_every_epoch_and_says_the_points_are_means() {
    let charts = charts_of(&sweep_run());
    let c = chart(&charts, "loss_train_train_loss.svg");
    assert_eq!(c.title, "train.train_loss per epoch: mean over successful trials");
    assert_eq!(c.x_desc, "epoch");
    assert_eq!(c.y_desc, "train.train_loss (loss)");
    // The fixture records epochs 0..=4: every one labelled, nothing in between.
    assert_eq!(c.x_ticks, vec!["0", "1", "2", "3", "4"]);
    assert!(c.y_ticks.len() >= 3, "{:?}", c.y_ticks);
    c.assert_distinct_ticks("loss");
}

#[test]
fn bandwidth_describes_both_axes() {
    let charts = charts_of(&transfer_run());
    let c = chart(&charts, "bandwidth_transfer.svg");
    assert!(
        c.title.contains("median over successful trials per size"),
        "{}",
        c.title
    );
    assert_eq!(c.x_desc, "copy size (bytes, log2 scale)");
    assert_eq!(c.y_desc, "bandwidth (GB/s), median over successful trials");
    assert_eq!(c.x_ticks, vec!["4 KiB", "64 KiB", "1 MiB", "16 MiB", "256 MiB"]);
    assert!(c.y_ticks.len() >= 3, "{:?}", c.y_ticks);
    c.assert_distinct_ticks("bandwidth");
}

#[test]
fn scaling_charts_describe_both_axes_and_label_every_thread_count() {
    let charts = charts_of(&thread_sweep());
    let c = chart(&charts, "scaling_threads_features_threads.svg");
    assert!(c.title.contains("from median times, 95% CI"), "{}", c.title);
    assert_eq!(c.x_desc, "stages.features.threads: threads (log2 scale)");
    assert_eq!(c.y_desc, "parallel efficiency E = S(p)·p0/p (1 = ideal)");
    assert_eq!(c.x_ticks, vec!["1", "2", "4", "8"]);
    assert!(c.y_ticks.len() >= 3, "{:?}", c.y_ticks);
    c.assert_distinct_ticks("efficiency");

    let charts = charts_of(&variants_and_symbols());
    let c = chart(&charts, "scaling_size_load_symbols.svg");
    assert!(
        c.title.starts_with("Median time against stages.load.symbols"),
        "{}",
        c.title
    );
    assert_eq!(c.x_desc, "stages.load.symbols (count, log scale)");
    assert_eq!(c.y_desc, "trial.seconds, median (seconds, log scale)");
    for tick in ["10", "100", "1000"] {
        assert!(c.x_ticks.iter().any(|t| t == tick), "no {tick} in {:?}", c.x_ticks);
    }
    assert!(c.y_ticks.len() >= 3, "{:?}", c.y_ticks);
}

#[test]
fn history_labels_every_run_and_names_its_interval() {
    let runs: Vec<RunData> = ["run-a", "run-b", "run-c"]
        .iter()
        .enumerate()
        .map(|(i, id)| simple_run(id, 0.8 + 0.05 * i as f64, 0.5))
        .collect();
    let h = build_history("buffer-reuse", "train.epoch_seconds", None, &runs);
    let c = Chart::read(&super::history_chart(&h).unwrap());
    assert_eq!(
        c.title,
        "train.epoch_seconds over runs: median over each run's trials, 95% CI"
    );
    assert_eq!(c.x_desc, "run (oldest first) and commit");
    assert_eq!(c.y_desc, "train.epoch_seconds (s)");
    assert_eq!(c.x_ticks, vec!["1 3f2a9c1", "2 3f2a9c1", "3 3f2a9c1"]);
    assert!(c.y_ticks.len() >= 3, "{:?}", c.y_ticks);
    c.assert_distinct_ticks("history");
    assert!(c.has_text("95% CI of the median"));
}

#[test]
fn tick_helpers() {
    assert_eq!(integer_ticks(0, 4, 15), vec![0, 1, 2, 3, 4]);
    assert_eq!(integer_ticks(1, 30, 15), (2..=30).step_by(2).collect::<Vec<_>>());
    assert_eq!(integer_ticks(0, 99, 15), vec![0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    assert_eq!(integer_ticks(3, 3, 15), vec![3]);
    assert!(integer_ticks(3, 2, 15).is_empty());
    // Ticks 0.0004 apart over a 0.00035..0.00042 range stay distinct.
    let label = number_label(0.000_35, 0.000_42);
    assert_ne!(label(&0.000_40), label(&0.000_405));
    assert_eq!(label(&-1e-12), label(&0.0));
    assert_eq!(number_label(0.0, 1000.0)(&200.0), "200");
    assert_eq!(caption_size("short", 860), 20);
    assert!(caption_size(&"x".repeat(120), 860) < 20);
}

/// Values at the ends of the f64 range (which a command stage can print) still give charts,
/// promptly: the axis range stays finite.
#[test]
fn extreme_values_draw_promptly() {
    let mut run = simple_run("extreme", 0.8, 0.5);
    for (i, t) in run.configs.iter_mut().flat_map(|c| &mut c.trials).enumerate() {
        for s in &mut t.stages {
            for m in &mut s.metrics {
                m.value = if i % 2 == 0 { 1e308 } else { -1e308 };
            }
            s.seconds = if i % 2 == 0 { f64::MAX } else { 1e-300 };
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(render_charts(&build_report(&run)).map(|c| c.len()));
    });
    let charts = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("charts of extreme values finish within 30 s")
        .expect("charts of extreme values render");
    assert!(charts >= 2, "{charts} charts");
}
