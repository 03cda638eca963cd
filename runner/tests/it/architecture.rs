//! The shape of `runner/src`, checked so that it stays as `docs/architecture.md` describes it:
//! the graph of its top-level modules is a DAG and the document lists it edge for edge, no
//! source file is over 600 lines, no function over 100 lines lacks a written reason, and test
//! code follows one naming convention.
//!
//! Test code (`tests.rs`, files under a `tests/` folder, and `#[cfg(test)]` items) may reach
//! any module and is left out of the graph: tests sit above everything they test.

mod cited;
mod folders;
mod lengths;
mod rules;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 100;
/// The commands and the executor are read most: their functions stay shorter still.
const MAX_ORCHESTRATION_FN_LINES: usize = 80;
const ORCHESTRATION: &[&str] = &["commands", "exec"];
/// What a function over [`MAX_FN_LINES`] carries on the line above its doc comment.
const LONG_REASON: &str = "// Long because:";

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every `.rs` file under `runner/src`, relative to it.
fn sources() -> Vec<(PathBuf, String)> {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.strip_prefix(&root).unwrap().to_path_buf(), text)
        })
        .collect()
}

fn is_test_file(rel: &Path) -> bool {
    rel.file_name().is_some_and(|n| n == "tests.rs") || rel.components().any(|c| c.as_os_str() == "tests")
}

/// The top-level modules `lib.rs` declares.
fn modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))
                .or_else(|| l.strip_prefix("mod "))
        })
        .filter_map(|l| l.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

/// The top-level module a file belongs to (`stage/command/mod.rs` -> `stage`).
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    first.strip_suffix(".rs").map(str::to_owned).unwrap_or(first)
}

/// For each top-level module, the other top-level modules its non-test code uses.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for file in parsed_sources() {
        let Some(from) = file.module.first().filter(|m| modules.contains(*m)) else {
            continue;
        };
        for to in file.uses.iter().filter_map(|u| u.first()) {
            if to != from && modules.contains(to) {
                graph.get_mut(from).unwrap().insert(to.clone());
            }
        }
    }
    graph
}

/// Every non-test file under `runner/src`, parsed for the module graphs.
fn parsed_sources() -> Vec<folders::SourceFile> {
    sources()
        .iter()
        .filter(|(rel, _)| !is_test_file(rel))
        .map(|(rel, text)| folders::parse(rel, text))
        .collect()
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = module_graph();
    assert!(graph.len() > 20, "lib.rs declares {} modules", graph.len());
    let circles = folders::circles(&graph);
    assert!(
        circles.is_empty(),
        "module circles in runner/src: {}",
        circles.join("; ")
    );
}

/// The `- `module` uses ...` lines of the document's dependency list.
fn documented_graph(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for line in doc.lines() {
        let Some(rest) = line.strip_prefix("- `") else { continue };
        let Some((module, uses)) = rest.split_once("` uses ") else {
            continue;
        };
        let uses: BTreeSet<String> = if uses.trim_end_matches('.') == "nothing" {
            BTreeSet::new()
        } else {
            uses.trim_end_matches('.')
                .split(", ")
                .map(|u| u.trim_matches('`').to_owned())
                .collect()
        };
        graph.insert(module.to_owned(), uses);
    }
    graph
}

fn dependency_line(module: &str, uses: &BTreeSet<String>) -> String {
    if uses.is_empty() {
        return format!("- `{module}` uses nothing.");
    }
    let list: Vec<String> = uses.iter().map(|u| format!("`{u}`")).collect();
    format!("- `{module}` uses {}.", list.join(", "))
}

#[test]
fn architecture_md_lists_the_module_graph_as_the_code_has_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let graph = module_graph();
    let documented = documented_graph(&doc);
    let wrong: Vec<String> = graph
        .iter()
        .filter(|(m, uses)| documented.get(*m) != Some(uses))
        .map(|(m, uses)| dependency_line(m, uses))
        .collect();
    let gone: Vec<&String> = documented.keys().filter(|m| !graph.contains_key(*m)).collect();
    assert!(
        wrong.is_empty() && gone.is_empty(),
        "docs/architecture.md's dependency list differs from the code; the lines should read:\n{}\n\
         and these modules no longer exist: {gone:?}",
        wrong.join("\n")
    );
    for module in graph.keys() {
        assert!(
            doc.contains(&format!("### `{module}`")),
            "docs/architecture.md has no section on `{module}`"
        );
    }
}

#[test]
fn no_source_file_is_over_600_lines() {
    let long: Vec<String> = sources()
        .into_iter()
        .map(|(rel, text)| (rel, text.lines().count()))
        .filter(|(_, n)| *n > MAX_FILE_LINES)
        .map(|(rel, n)| format!("{} ({n} lines)", rel.display()))
        .collect();
    assert!(long.is_empty(), "over {MAX_FILE_LINES} lines: {long:?}");
}

/// Functions over `max` lines without a `// Long because: ...` line above them, as
/// `(line, name, length)`; `label` names the file in a parse error.
fn long_functions_without_a_reason(label: &str, text: &str, max: usize) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for f in lengths::functions(label, text) {
        let length = f.end - f.line + 1;
        if length <= max {
            continue;
        }
        // Up over the doc comment and attributes; `f.line` is the line of `fn`.
        let mut above = f.line - 1;
        while above > 0 && {
            let t = lines[above - 1].trim_start();
            t.starts_with("///") || t.starts_with("#[")
        } {
            above -= 1;
        }
        // The reason may run over several comment lines; it starts with `LONG_REASON`.
        let explained = lines[..above]
            .iter()
            .rev()
            .take_while(|l| l.trim_start().starts_with("//"))
            .any(|l| l.trim_start().starts_with(LONG_REASON));
        if !explained {
            found.push((f.line, f.name, length));
        }
    }
    found
}

#[test]
fn the_long_function_check_finds_what_it_should() {
    let body = "    let x = 1;\n".repeat(MAX_FN_LINES);
    let text = format!(
        "/// Doc.\nfn long() {{\n{body}}}\n\n{LONG_REASON} it is a table,\n// one row per line.\n/// Doc.\n#[inline]\n\
         pub fn explained() {{\n{body}}}\n\nfn short() {{\n    let y = 2;\n}}\n\ntrait T {{\n    fn declared();\n}}\n\n\
         // Not a reason.\nfn unexplained() {{\n{body}}}\n\nimpl S {{\n    pub(super) async fn in_impl(&self) {{\n{body}    }}\n}}\n\n\
         #[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}    }}\n}}\n"
    );
    let found = long_functions_without_a_reason("planted.rs", &text, MAX_FN_LINES);
    let at = |prefix: &str| text.lines().position(|l| l.trim_start().starts_with(prefix)).unwrap() + 1;
    assert_eq!(
        found,
        [
            (2, "long".to_owned(), MAX_FN_LINES + 2),
            (at("fn unexplained"), "unexplained".to_owned(), MAX_FN_LINES + 2),
            (
                at("pub(super) async fn in_impl"),
                "in_impl".to_owned(),
                MAX_FN_LINES + 2
            ),
        ]
    );
}

#[test]
fn no_function_is_over_100_lines_without_a_reason_beside_it() {
    let mut long = Vec::new();
    for (rel, text) in sources() {
        if is_test_file(&rel) {
            continue;
        }
        for (line, name, length) in long_functions_without_a_reason(&rel.display().to_string(), &text, MAX_FN_LINES) {
            long.push(format!("{} (line {line}) {name}: {length} lines", rel.display()));
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines with no `{LONG_REASON} ...` line above them: {long:#?}"
    );
}

#[test]
fn no_function_in_commands_or_exec_is_over_80_lines_without_a_reason_beside_it() {
    let mut long = Vec::new();
    for (rel, text) in sources() {
        if is_test_file(&rel) || !ORCHESTRATION.contains(&module_of(&rel).as_str()) {
            continue;
        }
        let label = rel.display().to_string();
        for (line, name, length) in long_functions_without_a_reason(&label, &text, MAX_ORCHESTRATION_FN_LINES) {
            long.push(format!("{} (line {line}) {name}: {length} lines", rel.display()));
        }
    }
    assert!(
        long.is_empty(),
        "functions in {ORCHESTRATION:?} over {MAX_ORCHESTRATION_FN_LINES} lines with no `{LONG_REASON} ...` line above them: {long:#?}"
    );
}

#[test]
fn test_code_follows_one_naming_convention() {
    let mut odd = Vec::new();
    for (rel, text) in sources() {
        let name = rel.file_name().unwrap().to_string_lossy();
        if name.contains("test") && !is_test_file(&rel) {
            odd.push(format!(
                "{}: unit tests live in tests.rs or under tests/",
                rel.display()
            ));
        }
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.trim() != "#[cfg(test)]" {
                continue;
            }
            if let Some(item) = lines.next() {
                let item = item.trim();
                if let Some(module) = item
                    .strip_prefix("mod ")
                    .or_else(|| item.strip_prefix("pub(crate) mod "))
                {
                    let module = module.trim_end_matches([';', '{', ' ']);
                    if module != "tests" {
                        odd.push(format!("{}: test module `{module}` (call it `tests`)", rel.display()));
                    }
                }
            }
        }
    }
    assert!(odd.is_empty(), "{odd:#?}");
}

fn folder_graphs() -> BTreeMap<folders::ModPath, BTreeMap<String, BTreeSet<String>>> {
    folders::folder_graphs(&parsed_sources())
}

#[test]
fn the_reader_sees_through_comments_and_test_items() {
    let code = "use crate::a::X;\n// crate::b in a comment\nfn f() { let x = crate::c::f(); } // and crate::d\n\
                #[cfg(test)]\nuse crate::e::Y;\n#[cfg(test)]\nmod tests {\n    use crate::f;\n}\n\
                #[cfg(test)]\nuse crate::g::{\n    H,\n};\nmacro_rules! m { () => { $crate::i::J } }\n\
                fn h() { not_crate::k() }\n";
    let file = folders::parse(Path::new("x/y.rs"), code);
    let found: BTreeSet<&str> = file.uses.iter().filter_map(|u| u.first()).map(String::as_str).collect();
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["a", "c", "i"]);
    assert_eq!(module_of(Path::new("stage/command/mod.rs")), "stage");
    assert_eq!(module_of(Path::new("db.rs")), "db");
    assert!(is_test_file(Path::new("report/tests/bandwidth.rs")));
    assert!(is_test_file(Path::new("stats/tests.rs")));
    assert!(!is_test_file(Path::new("report/view.rs")));
}

#[test]
fn the_folder_reader_resolves_paths_and_reexports() {
    let root = folders::parse(
        Path::new("report/mod.rs"),
        "mod build;\nmod model;\nmod view;\npub use model::Interval;\npub(crate) use view::render as show;\n\
         pub struct RunData;\n#[cfg(test)]\nmod tests;\nfn f() { view::render(); let build = 2; drop(build); }\n",
    );
    assert_eq!(root.module, ["report"]);
    assert_eq!(root.children.iter().collect::<Vec<_>>(), ["build", "model", "view"]);
    assert_eq!(root.reexports.get("Interval").map(String::as_str), Some("model"));
    assert_eq!(root.reexports.get("show").map(String::as_str), Some("view"));
    let build = folders::parse(
        Path::new("report/build.rs"),
        "use super::{Interval, RunData};\nuse crate::stats::median;\nuse super::view as v;\n\
         fn g() -> crate::report::model::Row { v::render(); bail!(\"{}\", super::show()); }\n\
         #[cfg(test)]\nmod tests { use super::super::mod_only; }\n",
    );
    let uses: BTreeSet<String> = build.uses.iter().map(|u| u.join("::")).collect();
    for expected in [
        "report::Interval",
        "report::RunData",
        "stats::median",
        "report::model::Row",
        "report::view::render",
        "report::show",
    ] {
        assert!(uses.contains(expected), "{expected} not in {uses:?}");
    }
    assert!(
        !uses.iter().any(|u| u.contains("mod_only")),
        "test code counted: {uses:?}"
    );
    let graphs = folders::folder_graphs(&[root, build]);
    let report = &graphs[&vec!["report".to_owned()]];
    let edges: Vec<String> = report["build"].iter().cloned().collect();
    assert_eq!(
        edges,
        ["mod", "model", "view"],
        "RunData is mod.rs's own; Interval and show are re-exports"
    );
    assert_eq!(report["mod"].iter().collect::<Vec<_>>(), ["view"]);
    assert!(folders::circles(report).is_empty());
}

#[test]
fn a_planted_circle_inside_a_folder_is_found() {
    let files = [
        folders::parse(Path::new("report/mod.rs"), "mod model;\nmod view;\n"),
        folders::parse(Path::new("report/model.rs"), "use super::view::Cell;\n"),
        folders::parse(
            Path::new("report/view.rs"),
            "fn f(_: crate::report::model::Report) {}\n",
        ),
    ];
    let graphs = folders::folder_graphs(&files);
    assert_eq!(
        folders::circles(&graphs[&vec!["report".to_owned()]]),
        ["model -> view, view -> model"]
    );
}

#[test]
fn every_folder_uses_its_own_files_without_a_circle() {
    let mut found = Vec::new();
    for (folder, graph) in folder_graphs() {
        let circles = folders::circles(&graph);
        if !circles.is_empty() {
            found.push(format!("{}: {}", folder.join("::"), circles.join("; ")));
        }
    }
    assert!(
        found.is_empty(),
        "circles inside folders of runner/src:\n{}",
        found.join("\n")
    );
}

/// The `NN  module module` lines of the document's Layers block, module -> layer number.
fn documented_layers(doc: &str) -> BTreeMap<String, u32> {
    let block = doc
        .split("## Layers")
        .nth(1)
        .and_then(|s| s.split("```text").nth(1))
        .unwrap_or("");
    let block = block.split("```").next().unwrap_or("");
    let mut layers = BTreeMap::new();
    for line in block.lines() {
        let mut words = line.split_whitespace();
        let Some(Ok(n)) = words.next().map(str::parse::<u32>) else {
            continue;
        };
        for module in words {
            layers.insert(module.to_owned(), n);
        }
    }
    layers
}

#[test]
fn every_module_uses_only_modules_in_lower_layers() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md")).unwrap();
    let layers = documented_layers(&doc);
    let graph = module_graph();
    let mut wrong = Vec::new();
    for (module, uses) in &graph {
        let Some(&at) = layers.get(module) else {
            wrong.push(format!("`{module}` is in no layer"));
            continue;
        };
        for used in uses {
            match layers.get(used) {
                Some(&below) if below < at => {}
                Some(&other) => wrong.push(format!("`{module}` (layer {at}) uses `{used}` (layer {other})")),
                None => wrong.push(format!("`{used}` is in no layer")),
            }
        }
    }
    wrong.extend(
        layers
            .keys()
            .filter(|m| !graph.contains_key(*m))
            .map(|m| format!("`{m}` is no module")),
    );
    assert!(wrong.is_empty(), "docs/architecture.md's Layers block: {wrong:#?}");
}
