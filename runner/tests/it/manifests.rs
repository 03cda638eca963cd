//! Manifest validation: every invalid fixture gives a located, snapshot-tested message and
//! exit code 2; valid fixtures pass. Every committed manifest matches `measured schema`, and
//! shape errors fail it.

use crate::common::{bin, fixture, run, text};
use std::path::Path;

fn files(dir: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(fixture(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    v.sort();
    v
}

/// Paths in messages relative to the crate, so snapshots do not depend on the checkout.
fn rel(p: &Path) -> std::path::PathBuf {
    p.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().to_owned()
}

#[test]
fn every_invalid_manifest_has_a_located_message() {
    let all = files("invalid");
    assert!(
        all.len() >= 30,
        "the corpus needs at least 30 invalid manifests, has {}",
        all.len()
    );
    for path in &all {
        // Read as `measured check` reads it (cargo runs this from the package's folder).
        let err = measured::manifest::parse_file(&rel(path), false)
            .expect_err(&format!("{} should be invalid", path.display()));
        let rendered = err.render();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        // Located: file:line:col, the source line, and a caret.
        assert!(
            rendered.contains(&format!("{}:", rel(path).display())) && rendered.contains('^'),
            "{name}: not located:\n{rendered}"
        );
        insta::assert_snapshot!(format!("invalid__{name}"), rendered);
    }
}

#[test]
fn check_exits_2_on_every_invalid_manifest_and_0_on_valid_ones() {
    for path in files("invalid") {
        let out = run(bin().arg("check").arg(&path));
        assert_eq!(out.status.code(), Some(2), "{}: {}", path.display(), text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("error"),
            "{}",
            path.display()
        );
        assert!(!text(&out).contains("panicked"), "{}", path.display());
    }
    let valid = files("valid");
    let out = run(bin().arg("check").args(&valid));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).matches("ok: ").count(),
        valid.len()
    );
}

#[test]
fn checking_a_bad_manifest_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let out = run(bin()
        .arg("--database")
        .arg(&db)
        .arg("run")
        .arg(fixture("invalid/needs_undefined.toml")));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("did you mean `work`?"), "{}", text(&out));
    assert!(!db.exists(), "a rejected manifest must not create the database");
}

#[test]
fn smoke_overrides_validate_and_apply() {
    let exp = measured::manifest::parse_file(&fixture("valid/nested_overrides.toml"), true).unwrap();
    assert_eq!(exp.schedule.repetitions, 1);
    assert_eq!(exp.schedule.warmup, 0);
    assert_eq!(exp.configs.len(), 2);
    let t = &exp.configs[1].stages[0].table;
    assert_eq!(t["timeout"].as_float(), Some(10.0));
    assert_eq!(t["vars"]["n"].as_integer(), Some(2), "nested variant override applied");
    let full = measured::manifest::parse_file(&fixture("valid/nested_overrides.toml"), false).unwrap();
    assert!(full.configs[0].stages[0].table.get("timeout").is_none());
}

/// `check --smoke` used to point at the `[sweep]` axis a `[smoke]` sweep replaces; plain
/// `check` did not check the smoke sweep at all.
#[test]
fn a_bad_smoke_sweep_is_located_at_its_smoke_line_with_and_without_smoke() {
    let path = fixture("invalid/smoke_sweep_bad_value.toml");
    for args in [&["check", "--smoke"][..], &["check"][..]] {
        let out = run(bin().args(args).arg(&path));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let t = text(&out);
        assert!(t.contains("smoke_sweep_bad_value.toml:14:31"), "{args:?}: {t}");
        assert!(!t.contains(":11:"), "{args:?} points at the [sweep] line: {t}");
        assert!(t.contains("as [smoke] sets it"), "{args:?}: {t}");
    }
}

/// A TOML document as the JSON an editor validates against the schema (dates become strings,
/// as editors present them).
fn toml_to_json(v: &toml::Value) -> serde_json::Value {
    match v {
        toml::Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        toml::Value::Array(a) => a.iter().map(toml_to_json).collect(),
        toml::Value::Table(t) => t.iter().map(|(k, v)| (k.clone(), toml_to_json(v))).collect(),
        other => serde_json::to_value(other).unwrap(),
    }
}

fn schema_validator() -> jsonschema::Validator {
    let schema = measured::manifest::manifest_schema();
    assert!(
        jsonschema::meta::is_valid(&schema),
        "the schema is not a valid JSON Schema"
    );
    jsonschema::validator_for(&schema).unwrap()
}

/// The schema's complaints about a manifest file, one per line.
fn schema_errors(validator: &jsonschema::Validator, path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let json = toml_to_json(&doc);
    validator
        .iter_errors(&json)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn every_experiment_and_valid_fixture_matches_the_schema() {
    let validator = schema_validator();
    let experiments: Vec<_> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    assert!(experiments.len() >= 5, "{experiments:?}");
    for path in experiments.iter().chain(&files("valid")) {
        let errors = schema_errors(&validator, path);
        assert!(errors.is_empty(), "{}:\n{}", path.display(), errors.join("\n"));
    }
}

#[test]
fn shape_errors_fail_the_schema() {
    let validator = schema_validator();
    // Unknown keys, wrong types and missing keys: what a schema can see. Mistakes of meaning
    // (an undefined `needs`, a cycle, an override of a missing parameter) are `check`'s alone.
    for name in [
        "unknown_top_key",
        "unknown_schedule_key",
        "unknown_param",
        "guard_unknown_key",
        "smoke_bad_key",
        "param_wrong_type",
        "kind_not_string",
        "needs_not_list",
        "cache_not_bool",
        "bad_order",
        "sweep_not_list",
        "negative_warmup",
        "unknown_kind",
        "stage_without_kind",
        "missing_name",
        "missing_experiment",
        "claim_missing_speedup",
    ] {
        let path = fixture(&format!("invalid/{name}.toml"));
        assert!(
            !schema_errors(&validator, &path).is_empty(),
            "{name}: accepted by the schema"
        );
    }
}

#[test]
fn the_committed_schema_is_what_measured_schema_prints() {
    let out = run(bin().arg("schema"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/measured.schema.json");
    let committed = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&out.stdout) == committed,
        "docs/measured.schema.json is out of date: run `measured schema > docs/measured.schema.json`"
    );
}

/// A manifest with many mistakes, or with a huge line, gets a bounded report: the first 20
/// errors and a count of the rest, at most 64 KiB in all.
#[test]
fn error_reports_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut many = String::from("[experiment]\nname = \"many\"\n");
    for i in 0..30 {
        many.push_str(&format!("[stages.s{i}]\nkind = 5\n"));
    }
    let huge = format!(
        "[experiment]\nname = \"{}\"\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\n",
        "x".repeat(300_000)
    );
    for (name, body, shown) in [("many.toml", many, 20), ("huge.toml", huge, 1)] {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let o = run(bin().arg("check").arg(&path));
        assert_eq!(o.status.code(), Some(2));
        let out = text(&o);
        assert!(out.len() <= 70 * 1024, "{name}: {} bytes of errors", out.len());
        assert_eq!(out.matches("error:").count(), shown, "{name}: {out}");
        if name == "many.toml" {
            assert!(out.contains("and 10 more errors"), "{out}");
        } else {
            assert!(
                out.contains("error output cut at 64 KiB"),
                "{}",
                &out[out.len() - 200..]
            );
        }
    }
}

/// Reporting a file's mistakes takes time in proportion to them (errors were deduplicated by a
/// list scan: 40,000 unknown keys took 12 s), and a file past 4 MiB is refused unread.
#[test]
fn many_errors_are_reported_quickly_and_huge_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut many = String::from("[experiment]\nname = \"many\"\n");
    for i in 0..100_000 {
        many.push_str(&format!("unknown_{i} = {i}\n"));
    }
    let path = dir.path().join("many.toml");
    std::fs::write(&path, &many).unwrap();
    let start = std::time::Instant::now();
    let o = run(bin().arg("check").arg(&path));
    let took = start.elapsed();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("and 99981 more errors"), "{}", text(&o));
    // A guard against work that grows with the square of the errors (100,000 of them would
    // take hours), not a speed target: a debug build on a busy machine takes ~25 s.
    assert!(took < std::time::Duration::from_secs(180), "check took {took:?}");
    let big = dir.path().join("big.toml");
    std::fs::write(&big, " ".repeat((4 << 20) + 1)).unwrap();
    let o = run(bin().arg("check").arg(&big));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is larger than 4 MiB"), "{}", text(&o));
}

/// `check` on the manifest reference's plan, `repetitions = { min = 8, max = 200 }`: every
/// planned look's share of alpha, the first look that can decide (after 12 blocks), and a
/// warning with the fix for the look after 8 blocks, which can never reject and spends nothing.
#[test]
fn check_names_the_first_look_that_can_decide() {
    let o = run(bin().arg("check").arg(fixture("valid/sequential_early_looks.toml")));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let looks = stdout.lines().nth(1).expect("a line of looks").trim();
    assert!(
        looks.contains("the first that can decide is after 12 blocks"),
        "{looks}"
    );
    insta::assert_snapshot!("sequential_looks", looks);
    insta::assert_snapshot!("sequential_looks_warning", String::from_utf8_lossy(&o.stderr).trim());
}

/// Half precision where either device can run it: an MLP in f16 with `device = "auto"`, with
/// `cuda_graph` left to "auto" or off, is a valid manifest (bf16 needs `device = "cuda"`, which
/// a build with CUDA checks: `fixtures/cuda/`).
#[test]
fn check_accepts_f16_on_auto_and_cuda_graph_settings() {
    let o = run(bin().arg("check").arg(fixture("valid/half_precision.toml")));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout).replace(&fixture("").display().to_string(), "fixtures/");
    insta::assert_snapshot!("half_precision_accepted", stdout.trim());
}

/// A claim no run of the manifest can judge (made on CUDA while its stage stays on the CPU, or
/// about what the source measured and this does not, or a value stated for a GPU the source does
/// not name) is flagged at its line, with what is
/// missing; the manifest is still valid.
#[test]
fn check_flags_claims_no_run_can_judge() {
    let o = run(bin().arg("check").arg(fixture("unjudgeable/claims.toml")));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr).replace(&fixture("").display().to_string(), "fixtures/");
    assert_eq!(stderr.matches(": warning: claim ").count(), 3, "{stderr}");
    assert!(
        stderr.contains("names no GPU a machine could be matched to"),
        "{stderr}"
    );
    assert!(stderr.contains("stage `copy` on the CPU"), "{stderr}");
    insta::assert_snapshot!("unjudgeable_claims", stderr.trim());
}
