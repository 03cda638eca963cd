//! The rules that keep the core typed and the layers one-way, each a function over parsed
//! source, checked on `runner/src` and shown to fail on a planted violation:
//!
//! - a stage kind is a `StageKind`, never a `String`, in the manifest, and no code compares a
//!   kind with a string;
//! - a run's status is written as text only in `store/` (the SQL boundary);
//! - `block_on` (the bridge from the synchronous commands to the async store) stands in at most
//!   three files;
//! - the report renders only its model, and its model knows nothing of the store;
//! - `preflight` speaks its own error type, not the CLI's; `plan` builds no stages.
//!
//! Test code is left out, as in the module graphs, except for `block_on`, which is counted in
//! every file.

use super::folders::{self, is_cfg_test, is_test_item, SourceFile};
use super::{is_test_file, parsed_sources, sources};
use proc_macro2::{TokenStream, TokenTree};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use syn::punctuated::Punctuated;
use syn::visit::Visit;

/// The most files `block_on` may stand in.
const MAX_BLOCK_ON_FILES: usize = 3;

/// What one file's code holds that a rule looks at.
#[derive(Default)]
struct Scan {
    /// Include `#[cfg(test)]` items.
    with_tests: bool,
    /// Leave out the `impl` blocks of other status enums (`impl StageStatus`): their words
    /// are their own, even where one is spelled like a run's (`failed`).
    without_other_statuses: bool,
    /// Every string literal, in code and in macro calls.
    strings: Vec<String>,
    /// Comparisons of a kind with a string, as the code reads.
    kind_comparisons: Vec<String>,
    /// Struct fields named `kind` (or `*_kind`) of a string type.
    string_kind_fields: Vec<String>,
    /// Whether `block_on` is named anywhere.
    block_on: bool,
    /// The words of the stage kinds (`load`, `train`, ...): a kind compared with one of them
    /// is a comparison of kinds as strings.
    kind_words: BTreeSet<String>,
}

fn text_of(tokens: impl quote::ToTokens) -> String {
    tokens.to_token_stream().to_string()
}

fn is_kind_name(name: &str) -> bool {
    name == "kind" || name.ends_with("_kind")
}

/// Whether an expression reads a kind: `s.kind`, `kind`, `def.kind.as_str()`, `run.stage_kind(i)`,
/// or a tuple holding one.
fn names_kind(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Field(f) => matches!(&f.member, syn::Member::Named(n) if is_kind_name(&n.to_string())),
        syn::Expr::Path(p) => p.path.get_ident().is_some_and(|i| is_kind_name(&i.to_string())),
        syn::Expr::MethodCall(m) => is_kind_name(&m.method.to_string()) || names_kind(&m.receiver),
        syn::Expr::Call(c) => match &*c.func {
            syn::Expr::Path(p) => p
                .path
                .segments
                .last()
                .is_some_and(|s| is_kind_name(&s.ident.to_string())),
            _ => false,
        },
        syn::Expr::Reference(r) => names_kind(&r.expr),
        syn::Expr::Unary(u) => names_kind(&u.expr),
        syn::Expr::Paren(p) => names_kind(&p.expr),
        syn::Expr::Tuple(t) => t.elems.iter().any(names_kind),
        _ => false,
    }
}

/// Whether an expression or pattern holds one of `words` as a string literal (`"load"`,
/// `Some("train")`, `"train" | "validate"`).
fn holds_word(tokens: impl quote::ToTokens, words: &BTreeSet<String>) -> bool {
    let mut strings = Vec::new();
    literal_strings(tokens.to_token_stream(), &mut strings);
    strings.iter().any(|s| words.contains(s))
}

/// The string literals among a macro's tokens.
fn literal_strings(ts: TokenStream, out: &mut Vec<String>) {
    for t in ts {
        match t {
            TokenTree::Literal(l) => {
                if let Ok(syn::Lit::Str(s)) = syn::parse2::<syn::Lit>(TokenTree::Literal(l).into()) {
                    out.push(s.value());
                }
            }
            TokenTree::Group(g) => literal_strings(g.stream(), out),
            _ => {}
        }
    }
}

impl<'ast> Visit<'ast> for Scan {
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_item(&mut self, item: &'ast syn::Item) {
        let other_status = match item {
            syn::Item::Impl(i) => {
                let ty = text_of(&i.self_ty);
                ty.ends_with("Status") && ty != "RunStatus"
            }
            _ => false,
        };
        if (self.with_tests || !is_test_item(item)) && !(self.without_other_statuses && other_status) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if self.with_tests || !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_field(&mut self, f: &'ast syn::Field) {
        let string_type = matches!(
            text_of(&f.ty).as_str(),
            "String" | "& str" | "& 'static str" | "Option < String >"
        );
        if let (Some(name), true) = (&f.ident, string_type) {
            if is_kind_name(&name.to_string()) {
                self.string_kind_fields.push(format!("{name}: {}", text_of(&f.ty)));
            }
        }
        syn::visit::visit_field(self, f);
    }

    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if matches!(b.op, syn::BinOp::Eq(_) | syn::BinOp::Ne(_))
            && (names_kind(&b.left) && holds_word(&b.right, &self.kind_words)
                || names_kind(&b.right) && holds_word(&b.left, &self.kind_words))
        {
            self.kind_comparisons.push(text_of(b));
        }
        syn::visit::visit_expr_binary(self, b);
    }

    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        if names_kind(&m.expr) && m.arms.iter().any(|a| holds_word(&a.pat, &self.kind_words)) {
            self.kind_comparisons
                .push(format!("match {} {{ .. }}", text_of(&m.expr)));
        }
        syn::visit::visit_expr_match(self, m);
    }

    fn visit_lit_str(&mut self, s: &'ast syn::LitStr) {
        self.strings.push(s.value());
    }

    fn visit_ident(&mut self, i: &'ast proc_macro2::Ident) {
        self.block_on |= i == "block_on";
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let args = m.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated);
        match args {
            Ok(args) => {
                let name = m.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                if name == "matches"
                    && args.first().is_some_and(names_kind)
                    && args.iter().skip(1).any(|a| holds_word(a, &self.kind_words))
                {
                    self.kind_comparisons.push(format!("matches!({})", text_of(&m.tokens)));
                }
                for a in &args {
                    self.visit_expr(a);
                }
            }
            Err(_) => literal_strings(m.tokens.clone(), &mut self.strings),
        }
        self.block_on |= m.tokens.clone().into_iter().any(|t| mentions_block_on(&t));
        syn::visit::visit_macro(self, m);
    }
}

fn mentions_block_on(t: &TokenTree) -> bool {
    match t {
        TokenTree::Ident(i) => i == "block_on",
        TokenTree::Group(g) => g.stream().into_iter().any(|t| mentions_block_on(&t)),
        _ => false,
    }
}

fn scan(rel: &Path, text: &str, with_tests: bool, kind_words: &BTreeSet<String>) -> Scan {
    scan_with(rel, text, with_tests, kind_words, false)
}

fn scan_with(
    rel: &Path,
    text: &str,
    with_tests: bool,
    kind_words: &BTreeSet<String>,
    without_other_statuses: bool,
) -> Scan {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
    let mut s = Scan {
        with_tests,
        without_other_statuses,
        kind_words: kind_words.clone(),
        ..Scan::default()
    };
    s.visit_file(&file);
    s
}

fn under(rel: &Path, folder: &str) -> bool {
    rel.components().next().is_some_and(|c| {
        let c = c.as_os_str().to_string_lossy();
        c == folder || c.strip_suffix(".rs") == Some(folder)
    })
}

/// `kind` fields of a string type in the manifest's non-test code.
fn string_kinds_in_manifest(files: &[(PathBuf, String)]) -> Vec<String> {
    files
        .iter()
        .filter(|(rel, _)| under(rel, "manifest") && !is_test_file(rel))
        .flat_map(|(rel, text)| {
            scan(rel, text, false, &BTreeSet::new())
                .string_kind_fields
                .into_iter()
                .map(move |f| format!("{}: {f}", rel.display()))
        })
        .collect()
}

/// The stage kinds' words: the variants of `enum StageKind` under `kinds/`, in lower case.
fn stage_kind_words(files: &[(PathBuf, String)]) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for (rel, text) in files
        .iter()
        .filter(|(rel, _)| under(rel, "kinds") && !is_test_file(rel))
    {
        let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
        for item in &file.items {
            if let syn::Item::Enum(e) = item {
                if e.ident == "StageKind" {
                    words.extend(e.variants.iter().map(|v| v.ident.to_string().to_lowercase()));
                }
            }
        }
    }
    words
}

/// Comparisons of a kind with one of the stage kinds' `words` in non-test code.
fn string_comparisons_of_kinds(files: &[(PathBuf, String)], words: &BTreeSet<String>) -> Vec<String> {
    files
        .iter()
        .filter(|(rel, _)| !is_test_file(rel))
        .flat_map(|(rel, text)| {
            scan(rel, text, false, words)
                .kind_comparisons
                .into_iter()
                .map(move |c| format!("{}: {c}", rel.display()))
        })
        .collect()
}

/// The texts a run's status has in the database: the string literals of `impl ... RunStatus`
/// blocks under `store/`.
fn run_status_words(files: &[(PathBuf, String)]) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for (rel, text) in files
        .iter()
        .filter(|(rel, _)| under(rel, "store") && !is_test_file(rel))
    {
        let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
        for item in &file.items {
            if let syn::Item::Impl(i) = item {
                if text_of(&i.self_ty) == "RunStatus" {
                    let mut s = Scan::default();
                    s.visit_item_impl(i);
                    words.extend(s.strings.into_iter().filter(|w| !w.is_empty() && !w.contains(' ')));
                }
            }
        }
    }
    words
}

/// String literals outside `store/` that spell a run's status, alone or quoted in SQL.
fn run_status_literals_outside_store(files: &[(PathBuf, String)], words: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in files
        .iter()
        .filter(|(rel, _)| !under(rel, "store") && !is_test_file(rel))
    {
        for s in scan_with(rel, text, false, &BTreeSet::new(), true).strings {
            if words.iter().any(|w| s == *w || s.contains(&format!("'{w}'"))) {
                found.push(format!("{}: {s:?}", rel.display()));
            }
        }
    }
    found
}

/// The files, test code included, that name `block_on`.
fn files_with_block_on(files: &[(PathBuf, String)]) -> Vec<String> {
    files
        .iter()
        .filter(|(rel, text)| scan(rel, text, true, &BTreeSet::new()).block_on)
        .map(|(rel, _)| rel.display().to_string())
        .collect()
}

fn starts_with(path: &[String], prefix: &[&str]) -> bool {
    path.len() >= prefix.len() && path.iter().zip(prefix).all(|(a, b)| a == b)
}

/// Paths that files in module `from` name under any of `to`, as `from-file uses path`.
fn uses_between(files: &[SourceFile], from: &[&str], to: &[&[&str]]) -> Vec<String> {
    let mut found = BTreeSet::new();
    for f in files.iter().filter(|f| starts_with(&f.module, from)) {
        for used in f.uses.iter().filter(|u| to.iter().any(|t| starts_with(u, t))) {
            found.insert(format!("{} uses {}", f.module.join("::"), used.join("::")));
        }
    }
    found.into_iter().collect()
}

/// A module path prefix, such as `["report", "render"]`.
type Prefix = &'static [&'static str];

/// The one-way edges: (what, from, must not use any of).
const ONE_WAY: &[(&str, Prefix, &[Prefix])] = &[
    (
        "the report's renderer reads only its model",
        &["report", "render"],
        &[&["report", "assemble"], &["report", "build"], &["rundata"], &["store"]],
    ),
    (
        "the report's model knows nothing of the store",
        &["report", "model"],
        &[&["store"]],
    ),
    (
        "preflight speaks its own error type, not the CLI's",
        &["preflight"],
        &[&["error", "CommandError"], &["globals"], &["cli"]],
    ),
    ("planning builds no stages", &["plan"], &[&["stage"]]),
];

#[test]
fn the_manifest_holds_no_kind_as_a_string() {
    let found = string_kinds_in_manifest(&sources());
    assert!(found.is_empty(), "a stage kind is a StageKind: {found:#?}");
}

#[test]
fn no_code_compares_a_kind_with_a_string() {
    let files = sources();
    let words = stage_kind_words(&files);
    assert!(
        words.len() >= 6,
        "kinds/ has no `enum StageKind` with the six kinds: {words:?}"
    );
    let found = string_comparisons_of_kinds(&files, &words);
    assert!(found.is_empty(), "compare with StageKind's variants: {found:#?}");
}

#[test]
fn only_the_store_spells_a_run_status() {
    let files = sources();
    let words = run_status_words(&files);
    assert!(
        words.len() >= 3,
        "store/ has no `impl RunStatus` that spells its statuses: {words:?}"
    );
    let found = run_status_literals_outside_store(&files, &words);
    assert!(
        found.is_empty(),
        "run statuses {words:?} spelled outside store/: {found:#?}"
    );
}

#[test]
fn block_on_stands_in_at_most_three_files() {
    let found = files_with_block_on(&sources());
    assert!(
        found.len() <= MAX_BLOCK_ON_FILES,
        "block_on in {} files (at most {MAX_BLOCK_ON_FILES}): {found:#?}",
        found.len()
    );
}

#[test]
fn the_one_way_edges_hold() {
    let files = parsed_sources();
    let mut wrong = Vec::new();
    for (what, from, to) in ONE_WAY {
        for u in uses_between(&files, from, to) {
            wrong.push(format!("{what}: {u}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A planted file, as `sources()` gives one.
fn planted(rel: &str, text: &str) -> (PathBuf, String) {
    (PathBuf::from(rel), text.to_owned())
}

#[test]
fn a_planted_string_kind_and_string_comparisons_are_found() {
    let files = [
        planted(
            "manifest/mod.rs",
            "pub struct StageDef { pub name: String, pub kind: String }\npub struct Ok { pub kind: StageKind }\n",
        ),
        planted(
            "commands/run.rs",
            "fn f(exp: &E, run: &R) {\n    if exp.stages.iter().any(|s| s.kind == \"load\") {}\n    \
             let t = run.stage_kind(0) == Some(\"train\");\n    match def.kind.as_str() { \"command\" => {}, _ => {} }\n    \
             assert!(matches!(s.kind.as_str(), \"normalize\" | \"train\"));\n    \
             let fine = s.kind == StageKind::Load && name == \"load\" && kind == \"enum \";\n}\n\
             #[cfg(test)]\nmod tests { fn t() { assert!(s.kind == \"load\"); } }\n",
        ),
        planted("manifest/tests/x.rs", "pub struct T { pub kind: String }\n"),
        planted("kinds/mod.rs", "pub enum StageKind { Command, Load, Normalize, Train, Validate, Transfer }\n"),
    ];
    let words = stage_kind_words(&files);
    assert_eq!(words.len(), 6, "{words:?}");
    assert_eq!(string_kinds_in_manifest(&files), ["manifest/mod.rs: kind: String"]);
    let found = string_comparisons_of_kinds(&files, &words);
    assert_eq!(found.len(), 4, "{found:#?}");
    for (i, expected) in [
        "s . kind == \"load\"",
        "stage_kind (0) == Some (\"train\")",
        "match def . kind . as_str ()",
        "matches!",
    ]
    .iter()
    .enumerate()
    {
        assert!(found[i].contains(expected), "{i}: {expected} not in {found:#?}");
    }
}

#[test]
fn a_planted_run_status_literal_is_found() {
    let files = [
        planted(
            "store/status.rs",
            "pub enum RunStatus { Running, Stopped, Finished }\nimpl RunStatus {\n    pub fn as_str(self) -> &'static str {\n        \
             match self { Self::Running => \"running\", Self::Stopped => \"stopped\", Self::Finished => \"finished\" }\n    }\n}\n\
             fn sql() -> &'static str { \"UPDATE runs SET status = 'stopped'\" }\n",
        ),
        planted(
            "rundata/mod.rs",
            "fn f(row: &Row) -> bool { row.status == \"stopped\" || matches!(x, \"finished\") }\n\
             const Q: &str = \"SELECT * FROM runs WHERE status = 'running'\";\nfn g() { println!(\"still running\"); }\n\
             impl StageStatus { fn as_str(self) -> &'static str { \"failed\" } }\n\
             impl RunStatus { fn other(self) -> &'static str { \"running\" } }\n",
        ),
    ];
    let words = run_status_words(&files);
    assert_eq!(words.iter().collect::<Vec<_>>(), ["finished", "running", "stopped"]);
    assert_eq!(
        run_status_literals_outside_store(&files, &words),
        [
            "rundata/mod.rs: \"stopped\"",
            "rundata/mod.rs: \"finished\"",
            "rundata/mod.rs: \"SELECT * FROM runs WHERE status = 'running'\"",
            "rundata/mod.rs: \"running\""
        ]
    );
}

#[test]
fn a_fourth_file_with_block_on_is_found() {
    let call = "fn f(rt: &Runtime) { rt.block_on(async {}); }\n";
    let mut files: Vec<(PathBuf, String)> = (0..3).map(|i| planted(&format!("store/f{i}.rs"), call)).collect();
    files.push(planted("db.rs", "// block_on in a comment\nfn g() {}\n"));
    assert_eq!(files_with_block_on(&files).len(), MAX_BLOCK_ON_FILES);
    files.push(planted(
        "commands/run.rs",
        "#[cfg(test)]\nmod tests { fn t() { let x = vec![tokio::runtime::Handle::current().block_on(f())]; } }\n",
    ));
    assert_eq!(files_with_block_on(&files).len(), MAX_BLOCK_ON_FILES + 1);
}

#[test]
fn planted_uses_across_the_one_way_edges_are_found() {
    let files = [
        folders::parse(Path::new("report/mod.rs"), "mod assemble;\nmod model;\nmod render;\n"),
        folders::parse(
            Path::new("report/render/write.rs"),
            "use crate::report::assemble::build_report;\nfn f(r: &crate::report::model::Report) {}\n",
        ),
        folders::parse(
            Path::new("report/model/run.rs"),
            "fn f(c: crate::store::spec::ClaimSpec) {}\n",
        ),
        folders::parse(
            Path::new("preflight/mod.rs"),
            "use crate::error::CommandError;\nfn f(e: crate::error::EXIT_FAILED) {}\n",
        ),
        folders::parse(Path::new("plan/mod.rs"), "fn f() { crate::stage::build(); }\n"),
    ];
    let found: Vec<String> = ONE_WAY
        .iter()
        .flat_map(|(_, from, to)| uses_between(&files, from, to))
        .collect();
    assert_eq!(
        found,
        [
            "report::render::write uses report::assemble::build_report",
            "report::model::run uses store::spec::ClaimSpec",
            "preflight uses error::CommandError",
            "plan uses stage::build",
        ]
    );
}
