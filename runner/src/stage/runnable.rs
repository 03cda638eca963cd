//! What every stage kind implements and receives (stage -> **runnable** <- exec): the `Stage`
//! trait, the context and inputs a stage runs with, and the error it fails with.

use super::services::Services;
use crate::artifact::{Artifact, ArtifactKind};
use crate::features::NormalizeError;
use crate::kinds::TrialInfo;
use crate::market::{LoadError, StockError};
use crate::metrics::Recorder;
use crate::tensor::TrainError;
use crate::transfer::TransferError;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// A runnable stage with its parameters already validated.
pub trait Stage: Send + Sync + std::fmt::Debug {
    fn run(&self, ctx: &mut StageCtx<'_>, inputs: &Inputs) -> Result<Artifact, StageError>;

    /// GPU telemetry while the stage runs: the samples per second, or `None` for none. CUDA
    /// stages are monitored; a `command` stage when it sets `gpu_monitor = true`.
    fn gpu_monitor(&self) -> Option<f64> {
        None
    }

    /// How many times one run of the stage does its work (a command's `repeat`): the executor
    /// records the stage's time per run, the mean over them.
    fn runs_per_trial(&self) -> u32 {
        1
    }
}

/// What a stage receives from the stages it needs.
#[derive(Debug, Default)]
pub struct Inputs {
    pub artifacts: Vec<(String, Artifact)>,
}

impl Inputs {
    /// The first input of the given kind (validation guarantees it exists for typed inputs).
    pub fn get(&self, kind: ArtifactKind) -> Option<&Artifact> {
        self.artifacts.iter().map(|(_, a)| a).find(|a| a.kind() == kind)
    }
}

/// Everything a stage may use while it runs.
pub struct StageCtx<'a> {
    pub rec: Recorder,
    /// Seed for this stage in this trial: equal across configs of one repetition (paired), and
    /// different across repetitions so that results show their real variance.
    pub seed: u64,
    pub cancel: &'a AtomicBool,
    pub services: &'a Services,
    /// The stock data the manifest declares (`[data]`): loads choose only among it.
    pub data: &'a crate::market::DataSpec,
    pub trial: &'a TrialInfo,
    pub stage: &'a str,
    /// The folder holding the manifest (for a variant naming a git revision, the manifest's
    /// folder inside its checkout): relative paths in parameters (a command's `cwd`) are
    /// relative to it, and a command without `cwd` runs there, not wherever measured was
    /// started.
    pub manifest_dir: &'a Path,
    /// Peak RSS of a child process the stage ran (the executor also measures its own).
    pub peak_rss_child: Option<u64>,
    /// Content hash of the data the stage produced, so reports can show that configs saw
    /// the same data.
    pub content_hash: Option<String>,
}

/// A stage failure: recorded with the trial, and the run goes on. [`StageError::Cancelled`] is
/// not a failure: the run was interrupted, and the trial is dropped whole.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("cancelled")]
    Cancelled,
    /// The stage was not given the artifact it needs.
    #[error("{0}")]
    MissingInput(&'static str),
    /// The stock database cannot be reached, or does not hold the data the manifest declares.
    #[error(transparent)]
    Stock(#[from] StockError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Normalize(NormalizeError),
    #[error(transparent)]
    Train(TrainError),
    #[error(transparent)]
    Transfer(TransferError),
    /// The command stage's program could not start, ran out of time, failed, or was killed.
    #[error("{0}")]
    Command(String),
}

impl StageError {
    pub fn is_cancelled(&self) -> bool {
        matches!(self, StageError::Cancelled)
    }
}

impl From<NormalizeError> for StageError {
    fn from(e: NormalizeError) -> Self {
        match e {
            NormalizeError::Cancelled => StageError::Cancelled,
            e => StageError::Normalize(e),
        }
    }
}

impl From<TrainError> for StageError {
    fn from(e: TrainError) -> Self {
        match e {
            TrainError::Cancelled => StageError::Cancelled,
            e => StageError::Train(e),
        }
    }
}

impl From<TransferError> for StageError {
    fn from(e: TransferError) -> Self {
        match e {
            TransferError::Cancelled => StageError::Cancelled,
            e => StageError::Transfer(e),
        }
    }
}
