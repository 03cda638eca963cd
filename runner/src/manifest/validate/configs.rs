//! Configs: every variant at every sweep point, each with its stages' parameters read into
//! their typed form and checked.

use super::*;
use crate::kinds::{StageKind, StageParams};
use crate::manifest::diag::ManifestError;
use crate::manifest::{Config, ResolvedStage};

impl Validator {
    // Long because: one nested loop (variants, sweep points, stages) that builds every config's
    // stages and locates each failure at the override that caused it.
    pub(super) fn configs(
        &mut self,
        stages: &[Def],
        base: &[toml::Table],
        variants: &[(String, Vec<Override>)],
        sweep: &[(String, Vec<toml::Value>, Vec<String>)],
        smoke_origin: &[(usize, String, Vec<String>)],
    ) -> Vec<Config> {
        // Cartesian product of sweep axes, first axis varying slowest.
        let mut points: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
        for (a, (_, values, _)) in sweep.iter().enumerate() {
            points = points
                .into_iter()
                .flat_map(|p| {
                    (0..values.len()).map(move |v| {
                        let mut q = p.clone();
                        q.push((a, v));
                        q
                    })
                })
                .collect();
        }
        let mut configs = Vec::new();
        for (vname, ovs) in variants {
            for point in &points {
                let mut tables: Vec<toml::Table> = base.to_vec();
                // Where each (stage, top-level parameter) got its value from, to locate errors.
                let mut origin: Vec<(usize, String, Vec<String>)> = Vec::new();
                let mut all: Vec<Override> = ovs.clone();
                let mut sweep_point = Vec::new();
                for &(a, v) in point {
                    let (path, values, at) = &sweep[a];
                    let mut at = at.clone();
                    at.push(v.to_string());
                    all.push(Override {
                        path: path.clone(),
                        value: values[v].clone(),
                        at,
                    });
                    sweep_point.push((path.clone(), values[v].to_string()));
                }
                for ov in &all {
                    let segs: Vec<String> = ov.path.split('.').skip(2).map(str::to_owned).collect();
                    let Some(si) = stages
                        .iter()
                        .position(|s| Some(s.name.as_str()) == ov.path.split('.').nth(1))
                    else {
                        continue;
                    };
                    if let Err(msg) = set_path(&mut tables[si], &segs, ov.value.clone()) {
                        let at: Vec<&str> = ov.at.iter().map(String::as_str).collect();
                        let span = self.key_span(&at);
                        self.err(ManifestError::new(msg, span));
                        continue;
                    }
                    origin.push((si, segs[0].clone(), ov.at.clone()));
                }
                let name = config_name(vname, &sweep_point);
                let mut resolved = Vec::new();
                for (si, s) in stages.iter().enumerate() {
                    let Some(kind) = s.kind else { continue };
                    let checked = StageParams::read(kind, &tables[si]).and_then(|params| {
                        if let StageParams::Train(train) = &params {
                            let normalize = s.needs.iter().find(|&&n| stages[n].kind == Some(StageKind::Normalize));
                            crate::kinds::check_train_memory(train, normalize.map(|&n| &tables[n]))?;
                        }
                        Ok(params)
                    });
                    match checked {
                        Ok(params) => resolved.push(ResolvedStage {
                            params,
                            table: tables[si].clone(),
                        }),
                        Err(e) => {
                            // An unlocated error (empty field) comes from no override.
                            let field = e.field.as_str();
                            let find = |list: &'_ [(usize, String, Vec<String>)]| {
                                list.iter()
                                    .rev()
                                    .find(|(i, p, _)| !field.is_empty() && *i == si && p == field)
                                    .cloned()
                            };
                            let from_smoke = find(smoke_origin);
                            let from_override = find(&origin).or_else(|| from_smoke.clone());
                            let unknown = e.message.starts_with("unknown field");
                            let span = match (&from_override, (!field.is_empty()).then_some(field)) {
                                (Some((_, _, at)), _) => {
                                    let at: Vec<&str> = at.iter().map(String::as_str).collect();
                                    if unknown {
                                        self.key_span(&at)
                                    } else {
                                        self.value_span(&at)
                                    }
                                }
                                (None, Some(f)) => {
                                    if unknown {
                                        self.key_span(&["stages", &s.name, f])
                                    } else {
                                        self.value_span(&["stages", &s.name, f])
                                    }
                                }
                                (None, None) => self.key_span(&["stages", &s.name]),
                            };
                            let context = match (&from_override, &from_smoke) {
                                (Some(a), Some(b)) if a == b => " (as set by [smoke])".to_owned(),
                                (Some((_, _, at)), _) if at.first().is_some_and(|k| k == "smoke") => {
                                    format!(" (as [smoke] sets it, in config `{name}`)")
                                }
                                (Some(_), _) => format!(" (in config `{name}`)"),
                                (None, _) => String::new(),
                            };
                            let message = if e.message.contains(&format!("`{field}`")) || field.is_empty() {
                                format!("stage `{}`{context}: {}", s.name, e.message)
                            } else {
                                format!("stage `{}`{context}: `{field}`: {}", s.name, e.message)
                            };
                            self.err(
                                ManifestError::new(message, span)
                                    .label("invalid parameter")
                                    .maybe_hint(e.hint.clone()),
                            );
                        }
                    }
                }
                configs.push(Config {
                    name,
                    variant: vname.clone(),
                    sweep_point,
                    stages: resolved,
                    revision: self.revisions.get(vname).cloned(),
                });
            }
        }
        configs
    }
}

pub(super) fn config_name(variant: &str, point: &[(String, String)]) -> String {
    if point.is_empty() {
        return variant.to_owned();
    }
    let parts: Vec<String> = point
        .iter()
        .map(|(path, v)| format!("{}={}", path.rsplit('.').next().unwrap_or(path), v.trim_matches('"')))
        .collect();
    format!("{variant}[{}]", parts.join(","))
}
