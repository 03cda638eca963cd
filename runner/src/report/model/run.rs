//! The run data the store loads (store -> **run data** -> assemble): one stored run with its
//! configs, trials and stages, warm-up trials already excluded. Every report is built from it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::report::StageNoteRow;
use crate::metrics::Metric;
use crate::stats::CompareSpec;

/// One stored run, as the store hands it to the report (warm-up trials already excluded).
#[derive(Debug, Clone, PartialEq)]
pub struct RunData {
    pub run_id: String,
    pub experiment: String,
    pub description: String,
    /// The run's status as the store spells it (`finished`, `stopped`, ...), for display.
    pub status: String,
    /// Whether the run finished: every trial it planned ran. Anything else covers only the
    /// trials that completed.
    pub finished: bool,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub manifest_path: String,
    pub manifest_hash: String,
    /// Fingerprint keys such as `git_commit`, `git_dirty`, `host`, `cpu`, `cores`, `os`, `rustc`,
    /// `measured_version`, `gpu`.
    pub environment: BTreeMap<String, String>,
    /// Stage name -> content hash of the data it loaded.
    pub data_hashes: BTreeMap<String, String>,
    /// The stock data the run's load stages read, as recorded when it started; `None` when it
    /// was not recorded (runs stored before it was, and runs without a load stage).
    pub stock_data: Option<crate::market::DataIdentity>,
    /// Configs in plan order.
    pub configs: Vec<ConfigData>,
    pub compare: CompareSpec,
    /// Exact command that reproduces the run.
    pub reproduce: String,
    /// The results database the run is stored in, password redacted.
    pub results_database: String,
    /// The stock database recorded with the run, password redacted; `None` when the run was
    /// stored before it was recorded.
    pub stock_database: Option<String>,
    /// Free-form remarks such as "CPU-only run".
    pub notes: Vec<String>,
    /// How busy the machine was during the measured trials (empty for runs stored before).
    pub machine: crate::measure::MachineLoad,
    /// Distinct notes the stages recorded.
    pub stage_notes: Vec<StageNoteRow>,
    /// What each config's measured trials ran on (configs in plan order; empty for runs
    /// stored before stages recorded facts).
    pub facts: Vec<super::sections::ConfigFacts>,
    /// How the trials were laid out, which decides the statistics.
    pub design: RunDesign,
}

/// The design a run's trials ran in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunDesign {
    /// Blocks pair the configs: an interleaved schedule (each block runs every config once,
    /// back to back, in shuffled order), or trials spread over hosts in whole blocks.
    pub paired: bool,
    /// Measured blocks that hold a trial of every config.
    pub blocks: u32,
    /// `repetitions = { min, max }`: blocks were added until decided.
    pub sequential: Option<crate::stats::SequentialPlan>,
    /// The sequential run's `max_time`, in seconds.
    pub max_time_seconds: Option<f64>,
}

impl RunData {
    /// The kind of the stage named `stage`, as its trials recorded it; `None` for a stage no
    /// trial recorded, or a kind this version does not know.
    pub(crate) fn stage_kind(&self, stage: &str) -> Option<crate::kinds::StageKind> {
        self.configs
            .iter()
            .flat_map(|c| &c.trials)
            .flat_map(|t| &t.stages)
            .find(|s| s.name == stage)
            .and_then(|s| crate::kinds::StageKind::parse(&s.kind))
    }
}

/// One variant at one sweep point.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigData {
    /// `baseline` or `reuse[batch_size=64]`.
    pub name: String,
    pub variant: String,
    /// Axis path (`stages.train.batch_size`) -> value, in axis order.
    pub sweep: Vec<(String, String)>,
    /// Stage name -> the parameters the config ran with (JSON, from the run's stored spec; empty
    /// for runs stored before specs). The Scaling section reads thread counts and problem sizes
    /// from it, since a variant can set them as well as a sweep.
    pub params: indexmap::IndexMap<String, serde_json::Value>,
    pub trials: Vec<TrialData>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TrialData {
    /// Position in the run's time order.
    pub index: u32,
    pub repetition: u32,
    /// Block of a paired design (see [`RunDesign::paired`]); paired statistics need it on every
    /// trial.
    pub block: Option<u32>,
    /// The schedule's block, paired or not (a sequential order numbers each config's
    /// repetitions).
    pub scheduled_block: u32,
    pub host: String,
    pub ok: bool,
    pub error: Option<String>,
    pub stages: Vec<StageData>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StageData {
    pub name: String,
    pub kind: String,
    pub ok: bool,
    pub seconds: f64,
    pub peak_rss_bytes: Option<u64>,
    pub metrics: Vec<Metric>,
    /// What the stage ran on (`device` -> `cuda`), as it recorded it.
    pub facts: crate::metrics::Facts,
}
