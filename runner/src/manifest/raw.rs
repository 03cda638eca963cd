//! Raw manifest structs, exactly as written in TOML (file -> raw -> validate).
//!
//! Only types are checked here; unknown keys are collected (all of them, not only the first) by
//! `validate` through `serde_ignored`, and meaning is checked there too.

use indexmap::IndexMap;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub(crate) struct RawManifest {
    pub experiment: RawExperiment,
    #[serde(default)]
    pub schedule: RawSchedule,
    #[serde(default)]
    pub stages: IndexMap<String, toml::Table>,
    pub variants: Option<IndexMap<String, toml::Table>>,
    pub sweep: Option<IndexMap<String, toml::Value>>,
    pub compare: Option<RawCompare>,
    pub smoke: Option<toml::Table>,
    /// Read as a table so that `[smoke]` can override its keys before it is checked (see
    /// `manifest::data`).
    pub data: Option<toml::Table>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawExperiment {
    pub name: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawSchedule {
    #[serde(default = "default_warmup")]
    pub warmup: u32,
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    #[serde(default)]
    pub order: Order,
    pub seed: Option<u64>,
    /// Run every trial even when the first trial of every config failed the same way.
    #[serde(default)]
    pub keep_going: bool,
}

fn default_warmup() -> u32 {
    1
}

fn default_repetitions() -> u32 {
    5
}

impl Default for RawSchedule {
    fn default() -> Self {
        Self {
            warmup: default_warmup(),
            repetitions: default_repetitions(),
            order: Order::default(),
            seed: None,
            keep_going: false,
        }
    }
}

/// How trials of different configs are ordered in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Each block holds one repetition of every config, shuffled: configs alternate in time, so
    /// drift (thermal, background load) hits all of them alike.
    #[default]
    Interleaved,
    /// All repetitions of one config, then the next: simpler, but exposed to drift.
    Sequential,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawCompare {
    pub baseline: Option<String>,
    pub primary: Option<String>,
    pub direction: Option<String>,
    pub alpha: Option<f64>,
    pub band: Option<String>,
    pub resamples: Option<usize>,
    #[serde(default)]
    pub guards: Vec<RawGuard>,
    #[serde(default)]
    pub claims: Vec<RawClaim>,
    /// The configs may be identical on purpose: an A/A run that measures the noise floor.
    #[serde(default)]
    pub allow_identical: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawGuard {
    // Optional here so that a missing key is reported with the manifest's other mistakes
    // rather than stopping the parse (validate requires them).
    pub metric: Option<String>,
    pub within: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawClaim {
    pub metric: Option<String>,
    pub variant: Option<String>,
    pub speedup: Option<String>,
    pub source: Option<String>,
    pub requires: Option<RawRequires>,
}

/// `requires = { device = "cuda", min_cores = 30, params = { "stages.load.symbols" = { first = 500 } } }`
#[derive(Debug, Deserialize)]
pub(crate) struct RawRequires {
    pub device: Option<String>,
    pub min_cores: Option<u32>,
    #[serde(default)]
    pub params: IndexMap<String, toml::Value>,
}
