//! What a stage ran on and with it records as facts: stored per stage result on SQLite and
//! Postgres, carried by stages taken from the run's cache, summed up per config in
//! `report.json` and the report's What ran section, and listed by `measured show`.

use crate::common::{bin, pg_url, run, scalar, strings, text, write};
use std::path::Path;

const SMALL: &str = r#"
[experiment]
name = "facts"
[data]
synth = { symbols = 6, days = 200, start = 2021-01-04, seed = 7 }
[schedule]
warmup = 1
repetitions = 3
seed = 3
[stages.load]
kind = "load"
cache = true
[stages.features]
kind = "normalize"
needs = ["load"]
seq_len = 10
preset = "minimal"
parallel = true
threads = 2
cache = true
[stages.train]
kind = "train"
needs = ["features"]
hidden = [8]
batch_size = 64
device = "auto"
[stages.check]
kind = "validate"
needs = ["train"]
[variants.baseline]
[variants.wide]
"stages.train.hidden" = [16, 4]
[compare]
primary = "train.epoch_seconds"
# Three blocks can decide at this level; the test is about what ran, not a verdict.
alpha = 0.3
"#;

/// Runs the manifest against `database`; returns the console and the report's folder.
fn run_small(dir: &Path, database: &str) -> (String, std::path::PathBuf) {
    let m = write(dir, "facts.toml", SMALL);
    let out = run(bin()
        .arg("--database")
        .arg(database)
        .args(["run", "--results-dir"])
        .arg(dir)
        .arg(&m));
    let console = text(&out);
    assert_eq!(out.status.code(), Some(0), "{console}");
    let md = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("report: ").map(str::to_owned))
        .expect("report path printed");
    (console, Path::new(&md).parent().unwrap().to_owned())
}

/// `measured report latest` again, into `<dir>/again`; returns the report's folder.
fn report_again(dir: &Path, db: &Path) -> std::path::PathBuf {
    let out = run(bin()
        .arg("--database")
        .arg(db)
        .args(["report", "latest", "--results-dir"])
        .arg(dir.join("again")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    std::fs::read_dir(dir.join("again/facts"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

fn facts_of(database: &str, stage: &str) -> Vec<serde_json::Map<String, serde_json::Value>> {
    strings(
        database,
        &format!("SELECT facts FROM stage_results WHERE stage = '{stage}' ORDER BY trial_index"),
    )
    .iter()
    .map(|j| serde_json::from_str(j).unwrap_or_else(|e| panic!("{j}: {e}")))
    .collect()
}

fn check_stored(database: &str) {
    let train = facts_of(database, "train");
    assert_eq!(train.len(), 8, "a warm-up and three trials of two configs");
    let cpu = measured::cuda_dl::probe().is_err();
    for f in &train {
        if cpu {
            assert_eq!(f["device"], "cpu", "{f:?}");
            assert!(!f.contains_key("gpu"), "{f:?}");
        }
        assert_eq!(
            (&f["model"], &f["batch_size"], &f["precision"]),
            (&"mlp".into(), &"64".into(), &"f32".into())
        );
        assert!(f["threads"].as_str().unwrap().parse::<usize>().unwrap() >= 1, "{f:?}");
        assert!(f["hidden"] == "8" || f["hidden"] == "16,4", "{f:?}");
    }
    // The normalize stage ran once (cached); every trial's record carries its facts.
    let features = facts_of(database, "features");
    assert_eq!(features.len(), 8);
    assert!(features.iter().all(|f| f["threads"] == "2"), "{features:?}");
    let check = facts_of(database, "check");
    assert!(
        check
            .iter()
            .all(|f| f["precision"] == "f32" && f["batch_size"] == "4096"),
        "{check:?}"
    );
    // A stage that records none stores NULL.
    assert_eq!(
        scalar(
            database,
            "SELECT COUNT(*) FROM stage_results WHERE stage = 'load' AND facts IS NULL"
        ),
        8
    );
}

fn check_show(database: &str) {
    let show = run(bin().arg("--database").arg(database).args(["show", "latest"]));
    let t = text(&show);
    assert_eq!(show.status.code(), Some(0), "{t}");
    assert!(t.contains("what ran (facts the stages recorded):"), "{t}");
    assert!(
        t.contains("  baseline (3 measured trials): check.batch_size = 4096"),
        "{t}"
    );
    assert!(
        t.contains("features.threads = 2") && t.contains("train.hidden = 16,4"),
        "{t}"
    );
}

#[test]
fn facts_are_stored_per_stage_summed_up_per_config_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let db = db.to_str().unwrap();
    let (_, report_dir) = run_small(dir.path(), db);
    check_stored(db);
    check_show(db);

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report_dir.join("report.json")).unwrap()).unwrap();
    let facts = json["facts"].as_array().unwrap();
    assert_eq!(facts.len(), 2, "{facts:?}");
    assert_eq!(facts[0]["config"], "baseline");
    assert_eq!(facts[0]["trials"], 3);
    assert_eq!(facts[0]["agreed"]["train.hidden"], "8");
    assert_eq!(facts[1]["agreed"]["train.hidden"], "16,4");
    assert_eq!(facts[0]["agreed"]["features.threads"], "2");
    assert_eq!(facts[0]["differed"], serde_json::json!([]));

    let md = std::fs::read_to_string(report_dir.join("report.md")).unwrap();
    assert!(md.contains("## What ran"), "{md}");
    assert!(md.contains("| Fact | baseline | wide |"), "{md}");
    assert!(md.contains("| `train.hidden` | 8 | 16,4 |"), "{md}");
    assert!(md.contains("| `train.model` | mlp | mlp |"), "{md}");
    assert!(!md.contains("Fallbacks:"), "no stage fell back: {md}");
}

#[test]
fn facts_are_stored_and_read_back_on_postgres() {
    let url = pg_url();
    let dir = tempfile::tempdir().unwrap();
    run_small(dir.path(), &url);
    check_stored(&url);
    check_show(&url);
}

/// A run stored before stages recorded facts (the database taken back to the schema before
/// them: no column, no migration record) still reports, shows and compares, without a What ran
/// section; opening it adds the column back, empty.
#[test]
fn runs_stored_before_facts_still_report() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    run_small(dir.path(), db.to_str().unwrap());
    crate::stored::sqlite_exec(
        &db,
        &[
            "ALTER TABLE stage_results DROP COLUMN facts",
            "DELETE FROM _sqlx_migrations WHERE description = 'stage facts'",
        ],
    );
    let folder = report_again(dir.path(), &db);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("report.json")).unwrap()).unwrap();
    assert!(json.get("facts").is_none(), "no facts key for a run without facts");
    let md = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(!md.contains("## What ran") && md.contains("## Results"), "{md}");
    let show = run(bin().arg("--database").arg(&db).args(["show", "latest"]));
    assert_eq!(show.status.code(), Some(0));
    assert!(!text(&show).contains("what ran"), "{}", text(&show));
    assert_eq!(
        scalar(
            db.to_str().unwrap(),
            "SELECT COUNT(*) FROM stage_results WHERE facts IS NOT NULL"
        ),
        0,
        "the column is back, empty"
    );
}

/// A stage that fell back from cuDNN (as a CUDA training records it: the facts `rnn_engine` and
/// `rnn_engine_fallback`, and a note), stored and read back: the report lists the fallback
/// with the model quality and in `report.json`, and `measured show` prints the engine.
#[test]
fn a_recorded_engine_fallback_reaches_the_report_and_show_from_the_stored_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    run_small(dir.path(), db.to_str().unwrap());
    let reason = "cuDNN's RNN self-check failed: it failed: cudnnRNNForward returned 9 \
                  (CUDNN_STATUS_EXECUTION_FAILED); ran on the dfdx path";
    let wide = "trial_index IN (SELECT trial_index FROM trials t WHERE t.run_id = stage_results.run_id \
                AND t.config = 'wide')";
    let sql = reason.replace('\'', "''");
    crate::stored::sqlite_exec(
        &db,
        &[
            &format!(
                "UPDATE stage_results SET facts = json_set(facts, '$.rnn_engine', 'dfdx', '$.rnn_engine_fallback', \
                 '{sql}'), notes = json_array('{sql} (shape lstm train)') WHERE stage = 'train' AND {wide}"
            ),
            "UPDATE stage_results SET facts = json_set(facts, '$.rnn_engine', 'cudnn') WHERE stage = 'train' \
             AND facts NOT LIKE '%rnn_engine%'",
        ],
    );
    let folder = report_again(dir.path(), &db);
    let md = std::fs::read_to_string(folder.join("report.md")).unwrap();
    let quality = &md[md.find("## Model quality").expect("a model quality section")..md.find("## What ran").unwrap()];
    assert!(quality.contains(&format!("- `train` (wide): {reason}")), "{quality}");
    assert!(md.contains("| `train.rnn_engine` | cudnn | dfdx |"), "{md}");
    assert!(
        md.contains(&format!("{reason} (shape lstm train)")),
        "the stage note: {md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["facts"][1]["agreed"]["train.rnn_engine_fallback"], reason);
    assert_eq!(json["facts"][0]["agreed"]["train.rnn_engine"], "cudnn");
    let show = text(&run(bin().arg("--database").arg(&db).args(["show", "latest"])));
    assert!(show.contains("train.rnn_engine = dfdx"), "{show}");
}
