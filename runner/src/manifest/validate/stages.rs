//! The `[stages]` section: each stage's kind and parameters, its `needs` (the DAG) and the
//! paths its parameters name.

use super::*;
use crate::artifact::ArtifactKind;
use crate::hint::did_you_mean;
use crate::kinds::StageKind;
use crate::manifest::diag::ManifestError;
use indexmap::IndexMap;

impl Validator {
    // Long because: one loop over the stage tables, with one located check per key.
    pub(super) fn stages(&mut self, raw: &IndexMap<String, toml::Table>) -> Option<Vec<Def>> {
        if raw.is_empty() {
            self.err(
                ManifestError::new("the experiment has no stages", Some(0..0))
                    .hint("add at least one stage, e.g.\n[stages.bench]\nkind = \"command\"\nargv = [\"./bench\"]"),
            );
            return None;
        }
        let names: Vec<&str> = raw.keys().map(String::as_str).collect();
        let mut out = Vec::with_capacity(raw.len());
        for (name, table) in raw {
            if !crate::paths::is_valid_name(name) {
                let span = self.key_span(&["stages", name]);
                self.err(
                    ManifestError::new(format!("stage name `{name}` is not a valid name"), span)
                        .label("stage names appear in metric names such as `<stage>.seconds`")
                        .hint("use 1-64 letters, digits, `_` or `-` (no dots)"),
                );
            }
            let kind = match table.get("kind") {
                Some(toml::Value::String(k)) => k.clone(),
                Some(other) => {
                    let span = self.value_span(&["stages", name, "kind"]);
                    self.err(ManifestError::new(
                        format!("`kind` must be a string, found {}", toml_type(other)),
                        span,
                    ));
                    String::new()
                }
                None => {
                    let span = self.key_span(&["stages", name]);
                    self.err(
                        ManifestError::new(format!("stage `{name}` has no `kind`"), span)
                            .hint(format!("add e.g. kind = \"command\"; known kinds: {}", known_kinds())),
                    );
                    String::new()
                }
            };
            let parsed = StageKind::parse(&kind);
            if !kind.is_empty() && parsed.is_none() {
                let span = self.value_span(&["stages", name, "kind"]);
                let hint = did_you_mean(&kind, StageKind::ALL.map(StageKind::as_str))
                    .unwrap_or_else(|| format!("known kinds: {}", known_kinds()));
                self.err(
                    ManifestError::new(format!("unknown stage kind `{kind}`"), span)
                        .label("not a stage kind")
                        .hint(hint),
                );
            }
            let mut needs = Vec::new();
            // `needs` that cannot be read: the DAG's checks would only report what follows from it.
            let mut malformed_needs = false;
            match table.get("needs") {
                None => {}
                Some(toml::Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        let idx = i.to_string();
                        let span = self.value_span(&["stages", name, "needs", &idx]);
                        let Some(dep) = item.as_str() else {
                            self.err(ManifestError::new(
                                format!("`needs` entries must be stage names, found {}", toml_type(item)),
                                span,
                            ));
                            malformed_needs = true;
                            continue;
                        };
                        match raw.get_index_of(dep) {
                            Some(_) if dep == name => self.err(
                                ManifestError::new(format!("stage `{name}` needs itself"), span)
                                    .label("a stage cannot depend on itself")
                                    .hint("remove it from `needs`"),
                            ),
                            Some(_) if needs.contains(&raw.get_index_of(dep).unwrap_or(usize::MAX)) => self.err(
                                ManifestError::new(format!("stage `{name}` lists `{dep}` twice in `needs`"), span)
                                    .label("duplicate")
                                    .hint("list each stage once"),
                            ),
                            Some(j) => needs.push(j),
                            None => {
                                let hint = did_you_mean(dep, names.iter().copied())
                                    .unwrap_or_else(|| format!("defined stages: {}", names.join(", ")));
                                self.err(
                                    ManifestError::new(
                                        format!("stage `{name}` needs `{dep}`, which is not defined"),
                                        span,
                                    )
                                    .label("no such stage")
                                    .hint(hint),
                                );
                                malformed_needs = true;
                            }
                        }
                    }
                }
                Some(other) => {
                    let span = self.value_span(&["stages", name, "needs"]);
                    self.err(
                        ManifestError::new(
                            format!("`needs` must be a list of stage names, found {}", toml_type(other)),
                            span,
                        )
                        .hint(needs_hint(other, &names)),
                    );
                    malformed_needs = true;
                }
            }
            let cache = match table.get("cache") {
                None => false,
                Some(toml::Value::Boolean(b)) => *b,
                Some(other) => {
                    let span = self.value_span(&["stages", name, "cache"]);
                    self.err(ManifestError::new(
                        format!("`cache` must be true or false, found {}", toml_type(other)),
                        span,
                    ));
                    false
                }
            };
            if malformed_needs {
                self.malformed_needs.insert(name.clone());
            }
            out.push(Def {
                name: name.clone(),
                kind: parsed,
                needs,
                cache,
            });
        }
        // Invalid stages are kept (and reported): the checks after this one still find the
        // manifest's other mistakes in the same pass.
        Some(out)
    }

    /// Stage indices in dependency order; empty when the stages form a cycle (reported).
    pub(super) fn dag(&mut self, stages: &[Def]) -> Vec<usize> {
        let needs: Vec<Vec<usize>> = stages.iter().map(|s| s.needs.clone()).collect();
        let order = match crate::manifest::dag::topo_order(stages.len(), &needs) {
            Ok(o) => o,
            Err(cycle) => {
                let names: Vec<&str> = cycle.iter().map(|&i| stages[i].name.as_str()).collect();
                let first = names.first().copied().unwrap_or_default();
                let span = self.value_span(&["stages", first, "needs"]);
                self.err(
                    ManifestError::new(
                        format!("stages depend on each other in a cycle: {}", names.join(" -> ")),
                        span,
                    )
                    .label("part of the cycle")
                    .hint("remove one of these `needs` so the stages form a DAG"),
                );
                return Vec::new();
            }
        };
        // Typed edges: a stage that takes an artifact must need exactly one producer of it.
        for s in stages {
            let Some(kind) = s.kind else { continue };
            let Some(input) = kind.input() else { continue };
            // A needed stage of an unknown kind, or `needs` that could not be read, is reported
            // already; guessing what it would produce would only add a second, misleading error.
            if s.needs.iter().any(|&j| stages[j].kind.is_none()) || self.malformed_needs.contains(&s.name) {
                continue;
            }
            let producers: Vec<&Def> = s
                .needs
                .iter()
                .map(|&j| &stages[j])
                .filter(|d| d.kind.is_some_and(|k| k.output() == input))
                .collect();
            if producers.len() != 1 {
                let span = if s.needs.is_empty() {
                    self.key_span(&["stages", &s.name])
                } else {
                    self.value_span(&["stages", &s.name, "needs"])
                };
                let producer_kinds: Vec<&str> = StageKind::ALL
                    .into_iter()
                    .filter(|k| k.output() == input)
                    .map(StageKind::as_str)
                    .collect();
                let message = if producers.is_empty() {
                    format!(
                        "stage `{}` (kind {kind}) takes {input}, but no stage it needs produces {input}",
                        s.name
                    )
                } else {
                    format!(
                        "stage `{}` (kind {kind}) needs {} stages that produce {input}; it takes exactly one",
                        s.name,
                        producers.len()
                    )
                };
                self.err(
                    ManifestError::new(message, span)
                        .label("input not satisfied")
                        .hint(format!(
                            "{input} come from a stage of kind {}",
                            producer_kinds.join(" or ")
                        )),
                );
            }
        }
        // A stage that takes nothing may still order itself after others (e.g. a command
        // after a load), which is fine; producers feeding a kind that ignores them are too.
        let _ = ArtifactKind::None;
        order
    }

    /// Checks an override path and returns (stage index, parameter segments).
    pub(in crate::manifest) fn check_path(
        &mut self,
        ov: &Override,
        stages: &[Def],
        what: &str,
    ) -> Option<(usize, Vec<String>)> {
        let at: Vec<&str> = ov.at.iter().map(String::as_str).collect();
        let span = self.key_span(&at);
        let segs: Vec<&str> = ov.path.split('.').collect();
        if segs.len() < 3 || segs[0] != "stages" || segs.iter().any(|s| s.is_empty()) {
            self.err(
                ManifestError::new(format!("{what} `{}` is not a parameter path", ov.path), span)
                    .label("expected stages.<stage>.<parameter>")
                    .hint("write e.g. \"stages.train.batch_size\""),
            );
            return None;
        }
        let stage = segs[1];
        let Some(si) = stages.iter().position(|s| s.name == stage) else {
            let hint = did_you_mean(stage, stages.iter().map(|s| s.name.as_str())).unwrap_or_else(|| {
                format!(
                    "defined stages: {}",
                    stages.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                )
            });
            self.err(
                ManifestError::new(
                    format!("{what} `{}` names stage `{stage}`, which is not defined", ov.path),
                    span,
                )
                .label("no such stage")
                .hint(hint),
            );
            return None;
        };
        let param = segs[2];
        if STAGE_KEYS.contains(&param) {
            self.err(
                ManifestError::new(
                    format!(
                        "{what} `{}` changes `{param}`, which shapes the DAG and cannot vary",
                        ov.path
                    ),
                    span,
                )
                .label("not overridable")
                .hint("define a separate stage instead"),
            );
            return None;
        }
        if let Some(kind) = stages[si].kind {
            let fields = kind.fields();
            if !fields.contains(&param) {
                // A template variable written as a parameter: `stages.x.level` for `vars.level`.
                let var = segs.len() == 3 && self.template_var_names.get(si).is_some_and(|v| v.contains(param));
                let hint = if var {
                    Some(format!(
                        "`{param}` is a template variable of stage `{stage}`: write \"stages.{stage}.vars.{param}\""
                    ))
                } else {
                    did_you_mean(param, fields.iter().copied())
                }
                .unwrap_or_else(|| format!("parameters of kind {kind}: {}", fields.join(", ")));
                self.err(
                    ManifestError::new(
                        format!(
                            "{what} `{}`: stage `{stage}` (kind {kind}) has no parameter `{param}`",
                            ov.path
                        ),
                        span,
                    )
                    .label("unknown parameter")
                    .hint(hint),
                );
                return None;
            }
        }
        if let (["vars", var, ..], Some(Some(used))) = (&segs[2..], self.template_vars.get(si)) {
            // A stage whose template reads an undefined variable is reported already, with the
            // variable it meant: that this key goes unread follows from that.
            if !used.contains(*var) && !self.broken_templates.contains(&si) {
                let hint = did_you_mean(var, used.iter().map(String::as_str))
                    .unwrap_or_else(|| format!("use it in the stage's argv, env or cwd, e.g. \"{{{{ {var} }}}}\""));
                self.err(
                    ManifestError::new(
                        format!(
                            "{what} `{}` sets variable `{var}`, which no template of stage `{stage}` uses: \
                             the configs it makes would run the same command",
                            ov.path
                        ),
                        span,
                    )
                    .label("unused variable")
                    .hint(hint),
                );
                return None;
            }
        }
        Some((si, segs[2..].iter().map(|s| s.to_string()).collect()))
    }
}

/// Keys of a stage table that belong to the DAG rather than to the stage kind.
const STAGE_KEYS: [&str; 3] = ["kind", "needs", "cache"];

pub(super) fn strip_stage_keys(table: &toml::Table) -> toml::Table {
    table
        .iter()
        .filter(|(k, _)| !STAGE_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The `needs` line to write instead of `value` (not a list): the names it holds, as a list.
fn needs_hint(value: &toml::Value, defined: &[&str]) -> String {
    let quoted = |n: &str| format!("\"{n}\"");
    let names: Vec<String> = match value {
        toml::Value::String(s) => s
            .split([',', ' '])
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(quoted)
            .collect(),
        toml::Value::Table(t) => t.keys().map(|k| quoted(k)).collect(),
        _ => Vec::new(),
    };
    match names.is_empty() {
        false => format!("write needs = [{}]", names.join(", ")),
        true => format!(
            "write the stages it needs as a list, e.g. needs = [{}]",
            defined.first().map_or_else(|| "\"load\"".to_owned(), |n| quoted(n))
        ),
    }
}

pub(super) fn known_kinds() -> String {
    StageKind::ALL.map(StageKind::as_str).join(", ")
}
