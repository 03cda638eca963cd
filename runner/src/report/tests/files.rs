//! Written reports: Markdown, JSON and charts on disk, every chart linked and well-formed SVG.

use super::*;

/// Writes the report of `run` into a fresh directory and checks that every chart is linked from
/// report.md and is well-formed SVG; returns the directory and the chart file names.
pub(in crate::report) fn write_and_check(run: &RunData) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let paths = write_report(run, dir.path(), None).unwrap().paths;
    let md = std::fs::read_to_string(&paths.markdown).unwrap();
    let mut names = Vec::new();
    for chart in &paths.charts {
        let name = chart.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            md.contains(&format!("]({name})")),
            "{name} is not linked from report.md"
        );
        let svg = std::fs::read_to_string(chart).unwrap();
        assert_well_formed_svg(&svg).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(svg.contains("<svg") && svg.contains("</svg>"));
        names.push(name);
    }
    // Set MEASURED_CHART_DUMP to a directory to keep the charts for looking at them.
    if let Ok(out) = std::env::var("MEASURED_CHART_DUMP") {
        for chart in &paths.charts {
            std::fs::copy(chart, std::path::Path::new(&out).join(chart.file_name().unwrap())).unwrap();
        }
    }
    (dir, names)
}

#[test]
fn write_report_writes_markdown_json_and_valid_svg() {
    let (dir, charts) = write_and_check(&sweep_run());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(json["experiment"], "buffer-reuse");
    assert_eq!(json["comparisons"][0]["comparison"]["verdict"], "faster");
    assert_eq!(json["bandwidth"], serde_json::json!([]));
    assert_eq!(charts.len(), 5);
    let breakdown = std::fs::read_to_string(dir.path().join("stage_breakdown.svg")).unwrap();
    for label in ["reuse[batch_size=64]", "features", "train"] {
        assert!(breakdown.contains(label), "stage chart lacks {label}");
    }

    let (dir, charts) = write_and_check(&transfer_run());
    assert_eq!(
        charts,
        vec![
            "stage_breakdown.svg",
            "primary_distribution.svg",
            "run_chart.svg",
            "bandwidth_transfer.svg"
        ]
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(json["bandwidth"][0]["stage"], "transfer");
    assert_eq!(json["bandwidth"][0]["chart"], "bandwidth_transfer.svg");
    assert_eq!(json["bandwidth"][0]["rows"][2]["size_bytes"], 256 << 20);
    let svg = std::fs::read_to_string(dir.path().join("bandwidth_transfer.svg")).unwrap();
    for label in [
        "4 KiB",
        "64 KiB",
        "1 MiB",
        "16 MiB",
        "256 MiB",
        "baseline · h2d_pageable_reuse",
        "prefault · h2d_pinned_reuse",
    ] {
        assert!(svg.contains(label), "bandwidth chart lacks {label}");
    }
    // The reference is in the table; drawn next to the modes it would only crowd them.
    assert!(
        !svg.contains("peak"),
        "bandwidth chart draws peak_gbps beside other series"
    );
    // Sizes between the labelled ones get grid lines, not labels that would collide.
    assert!(!svg.contains(">8 KiB<") && !svg.contains(">2 MiB<"));
}

/// Parses `svg` with a real XML parser: every element closed, attributes unique, entities
/// known, one root.
fn assert_well_formed_svg(svg: &str) -> Result<(), String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(svg);
    reader.config_mut().check_end_names = true;
    let mut depth = 0usize;
    let mut roots = 0usize;
    loop {
        match reader
            .read_event()
            .map_err(|e| format!("at byte {}: {e}", reader.buffer_position()))?
        {
            Event::Start(e) => {
                if depth == 0 {
                    roots += 1;
                }
                depth += 1;
                for a in e.attributes() {
                    a.map_err(|e| e.to_string())?;
                }
            }
            Event::Empty(e) => {
                if depth == 0 {
                    roots += 1;
                }
                for a in e.attributes() {
                    a.map_err(|e| e.to_string())?;
                }
            }
            Event::End(_) => depth = depth.checked_sub(1).ok_or("unbalanced end tag")?,
            Event::Text(t) => {
                t.decode().map_err(|e| e.to_string())?;
            }
            Event::GeneralRef(r) => {
                if r.is_char_ref() {
                    r.resolve_char_ref().map_err(|e| e.to_string())?;
                } else {
                    let name = r.decode().map_err(|e| e.to_string())?;
                    if !["lt", "gt", "amp", "apos", "quot"].contains(&name.as_ref()) {
                        return Err(format!("unknown entity &{name};"));
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    match (depth, roots) {
        (0, 1) => Ok(()),
        (0, n) => Err(format!("{n} root elements")),
        (d, _) => Err(format!("{d} elements left open")),
    }
}

#[test]
fn svg_check_rejects_malformed_documents() {
    for bad in [
        "<svg><g></svg>",
        "<svg a=\"1\" a=\"2\"/>",
        "<svg>&bogus;</svg>",
        "<svg/><svg/>",
        "<svg>",
    ] {
        assert!(assert_well_formed_svg(bad).is_err(), "{bad}");
    }
    assert_well_formed_svg("<?xml version=\"1.0\"?>\n<svg x=\"&lt;1\"><g/>a &amp; b</svg>\n").unwrap();
}
