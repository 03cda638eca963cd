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
    /// What the stage ran on and with (see `Recorder::fact`); a stage taken from the run's
    /// cache carries the facts of the run that made its artifact. Empty for stages stored
    /// before facts were recorded.
    #[serde(default, skip_serializing_if = "crate::metrics::Facts::is_empty")]
    pub facts: crate::metrics::Facts,
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

/// An error on one line (a command's stderr tail joined), at most 300 characters: for notes.
pub fn one_line(error: &str) -> String {
    let joined = error
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match joined.char_indices().nth(300) {
        Some((i, _)) => format!("{}...", &joined[..i]),
        None => joined,
    }
}

/// The error the first trial of every config failed with, when it is one and the same: a run
/// that shows this can only repeat it. `None` when any config's first trial passed, when the
/// errors differ, or when some config has no trial yet. `configs` is the number of configs.
pub fn common_first_failure(trials: &[TrialRecord], configs: usize) -> Option<String> {
    let mut first: Vec<Option<&TrialRecord>> = vec![None; configs];
    let mut names: Vec<&str> = Vec::new();
    for t in trials {
        // Configs are told apart by name: stored trials carry no config index.
        let i = match names.iter().position(|n| *n == t.config) {
            Some(i) => i,
            None => {
                names.push(&t.config);
                names.len() - 1
            }
        };
        if let Some(slot) = first.get_mut(i) {
            slot.get_or_insert(t);
        }
    }
    let mut errors = first
        .iter()
        .map(|t| t.filter(|t| !t.ok).and_then(|t| t.error.as_deref()));
    let error = errors.next()??;
    errors.all(|e| e == Some(error)).then(|| error.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(config: &str, error: Option<&str>) -> TrialRecord {
        TrialRecord {
            index: 0,
            config: config.into(),
            variant: config.into(),
            sweep: Vec::new(),
            repetition: 0,
            block: 0,
            warmup: true,
            ok: error.is_none(),
            error: error.map(str::to_owned),
            seconds: 0.0,
            started_at: Utc::now(),
            finished_at: Utc::now(),
            environment_hash: String::new(),
            worker: String::new(),
            git_commit: None,
            git_dirty: false,
            load: Default::default(),
            stages: Vec::new(),
        }
    }

    #[test]
    fn only_the_same_failure_in_every_configs_first_trial_stops_a_run() {
        let boom = Some("stage `load` failed: too few symbols");
        let same = [trial("a", boom), trial("b", boom), trial("a", None)];
        assert_eq!(common_first_failure(&same, 2).as_deref(), boom);
        // A config still to run, a first trial that passed, or another error: go on.
        assert_eq!(common_first_failure(&same[..1], 2), None);
        assert_eq!(common_first_failure(&[trial("a", boom), trial("b", None)], 2), None);
        assert_eq!(
            common_first_failure(&[trial("a", boom), trial("b", Some("stage `load` failed: other"))], 2),
            None
        );
        // Later trials do not count: only each config's first.
        assert_eq!(
            common_first_failure(&[trial("a", None), trial("b", boom), trial("a", boom)], 2),
            None
        );
        assert_eq!(one_line("first\n  second\n\n"), "first second");
    }
}
