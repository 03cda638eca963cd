//! What a finished trial looks like (exec -> reporters -> store), and read back for reports.

use crate::measure::TrialLoad;
use crate::metrics::Metric;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageStatus {
    Ok,
    Failed,
    /// Not run because a stage it needs failed.
    Skipped,
}

impl StageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StageStatus::Ok => "ok",
            StageStatus::Failed => "failed",
            StageStatus::Skipped => "skipped",
        }
    }

    pub fn parse(s: &str) -> Self {
        match s {
            "ok" => StageStatus::Ok,
            "failed" => StageStatus::Failed,
            _ => StageStatus::Skipped,
        }
    }
}

/// One stage of one trial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageRecord {
    pub name: String,
    pub kind: String,
    /// Position in execution order.
    pub position: u32,
    pub status: StageStatus,
    /// The artifact came from the run's cache (`cache = true`); its time is not the stage's.
    pub cache_hit: bool,
    pub seconds: f64,
    pub peak_rss_bytes: Option<u64>,
    pub error: Option<String>,
    /// Content hash of the stage's output data, when it produces data.
    pub content_hash: Option<String>,
    pub metrics: Vec<Metric>,
    /// What the stage reported dropping or skipping (see `Recorder::note`); empty for stages
    /// stored before notes were recorded.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One finished trial, stored in one transaction.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialRecord {
    pub index: u32,
    pub config: String,
    pub variant: String,
    pub sweep: Vec<(String, String)>,
    pub repetition: u32,
    pub block: u32,
    pub warmup: bool,
    pub ok: bool,
    pub error: Option<String>,
    /// Sum of the wall times of the stages that ran (cached stages excluded).
    pub seconds: f64,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    /// Host fingerprint hash of the machine that ran it.
    pub environment_hash: String,
    /// Which process ran it (`host:pid`).
    pub worker: String,
    /// The commit whose code the trial ran: its variant's git revision, else the commit of the
    /// run's working tree; `None` outside a git repository (and for trials stored before it
    /// was recorded).
    #[serde(default)]
    pub git_commit: Option<String>,
    /// The code differed from `git_commit`: uncommitted changes (the working tree), or tracked
    /// files a build changed in a checkout.
    #[serde(default)]
    pub git_dirty: bool,
    /// How busy the machine was around the trial; all `None` for trials stored before it was
    /// recorded.
    #[serde(default)]
    pub load: TrialLoad,
    pub stages: Vec<StageRecord>,
}
