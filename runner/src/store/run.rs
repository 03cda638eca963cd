//! A stored run read back whole (store -> **run** -> report): its row, its spec and its trials.

use super::spec::{SpecError, StoredSpec};
use super::RunRow;
use crate::record::TrialRecord;

/// A run as stored: its row, its spec (what `report`, `compare` and `publish` read instead of
/// the manifest), notes on how the spec was read, and its trials.
pub struct StoredRun {
    pub row: RunRow,
    pub spec: StoredSpec,
    pub notes: Vec<String>,
    pub trials: Vec<TrialRecord>,
}

impl StoredRun {
    /// Reads the run's stored spec, or recovers one from its manifest for runs stored before
    /// specs were.
    pub fn new(row: RunRow, trials: Vec<TrialRecord>) -> Result<StoredRun, SpecError> {
        let (spec, notes) = match &row.spec {
            Some(json) => (StoredSpec::from_json(&row.id, json)?, Vec::new()),
            None => StoredSpec::recover(
                &row.id,
                &row.manifest_path,
                &row.manifest_text,
                row.smoke,
                row.seed,
                &trials,
            ),
        };
        Ok(StoredRun {
            row,
            spec,
            notes,
            trials,
        })
    }
}
