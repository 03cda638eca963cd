//! Exit codes, decided in one place (library errors -> CLI exit status).

use crate::manifest::ManifestErrors;

/// 0: success. 1: the run finished with failed trials or stopped, a regression under
/// `--fail-on-regression`, stock data that cannot serve the manifest, or a runtime error. 2: bad input (manifest, arguments).
/// 130: interrupted by Ctrl-C (finished trials are stored).
pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
pub const EXIT_INTERRUPTED: u8 = 130;

/// An error that ends a command, with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("{0}")]
    Manifest(ManifestErrors),
    #[error("{0}")]
    BadInput(String),
    /// The manifest is valid but the stock data cannot serve it (not there, not what it
    /// declares): located like a manifest error, exit 1.
    #[error("{0}")]
    Data(ManifestErrors),
    #[error(transparent)]
    Runtime(#[from] anyhow::Error),
}

impl CommandError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Manifest(_) | CommandError::BadInput(_) => EXIT_BAD_INPUT,
            CommandError::Runtime(_) | CommandError::Data(_) => EXIT_FAILED,
        }
    }
}

impl From<ManifestErrors> for CommandError {
    fn from(e: ManifestErrors) -> Self {
        CommandError::Manifest(e)
    }
}

impl From<crate::store::StoreError> for CommandError {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            crate::store::StoreError::NoSuchRun(_)
            | crate::store::StoreError::Ambiguous(..)
            | crate::store::StoreError::Tampered { .. } => CommandError::BadInput(e.to_string()),
            other => CommandError::Runtime(other.into()),
        }
    }
}

impl From<crate::store::ReopenError> for CommandError {
    fn from(e: crate::store::ReopenError) -> Self {
        use crate::store::ReopenError;
        match e {
            ReopenError::Store(e) => e.into(),
            ReopenError::Manifest { errors, .. } => CommandError::Manifest(errors),
            ReopenError::UnsafeName(e) => e.into(),
            ReopenError::Journal(e) => CommandError::Runtime(e.into()),
        }
    }
}

impl From<crate::gitrev::GitRevError> for CommandError {
    fn from(e: crate::gitrev::GitRevError) -> Self {
        match e {
            crate::gitrev::GitRevError::BadInput(message) => CommandError::BadInput(message),
            crate::gitrev::GitRevError::Runtime(e) => CommandError::Runtime(e),
        }
    }
}

impl From<crate::paths::UnsafeName> for CommandError {
    fn from(e: crate::paths::UnsafeName) -> Self {
        CommandError::BadInput(e.to_string())
    }
}

impl From<crate::db::DbError> for CommandError {
    fn from(e: crate::db::DbError) -> Self {
        CommandError::Runtime(e.into())
    }
}

impl From<crate::preflight::PreflightError> for CommandError {
    fn from(e: crate::preflight::PreflightError) -> Self {
        use crate::preflight::PreflightError;
        match e {
            PreflightError::BadInput(message) => CommandError::BadInput(message),
            PreflightError::Data(errors) => CommandError::Data(errors),
            PreflightError::Connect(e) => e.into(),
            PreflightError::Database(message) => CommandError::Runtime(anyhow::anyhow!(message)),
        }
    }
}
