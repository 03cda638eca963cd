//! Claims are judged only under the conditions they were made for.

use crate::common::{bin, run, text, write};

/// `fast` reports half the latency of `slow` (emitted values, not timings): a 2x speedup.
const HALVED: &str = r#"
[experiment]
name = "conditions"
[schedule]
warmup = 0
repetitions = 8
seed = 3
[stages.work]
kind = "command"
shell = true
argv = ["echo '{\"metric\": \"latency\", \"value\": {{ secs * (1 + 0.01 * (repetition % 5)) }}, \"unit\": \"s\"}'"]
vars = { secs = 0.2 }
[variants.slow]
[variants.fast]
change = "half the work"
"stages.work.vars.secs" = 0.1
[compare]
primary = "work.latency"
claims = [
  { metric = "work.latency", variant = "fast", speedup = "10x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work", requires = { device = "cuda" } },
  { metric = "work.latency", variant = "fast", speedup = "10x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work", requires = { min_cores = 100000 } },
  { metric = "work.latency", variant = "fast", speedup = "10x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work", requires = { min_cores = 1 } },
  { metric = "work.latency", variant = "fast", speedup = "10x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work", requires = { params = { "stages.work.vars.secs" = 0.1 } } },
]
"#;

#[test]
fn a_claim_with_unmet_conditions_is_never_refuted_and_a_met_one_is_judged() {
    let (json, md) = run_report("conditions", HALVED);
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
    assert!(md.contains("not reproduced here"), "{md}");
    // The verdict line says why once, then the measurement.
    assert!(!md.contains("not reproduced here, not reproduced here"), "{md}");
    assert!(
        md.contains("**not reproduced here**, the claim is for a CUDA device; this run had no CUDA device"),
        "{md}"
    );
}

/// Runs `manifest` (written into a fresh folder with the test sources) and returns its
/// report.json and report.md.
fn run_report(name: &str, manifest: &str) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    run_report_in(dir.path(), name, manifest)
}

/// `run_report` in `dir`, whose results database `r.sqlite` stays for the caller to read.
fn run_report_in(dir: &std::path::Path, name: &str, manifest: &str) -> (serde_json::Value, String) {
    let m = write(dir, "c.toml", manifest);
    let out = run(bin()
        .arg("--database")
        .arg(dir.join("r.sqlite"))
        .args(["run", "--results-dir"])
        .arg(dir)
        .arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = std::fs::read_dir(dir.join(name))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let json = serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).unwrap()).unwrap();
    (json, std::fs::read_to_string(report.join("report.md")).unwrap())
}

/// `fast` halves the latency at every size; the claim is made for size 500 only.
const SIZES: &str = r#"
[experiment]
name = "sizes"
[schedule]
warmup = 0
repetitions = 8
seed = 3
[stages.work]
kind = "command"
shell = true
argv = ["echo '{\"metric\": \"latency\", \"value\": {{ size * secs * (1 + 0.01 * (repetition % 5)) }}, \"unit\": \"s\"}'"]
vars = { secs = 0.2, size = 1 }
[variants.slow]
[variants.fast]
change = "half the work"
"stages.work.vars.secs" = 0.1
[sweep]
"stages.work.vars.size" = [1, 10, 500]
[compare]
primary = "work.latency"
claims = [
  { metric = "work.latency", variant = "fast", speedup = "2x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work", requires = { params = { "stages.work.vars.size" = 500 } } },
]
"#;

#[test]
fn a_claim_bound_to_500_gets_a_verdict_at_500_only() {
    let (json, md) = run_report("sizes", SIZES);
    let claims = json["claims"].as_array().unwrap();
    // One row, at the size the claim was made for; 1 and 10 are context, never judged.
    assert_eq!(claims.len(), 1, "{json}");
    assert!(claims[0]["config"].as_str().unwrap().contains("500"), "{json}");
    assert_eq!(claims[0]["verdict"], "supported", "{json}");
    let notes: Vec<&str> = json["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let note = notes
        .iter()
        .find(|n| n.starts_with("Claim \"2x\""))
        .expect("a note on the other sizes");
    assert!(
        note.contains("is for stages.work.vars.size = 500") && note.contains("not judged against it"),
        "{note}"
    );
    assert!(note.contains("`fast[size=1]`, `fast[size=10]` are"), "{note}");
    assert!(!note.contains("size=500"), "{note}");
    assert!(md.contains("not judged against it"), "{md}");

    // A run that measures none of the claim's sizes reproduces nothing, and judges nothing.
    let small = SIZES.replace("[1, 10, 500]", "[1, 10]");
    let (json, _) = run_report("sizes", &small);
    let claims = json["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 1, "{json}");
    assert_eq!(claims[0]["verdict"], "not_reproduced", "{json}");
    assert_eq!(
        claims[0]["reason"],
        "not reproduced here: the claim is for stages.work.vars.size = 500; this run measured \
         stages.work.vars.size = 1, stages.work.vars.size = 10",
        "{json}"
    );
    assert!(claims[0]["speedup"].is_null(), "{json}");
}

/// The same measured 2x, held against claims about another change, another measurement, and
/// one the experiment says it cannot test.
const OTHERS: &str = r#"
[experiment]
name = "others"
[schedule]
warmup = 0
repetitions = 8
seed = 3
[stages.work]
kind = "command"
shell = true
argv = ["echo '{\"metric\": \"latency\", \"value\": {{ secs * (1 + 0.01 * (repetition % 5)) }}, \"unit\": \"s\"}'"]
vars = { secs = 0.2 }
[variants.slow]
[variants.fast]
change = "half the work"
"stages.work.vars.secs" = 0.1
[compare]
primary = "work.latency"
claims = [
  { metric = "work.latency", variant = "fast", speedup = "10x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "batching and caching combined" },
  { metric = "work.latency", variant = "fast", speedup = "10x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work", source_metric = "validation time" },
  { metric = "work.latency", variant = "fast", speedup = "10x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work", untestable = "the source's setup has no counterpart here" },
  { metric = "work.latency", variant = "fast", speedup = "10x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "half the work" },
]
"#;

#[test]
fn a_claim_about_another_change_or_measurement_is_not_this_experiments_claim() {
    let (json, md) = run_report("others", OTHERS);
    let claims = json["claims"].as_array().unwrap();
    let verdicts: Vec<&str> = claims.iter().map(|c| c["verdict"].as_str().unwrap()).collect();
    // The data refute 10x (they show 2x): only the claim that is this experiment's may say so.
    assert_eq!(
        verdicts,
        [
            "not_this_experiments_claim",
            "not_this_experiments_claim",
            "untestable",
            "refuted"
        ],
        "{json}"
    );
    assert_eq!(
        claims[0]["reason"],
        "the claim is about batching and caching combined; variant `fast` changes half the work"
    );
    assert_eq!(
        claims[1]["reason"],
        "the source measured validation time; this experiment measures `work.latency`"
    );
    assert_eq!(
        claims[2]["reason"],
        "not testable here: the source's setup has no counterpart here"
    );
    assert_eq!(claims[0]["quote"], "halves the latency");
    assert_eq!(claims[0]["source"], "test-report, section \"Results\"");
    // The measurement stays, as context.
    assert!(
        claims[0]["speedup"].as_f64().is_some_and(|s| (s - 2.0).abs() < 0.05),
        "{json}"
    );
    let table: Vec<&str> = md
        .lines()
        .skip_while(|l| *l != "## Claims")
        .take_while(|l| l.is_empty() || l.starts_with('|') || l.starts_with('#'))
        .filter(|l| l.starts_with('|'))
        .collect();
    insta::assert_snapshot!("not_this_experiments_claim_table", table.join("\n"));
}

/// Every committed experiment's claims quote their sources verbatim, under the document and
/// section they name, through the check `measured check` runs.
#[test]
fn every_committed_claim_quotes_its_source_verbatim() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut manifests: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    manifests.sort();
    assert!(manifests.len() >= 8, "{manifests:?}");
    let mut quoted = 0;
    for path in &manifests {
        let exp = measured::manifest::parse_file(path, false).unwrap_or_else(|e| panic!("{}", e.render()));
        for c in &exp.compare.claims {
            assert!(
                !c.quote.trim().is_empty(),
                "{}: a claim without a quote",
                path.display()
            );
            assert_eq!(
                measured::manifest::find_quote(exp.dir(), &c.document, &c.section, &c.quote),
                Ok(()),
                "{}: {:?}",
                path.display(),
                c.quote
            );
            quoted += 1;
        }
    }
    assert!(quoted >= 7, "only {quoted} claims");
}

/// A small training on the CPU: value claims about one config's own figure, and a primary and
/// a claim on a sum of metrics.
const VALUES: &str = r#"
[experiment]
name = "values"
[data]
synth = { symbols = 4, days = 300, seed = 7 }
[schedule]
warmup = 0
repetitions = 8
seed = 3
[stages.load]
kind = "load"
[stages.features]
kind = "normalize"
needs = ["load"]
seq_len = 10
preset = "minimal"
[stages.train]
kind = "train"
needs = ["features"]
hidden = [8]
batch_size = 64
[variants.fresh]
[variants.reuse]
change = "reused batch buffers"
"stages.train.buffer_reuse" = true
[compare]
primary = "train.epoch_seconds + train.prep_seconds"
claims = [
  { metric = "train.epoch_seconds", variant = "fresh", value = ">= 1ns", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "none: the epoch's time" },
  { metric = "train.epoch_seconds", variant = "reuse", value = "1000s..2000s", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "reused batch buffers" },
  { metric = "train.epoch_seconds + train.prep_seconds", variant = "reuse", speedup = "1000x", quote = "halves the latency", source = { document = "test-report", section = "Results" }, change = "reused batch buffers" },
]
"#;

#[test]
fn value_claims_are_judged_on_the_variants_own_median_and_sums_add_up_per_trial() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let (json, md) = run_report_in(dir.path(), "values", VALUES);
    let claims = json["claims"].as_array().unwrap();
    let verdicts: Vec<&str> = claims.iter().map(|c| c["verdict"].as_str().unwrap()).collect();
    // A finite epoch time is at least 1 ns, and no tiny training takes 1000 s; no run is 1000x
    // faster for reusing its buffers.
    assert_eq!(verdicts, ["supported", "refuted", "refuted"], "{json}");
    // Value claims name the config whose figure they hold, the baseline included, and carry its
    // median's interval in seconds.
    assert_eq!(claims[0]["config"], "fresh", "{json}");
    assert_eq!(claims[1]["config"], "reuse", "{json}");
    let value = &claims[1]["value"];
    assert_eq!(value["unit"], "s", "{json}");
    let (lo, mid, hi) = (
        value["median_ci"][0].as_f64().unwrap(),
        value["median"].as_f64().unwrap(),
        value["median_ci"][1].as_f64().unwrap(),
    );
    assert!(0.0 < lo && lo <= mid && mid <= hi && hi < 1000.0, "{value}");
    assert!(claims[1]["speedup"].is_null(), "a value claim has no speedup: {json}");

    // The primary is the sum of two metrics, trial by trial: its baseline median is the median
    // of the per-trial sums stored in the database.
    let comparison = &json["comparisons"][0];
    assert_eq!(
        comparison["metric"], "train.epoch_seconds + train.prep_seconds",
        "{json}"
    );
    let run_id = json["run_id"].as_str().unwrap();
    let mut sums: Vec<f64> = crate::common::strings(
        db.to_str().unwrap(),
        &format!(
            "SELECT printf('%.17g', SUM(m.value)) FROM metrics m JOIN trials t ON t.run_id = m.run_id AND t.trial_index = m.trial_index \
             WHERE m.run_id = '{run_id}' AND t.variant = 'fresh' AND NOT t.warmup AND m.stage = 'train' \
             AND m.step IS NULL AND m.name IN ('epoch_seconds', 'prep_seconds') GROUP BY t.trial_index"
        ),
    )
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    assert_eq!(sums.len(), 8, "{sums:?}");
    sums.sort_by(f64::total_cmp);
    let median = (sums[3] + sums[4]) / 2.0;
    let reported = comparison["comparison"]["baseline_median"].as_f64().unwrap();
    assert!((reported - median).abs() <= 1e-9 * median, "{reported} vs {median}");
    assert!(md.contains("| Claimed | Measured (95% CI)"), "{md}");
}
