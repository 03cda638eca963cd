//! The graph inside each folder of `runner/src`: the folder's children (its files and
//! sub-folders, and its own `mod.rs`) must use each other without a circle, as the top-level
//! modules must.
//!
//! Files are parsed with `syn`, so `use` trees, paths in code and `crate::`/`super::` paths
//! inside macro calls and attributes all count. A child that names something its folder's `mod.rs` re-exports
//! (`pub use model::Interval;`) uses the child it comes from (`model`), not `mod.rs`: the
//! re-export is the folder's front door, not a dependency. `mod.rs`'s own code (its functions
//! and types, and its private `use`s) is a node of its own, `mod`. Test code is left out, as in
//! the top-level graph.

use petgraph::algo::tarjan_scc;
use petgraph::graphmap::DiGraphMap;
use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use syn::visit::Visit;

/// A module path below the crate root, such as `["report", "model"]`.
pub type ModPath = Vec<String>;

/// The node `mod.rs`'s own code has in its folder's graph.
pub const MOD_NODE: &str = "mod";

/// One source file as the folder check sees it.
pub struct SourceFile {
    /// The module the file is (`report/model.rs` and `report/model/mod.rs` are both `report::model`).
    pub module: ModPath,
    /// True for a folder's `mod.rs` (and for `lib.rs`).
    pub is_mod_rs: bool,
    /// Absolute module paths the file's non-test code names, each as far as it was written
    /// (`crate::report::model::Interval` is `["report", "model", "Interval"]`).
    pub uses: Vec<ModPath>,
    /// For a `mod.rs`: re-exported name -> the child module it comes from.
    pub reexports: BTreeMap<String, String>,
    /// For a `mod.rs`: the child modules it declares.
    pub children: BTreeSet<String>,
}

/// The module a file under `runner/src` is.
pub fn module_path(rel: &Path) -> ModPath {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_owned();
    if stem != "mod" && stem != "lib" {
        parts.push(stem);
    }
    parts
}

pub fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().trim() == "test")
    })
}

/// Whether an item is test code (`#[cfg(test)]`).
pub fn is_test_item(item: &syn::Item) -> bool {
    let attrs: &[syn::Attribute] = match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => &[],
    };
    is_cfg_test(attrs)
}

/// The paths a `use` tree spells out, each as its segments (a glob or rename ends the path).
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push((path, Some(n.ident.to_string())));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

/// Collects what a file's non-test code names.
struct Collector {
    /// Paths as written, before resolution.
    written: Vec<Vec<String>>,
    /// Local names a private `use` brings in -> the path it names.
    aliases: BTreeMap<String, Vec<String>>,
    /// `pub use child::Name` re-exports: name -> path.
    public: Vec<(Vec<String>, Option<String>)>,
    children: BTreeSet<String>,
    depth: usize,
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_item(item) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_none() && self.depth == 0 {
            self.children.insert(m.ident.to_string());
        }
        self.depth += 1;
        syn::visit::visit_item_mod(self, m);
        self.depth -= 1;
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut paths);
        let reexport = !matches!(u.vis, syn::Visibility::Inherited);
        for (path, name) in paths {
            if reexport && self.depth == 0 {
                self.public.push((path, name));
                continue;
            }
            if let Some(name) = name {
                self.aliases.insert(name, path.clone());
            }
            self.written.push(path);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.written
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        // Paths in an attribute's arguments (`#[command(version = crate::build_info::version())]`).
        if let syn::Meta::List(list) = &a.meta {
            macro_paths(list.tokens.clone(), &mut self.written);
        } else if let syn::Meta::NameValue(nv) = &a.meta {
            self.visit_expr(&nv.value);
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        macro_paths(m.tokens.clone(), &mut self.written);
        syn::visit::visit_macro(self, m);
    }
}

/// `a::b::c` paths inside a macro's tokens.
fn macro_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        if let TokenTree::Group(g) = &trees[i] {
            macro_paths(g.stream(), out);
            i += 1;
            continue;
        }
        let TokenTree::Ident(first) = &trees[i] else {
            i += 1;
            continue;
        };
        let mut path = vec![first.to_string()];
        let mut j = i + 1;
        loop {
            let colons = matches!((trees.get(j), trees.get(j + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && b.as_char() == ':');
            match (colons, trees.get(j + 2)) {
                (true, Some(TokenTree::Ident(next))) => {
                    path.push(next.to_string());
                    j += 3;
                }
                _ => break,
            }
        }
        if path.len() > 1 {
            out.push(path);
        }
        i = j;
    }
}

/// Resolves a path as written in `module` to an absolute module path, or `None` when it names
/// something outside the crate (or a local item that is no module path at all).
fn resolve(
    written: &[String],
    module: &ModPath,
    is_mod_rs: bool,
    children: &BTreeSet<String>,
    aliases: &BTreeMap<String, Vec<String>>,
    seen: usize,
) -> Option<ModPath> {
    let first = written.first()?;
    match first.as_str() {
        "crate" | "$crate" => Some(written[1..].to_vec()),
        "self" => {
            let mut out = module.clone();
            out.extend(written[1..].iter().cloned());
            Some(out)
        }
        "super" => {
            let mut base = module.clone();
            let mut rest = written;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        // A lone name is a value or a type here, not a module (a local `data` is no `data::`).
        _ if is_mod_rs && written.len() > 1 && children.contains(first) => {
            let mut out = module.clone();
            out.extend(written.iter().cloned());
            Some(out)
        }
        _ if seen < 4 => {
            let target = aliases.get(first)?;
            if target.len() == 1 && target[0] == *first {
                return None;
            }
            let mut joined = target.clone();
            joined.extend(written[1..].iter().cloned());
            resolve(&joined, module, is_mod_rs, children, aliases, seen + 1)
        }
        _ => None,
    }
}

/// Parses one file (relative path under `runner/src`, and its text).
pub fn parse(rel: &Path, text: &str) -> SourceFile {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{}: {e}", rel.display()));
    let module = module_path(rel);
    let name = rel.file_name().unwrap().to_string_lossy();
    let is_mod_rs = name == "mod.rs" || name == "lib.rs";
    let mut c = Collector {
        written: Vec::new(),
        aliases: BTreeMap::new(),
        public: Vec::new(),
        children: BTreeSet::new(),
        depth: 0,
    };
    c.visit_file(&file);
    let children = if is_mod_rs { c.children.clone() } else { BTreeSet::new() };
    let uses = c
        .written
        .iter()
        .filter_map(|w| resolve(w, &module, is_mod_rs, &children, &c.aliases, 0))
        .collect();
    let mut reexports = BTreeMap::new();
    for (path, name) in &c.public {
        let (Some(abs), Some(name)) = (resolve(path, &module, is_mod_rs, &children, &c.aliases, 0), name) else {
            continue;
        };
        if abs.len() > module.len() && abs[..module.len()] == module[..] {
            reexports.insert(name.clone(), abs[module.len()].clone());
        }
    }
    SourceFile {
        module,
        is_mod_rs,
        uses,
        reexports,
        children,
    }
}

/// For each folder (by module path), the graph among its children: child -> children it uses.
pub fn folder_graphs(files: &[SourceFile]) -> BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> {
    let folders: BTreeMap<&ModPath, &SourceFile> = files
        .iter()
        .filter(|f| f.is_mod_rs && !f.module.is_empty())
        .map(|f| (&f.module, f))
        .collect();
    let mut graphs: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (folder, root) in &folders {
        let graph = graphs.entry((*folder).clone()).or_default();
        for child in &root.children {
            graph.entry(child.clone()).or_default();
        }
        graph.entry(MOD_NODE.to_owned()).or_default();
        for file in files {
            if file.module.len() < folder.len() || file.module[..folder.len()] != folder[..] {
                continue;
            }
            let from = if file.module.len() == folder.len() {
                MOD_NODE.to_owned()
            } else {
                file.module[folder.len()].clone()
            };
            for used in &file.uses {
                if used.len() <= folder.len() || used[..folder.len()] != folder[..] {
                    continue;
                }
                let next = &used[folder.len()];
                let to = if root.children.contains(next) {
                    next.clone()
                } else if let Some(child) = root.reexports.get(next) {
                    child.clone()
                } else {
                    MOD_NODE.to_owned()
                };
                if to != from {
                    graph.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    graphs
}

/// The circles of one folder's graph, each as the edges among its members.
pub fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut g = DiGraphMap::<&str, ()>::new();
    for (from, tos) in graph {
        g.add_node(from.as_str());
        for to in tos {
            g.add_edge(from.as_str(), to.as_str(), ());
        }
    }
    tarjan_scc(&g)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let members: BTreeSet<&str> = c.iter().copied().collect();
            let edges: Vec<String> = members
                .iter()
                .flat_map(|a| {
                    graph[*a]
                        .iter()
                        .filter(|b| members.contains(b.as_str()))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            edges.join(", ")
        })
        .collect()
}
