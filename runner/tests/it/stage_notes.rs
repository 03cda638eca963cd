//! What a stage drops it says: the `load` stage names the symbols `min_history` dropped, once
//! on the console however many trials repeat it, in the report and in `measured show`.

use crate::common::{bin, run, strings, text, write};
use std::path::Path;

const PICKY: &str = r#"
[experiment]
name = "picky-load"
[schedule]
warmup = 1
repetitions = 2
seed = 4
[stages.load]
kind = "load"
symbols = "all"
min_history = 600
"#;

/// Runs `manifest` in `dir` on a fresh SQLite file, which must succeed; returns the database,
/// the console (stdout and stderr) and the report's path.
fn run_to_report(dir: &Path, manifest: &str) -> (std::path::PathBuf, String, String) {
    let m = write(dir, "m.toml", manifest);
    let db = dir.join("r.sqlite");
    let out = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["run", "--results-dir"])
        .arg(dir)
        .arg(&m));
    let console = text(&out);
    assert_eq!(out.status.code(), Some(0), "{console}");
    let md_path = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("report: ").map(str::to_owned))
        .expect("report path printed");
    (db, console, md_path)
}

#[test]
fn a_dropped_symbol_is_named_on_the_console_in_the_report_and_in_show() {
    let dir = tempfile::tempdir().unwrap();
    let (db, console, md_path) = run_to_report(dir.path(), PICKY);
    // The run filled the empty database with the demo market; its short histories are the
    // symbols the stage must name, in code order (the order `symbols = "all"` loads them).
    let short = strings(
        db.to_str().unwrap(),
        "SELECT symbol FROM daily_bars GROUP BY symbol HAVING COUNT(*) < 600 ORDER BY symbol",
    );
    assert!(!short.is_empty(), "the demo market has short histories");
    let want = format!(
        "dropped {} symbol{} with fewer than 600 rows in the whole history (min_history = 600): {}",
        short.len(),
        if short.len() == 1 { "" } else { "s" },
        short.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
    );
    // Three trials load, one note on the console.
    assert_eq!(
        console.matches(&format!("note: stage load: {want}")).count(),
        1,
        "{console}"
    );

    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(md.contains("## Notes from stages"), "{md}");
    assert!(md.contains(&format!("- `load` (3 trials of baseline): {want}")), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(&md_path).with_file_name("report.json")).unwrap())
            .unwrap();
    let notes = json["stage_notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(
        (&notes[0]["stage"], &notes[0]["note"], &notes[0]["trials"]),
        (&"load".into(), &want.clone().into(), &3.into())
    );
    assert_eq!(notes[0]["configs"], serde_json::json!(["baseline"]));

    let show = run(bin().arg("--database").arg(&db).args(["show", "latest"]));
    assert!(
        text(&show).contains(&format!("notes from stages:\n  load (3 trials of baseline): {want}")),
        "{}",
        text(&show)
    );
    assert!(text(&show).contains(&short[0]));
}

const GPU_MONITORED: &str = r#"
[experiment]
name = "gpu-monitored"
[schedule]
warmup = 0
repetitions = 2
seed = 4
[stages.bench]
kind = "command"
argv = ["sleep", "0.2"]
gpu_monitor = true
gpu_sample_hz = 50.0
"#;

/// `gpu_monitor = true` samples the GPU through NVML while the command runs; where NVML cannot
/// be loaded (no NVIDIA driver) the trials still succeed, with one note saying why and no
/// telemetry metrics.
#[test]
fn gpu_monitoring_without_nvml_is_one_note_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _, md_path) = run_to_report(dir.path(), GPU_MONITORED);
    let md = std::fs::read_to_string(&md_path).unwrap();
    let samples = strings(
        db.to_str().unwrap(),
        "SELECT value FROM metrics WHERE stage = 'bench' AND name = 'gpu_samples'",
    );
    match measured::measure::gpu::NvmlSource::open(0) {
        Err(why) => {
            assert!(samples.is_empty(), "{samples:?}");
            let note = format!("- `bench` (2 trials of baseline): no GPU telemetry: {why}");
            assert!(md.contains(&note), "{md}");
            assert_eq!(md.matches("no GPU telemetry").count(), 1, "{md}");
            assert!(!md.contains("## GPU telemetry"), "{md}");
        }
        Ok(_) => {
            // A machine with a driver: every trial has its samples, and the section shows them.
            assert_eq!(samples.len(), 2, "{samples:?}");
            assert!(md.contains("## GPU telemetry"), "{md}");
        }
    }
}
