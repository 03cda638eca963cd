//! Manifest validation: raw structs -> [`Experiment`] (file -> raw -> **validate** -> plan).
//!
//! Every check runs here, and every error is located in the file. Stages of every config are
//! built (their parameters checked) so that nothing fails at run time for a reason the
//! manifest already showed.

use super::diag::{closest, did_you_mean, ManifestError, ManifestErrors};
use super::raw::{RawCompare, RawManifest};
use super::spans::{Located, Seg, SpanIndex};
use super::{CompareDef, Config, Experiment, GuardDef, ResolvedStage, Schedule, StageDef, SweepAxis};
use crate::artifact::ArtifactKind;
use crate::stage::{find_kind, registry};
use indexmap::IndexMap;
use sha2::{Digest, Sha256};
use std::ops::Range;
use std::path::Path;

/// Keys of a stage table that belong to the DAG rather than to the stage kind.
const STAGE_KEYS: [&str; 3] = ["kind", "needs", "cache"];

/// Reads and validates a manifest file. `smoke` applies its `[smoke]` overrides.
pub fn parse_file(path: &Path, smoke: bool) -> Result<Experiment, ManifestErrors> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| {
            ManifestErrors::single(
                path,
                "",
                ManifestError::new(format!("cannot read {}: {e}", path.display()), None)
                    .hint("check the path; manifests usually live under experiments/"),
            )
        })?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(ManifestErrors::single(
            path,
            "",
            ManifestError::new(
                format!(
                    "{} is larger than {} MiB, the limit for a manifest",
                    path.display(),
                    MAX_MANIFEST_BYTES >> 20
                ),
                None,
            )
            .hint("a manifest describes an experiment; data belongs in the stock database or in files it names"),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        // Located at the first byte that is not UTF-8, shown in a lossy copy of the file.
        let at = e.utf8_error().valid_up_to();
        let bad = e.as_bytes()[at];
        let shown = String::from_utf8_lossy(e.as_bytes()).into_owned();
        // The valid prefix is copied as it is, so the offset is the same in the copy.
        let end = shown[at..].chars().next().map_or(at, |c| at + c.len_utf8());
        let start = at;
        ManifestErrors {
            path: path.to_owned(),
            text: shown,
            errors: vec![ManifestError::new(
                format!("the manifest is not UTF-8: byte 0x{bad:02x} at byte offset {at}"),
                Some(start..end),
            )
            .label("not UTF-8")
            .hint("TOML files are UTF-8: re-save the file as UTF-8")],
        }
    })?;
    parse_str(path, &text, smoke)
}

/// Validates manifest `text` (`path` is used for messages and stored with the run).
///
/// Every error is reported at once, in file order: unknown keys are all collected (not only the
/// first), and the checks go on past a failed one wherever their inputs are still sound.
pub fn parse_str(path: &Path, text: &str, smoke: bool) -> Result<Experiment, ManifestErrors> {
    let fail = |errors: Vec<ManifestError>| ManifestErrors {
        path: path.to_owned(),
        text: text.to_owned(),
        errors: in_file_order(errors),
    };
    let de = toml::Deserializer::parse(text).map_err(|e| fail(vec![serde_error(e.message(), e.span())]))?;
    let mut ignored = Vec::new();
    let parsed: Result<RawManifest, _> = serde_ignored::deserialize(de, |p| ignored.push(p.to_string()));
    let mut v = Validator {
        spans: SpanIndex::new(text),
        errors: Vec::new(),
        template_vars: Vec::new(),
        smoke_origin: Vec::new(),
        revisions: IndexMap::new(),
        smoke_data: Vec::new(),
        smoke_sweep_at: std::collections::BTreeMap::new(),
        variant_changes: IndexMap::new(),
    };
    for key in &ignored {
        v.unknown_key(key);
    }
    let raw = match parsed {
        Ok(raw) => raw,
        Err(e) => {
            v.err(serde_error(e.message(), e.span()));
            return Err(fail(v.errors));
        }
    };
    let exp = v.experiment(path, text, raw, smoke);
    match exp {
        Some(exp) if v.errors.is_empty() => Ok(exp),
        _ => Err(fail(v.errors)),
    }
}

/// Errors sorted by where they are in the file (unlocated ones first), each reported once.
pub(super) fn in_file_order(mut errors: Vec<ManifestError>) -> Vec<ManifestError> {
    // A set, not a list: a file of 40,000 mistakes must not take 40,000^2 comparisons.
    let mut seen = std::collections::HashSet::new();
    errors.retain(|e| seen.insert((e.message.clone(), e.span.as_ref().map(|s| (s.start, s.end)))));
    errors.sort_by_key(|e| e.span.as_ref().map(|s| (s.start, s.end)));
    errors
}

fn serde_error(message: &str, span: Option<Range<usize>>) -> ManifestError {
    let message = message.trim();
    ManifestError::new(message.to_owned(), span).maybe_hint(serde_hint(message))
}

/// A hint for the messages serde and the TOML parser produce.
pub(crate) fn serde_hint(message: &str) -> Option<String> {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let name = &rest[..rest.find('`').unwrap_or(rest.len())];
        let known: Vec<&str> = match (message.split_once("expected one of "), message.split_once("expected ")) {
            (Some((_, list)), _) => list
                .split(", ")
                .map(|s| s.trim_matches(|c| c == '`' || c == '.'))
                .collect(),
            (None, Some((_, list))) => list
                .split(" or ")
                .map(|s| s.trim_matches(|c| c == '`' || c == '.'))
                .collect(),
            _ => Vec::new(),
        };
        return did_you_mean(name, known.iter().copied()).or_else(|| Some(format!("known keys: {}", known.join(", "))));
    }
    if message.starts_with("missing field") {
        return Some("add it; the manifest reference in README.md lists every key".to_owned());
    }
    if message.contains("duplicate key") {
        return Some("each key may appear once per table: remove or rename one of them".to_owned());
    }
    if message.contains("expected u32") || message.contains("expected u64") || message.contains("expected usize") {
        return Some("this value must be a whole number, 0 or more".to_owned());
    }
    if message.contains("expected f64") || message.contains("expected f32") {
        return Some("write a number, e.g. 30.0".to_owned());
    }
    if message.contains("expected a boolean") {
        return Some("write true or false (without quotes)".to_owned());
    }
    if message.contains("expected a string") {
        return Some("write the value in double quotes".to_owned());
    }
    if message.contains("expected a sequence") {
        return Some("write a list, e.g. [\"a\", \"b\"]".to_owned());
    }
    if message.contains("unknown variant") {
        if let Some((_, list)) = message
            .split_once("expected one of ")
            .or_else(|| message.split_once("expected "))
        {
            return Some(format!("use one of {list}"));
        }
    }
    if message.starts_with("invalid") || message.contains("expected") {
        return Some("see the manifest reference in README.md for the accepted values".to_owned());
    }
    None
}

/// One `dotted.path = value` override, from a variant, a sweep axis or `[smoke]`.
#[derive(Debug, Clone)]
pub(super) struct Override {
    /// `stages.<stage>.<param>[.<sub>...]`
    pub(super) path: String,
    pub(super) value: toml::Value,
    /// Where the key sits in the manifest (for locating errors).
    pub(super) at: Vec<String>,
}

pub(super) struct Validator {
    pub(super) spans: SpanIndex,
    pub(super) errors: Vec<ManifestError>,
    /// Per stage: the variables its templates read (command stages), to reject an override
    /// of a `vars` key that nothing uses (it would make identical configs).
    pub(super) template_vars: Vec<Option<std::collections::BTreeSet<String>>>,
    /// Where `[smoke]` set each (stage, top-level parameter), so that a bad smoke value is
    /// located at its `[smoke]` line rather than at the stage it changes.
    pub(super) smoke_origin: Vec<(usize, String, Vec<String>)>,
    /// Variant -> the git revision it names (`git = ...`), for the variants that name one.
    pub(super) revisions: IndexMap<String, super::Revision>,
    /// `[smoke]` overrides of `data.*`, applied to `[data]` for a smoke run (and checked always).
    pub(super) smoke_data: Vec<Override>,
    /// Where `[smoke]` replaced a sweep axis (axis path -> its `[smoke]` key), so the smoke
    /// version of that axis is located at its `[smoke]` line, not at the `[sweep]` it replaces.
    pub(super) smoke_sweep_at: std::collections::BTreeMap<String, Vec<String>>,
    /// Variant -> the change it makes, in words (`change = ...`), for the variants that say.
    pub(super) variant_changes: IndexMap<String, String>,
}

/// Most measured repetitions per config in one run.
pub const MAX_REPETITIONS: u32 = 100_000;
/// Largest manifest file read: 4 MiB.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// Most warm-up repetitions per config in one run.
pub const MAX_WARMUP: u32 = 10_000;
/// Most trials one run plans (configs x (warm-up + repetitions)): a plan of this size still
/// fits in memory and in the results database.
pub const MAX_TRIALS: u64 = 1_000_000;

/// A name that may become part of a path: an experiment, stage or variant name.
pub fn is_valid_name(s: &str) -> bool {
    is_ident(s)
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn toml_type(v: &toml::Value) -> &'static str {
    v.type_str()
}

impl Validator {
    pub(super) fn loc(&self, path: &[&str]) -> Located {
        let segs: Vec<Seg<'_>> = path
            .iter()
            .map(|p| match p.parse::<usize>() {
                Ok(i) => Seg::Index(i),
                Err(_) => Seg::Key(p),
            })
            .collect();
        self.spans.locate(&segs)
    }

    pub(super) fn key_span(&self, path: &[&str]) -> Option<Range<usize>> {
        let l = self.loc(path);
        l.key.or(l.value)
    }

    pub(super) fn value_span(&self, path: &[&str]) -> Option<Range<usize>> {
        let l = self.loc(path);
        l.value.or(l.key)
    }

    pub(super) fn err(&mut self, e: ManifestError) {
        self.errors.push(e);
    }

    fn experiment(&mut self, path: &Path, text: &str, raw: RawManifest, smoke: bool) -> Option<Experiment> {
        let name = raw.experiment.name.clone();
        if !is_ident(&name) {
            let span = self.value_span(&["experiment", "name"]);
            self.err(
                ManifestError::new(format!("experiment name `{name}` is not a valid name"), span)
                    .label("used in result paths")
                    .hint("use 1-64 letters, digits, `_` or `-`, e.g. \"buffer-reuse\""),
            );
        }
        let mut schedule = Schedule {
            warmup: raw.schedule.warmup,
            repetitions: raw.schedule.repetitions,
            order: raw.schedule.order,
            seed: raw.schedule.seed,
            keep_going: raw.schedule.keep_going,
        };
        if schedule.repetitions == 0 {
            let span = self.value_span(&["schedule", "repetitions"]);
            self.err(
                ManifestError::new("`repetitions` must be at least 1", span)
                    .label("no trial would be measured")
                    .hint("use 5 or more repetitions to get a useful confidence interval"),
            );
        }
        self.schedule_bounds(&schedule);

        let stages = self.stages(&raw.stages)?;
        let order = self.dag(&stages);

        // Overrides of [smoke] apply to the base parameters, before variants and sweeps.
        let mut base: Vec<toml::Table> = raw.stages.values().map(strip_stage_keys).collect();
        self.template_vars = stages
            .iter()
            .zip(&base)
            .map(|(s, t)| {
                (s.kind == "command")
                    .then(|| crate::stage::template_variables(t))
                    .flatten()
            })
            .collect();
        let mut sweep_raw = raw.sweep.clone();
        // The base as `--smoke` would run it, to check [smoke] even when it is not used, so a
        // broken smoke mode is caught by `check`.
        let mut smoke_base = None;
        let mut smoke_sweep_raw = None;
        if smoke {
            schedule.warmup = 0;
            schedule.repetitions = schedule.repetitions.min(2);
            if let Some(table) = &raw.smoke {
                self.apply_smoke(table, &stages, &mut base, &mut schedule, &mut sweep_raw);
            }
        } else if let Some(table) = &raw.smoke {
            let mut b = base.clone();
            let mut s = schedule;
            let mut sw = sweep_raw.clone();
            self.apply_smoke(table, &stages, &mut b, &mut s, &mut sw);
            smoke_base = Some(b);
            smoke_sweep_raw = Some(sw);
        }
        let smoke_sweep_at = std::mem::take(&mut self.smoke_sweep_at);

        let smoke_data = std::mem::take(&mut self.smoke_data);
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let data = if smoke {
            self.data(raw.data.as_ref(), &smoke_data, dir)
        } else {
            if !smoke_data.is_empty() {
                self.data(raw.data.as_ref(), &smoke_data, dir);
            }
            self.data(raw.data.as_ref(), &[], dir)
        };
        let variants = self.variants(raw.variants.as_ref(), &stages);
        let no_smoke = std::collections::BTreeMap::new();
        let located = if smoke { &smoke_sweep_at } else { &no_smoke };
        let sweep = self.sweep(sweep_raw.as_ref(), &stages, &variants, located);
        let variant_names: Vec<String> = variants.iter().map(|(n, _)| n.clone()).collect();
        let compare = self.compare(raw.compare.as_ref(), &stages, &variant_names, dir);
        let smoke_origin = std::mem::take(&mut self.smoke_origin);
        let configs = if smoke {
            self.configs(&stages, &base, &variants, &sweep, &smoke_origin)
        } else {
            self.configs(&stages, &base, &variants, &sweep, &[])
        };
        if let Some(b) = &smoke_base {
            // The smoke sweep too, located at the [smoke] keys that set it.
            let smoke_sweep = self.sweep(smoke_sweep_raw.flatten().as_ref(), &stages, &variants, &smoke_sweep_at);
            self.configs(&stages, b, &variants, &smoke_sweep, &smoke_origin);
        }
        let planned = configs.len() as u64 * (u64::from(schedule.warmup) + u64::from(schedule.repetitions));
        let within = schedule.repetitions <= MAX_REPETITIONS && schedule.warmup <= MAX_WARMUP;
        if within && planned > MAX_TRIALS {
            let span = self.value_span(&["schedule", "repetitions"]);
            self.err(
                ManifestError::new(
                    format!(
                        "the plan has {planned} trials ({} {} x ({} warm-up + {} repetitions)), above the limit of {MAX_TRIALS}",
                        configs.len(),
                        if configs.len() == 1 { "config" } else { "configs" },
                        schedule.warmup,
                        schedule.repetitions
                    ),
                    span,
                )
                .label("too many trials")
                .hint("fewer repetitions or sweep points, or split the experiment into several runs"),
            );
        }
        // An A/A run (`allow_identical`) has no real effect to miss, so an unreachable alpha
        // cannot make it mislead; every other design must be able to reach a verdict.
        if let Some(c) = compare.as_ref().filter(|c| !c.allow_identical) {
            self.identical_configs(&stages, &configs, &variants, &sweep);
            if !smoke && configs.len() > 1 {
                self.reachable_alpha(&schedule, c);
            }
        }
        if !self.errors.is_empty() {
            return None;
        }
        Some(Experiment {
            name,
            description: raw.experiment.description,
            path: path.to_owned(),
            text: text.to_owned(),
            hash: hex_sha256(text.as_bytes()),
            schedule,
            stages,
            order,
            variants: variant_names,
            sweep: sweep
                .into_iter()
                .map(|(path, values, _)| SweepAxis { path, values })
                .collect(),
            compare: compare?,
            configs,
            smoke,
            data,
        })
    }

    fn stages(&mut self, raw: &IndexMap<String, toml::Table>) -> Option<Vec<StageDef>> {
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
            if !is_ident(name) {
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
            if !kind.is_empty() && find_kind(&kind).is_none() {
                let span = self.value_span(&["stages", name, "kind"]);
                let hint = did_you_mean(&kind, registry().iter().map(|k| k.kind))
                    .unwrap_or_else(|| format!("known kinds: {}", known_kinds()));
                self.err(
                    ManifestError::new(format!("unknown stage kind `{kind}`"), span)
                        .label("not a stage kind")
                        .hint(hint),
                );
            }
            let mut needs = Vec::new();
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
                        .hint("write needs = [\"load\"]"),
                    );
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
            out.push(StageDef {
                name: name.clone(),
                kind,
                needs,
                cache,
            });
        }
        // Invalid stages are kept (and reported): the checks after this one still find the
        // manifest's other mistakes in the same pass.
        Some(out)
    }

    /// Stage indices in dependency order; empty when the stages form a cycle (reported).
    fn dag(&mut self, stages: &[StageDef]) -> Vec<usize> {
        let needs: Vec<Vec<usize>> = stages.iter().map(|s| s.needs.clone()).collect();
        let order = match crate::plan::topo_order(stages.len(), &needs) {
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
            let Some(spec) = find_kind(&s.kind) else { continue };
            let Some(input) = spec.input else { continue };
            // A needed stage of an unknown kind is reported already; guessing what it would
            // produce would only add a second, misleading error.
            if s.needs.iter().any(|&j| find_kind(&stages[j].kind).is_none()) {
                continue;
            }
            let producers: Vec<&StageDef> = s
                .needs
                .iter()
                .map(|&j| &stages[j])
                .filter(|d| find_kind(&d.kind).is_some_and(|k| k.output == input))
                .collect();
            if producers.len() != 1 {
                let span = if s.needs.is_empty() {
                    self.key_span(&["stages", &s.name])
                } else {
                    self.value_span(&["stages", &s.name, "needs"])
                };
                let producer_kinds: Vec<&str> = registry()
                    .iter()
                    .filter(|k| k.output == input)
                    .map(|k| k.kind)
                    .collect();
                let message = if producers.is_empty() {
                    format!(
                        "stage `{}` (kind {}) takes {input}, but no stage it needs produces {input}",
                        s.name, s.kind
                    )
                } else {
                    format!(
                        "stage `{}` (kind {}) needs {} stages that produce {input}; it takes exactly one",
                        s.name,
                        s.kind,
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
    pub(super) fn check_path(
        &mut self,
        ov: &Override,
        stages: &[StageDef],
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
        if let Some(spec) = find_kind(&stages[si].kind) {
            let fields = (spec.fields)();
            if !fields.contains(&param) {
                let hint = did_you_mean(param, fields.iter().copied())
                    .unwrap_or_else(|| format!("parameters of kind {}: {}", spec.kind, fields.join(", ")));
                self.err(
                    ManifestError::new(
                        format!(
                            "{what} `{}`: stage `{stage}` (kind {}) has no parameter `{param}`",
                            ov.path, spec.kind
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
            if !used.contains(*var) {
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

    /// Warm-up and repetitions of `[schedule]` within their bounds.
    fn schedule_bounds(&mut self, schedule: &super::Schedule) {
        for (key, value, max) in [
            ("repetitions", schedule.repetitions, MAX_REPETITIONS),
            ("warmup", schedule.warmup, MAX_WARMUP),
        ] {
            let span = self.value_span(&["schedule", key]);
            self.bound(key, value, max, span);
        }
    }

    /// `key` = `value` within `max` (`MAX_WARMUP`, `MAX_REPETITIONS`).
    fn bound(&mut self, key: &str, value: u32, max: u32, span: Option<Range<usize>>) {
        if value > max {
            self.err(
                ManifestError::new(format!("`{key}` = {value} is above the limit of {max}"), span)
                    .label("too many")
                    .hint("a run of this size would not finish; split it into several runs"),
            );
        }
    }

    fn apply_smoke(
        &mut self,
        table: &toml::Table,
        stages: &[StageDef],
        base: &mut [toml::Table],
        schedule: &mut super::Schedule,
        sweep: &mut Option<IndexMap<String, toml::Value>>,
    ) {
        for ov in flatten(table, &["smoke".to_owned()]) {
            let at: Vec<&str> = ov.at.iter().map(String::as_str).collect();
            if let Some(field) = ov.path.strip_prefix("schedule.") {
                let n = ov.value.as_integer().filter(|n| *n >= 0 && *n <= u32::MAX as i64);
                match (field, n) {
                    ("warmup", Some(n)) => {
                        schedule.warmup = n as u32;
                        let span = self.value_span(&at);
                        self.bound(field, schedule.warmup, MAX_WARMUP, span);
                    }
                    ("repetitions", Some(n)) if n >= 1 => {
                        schedule.repetitions = n as u32;
                        let span = self.value_span(&at);
                        self.bound(field, schedule.repetitions, MAX_REPETITIONS, span);
                    }
                    ("warmup" | "repetitions", _) => {
                        let span = self.value_span(&at);
                        self.err(ManifestError::new(
                            format!("`{}` must be a whole number (repetitions at least 1)", ov.path),
                            span,
                        ));
                    }
                    _ => {
                        let span = self.key_span(&at);
                        self.err(ManifestError::new(format!("[smoke] cannot change `{}`", ov.path), span).hint("[smoke] may set schedule.warmup, schedule.repetitions, sweep.<axis>, data.<key> and stage parameters"));
                    }
                }
                continue;
            }
            if ov.path.starts_with("data.") {
                self.smoke_data.push(ov);
                continue;
            }
            if let Some(axis) = ov.path.strip_prefix("sweep.") {
                match sweep.as_mut().and_then(|s| s.get_mut(axis)) {
                    Some(slot) => {
                        *slot = ov.value.clone();
                        self.smoke_sweep_at.insert(axis.to_owned(), ov.at.clone());
                    }
                    None => {
                        let span = self.key_span(&at);
                        self.err(
                            ManifestError::new(
                                format!("[smoke] sets sweep axis `{axis}`, which is not in [sweep]"),
                                span,
                            )
                            .hint("name an axis defined in [sweep]"),
                        );
                    }
                }
                continue;
            }
            if let Some((si, segs)) = self.check_path(&ov, stages, "smoke override") {
                match set_path(&mut base[si], &segs, ov.value.clone()) {
                    Ok(()) => self.smoke_origin.push((si, segs[0].clone(), ov.at.clone())),
                    Err(msg) => {
                        let span = self.key_span(&at);
                        self.err(ManifestError::new(msg, span));
                    }
                }
            }
        }
    }

    fn variants(
        &mut self,
        raw: Option<&IndexMap<String, toml::Table>>,
        stages: &[StageDef],
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
            if !is_ident(name) {
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
                .filter(|(k, _)| !super::revisions::RESERVED.contains(&k.as_str()) && k.as_str() != "change")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut ovs = Vec::new();
            for ov in flatten(&overrides, &["variants".to_owned(), name.clone()]) {
                if self.check_path(&ov, stages, "override").is_some() {
                    ovs.push(ov);
                }
            }
            out.push((name.clone(), ovs));
        }
        out
    }

    /// The sweep axes, checked; an axis named in `located` (those `[smoke]` replaced) is
    /// located at the key given there instead of at its `[sweep]` entry.
    fn sweep(
        &mut self,
        raw: Option<&IndexMap<String, toml::Value>>,
        stages: &[StageDef],
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
        for mut ov in flatten_until_array(&table, &["sweep".to_owned()]) {
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

    pub(super) fn metric_ref(&mut self, metric: &str, at: &[&str], stages: &[StageDef]) -> bool {
        let span = self.value_span(at);
        let Some((stage, name)) = metric.split_once('.').filter(|(s, n)| !s.is_empty() && !n.is_empty()) else {
            self.err(
                ManifestError::new(format!("metric `{metric}` must be written `<stage>.<metric>`"), span)
                    .hint("e.g. \"train.epoch_seconds\", \"train.seconds\" (stage wall time) or \"trial.seconds\""),
            );
            return false;
        };
        if stage == "trial" {
            if name != "seconds" {
                self.err(
                    ManifestError::new(format!("unknown trial metric `{metric}`"), span)
                        .hint("the only trial metric is `trial.seconds`"),
                );
                return false;
            }
            return true;
        }
        if !stages.iter().any(|s| s.name == stage) {
            let hint = did_you_mean(stage, stages.iter().map(|s| s.name.as_str())).unwrap_or_else(|| {
                format!(
                    "defined stages: {}",
                    stages.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                )
            });
            self.err(
                ManifestError::new(
                    format!("metric `{metric}` names stage `{stage}`, which is not defined"),
                    span,
                )
                .label("no such stage")
                .hint(hint),
            );
            return false;
        }
        if let Some(def) = stages.iter().find(|s| s.name == stage) {
            if let Some(known) = crate::stage::catalog::names(&def.kind) {
                if !known.iter().any(|(n, _)| n == name) {
                    let hint = closest(name, known.iter().map(|(n, _)| n.as_str()))
                        .map(|c| format!("did you mean `{stage}.{c}`?"))
                        .unwrap_or_else(|| {
                            let listed: Vec<&str> = known.iter().map(|(n, _)| n.as_str()).take(12).collect();
                            let more = known.len().saturating_sub(listed.len());
                            format!(
                                "a `{}` stage records {}{}; `measured schema` lists them all",
                                def.kind,
                                listed.join(", "),
                                if more > 0 {
                                    format!(" and {more} more")
                                } else {
                                    String::new()
                                }
                            )
                        });
                    self.err(
                        ManifestError::new(
                            format!("metric `{metric}`: a `{}` stage records no metric `{name}`", def.kind),
                            span,
                        )
                        .label("no such metric")
                        .hint(hint),
                    );
                    return false;
                }
            }
        }
        if stages.iter().any(|s| s.name == stage && s.cache) {
            self.err(
                ManifestError::new(
                    format!(
                        "metric `{metric}` is of stage `{stage}`, which has `cache = true`: it runs once per \
                         config and its later trials reuse the result, so there is one sample per side, not one per trial"
                    ),
                    span,
                )
                .label("cached stage")
                .hint(format!(
                    "compare a metric of a stage that runs every trial, or remove `cache = true` from stage `{stage}`"
                )),
            );
            return false;
        }
        true
    }

    fn compare(
        &mut self,
        raw: Option<&RawCompare>,
        stages: &[StageDef],
        variants: &[String],
        dir: &Path,
    ) -> Option<CompareDef> {
        let first = variants.first().cloned().unwrap_or_else(|| "baseline".into());
        let Some(raw) = raw else {
            return Some(CompareDef {
                baseline: first,
                primary: "trial.seconds".into(),
                higher_is_better: None,
                alpha: 0.01,
                band: 0.02,
                resamples: 10_000,
                guards: Vec::new(),
                claims: Vec::new(),
                allow_identical: false,
                sweep_neighbours: false,
                quality_under_test: true,
            });
        };
        let baseline = raw.baseline.clone().unwrap_or(first);
        if !variants.is_empty() && !variants.contains(&baseline) {
            let span = self.value_span(&["compare", "baseline"]);
            let hint = did_you_mean(&baseline, variants.iter().map(String::as_str))
                .unwrap_or_else(|| format!("variants: {}", variants.join(", ")));
            self.err(
                ManifestError::new(format!("baseline `{baseline}` is not a variant"), span)
                    .label("no such variant")
                    .hint(hint),
            );
        }
        let primary = raw.primary.clone().unwrap_or_else(|| "trial.seconds".into());
        self.metric_ref(&primary, &["compare", "primary"], stages);
        let higher_is_better = match raw.direction.as_deref() {
            None => None,
            Some("lower") => Some(false),
            Some("higher") => Some(true),
            Some(other) => {
                let span = self.value_span(&["compare", "direction"]);
                self.err(
                    ManifestError::new(
                        format!("direction must be \"lower\" or \"higher\", got \"{other}\""),
                        span,
                    )
                    .hint("\"lower\" for times, \"higher\" for throughput and accuracy"),
                );
                None
            }
        };
        let sweep_neighbours = match raw.sweep.as_deref() {
            None | Some("first") => false,
            Some("neighbours") => true,
            Some(other) => {
                let span = self.value_span(&["compare", "sweep"]);
                self.err(
                    ManifestError::new(
                        format!("sweep must be \"first\" or \"neighbours\", got \"{other}\""),
                        span,
                    )
                    .hint("\"neighbours\" adds a table of each sweep point against the previous one"),
                );
                false
            }
        };
        let quality_under_test = match raw.quality.as_deref() {
            None | Some("under_test") => true,
            Some("not_under_test") => false,
            Some(other) => {
                let span = self.value_span(&["compare", "quality"]);
                self.err(
                    ManifestError::new(
                        format!("quality must be \"under_test\" or \"not_under_test\", got \"{other}\""),
                        span,
                    )
                    .label("unknown value")
                    .hint(
                        "\"under_test\" (the default) fails a guard when a trained model is no better than \
                         predicting zero; \"not_under_test\" for experiments about speed alone",
                    ),
                );
                true
            }
        };
        let alpha = raw.alpha.unwrap_or(0.01);
        if !(alpha > 0.0 && alpha < 0.5) {
            let span = self.value_span(&["compare", "alpha"]);
            self.err(
                ManifestError::new(format!("alpha must be between 0 and 0.5, got {alpha}"), span)
                    .hint("0.01 is the default; 0.05 is the usual looser level"),
            );
        }
        let band = match raw.band.as_deref() {
            None => 0.02,
            Some(b) => match parse_percent(b) {
                Some(x) if (0.0..1.0).contains(&x) => x,
                _ => {
                    let span = self.value_span(&["compare", "band"]);
                    self.err(
                        ManifestError::new(format!("band `{b}` is not a percentage between 0% and 100%"), span)
                            .hint("write e.g. band = \"2%\""),
                    );
                    0.02
                }
            },
        };
        let resamples = raw.resamples.unwrap_or(10_000);
        if resamples < 10_000 {
            let span = self.value_span(&["compare", "resamples"]);
            self.err(
                ManifestError::new(format!("resamples must be at least 10000, got {resamples}"), span)
                    .hint("fewer bootstrap resamples make the confidence interval itself noisy"),
            );
        }
        let mut guards = Vec::new();
        for (i, g) in raw.guards.iter().enumerate() {
            let idx = i.to_string();
            let (Some(metric), Some(within)) = (&g.metric, &g.within) else {
                self.missing_keys(
                    "guard",
                    &idx,
                    &[("metric", g.metric.is_some()), ("within", g.within.is_some())],
                );
                continue;
            };
            self.metric_ref(metric, &["compare", "guards", &idx, "metric"], stages);
            if let Err((msg, hint)) = check_tolerance(within) {
                let span = self.value_span(&["compare", "guards", &idx, "within"]);
                self.err(ManifestError::new(msg, span).maybe_hint(hint));
            }
            guards.push(GuardDef {
                metric: metric.clone(),
                within: within.clone(),
            });
        }
        let mut claims = Vec::new();
        for (i, c) in raw.claims.iter().enumerate() {
            let idx = i.to_string();
            let time_cost = c
                .metric
                .as_deref()
                .is_some_and(|m| Self::is_time_cost(m, &primary, higher_is_better, stages));
            if let Some(claim) = self.claim(c, &idx, &baseline, stages, variants, dir, time_cost) {
                claims.push(claim);
            }
        }
        Some(CompareDef {
            baseline,
            primary,
            higher_is_better,
            alpha,
            band,
            resamples,
            guards,
            claims,
            allow_identical: raw.allow_identical,
            sweep_neighbours,
            quality_under_test,
        })
    }

    fn configs(
        &mut self,
        stages: &[StageDef],
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
                let name = config_name(vname, &sweep_point, variants.len());
                let mut resolved = Vec::new();
                for (si, s) in stages.iter().enumerate() {
                    let Some(spec) = find_kind(&s.kind) else { continue };
                    let built = (spec.build)(&tables[si]).and_then(|stage| {
                        if s.kind == "train" {
                            let normalize = s.needs.iter().find(|&&n| stages[n].kind == "normalize");
                            crate::stage::check_train_memory(&tables[si], normalize.map(|&n| &tables[n]))?;
                        }
                        Ok(stage)
                    });
                    match built {
                        Ok(stage) => resolved.push(ResolvedStage {
                            params: tables[si].clone(),
                            stage,
                        }),
                        Err(e) => {
                            let find = |list: &'_ [(usize, String, Vec<String>)]| {
                                e.field
                                    .as_ref()
                                    .and_then(|f| list.iter().rev().find(|(i, p, _)| *i == si && p == f).cloned())
                            };
                            let from_smoke = find(smoke_origin);
                            let from_override = find(&origin).or_else(|| from_smoke.clone());
                            let unknown = e.message.starts_with("unknown field");
                            let span = match (&from_override, &e.field) {
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
                            let field = e.field.clone().unwrap_or_default();
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

fn known_kinds() -> String {
    registry().iter().map(|k| k.kind).collect::<Vec<_>>().join(", ")
}

fn config_name(variant: &str, point: &[(String, String)], _n_variants: usize) -> String {
    if point.is_empty() {
        return variant.to_owned();
    }
    let parts: Vec<String> = point
        .iter()
        .map(|(path, v)| format!("{}={}", path.rsplit('.').next().unwrap_or(path), v.trim_matches('"')))
        .collect();
    format!("{variant}[{}]", parts.join(","))
}

fn strip_stage_keys(table: &toml::Table) -> toml::Table {
    table
        .iter()
        .filter(|(k, _)| !STAGE_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Turns `{"stages.a.b" = 1}` and nested `stages.a.b = 1` alike into dotted overrides.
fn flatten(table: &toml::Table, at: &[String]) -> Vec<Override> {
    let mut out = Vec::new();
    flatten_into(table, "", at, &mut out, false);
    out
}

/// Like [`flatten`], but stops at arrays only (sweep values are arrays; tables nest).
fn flatten_until_array(table: &toml::Table, at: &[String]) -> Vec<Override> {
    let mut out = Vec::new();
    flatten_into(table, "", at, &mut out, true);
    out
}

fn flatten_into(table: &toml::Table, prefix: &str, at: &[String], out: &mut Vec<Override>, _sweep: bool) {
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
                flatten_into(t, &path, &here, out, _sweep)
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
pub(super) fn set_path(table: &mut toml::Table, segs: &[String], value: toml::Value) -> Result<(), String> {
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

fn parse_percent(s: &str) -> Option<f64> {
    let s = s.trim();
    match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|x| x / 100.0),
        None => s.parse::<f64>().ok(),
    }
}

fn check_tolerance(s: &str) -> Result<(), (String, Option<String>)> {
    crate::stats::Tolerance::parse(s).map(|_| ()).map_err(|e| {
        (
            format!("guard tolerance `{s}`: {}", e.message),
            Some(e.hint.to_string()),
        )
    })
}

pub(super) fn check_claim(s: &str) -> Result<(), (String, Option<String>)> {
    crate::stats::Claim::parse(s).map(|_| ()).map_err(|e| {
        (
            format!("claimed speedup `{s}`: {}", e.message),
            Some(e.hint.to_string()),
        )
    })
}

pub fn hex_sha256(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
