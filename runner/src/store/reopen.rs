//! A stored run opened again to run more of its trials (store -> **reopen** -> `measured run
//! --resume`, the queue worker): the one way either of them opens a stored run. Its row is
//! read and its manifest checked against the hash taken when it started, then parsed back; the
//! dataset versions its first trials read are taken from its row; and a journal and a trial
//! sink are opened for the process that continues it.

use super::journal::{Journal, JournalError};
use super::{RunHeader, RunRow, StoreError, TrialSink};
use crate::db::Db;
use crate::manifest::{self, Experiment, ManifestErrors};
use crate::market::VersionRef;
use crate::measure::Fingerprint;
use std::path::Path;

/// A stored run, opened to continue it.
pub struct Reopened {
    /// Its row as stored.
    pub row: RunRow,
    /// Its manifest, read back from the row (its hash verified) and validated again.
    pub exp: Experiment,
    /// The dataset versions its first trials read, which the rest read too; `None` for a run
    /// stored before versions were recorded, and for one without a load stage.
    pub versions: Option<Vec<VersionRef>>,
}

/// Why a stored run cannot be opened again.
#[derive(Debug, thiserror::Error)]
pub enum ReopenError {
    /// It is not stored, or its manifest was changed after it started.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Its stored manifest no longer validates (this version reads manifests differently).
    #[error("the stored manifest of run {run} does not validate: {errors}")]
    Manifest { run: String, errors: ManifestErrors },
    /// Its experiment name or id read from the database cannot name a file.
    #[error(transparent)]
    UnsafeName(#[from] crate::paths::UnsafeName),
    /// Its journal cannot be created.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

impl Reopened {
    /// Reads run `run` (an id, a prefix or `latest`) back to continue it: refused when its
    /// stored manifest is not the text its hash was taken of.
    pub async fn load(db: &Db, run: &str) -> Result<Reopened, ReopenError> {
        let row = super::load_run(db, run).await?;
        row.verify_manifest()?;
        let exp =
            manifest::parse_str(Path::new(&row.manifest_path), &row.manifest_text, row.smoke).map_err(|errors| {
                ReopenError::Manifest {
                    run: row.id.clone(),
                    errors,
                }
            })?;
        let versions = crate::market::DataIdentity::from_json(row.stock_data.as_deref())
            .map(|d| d.versions)
            .filter(|v| !v.is_empty());
        Ok(Reopened { row, exp, versions })
    }

    /// Opens the journal `journal_name` (the run id, or a worker's own name for it) under
    /// `results_dir`, and a trial sink into `db` (reached at `url`) that keeps this process's
    /// trials of the run. `env` is this process's fingerprint, `lease` the heartbeat lease it
    /// keeps (`None`: a queue worker, whose units have leases instead).
    pub fn sink(&self, to: SinkTarget<'_>, env: &Fingerprint, lease: Option<f64>) -> Result<TrialSink, ReopenError> {
        let row = &self.row;
        crate::paths::check_stored(to.results_dir, &row.experiment, &row.id)?;
        let header = RunHeader::of_stored(row, env, lease, to.url);
        let journal = Journal::create(
            &Journal::path_for(to.results_dir, &row.experiment, to.journal_name),
            &header,
        )?;
        Ok(TrialSink::new(to.db.clone(), to.url, &row.id, journal, to.quiet))
    }
}

/// Where a reopened run's trials go: the results database and the folder of its journal.
pub struct SinkTarget<'a> {
    pub db: &'a Db,
    /// The results database's URL.
    pub url: &'a str,
    pub results_dir: &'a Path,
    /// The journal's name: the run id, or a worker's own name for its share of the run.
    pub journal_name: &'a str,
    pub quiet: bool,
}
