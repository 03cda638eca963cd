//! Raw manifest structs, exactly as written in TOML (file -> raw -> validate).
//!
//! Only shape is checked here (unknown keys, types); meaning is checked in `validate`.

use indexmap::IndexMap;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExperiment {
    pub name: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSchedule {
    #[serde(default = "default_warmup")]
    pub warmup: u32,
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    #[serde(default)]
    pub order: Order,
    pub seed: Option<u64>,
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
#[serde(deny_unknown_fields)]
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
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGuard {
    pub metric: String,
    pub within: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClaim {
    pub metric: String,
    pub variant: String,
    pub speedup: String,
    pub source: Option<String>,
}
