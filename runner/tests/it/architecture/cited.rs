//! The files and folders `docs/architecture.md` cites exist. A path from the repository's root
//! (`runner/tests/it/docs.rs`, `templates/`) is looked up there; a bare one (`session.rs`,
//! `render/charts/`) below `runner/src`, first inside the module whose `### `module`` section
//! cites it, then anywhere. A placeholder (`runner/src/kinds/<kind>.rs`) is a pattern, not a
//! file, and is left alone.

use std::path::Path;

/// Every file and folder below `root`, relative to it, folders with a trailing `/`.
fn entries(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(read) = std::fs::read_dir(dir) else { return };
    for e in read.flatten() {
        let path = e.path();
        let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
        if path.is_dir() {
            out.push(format!("{rel}/"));
            entries(root, &path, out);
        } else {
            out.push(rel);
        }
    }
}

/// The backquoted spans of `doc` that name a file or folder, with the `### `module`` section
/// each stands in (`None` before the first one and after a `## ` heading).
fn cited_paths(doc: &str) -> Vec<(Option<String>, String)> {
    let mut section = None;
    let mut out = Vec::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("### `").and_then(|h| h.strip_suffix('`')) {
            section = Some(h.to_owned());
            continue;
        }
        if line.starts_with("## ") {
            section = None;
        }
        for (i, span) in line.split('`').enumerate() {
            let is_path = i % 2 == 1
                && (span.ends_with(".rs") || span.ends_with('/'))
                && span.len() > 1
                && !span.contains('<')
                && span.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
            if is_path {
                out.push((section.clone(), span.to_owned()));
            }
        }
    }
    out
}

/// The cited paths that name nothing, given the repository's root folders and `runner/src`'s
/// entries.
fn missing(cited: &[(Option<String>, String)], top: &[String], src: &[String]) -> Vec<String> {
    let found_in = |span: &str, within: Option<&str>| {
        src.iter().any(|p| {
            (p == span || p.ends_with(&format!("/{span}")))
                && within.is_none_or(|m| p.starts_with(&format!("{m}/")) || *p == format!("{m}.rs"))
        })
    };
    cited
        .iter()
        .filter(|(section, span)| {
            let from_root = top.iter().any(|t| span.starts_with(t.as_str()));
            if from_root {
                return !top.iter().any(|t| t == span)
                    && !Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(span).exists();
            }
            !found_in(span, section.as_deref()) && !found_in(span, None)
        })
        .map(|(section, span)| match section {
            Some(m) => format!("`{span}` (in the section on `{m}`)"),
            None => format!("`{span}`"),
        })
        .collect()
}

/// The repository's top-level folders, as `name/`.
fn top_folders(root: &Path) -> Vec<String> {
    let mut top: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| format!("{}/", e.file_name().to_string_lossy()))
        .filter(|n| !n.starts_with('.'))
        .collect();
    top.sort();
    top
}

#[test]
fn every_path_architecture_md_cites_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let src_root = root.join("runner/src");
    let mut src = Vec::new();
    entries(&src_root, &src_root, &mut src);
    let cited = cited_paths(&doc);
    assert!(
        cited.len() > 50,
        "only {} paths read from docs/architecture.md",
        cited.len()
    );
    let gone = missing(&cited, &top_folders(&root), &src);
    assert!(
        gone.is_empty(),
        "docs/architecture.md cites what does not exist: {gone:#?}"
    );
}

#[test]
fn a_cited_path_that_is_gone_is_found() {
    let doc = "Intro `runner/tests/it/docs.rs` and `runner/src/nowhere.rs`.\n### `store`\n\
               `sink.rs`, `gone.rs`, `journal/`, `a b.rs`, `runner/src/kinds/<kind>.rs`, `mod.rs`.\n\
               ### `report`\n`render/charts/` and `build/`\n## Conventions\n`session.rs`\n";
    let cited = cited_paths(doc);
    assert_eq!(cited.len(), 9, "{cited:?}");
    let src: Vec<String> = [
        "store/",
        "store/sink.rs",
        "store/journal/",
        "store/mod.rs",
        "report/render/charts/",
        "commands/session.rs",
    ]
    .map(str::to_owned)
    .to_vec();
    let top = vec!["runner/".to_owned()];
    assert_eq!(
        missing(&cited, &top, &src),
        [
            "`runner/src/nowhere.rs`",
            "`gone.rs` (in the section on `store`)",
            "`build/` (in the section on `report`)"
        ]
    );
}
