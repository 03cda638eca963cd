//! Manifest validation: raw structs -> [`Experiment`] (file -> raw -> **validate** -> plan).
//!
//! Every check runs here, and every error is located in the file. Every stage of every config
//! has its parameters read into its kind's typed parameters and checked, once, so that nothing
//! fails at run time for a reason the manifest already showed.

mod checks;
mod compare;
mod configs;
mod data;
mod programs;
mod revision;
mod schedule;
mod stages;
mod variants;

pub use checks::check_stock_backend;
use stages::strip_stage_keys;
use variants::flatten;
pub(super) use variants::set_path;

use super::diag::{in_file_order, ManifestError, ManifestErrors};
use super::raw::RawManifest;
use super::spans::{Located, Seg, SpanIndex};
use super::{Experiment, StageDef, SweepAxis};
use crate::digest::hex_sha256;
use crate::hint::serde_hint;
use crate::kinds::StageKind;
use indexmap::IndexMap;
use std::ops::Range;
use std::path::Path;

/// Opens `path` to read without waiting (a FIFO swapped in after the check does not block),
/// and only when it is a regular file.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(format!("it is {}, not a file", kind_of(&meta))));
    }
    Ok(file)
}

/// What a path that is not a regular file is, in words.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Reads and validates a manifest file. `smoke` applies its `[smoke]` overrides.
pub fn parse_file(path: &Path, smoke: bool) -> Result<Experiment, ManifestErrors> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let unreadable = |what: String| {
        ManifestErrors::single(
            path,
            "",
            ManifestError::new(what, None).hint("a manifest is a TOML file; manifests usually live under experiments/"),
        )
    };
    // A FIFO, a device or a directory is refused before it is opened: opening a FIFO to read
    // waits for a writer, and reading a device may never end.
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Err(unreadable(format!("{} is {}, not a file", path.display(), kind_of(&m)))),
        _ => {}
    }
    open_regular(path)
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
        malformed_needs: Default::default(),
        refused_overrides: Default::default(),
        broken_templates: Default::default(),
        template_var_names: Vec::new(),
    };
    for key in &ignored {
        v.unknown_key(key);
    }
    v.non_finite_numbers(text);
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

fn serde_error(message: &str, span: Option<Range<usize>>) -> ManifestError {
    let message = message.trim();
    ManifestError::new(message.to_owned(), span).maybe_hint(serde_hint(message))
}

/// A stage while the manifest is validated: its kind is `None` when missing or unknown
/// (reported), and the checks that need it skip the stage.
pub(super) type Def = StageDef<Option<StageKind>>;

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
    /// Stages whose `needs` could not be read (not a list, or naming an undefined stage): the
    /// checks of their inputs would only report what follows from that error.
    pub(super) malformed_needs: std::collections::BTreeSet<String>,
    /// Variants with an override that was refused (reported): that they change nothing else is
    /// what follows from it, not a second mistake.
    pub(super) refused_overrides: std::collections::BTreeSet<String>,
    /// Stages whose templates read a variable nothing defines (reported): an override of a
    /// `vars` key they do not read is what follows from it.
    pub(super) broken_templates: std::collections::BTreeSet<usize>,
    /// Per stage: the keys of its `vars` and the variables its templates read (command stages;
    /// empty for others), for hints that name a variable written as a parameter.
    pub(super) template_var_names: Vec<std::collections::BTreeSet<String>>,
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

/// The keys of a command stage's `vars` (none for other kinds).
fn vars_keys(kind: Option<StageKind>, table: &toml::Table) -> std::collections::BTreeSet<String> {
    match (kind, table.get("vars").and_then(toml::Value::as_table)) {
        (Some(StageKind::Command), Some(vars)) => vars.keys().cloned().collect(),
        _ => Default::default(),
    }
}

/// A variable every command template can read without `vars`.
fn is_builtin_var(name: &str) -> bool {
    crate::kinds::TEMPLATE_BUILTINS.contains(&name)
}

fn toml_type(v: &toml::Value) -> &'static str {
    v.type_str()
}

/// Paths (keys and array indices) of the `nan` and `inf` floats under `value`.
fn non_finite_paths(path: &mut Vec<String>, value: &toml::Value, out: &mut Vec<(Vec<String>, f64)>) {
    match value {
        toml::Value::Float(f) if !f.is_finite() => out.push((path.clone(), *f)),
        toml::Value::Table(t) => {
            for (k, v) in t {
                path.push(k.clone());
                non_finite_paths(path, v, out);
                path.pop();
            }
        }
        toml::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                path.push(i.to_string());
                non_finite_paths(path, v, out);
                path.pop();
            }
        }
        _ => {}
    }
}

impl Validator {
    /// Refuses `nan` and `inf` wherever the manifest has a number: a parameter, a template
    /// variable (which would render as `None`) or an override.
    fn non_finite_numbers(&mut self, text: &str) {
        let Ok(doc) = text.parse::<toml::Table>() else {
            return;
        };
        let mut found = Vec::new();
        non_finite_paths(&mut Vec::new(), &toml::Value::Table(doc), &mut found);
        for (path, value) in found {
            let at: Vec<&str> = path.iter().map(String::as_str).collect();
            let span = self.value_span(&at);
            self.err(
                ManifestError::new(format!("`{}` is {value}, not a finite number", path.join(".")), span)
                    .label("not a finite number")
                    .hint("write a finite number: measured refuses nan and inf wherever it reads one"),
            );
        }
    }

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

    // Long because: it runs the sections' validators in dependency order, passing what each returns
    // to the next, and reports every section's errors in one pass.
    fn experiment(&mut self, path: &Path, text: &str, raw: RawManifest, smoke: bool) -> Option<Experiment> {
        let name = raw.experiment.name.clone();
        if !crate::paths::is_valid_name(&name) {
            let span = self.value_span(&["experiment", "name"]);
            self.err(
                ManifestError::new(format!("experiment name `{name}` is not a valid name"), span)
                    .label("used in result paths")
                    .hint("use 1-64 letters, digits, `_` or `-`, e.g. \"buffer-reuse\""),
            );
        }
        let mut schedule = self.schedule(&raw.schedule);
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
                (s.kind == Some(StageKind::Command))
                    .then(|| crate::kinds::template_variables(t))
                    .flatten()
            })
            .collect();
        self.template_var_names = stages
            .iter()
            .zip(&base)
            .map(|(s, t)| {
                let mut names = vars_keys(s.kind, t);
                names.extend(crate::kinds::template_variables(t).unwrap_or_default());
                names.retain(|n| !is_builtin_var(n));
                names
            })
            .collect();
        // A template reading a variable that neither `vars` nor the trial defines fails the
        // stage's check (reported there).
        self.broken_templates = (0..stages.len())
            .filter(|&i| {
                let keys = vars_keys(stages[i].kind, &base[i]);
                self.template_vars[i]
                    .as_ref()
                    .is_some_and(|used| used.iter().any(|v| !keys.contains(v) && !is_builtin_var(v)))
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
            // A smoke run checks that the pipeline runs, not a verdict: a fixed count.
            schedule.sequential = None;
            schedule.max_time = None;
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
        if let Some(c) = compare.as_ref().filter(|_| self.errors.is_empty()) {
            self.claims_reach_their_cores(c, &configs, &stages);
        }
        self.programs_resolve(&stages, &configs, dir);
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
        // Without errors, every stage's kind is known.
        let stages = stages
            .into_iter()
            .map(|s| {
                Some(StageDef {
                    kind: s.kind?,
                    name: s.name,
                    needs: s.needs,
                    cache: s.cache,
                })
            })
            .collect::<Option<Vec<StageDef>>>()?;
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
}
