//! The typed report model on hand-built runs: `report.json` values and the other-metrics table.

use super::bandwidth::transfer_run;
use crate::report::model::SCHEMA_VERSION;
use crate::report::tests::sweep_run;
use crate::report::*;

/// Every string anywhere in `v`, with its JSON path.
fn strings(v: &serde_json::Value, path: String, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::String(s) => out.push((path, s.clone())),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| strings(x, format!("{path}[{i}]"), out)),
        serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| strings(x, format!("{path}.{k}"), out)),
        _ => {}
    }
}

#[test]
fn report_json_is_typed_and_holds_no_markdown() {
    let mut run = sweep_run();
    run.status = "interrupted".to_owned();
    run.finished = false;
    let report = build_report(&run);
    let json = serde_json::to_value(&report).unwrap();
    let mut all = Vec::new();
    strings(&json, String::new(), &mut all);
    // Error messages are stored text, passed through verbatim; everything the report writes
    // itself is plain.
    for (path, s) in all.iter().filter(|(path, _)| !path.ends_with(".error")) {
        assert!(!s.contains("**") && !s.contains('`'), "{path}: {s}");
    }
    assert_eq!(json["schema_version"], SCHEMA_VERSION);
    assert_eq!(json["primary"]["unit"], "s");
    assert_eq!(json["primary"]["direction"], "lower_is_better");
    assert_eq!(json["method"]["p_adjustment"], "benjamini_hochberg");
    assert_eq!(json["duration_seconds"], 390);
    let row = &json["results"][3];
    assert_eq!(row["n"], 8);
    assert_eq!(
        (row["verdict"].as_str(), row["changed_results"].as_bool()),
        (Some("faster"), Some(true))
    );
    let median = row["median"].as_f64().unwrap();
    assert!(
        (2.3..2.5).contains(&median),
        "seconds, not a formatted string: {median}"
    );
    assert!(row["speedup_ci"][0].as_f64().unwrap() <= row["speedup"].as_f64().unwrap());
    assert!(row["p"].as_f64().unwrap() < 0.01 && row["p_adjusted"] == true);
    assert_eq!(
        (
            json["results"][0]["verdict"].is_null(),
            json["results"][0]["baseline"] == true
        ),
        (true, true)
    );
    let guard = &json["guards"][1];
    assert_eq!(
        (guard["verdict"].as_str(), guard["unit"].as_str()),
        (Some("fail"), Some("loss"))
    );
    assert_eq!(guard["tolerance"]["relative"], 0.005);
    assert!((guard["relative_diff"].as_f64().unwrap() - 0.02).abs() < 1e-9);
    assert_eq!(json["claims"][4]["verdict"], "untestable");
    assert_eq!(
        json["claims"][4]["reason"],
        "variant fused has no comparison in this run"
    );
    assert_eq!(json["stages"][0]["peak_rss_bytes"], 910u64 << 20);
    assert_eq!(json["failed_trials"][0]["block"], 8);
    assert!(json["summary"][1]
        .as_str()
        .unwrap()
        .contains(" — but changed results: guard check.val_loss"));
    assert!(json["notes"][0]
        .as_str()
        .unwrap()
        .starts_with("Run status is interrupted:"));
    let extra = json["other_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "train.samples_per_second" && m["config"] == "reuse[batch_size=64]")
        .unwrap();
    assert_eq!(
        (extra["unit"].as_str(), extra["n"].as_u64()),
        (Some("samples/s"), Some(8))
    );
    let ratio = extra["ratio"].as_f64().unwrap();
    assert!((ratio - 1.3).abs() < 0.03, "{ratio}");
    // The same verdicts in Markdown keep their emphasis.
    let md = render_markdown(&report, None).unwrap();
    assert!(md.contains("| **faster but changed results** |") && md.contains("variant `fused` has no comparison"));
}

#[test]
fn the_metrics_table_leaves_out_what_other_tables_and_charts_show() {
    let report = build_report(&sweep_run());
    let names: std::collections::BTreeSet<&str> = report.other_metrics.iter().map(|m| m.metric.as_str()).collect();
    // The guarded validation loss is listed with its CI; the primary metric (Results) and the
    // charted per-step training loss are not.
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["check.val_loss", "train.samples_per_second"]
    );
    assert!(report.other_metrics.iter().all(|m| !m.series && m.median_ci.is_some()));
    // Baseline rows carry no ratio; compared rows name their baseline.
    let first = &report.other_metrics[0];
    assert_eq!((first.against.as_deref(), first.ratio), (None, None));
    assert_eq!(
        report.other_metrics[1].against.as_deref(),
        Some("baseline[batch_size=64]")
    );
    let transfer = build_report(&transfer_run());
    assert!(transfer
        .other_metrics
        .iter()
        .all(|m| !m.metric.ends_with("_gbps") && !m.metric.ends_with("_pct_peak")));
}

#[test]
fn a_busy_machine_and_stage_notes_are_typed_in_json_and_listed_in_markdown() {
    let mut run = sweep_run();
    let busy = crate::measure::TrialLoad {
        load_before: Some(2.5),
        load_after: Some(3.5),
        other_cpu: Some(1.7),
        cores: Some(2),
        cpu_mhz: Some(2600.0),
        ticks: None,
    };
    run.machine = crate::measure::MachineLoad::of([(&busy, 2.0)]);
    run.notes.extend(run.machine.warnings());
    run.stage_notes = vec![StageNoteRow {
        stage: "load".to_owned(),
        note: "dropped 2 symbols with fewer than 600 rows in the whole history (min_history = 600): AAA, BBB"
            .to_owned(),
        configs: vec!["baseline[batch_size=64]".to_owned(), "reuse[batch_size=64]".to_owned()],
        trials: 3,
    }];
    let report = build_report(&run);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["load"],
        serde_json::json!({"mean": 3.0, "max": 3.5, "cores": 2, "other_cpu_mean": 1.7,
                           "other_cpu_unknown": false, "other_cpu_max": 1.7, "busy": true, "trials": 1})
    );
    assert_eq!(json["cpu_frequency"]["dropped"], false);
    assert_eq!(json["stage_notes"][0]["trials"], 3);
    assert_eq!(json["stage_notes"][0]["configs"][1], "reuse[batch_size=64]");
    let md = render_markdown(&report, None).unwrap();
    assert!(
        md.contains("> **Note:** Busy machine: other processes used 1.7 of the 2 cores on average"),
        "{md}"
    );
    assert!(
        md.contains("## Notes from stages\n\nWhat the stages reported dropping or skipping, each distinct note once.\n\n- `load` (3 trials of baseline[batch_size=64], reuse[batch_size=64]): dropped 2 symbols"),
        "{md}"
    );
    // Runs stored before the readings: no figures, no section, nothing said.
    let old = build_report(&sweep_run());
    let json = serde_json::to_value(&old).unwrap();
    assert!(json["load"].is_null() && json["cpu_frequency"].is_null());
    assert_eq!(json["stage_notes"], serde_json::json!([]));
    let md = render_markdown(&old, None).unwrap();
    assert!(
        !md.contains("Busy machine") && !md.contains("Notes from stages"),
        "{md}"
    );
}
