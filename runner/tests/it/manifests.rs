//! Manifest validation: every invalid fixture gives a located, snapshot-tested message and
//! exit code 2; valid fixtures pass.

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
        let text = std::fs::read_to_string(path).unwrap();
        let err = measured::manifest::parse_str(&rel(path), &text, false)
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
    let t = &exp.configs[1].stages[0].params;
    assert_eq!(t["timeout"].as_float(), Some(10.0));
    assert_eq!(t["vars"]["n"].as_integer(), Some(2), "nested variant override applied");
    let full = measured::manifest::parse_file(&fixture("valid/nested_overrides.toml"), false).unwrap();
    assert!(full.configs[0].stages[0].params.get("timeout").is_none());
}
