//! The `[variants]` and `[sweep]` sections: parameter overrides, flattened to one per parameter.

use super::*;
use crate::manifest::diag::ManifestError;
use indexmap::IndexMap;

impl Validator {
    pub(super) fn variants(
        &mut self,
        raw: Option<&IndexMap<String, toml::Table>>,
        stages: &[Def],
    ) -> Vec<(String, Vec<Override>)> {
        let Some(raw) = raw else {
            return vec![("baseline".to_owned(), Vec::new())];
        };
        if raw.is_empty() {
            let span = self.key_span(&["variants"]);
            self.err(
                ManifestError::new("[variants] is empty", span)
                    .hint("define at least one variant, e.g. [variants.baseline], or remove [variants] to get a single `baseline`"),
            );
            return Vec::new();
        }
        let mut out = Vec::new();
        for (name, table) in raw {
            if !crate::paths::is_valid_name(name) {
                let span = self.key_span(&["variants", name]);
                self.err(
                    ManifestError::new(format!("variant name `{name}` is not a valid name"), span)
                        .hint("use 1-64 letters, digits, `_` or `-`"),
                );
            }
            // `git` and `build` say where the variant's code comes from; every other key is a
            // parameter override.
            if let Some(rev) = self.revision(name, table) {
                self.revisions.insert(name.clone(), rev);
            }
            // `change` says in words what the variant changes (what a claim about it is about).
            match table.get("change") {
                None => {}
                Some(toml::Value::String(c)) if !c.trim().is_empty() => {
                    self.variant_changes.insert(name.clone(), c.clone());
                }
                Some(other) => {
                    let span = self.value_span(&["variants", name, "change"]);
                    self.err(
                        ManifestError::new("a variant's `change` must be a non-empty string", span)
                            .label(format!(
                                "found {}",
                                if other.is_str() {
                                    "an empty string"
                                } else {
                                    other.type_str()
                                }
                            ))
                            .hint(
                                "describe the change in words, e.g. change = \"reuse the batch buffers across steps\"",
                            ),
                    );
                }
            }
            let overrides: toml::Table = table
                .iter()
                .filter(|(k, _)| !crate::manifest::revisions::RESERVED.contains(&k.as_str()) && k.as_str() != "change")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut ovs = Vec::new();
            for ov in flatten(&overrides, &["variants".to_owned(), name.clone()]) {
                if self.check_path(&ov, stages, "override").is_some() {
                    ovs.push(ov);
                } else {
                    self.refused_overrides.insert(name.clone());
                }
            }
            out.push((name.clone(), ovs));
        }
        out
    }

    /// The sweep axes, checked; an axis named in `located` (those `[smoke]` replaced) is
    /// located at the key given there instead of at its `[sweep]` entry.
    pub(super) fn sweep(
        &mut self,
        raw: Option<&IndexMap<String, toml::Value>>,
        stages: &[Def],
        variants: &[(String, Vec<Override>)],
        located: &std::collections::BTreeMap<String, Vec<String>>,
    ) -> Vec<(String, Vec<toml::Value>, Vec<String>)> {
        let Some(raw) = raw else { return Vec::new() };
        if raw.is_empty() {
            let span = self.key_span(&["sweep"]);
            self.err(
                ManifestError::new("[sweep] is empty", span)
                    .hint("add an axis, e.g. \"stages.train.batch_size\" = [64, 256], or remove [sweep]"),
            );
            return Vec::new();
        }
        let mut table = toml::Table::new();
        for (k, v) in raw {
            table.insert(k.clone(), v.clone());
        }
        let mut out = Vec::new();
        for mut ov in flatten(&table, &["sweep".to_owned()]) {
            if let Some(at) = located.get(&ov.path) {
                ov.at = at.clone();
            }
            let at: Vec<&str> = ov.at.iter().map(String::as_str).collect();
            if self.check_path(&ov, stages, "sweep axis").is_none() {
                continue;
            }
            let values = match &ov.value {
                toml::Value::Array(a) if a.is_empty() => {
                    let span = self.value_span(&at);
                    self.err(
                        ManifestError::new(format!("sweep axis `{}` has no values", ov.path), span)
                            .label("empty list")
                            .hint("list at least one value, e.g. [64, 256]"),
                    );
                    continue;
                }
                toml::Value::Array(a) => a.clone(),
                other => {
                    let span = self.value_span(&at);
                    self.err(
                        ManifestError::new(
                            format!(
                                "sweep axis `{}` must be a list of values, found {}",
                                ov.path,
                                toml_type(other)
                            ),
                            span,
                        )
                        .hint(format!("write \"{}\" = [{}]", ov.path, other)),
                    );
                    continue;
                }
            };
            for (i, v) in values.iter().enumerate() {
                if values[..i].contains(v) {
                    let idx = i.to_string();
                    let mut p = at.clone();
                    p.push(&idx);
                    let span = self.value_span(&p);
                    self.err(
                        ManifestError::new(format!("sweep axis `{}` lists {v} twice", ov.path), span)
                            .label("duplicate value")
                            .hint("list each value once"),
                    );
                }
            }
            for (vname, ovs) in variants {
                if let Some(clash) = ovs.iter().find(|o| o.path == ov.path) {
                    let cat: Vec<&str> = clash.at.iter().map(String::as_str).collect();
                    let span = self.key_span(&cat);
                    self.err(
                        ManifestError::new(
                            format!("variant `{vname}` overrides `{}`, which is also a sweep axis", ov.path),
                            span,
                        )
                        .label("set by the sweep too")
                        .hint("a parameter is either swept or set per variant, not both"),
                    );
                }
            }
            out.push((ov.path.clone(), values, ov.at.clone()));
        }
        out
    }
}

/// Turns `{"stages.a.b" = 1}` and nested `stages.a.b = 1` alike into dotted overrides, one per
/// parameter. Tables nest until the path reaches a parameter (`stages.<stage>.<param>`); a
/// parameter's value, table or array (a sweep axis's values), is one override.
pub(super) fn flatten(table: &toml::Table, at: &[String]) -> Vec<Override> {
    let mut out = Vec::new();
    flatten_into(table, "", at, &mut out);
    out
}

fn flatten_into(table: &toml::Table, prefix: &str, at: &[String], out: &mut Vec<Override>) {
    for (k, v) in table {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let mut here = at.to_vec();
        here.push(k.clone());
        // Recurse into a table only while the path has not yet reached a parameter
        // (stages.<stage>.<param>): a table-valued parameter is a value of its own. A command
        // stage's `vars` and `env` are the exception: each entry is a parameter of its own, so
        // `stages.x.vars.n = 2` written as a nested table sets `n` alone, exactly as the quoted
        // key "stages.x.vars.n" does, instead of replacing every other variable.
        let depth = path.split('.').count();
        let named_entries =
            depth == 3 && path.starts_with("stages.") && (path.ends_with(".vars") || path.ends_with(".env"));
        match v {
            toml::Value::Table(t)
                if depth < 3
                    || named_entries
                    || !path.starts_with("stages.")
                        && !path.starts_with("sweep.")
                        && !path.starts_with("schedule.") =>
            {
                flatten_into(t, &path, &here, out)
            }
            _ => out.push(Override {
                path,
                value: v.clone(),
                at: here,
            }),
        }
    }
}

/// Sets `segs` (parameter path inside a stage table) to `value`, creating nested tables.
pub(in crate::manifest) fn set_path(
    table: &mut toml::Table,
    segs: &[String],
    value: toml::Value,
) -> Result<(), String> {
    let (last, parents) = segs.split_last().ok_or("empty parameter path")?;
    let mut t = table;
    for p in parents {
        let entry = t
            .entry(p.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = match entry {
            toml::Value::Table(inner) => inner,
            other => {
                return Err(format!(
                    "cannot override inside `{p}`: it is a {}, not a table",
                    other.type_str()
                ))
            }
        };
    }
    t.insert(last.clone(), value);
    Ok(())
}
