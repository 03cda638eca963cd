//! Experiment manifests: TOML text -> raw serde structs -> a validated [`Experiment`]
//! (the first step of the data flow; nothing runs before this succeeds).

mod dag;
mod diag;
mod judgeable;
mod located;
mod raw;
mod revisions;
mod schema;
mod sources;
mod spans;
mod validate;

pub use judgeable::unjudgeable_claims;

pub use dag::topo_order;
pub use diag::{ManifestError, ManifestErrors};
pub use located::{located, param_span, span_of};
pub use raw::Order;
pub use revisions::{
    check_rev, same_code_twice, short_commit, unused_name, variant_name, with_revisions, Resolved, Revision, WORKTREE,
};
pub use schema::{manifest_schema, manifest_schema_text};
pub use sources::{find_quote, sources_dir, SourceError};
pub use validate::check_stock_backend;
pub use validate::{parse_file, parse_str};

use crate::kinds::{StageKind, StageParams};
use std::path::{Path, PathBuf};

/// A validated experiment: every config is resolved and every stage's parameters are read and
/// checked against its kind.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    pub text: String,
    /// sha256 of the manifest text.
    pub hash: String,
    pub schedule: Schedule,
    /// Stage definitions in manifest order.
    pub stages: Vec<StageDef>,
    /// Stage indices, every stage after the stages it needs.
    pub order: Vec<usize>,
    pub variants: Vec<String>,
    pub sweep: Vec<SweepAxis>,
    pub compare: CompareDef,
    /// Variants x sweep points, variant-major.
    pub configs: Vec<Config>,
    /// Whether `[smoke]` overrides were applied.
    pub smoke: bool,
    /// The stock data it declares (`[data]`, with `[smoke]`'s `data.*` overrides under
    /// `--smoke`).
    pub data: crate::market::DataSpec,
}

impl Experiment {
    /// The folder holding the manifest (`.` for a bare file name): what a command stage's
    /// relative `cwd` is relative to.
    pub fn dir(&self) -> &Path {
        self.path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    pub warmup: u32,
    /// Measured trials per config: the fixed count, or a sequential run's `max`.
    pub repetitions: u32,
    /// `repetitions = { min, max }`: blocks are added until decided.
    pub sequential: Option<crate::stats::SequentialPlan>,
    /// `max_time`: the most time the measured blocks of a sequential run may take.
    pub max_time: Option<std::time::Duration>,
    pub order: Order,
    /// `None`: a fresh seed is drawn per run (and stored with it).
    pub seed: Option<u64>,
    /// Run every trial even when the first trial of every config failed the same way (by
    /// default such a run stops: repeating the failure measures nothing).
    pub keep_going: bool,
}

/// One `[stages.<name>]` table's place in the DAG. `K` is the kind: a [`StageKind`] in a
/// validated [`Experiment`]; while validation runs, an `Option` that is `None` for a kind that
/// is missing or unknown (reported), so the other checks go on.
#[derive(Debug, Clone)]
pub struct StageDef<K = StageKind> {
    pub name: String,
    pub kind: K,
    /// Indices of the stages this one needs.
    pub needs: Vec<usize>,
    pub cache: bool,
}

#[derive(Debug, Clone)]
pub struct SweepAxis {
    /// Dotted path, e.g. `stages.train.batch_size`.
    pub path: String,
    pub values: Vec<toml::Value>,
}

/// One point of the experiment: a variant at one sweep point, with its stages' parameters.
#[derive(Debug, Clone)]
pub struct Config {
    pub name: String,
    pub variant: String,
    /// Axis path -> value, rendered as TOML.
    pub sweep_point: Vec<(String, String)>,
    /// Per stage (manifest order): its resolved parameters, checked against its kind.
    pub stages: Vec<ResolvedStage>,
    /// The git revision the variant's code comes from (`git = ...`); `None`: the manifest's
    /// own working tree, as it is.
    pub revision: Option<Revision>,
}

/// One stage of one config.
#[derive(Debug, Clone)]
pub struct ResolvedStage {
    /// Its parameters, read and checked against its kind, defaults applied: what the stage is
    /// built from and what identifies its work.
    pub params: StageParams,
    /// The parameter table as the manifest gives it, overrides applied and defaults not: kept
    /// for what shows or stores the manifest's own words (the stored run spec, `plan`'s
    /// differences, claim conditions). Nothing reads it into parameters again.
    pub table: toml::Table,
}

/// The comparison settings from `[compare]`, with defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareDef {
    pub baseline: String,
    /// `<stage>.<metric>`, `<stage>.seconds` or `trial.seconds`.
    pub primary: String,
    /// `Some(true)` when higher is better, `None` to infer from the unit.
    pub higher_is_better: Option<bool>,
    pub alpha: f64,
    pub band: f64,
    pub resamples: usize,
    pub guards: Vec<GuardDef>,
    pub claims: Vec<ClaimDef>,
    /// Configs may be identical (an A/A run that measures noise); otherwise that is an error.
    pub allow_identical: bool,
    /// `[compare] sweep = "neighbours"`: also compare each sweep point with the previous one.
    pub sweep_neighbours: bool,
    /// `quality = "under_test"` (default): a trained model no better than predicting zero is a
    /// failed guard; `"not_under_test"`: shown, not judged.
    pub quality_under_test: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GuardDef {
    pub metric: String,
    pub within: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClaimDef {
    pub metric: String,
    pub variant: String,
    /// The claim as written: a speedup (`speedup = ...`), or a value (`value = ...`).
    pub speedup: String,
    /// A value claim, parsed into the metric's unit; `None` for a speedup claim.
    pub value: Option<crate::stats::Claim>,
    /// The claim word for word (found in `sources/<document>.md` under `section`).
    pub quote: String,
    pub document: String,
    pub section: String,
    /// The change the claim is about, and the change its variant makes (`change` of the
    /// variant; `None` when the variant does not say).
    pub change: String,
    pub variant_change: Option<String>,
    /// What the source measured, when it differs from `metric`.
    pub source_metric: Option<String>,
    /// Why this experiment cannot test the claim.
    pub untestable: Option<String>,
    /// What the claim was made under; a run that does not meet it cannot judge it.
    pub requires: crate::stats::ClaimConditions,
    /// Where the experiment deliberately measures differently from the source, in words.
    pub differs: Option<String>,
    /// A value claim's hardware: judged only there.
    pub made_on: Option<crate::stats::MadeOn>,
}

impl Experiment {
    pub fn config_index(&self, name: &str) -> Option<usize> {
        self.configs.iter().position(|c| c.name == name)
    }
}
