//! Checks that look at the manifest as a whole (validate -> **checks**): unknown keys, configs
//! that would measure nothing, designs that can never reach a verdict, and stage options the
//! stock database cannot do. Each is located in the file like every other manifest error.

use super::compare::{check_claim, metric_unit};
use super::{Def, Override, Validator};
use crate::hint::did_you_mean;
use crate::manifest::diag::{in_file_order, ManifestError, ManifestErrors};
use crate::manifest::raw::{
    RawClaim, RawCompare, RawExperiment, RawGuard, RawManifest, RawRequires, RawSchedule, RawSource,
};
use crate::manifest::spans::{Seg, SpanIndex};
use crate::manifest::{ClaimDef, Config, Experiment};
use std::ops::Range;
use std::path::Path;

impl Validator {
    // Long because: it checks a claim's keys one after another, a few lines each, so every problem
    // of a claim is reported in one pass.
    /// One `[compare]` claim: its keys, its variant, its speedup, its conditions, and its
    /// provenance: the quote must occur verbatim in `sources/<document>.md` next to the
    /// manifest, under the named section.
    pub(super) fn claim(
        &mut self,
        c: &RawClaim,
        idx: &str,
        baseline: &str,
        stages: &[Def],
        variants: &[String],
        dir: &Path,
        time_cost: bool,
    ) -> Option<ClaimDef> {
        let (document, section) = match &c.source {
            Some(RawSource { document, section }) => (document.as_ref(), section.as_ref()),
            None => (None, None),
        };
        if let (Some(_), Some(_)) = (&c.speedup, &c.value) {
            let span = self.value_span(&["compare", "claims", idx, "value"]);
            self.err(
                ManifestError::new("a claim states a speedup or a value, not both", span)
                    .label("one of the two")
                    .hint("keep `speedup` for a claim of how much faster, `value` for a claim of how much"),
            );
            return None;
        }
        let claimed = c.speedup.as_ref().or(c.value.as_ref());
        let (Some(metric), Some(variant), Some(speedup), Some(quote), Some(document), Some(section), Some(change)) =
            (&c.metric, &c.variant, claimed, &c.quote, document, section, &c.change)
        else {
            self.missing_keys(
                "claim",
                idx,
                &[
                    ("metric", c.metric.is_some()),
                    ("variant", c.variant.is_some()),
                    ("speedup` or `value", claimed.is_some()),
                    ("quote", c.quote.is_some()),
                    ("source", c.source.is_some()),
                    ("source.document", c.source.is_none() || document.is_some()),
                    ("source.section", c.source.is_none() || section.is_some()),
                    ("change", c.change.is_some()),
                ],
            );
            return None;
        };
        self.metric_ref(metric, &["compare", "claims", idx, "metric"], stages);
        if !variants.contains(variant) {
            let span = self.value_span(&["compare", "claims", idx, "variant"]);
            let hint = did_you_mean(variant, variants.iter().map(String::as_str))
                .unwrap_or_else(|| format!("variants: {}", variants.join(", ")));
            self.err(
                ManifestError::new(format!("claim names variant `{variant}`, which is not defined"), span)
                    .label("no such variant")
                    .hint(hint),
            );
        } else if c.value.is_some() {
            // A value claim is about one variant's own figure: any variant, baseline included.
        } else if variant == baseline {
            let span = self.value_span(&["compare", "claims", idx, "variant"]);
            self.err(
                ManifestError::new(format!("claim is about `{variant}`, the baseline itself"), span)
                    .hint("a claim compares a variant against the baseline; name the optimized variant"),
            );
        } else if !self.variant_changes.contains_key(variant) {
            let span = self.value_span(&["compare", "claims", idx, "variant"]);
            self.err(
                ManifestError::new(
                    format!("claim is about variant `{variant}`, which does not say what it changes"),
                    span,
                )
                .label("variant has no `change`")
                .hint(format!(
                    "add change = \"...\" to [variants.{variant}]: a claim is judged only when its `change` reads \
                     the same as its variant's"
                )),
            );
        }
        let mut value = None;
        if c.value.is_some() {
            let span = self.value_span(&["compare", "claims", idx, "value"]);
            match metric_unit(metric, stages) {
                None => self.err(
                    ManifestError::new(
                        format!("claimed value `{speedup}`: the unit of `{metric}` is not known before the run"),
                        span,
                    )
                    .label("unknown unit")
                    .hint("claim a value of a metric the stage catalog declares (`measured schema` lists them)"),
                ),
                Some(unit) => match crate::stats::Claim::parse_value(speedup, unit) {
                    Ok(v) => value = Some(v),
                    Err(e) => self.err(
                        ManifestError::new(format!("claimed value `{speedup}`: {}", e.message), span).hint(e.hint),
                    ),
                },
            }
        } else if let Err((msg, hint)) = check_claim(speedup) {
            let span = self.value_span(&["compare", "claims", idx, "speedup"]);
            self.err(ManifestError::new(msg, span).maybe_hint(hint));
        } else if let Some(msg) = impossible_cut(speedup, time_cost) {
            let span = self.value_span(&["compare", "claims", idx, "speedup"]);
            self.err(
                ManifestError::new(format!("claimed speedup `{speedup}`: {msg}"), span)
                    .label("impossible for a time")
                    .hint(format!(
                        "`{metric}` is a time (lower is better): a claim of p% less time means the optimized \
                         run takes (100 - p)% of the time, so p stays below 100; a speedup of k x is \
                         written \"kx\""
                    )),
            );
        }
        for (key, text) in [
            ("change", Some(change)),
            ("untestable", c.untestable.as_ref()),
            ("source_metric", c.source_metric.as_ref()),
            ("differs", c.differs.as_ref()),
        ] {
            if text.is_some_and(|t| t.trim().is_empty()) {
                let span = self.value_span(&["compare", "claims", idx, key]);
                self.err(
                    ManifestError::new(format!("claim `{key}` is empty"), span)
                        .hint("say it in words, or leave the key out where it is optional"),
                );
            }
        }
        let requires = self.claim_conditions(c.requires.as_ref(), idx, stages);
        let made_on = self.made_on(c.made_on.as_ref(), idx, c.value.is_some(), stages);
        if !crate::paths::is_valid_name(document) {
            let span = self.value_span(&["compare", "claims", idx, "source", "document"]);
            self.err(
                ManifestError::new(format!("claim source document `{document}` is not a valid name"), span)
                    .hint("name the file sources/<document>.md with 1-64 letters, digits, `_` or `-`"),
            );
        } else if let Err(e) = crate::manifest::sources::find_quote(dir, document, section, quote) {
            use crate::manifest::sources::SourceError;
            let (at, label) = match &e {
                SourceError::NoDocument { .. } | SourceError::Unreadable { .. } => ("document", "no such source"),
                SourceError::NoSection { .. } => ("section", "no such section"),
                SourceError::NoQuote { .. } => ("quote", "not in the source"),
            };
            let path: Vec<&str> = if at == "quote" {
                vec!["compare", "claims", idx, "quote"]
            } else {
                vec!["compare", "claims", idx, "source", at]
            };
            let span = self.value_span(&path);
            let hint = e.hint();
            self.err(ManifestError::new(e.to_string(), span).label(label).hint(hint));
        }
        Some(ClaimDef {
            metric: metric.clone(),
            variant: variant.clone(),
            speedup: speedup.clone(),
            value,
            quote: quote.clone(),
            document: document.clone(),
            section: section.clone(),
            change: change.clone(),
            variant_change: self.variant_changes.get(variant).cloned(),
            source_metric: c.source_metric.clone(),
            untestable: c.untestable.clone(),
            requires,
            differs: c.differs.clone(),
            made_on,
        })
    }

    /// Whether `metric` is a time where lower is better: `trial.seconds`, `<stage>.seconds`, or a
    /// metric the stage catalog declares in seconds, unless `[compare] direction` says otherwise
    /// for the primary metric. `false` when unknown (a command's own metrics).
    pub(super) fn is_time_cost(metric: &str, primary: &str, higher_is_better: Option<bool>, stages: &[Def]) -> bool {
        !(metric == primary && higher_is_better == Some(true)) && metric_unit(metric, stages) == Some("s")
    }

    /// A claim's `requires`: the device it names must be one measured knows, and every
    /// parameter it names must exist (a misspelled one would make the claim unjudgeable).
    pub(super) fn claim_conditions(
        &mut self,
        raw: Option<&RawRequires>,
        idx: &str,
        stages: &[Def],
    ) -> crate::stats::ClaimConditions {
        let Some(raw) = raw else {
            return crate::stats::ClaimConditions::default();
        };
        if let Some(d) = raw.device.as_deref().filter(|d| !["cpu", "cuda"].contains(d)) {
            let span = self.value_span(&["compare", "claims", idx, "requires", "device"]);
            self.err(
                ManifestError::new(
                    format!("claim condition device `{d}` is not a device measured knows"),
                    span,
                )
                .label("unknown device")
                .hint("use \"cuda\" for a claim made on a GPU, \"cpu\" for one made on a CPU"),
            );
        }
        let mut params = Vec::new();
        for (path, value) in &raw.params {
            let ov = Override {
                path: path.clone(),
                value: value.clone(),
                at: ["compare", "claims", idx, "requires", "params", path.as_str()]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            };
            if self.check_path(&ov, stages, "claim condition").is_some() {
                params.push((
                    path.clone(),
                    serde_json::to_value(value).unwrap_or(serde_json::Value::Null),
                ));
            }
        }
        let holds = raw.holds.as_ref().and_then(|h| {
            let at = |key: &'static str| ["compare", "claims", idx, "requires", "holds", key];
            let known = self.metric_ref(&h.metric, &at("metric"), stages);
            let known = self.metric_ref(&h.below, &at("below"), stages) && known;
            let units = (metric_unit(&h.metric, stages), metric_unit(&h.below, stages));
            if let (true, (Some(a), Some(b))) = (known, units) {
                if a != b {
                    let span = self.value_span(&at("below"));
                    self.err(
                        ManifestError::new(
                            format!("`holds` compares `{}` ({a}) with `{}` ({b})", h.metric, h.below),
                            span,
                        )
                        .label("another unit")
                        .hint("compare two metrics of one unit, e.g. two times in seconds"),
                    );
                    return None;
                }
            }
            known.then(|| crate::stats::MetricBelow {
                metric: h.metric.clone(),
                below: h.below.clone(),
            })
        });
        crate::stats::ClaimConditions {
            device: raw.device.clone(),
            min_cores: raw.min_cores,
            params,
            holds,
        }
    }

    /// A `[compare]` guard or claim entry without one of its required keys.
    pub(super) fn missing_keys(&mut self, what: &str, idx: &str, keys: &[(&str, bool)]) {
        let list = if what == "guard" { "guards" } else { "claims" };
        let missing: Vec<String> = keys.iter().filter(|k| !k.1).map(|k| format!("`{}`", k.0)).collect();
        let span = self.value_span(&["compare", list, idx]);
        let n = idx.parse::<usize>().map_or(0, |i| i + 1);
        let example = if what == "guard" {
            "{ metric = \"check.mse\", within = \"1%\" }"
        } else {
            "{ metric = \"train.seconds\", variant = \"fast\", speedup = \"2x\", quote = \"...\", source = { \
             document = \"...\", section = \"...\" }, change = \"...\" }"
        };
        self.err(
            ManifestError::new(format!("{what} {n} has no {}", missing.join(" or ")), span)
                .label(format!("missing {}", missing.join(", ")))
                .hint(format!("a {what} is written {example}")),
        );
    }

    /// A key serde skipped (`schedule.repetitons`): the manifest has no such setting.
    pub(super) fn unknown_key(&mut self, dotted: &str) {
        // `?` marks an `Option` level in serde_ignored's path; it is not a key in the file.
        let segs: Vec<&str> = dotted.split('.').filter(|s| *s != "?").collect();
        let Some((key, parent)) = segs.split_last() else { return };
        let known: &[&str] = match parent {
            [] => crate::kinds::field_names::<RawManifest>(),
            ["experiment"] => crate::kinds::field_names::<RawExperiment>(),
            ["schedule"] => crate::kinds::field_names::<RawSchedule>(),
            ["compare"] => crate::kinds::field_names::<RawCompare>(),
            ["compare", "guards", _] => crate::kinds::field_names::<RawGuard>(),
            ["compare", "claims", _] => crate::kinds::field_names::<RawClaim>(),
            ["compare", "claims", _, "requires"] => crate::kinds::field_names::<RawRequires>(),
            ["compare", "claims", _, "source"] => crate::kinds::field_names::<RawSource>(),
            ["data", ..] => super::data::known_keys(parent).unwrap_or(&[]),
            _ => &[],
        };
        let place = match parent {
            [] => "at the top level".to_owned(),
            ["data", "import", i] => format!("in [data] import {}", i.parse::<usize>().map_or(0, |i| i + 1)),
            ["data", table] => format!("in [data] {table}"),
            [section] => format!("in [{section}]"),
            [_, list, i] => format!(
                "in {} {}",
                list.trim_end_matches('s'),
                i.parse::<usize>().map_or(0, |i| i + 1)
            ),
            _ => format!("in `{}`", parent.join(".")),
        };
        let span = self.key_span(&segs);
        let hint = did_you_mean(key, known.iter().copied())
            .unwrap_or_else(|| format!("known keys {place}: {}", known.join(", ")));
        self.err(
            ManifestError::new(format!("unknown key `{key}` {place}"), span)
                .label("unknown key")
                .hint(hint),
        );
    }

    // Long because: one comparison over pairs of configs, whose message needs the variant and sweep
    // context of both.
    /// Two configs whose stages get identical parameters measure the same thing twice: a
    /// misspelled or no-op override would then produce a verdict about nothing. Reported once
    /// per group of identical configs, at the override (or variant) that was meant to differ.
    pub(super) fn identical_configs(
        &mut self,
        stages: &[Def],
        configs: &[Config],
        variants: &[(String, Vec<Override>)],
        sweep: &[(String, Vec<toml::Value>, Vec<String>)],
    ) {
        if configs.len() < 2 || configs.iter().any(|c| c.stages.len() != stages.len()) {
            return;
        }
        // A command stage that renders `{{ variant }}` or `{{ config }}` differs by name alone.
        let by_name = self
            .template_vars
            .iter()
            .flatten()
            .any(|used| used.contains("variant") || used.contains("config"));
        if by_name {
            return;
        }
        // Each stage's checked parameters, defaults applied, written canonically: an override
        // that sets a parameter to its default changes nothing, though the tables differ.
        let resolved: Vec<Vec<String>> = configs
            .iter()
            .map(|c| c.stages.iter().map(|s| s.params.canonical()).collect())
            .collect();
        let mut reported = vec![false; configs.len()];
        for i in 0..configs.len() {
            if reported[i] {
                continue;
            }
            let same: Vec<usize> = (i + 1..configs.len())
                .filter(|&j| {
                    // Variants naming different revisions (or builds) run different code.
                    configs[i].revision == configs[j].revision && resolved[i] == resolved[j]
                })
                .collect();
            let Some(&j) = same.first() else { continue };
            for &k in &same {
                reported[k] = true;
            }
            let (a, b) = (&configs[i], &configs[j]);
            // A variant whose override was refused changes nothing because of that error,
            // which is reported already.
            if [a, b].iter().any(|c| self.refused_overrides.contains(&c.variant)) {
                continue;
            }
            let mut names: Vec<String> = std::iter::once(i)
                .chain(same.iter().copied())
                .map(|k| format!("`{}`", configs[k].name))
                .collect();
            let last = names.pop().unwrap_or_default();
            let (why, at): (String, Vec<String>) = if a.variant != b.variant {
                let ovs = variants
                    .iter()
                    .find(|(n, _)| *n == b.variant)
                    .map(|(_, o)| o.as_slice())
                    .unwrap_or_default();
                let at = ovs
                    .first()
                    .map(|o| o.at.clone())
                    .unwrap_or_else(|| vec!["variants".to_owned(), b.variant.clone()]);
                let why = if ovs.is_empty() {
                    format!("variant `{}` overrides nothing", b.variant)
                } else {
                    format!(
                        "every override of variant `{}` sets the value `{}` already has",
                        b.variant, a.variant
                    )
                };
                (why, at)
            } else {
                // Same variant: the sweep points differ, but not in any parameter a stage sees.
                let axis = a
                    .sweep_point
                    .iter()
                    .zip(&b.sweep_point)
                    .position(|(x, y)| x != y)
                    .unwrap_or(0);
                let at = sweep
                    .get(axis)
                    .map(|(_, values, at)| {
                        let v = b.sweep_point.get(axis).map(|p| p.1.as_str()).unwrap_or_default();
                        let idx = values.iter().position(|x| x.to_string() == v).unwrap_or(0);
                        let mut at = at.clone();
                        at.push(idx.to_string());
                        at
                    })
                    .unwrap_or_else(|| vec!["sweep".to_owned()]);
                let path = sweep.get(axis).map(|s| s.0.as_str()).unwrap_or_default();
                (format!("the sweep values of `{path}` change nothing a stage sees"), at)
            };
            let at: Vec<&str> = at.iter().map(String::as_str).collect();
            let span = if at.first() == Some(&"sweep") {
                self.value_span(&at)
            } else {
                self.key_span(&at)
            };
            self.err(
                ManifestError::new(
                    format!(
                        "configs {} and {last} run identical stages: {why}, so comparing them measures nothing",
                        names.join(", ")
                    ),
                    span,
                )
                .label("changes nothing")
                .hint(
                    "override a parameter to a different value (`measured plan --show-commands` shows what \
                     each config runs), or set `allow_identical = true` in [compare] for an A/A run that \
                     measures noise",
                ),
            );
        }
    }
}

/// One stage option the stock database cannot do: (stage, where it is set, why, parameter,
/// the configs it is in).
type Needing<'a> = (usize, Option<Range<usize>>, &'static str, &'static str, Vec<&'a str>);

/// Checks the stage options that depend on the stock database the run will read: a parameter
/// only PostgreSQL supports (`strategy = "copy"`) is an error on SQLite, located where the
/// manifest sets it, before any trial runs.
pub fn check_stock_backend(exp: &Experiment, stock_is_postgres: bool) -> Result<(), ManifestErrors> {
    if stock_is_postgres {
        return Ok(());
    }
    let spans = SpanIndex::new(&exp.text);
    // (stage, span, why, param) -> the configs affected, so one mistake is reported once.
    let mut found: Vec<Needing<'_>> = Vec::new();
    for config in &exp.configs {
        for (si, (def, resolved)) in exp.stages.iter().zip(&config.stages).enumerate() {
            let Some((param, why)) = resolved.params.needs_postgres_stock() else {
                continue;
            };
            let dotted = format!("stages.{}.{param}", def.name);
            let name = def.name.as_str();
            let mut places: Vec<Vec<Seg<'_>>> = Vec::new();
            if let Some(v) = exp.variants.iter().find(|v| **v == config.variant) {
                places.push(vec![Seg::Key("variants"), Seg::Key(v), Seg::Key(&dotted)]);
                places.push(vec![
                    Seg::Key("variants"),
                    Seg::Key(v),
                    Seg::Key("stages"),
                    Seg::Key(name),
                    Seg::Key(param),
                ]);
            }
            places.push(vec![Seg::Key("sweep"), Seg::Key(&dotted)]);
            places.push(vec![Seg::Key("stages"), Seg::Key(name), Seg::Key(param)]);
            let span = places
                .iter()
                .find_map(|p| spans.value_at(p))
                .or_else(|| spans.locate(&[Seg::Key("stages"), Seg::Key(name)]).key);
            match found.iter_mut().find(|f| f.0 == si && f.1 == span) {
                Some(f) => f.4.push(&config.name),
                None => found.push((si, span, why, param, vec![&config.name])),
            }
        }
    }
    let all = exp.configs.len();
    let errors: Vec<ManifestError> = found
        .into_iter()
        .map(|(si, span, why, param, configs)| {
            let which = if configs.len() == all {
                String::new()
            } else {
                let names: Vec<String> = configs.iter().map(|c| format!("`{c}`")).collect();
                let noun = if names.len() == 1 { "config" } else { "configs" };
                format!(" (in {noun} {})", names.join(", "))
            };
            ManifestError::new(
                format!(
                    "stage `{}`{which}: {why}, but the stock database is SQLite",
                    exp.stages[si].name
                ),
                span,
            )
            .label("needs PostgreSQL")
            .hint(format!(
                "use another `{param}` (\"stream\" or \"batched\" work on both databases), or point \
                 STOCK_DATABASE_URL (or --stock-database) at a PostgreSQL stock database"
            ))
        })
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    Err(ManifestErrors {
        path: exp.path.clone(),
        text: exp.text.clone(),
        errors: in_file_order(errors),
    })
}

/// Why a percentage claim on a time cannot hold: a time that falls by 100% or more is zero or
/// negative. `None` when it can (or the claim is a factor, or the metric is no time).
fn impossible_cut(speedup: &str, time_cost: bool) -> Option<&'static str> {
    let claim = crate::stats::Claim::parse(speedup).ok()?;
    let reaches = |v: f64| v.is_finite() && v >= 100.0;
    (time_cost && claim.unit == crate::stats::ClaimUnit::Percent && (reaches(claim.low) || reaches(claim.high)))
        .then_some("a time cannot fall by 100% or more")
}
