//! Claims are judged only under the conditions they were made for.

use crate::common::{bin, run, text, write};

/// `fast` reports half the latency of `slow` (emitted values, not timings): a 2x speedup.
const HALVED: &str = r#"
[experiment]
name = "conditions"
[schedule]
warmup = 0
repetitions = 6
seed = 3
[stages.work]
kind = "command"
shell = true
argv = ["echo '{\"metric\": \"latency\", \"value\": {{ secs * (1 + 0.01 * (repetition % 5)) }}, \"unit\": \"s\"}'"]
vars = { secs = 0.2 }
[variants.slow]
[variants.fast]
"stages.work.vars.secs" = 0.1
[compare]
primary = "work.latency"
claims = [
  { metric = "work.latency", variant = "fast", speedup = "10x", source = "made on a GPU", requires = { device = "cuda" } },
  { metric = "work.latency", variant = "fast", speedup = "10x", source = "made with 30 workers", requires = { min_cores = 100000 } },
  { metric = "work.latency", variant = "fast", speedup = "10x", source = "made on one core or more", requires = { min_cores = 1 } },
  { metric = "work.latency", variant = "fast", speedup = "10x", source = "made at this size", requires = { params = { "stages.work.vars.secs" = 0.1 } } },
]
"#;

#[test]
fn a_claim_with_unmet_conditions_is_never_refuted_and_a_met_one_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "c.toml", HALVED);
    let out = run(bin()
        .arg("--database")
        .arg(dir.path().join("r.sqlite"))
        .args(["run", "--results-dir"])
        .arg(dir.path())
        .arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = std::fs::read_dir(dir.path().join("conditions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).unwrap()).unwrap();
    let claims = json["claims"].as_array().unwrap();
    let verdicts: Vec<&str> = claims.iter().map(|c| c["verdict"].as_str().unwrap()).collect();
    // The data refute 10x (they show 2x); only the claims whose conditions held may say so.
    assert_eq!(
        verdicts,
        ["not_reproduced", "not_reproduced", "refuted", "refuted"],
        "{json}"
    );
    let cuda = claims[0]["reason"].as_str().unwrap();
    assert!(
        cuda.starts_with("not reproduced here: the claim is for a CUDA device; this run had no CUDA device"),
        "{cuda}"
    );
    let cores = claims[1]["reason"].as_str().unwrap();
    assert!(
        cores.contains("the claim is for 100000 cores or more; this run had"),
        "{cores}"
    );
    // The measurement is still shown as context.
    assert!(
        claims[0]["speedup"].as_f64().is_some_and(|s| (s - 2.0).abs() < 0.01),
        "{json}"
    );
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("not reproduced here"), "{md}");
}
