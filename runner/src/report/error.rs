//! Failures while building, rendering or writing a report (and while comparing two runs): the
//! one error type of `report`, below its model -> assemble -> render pipeline.

use std::path::PathBuf;

/// Failures while rendering or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("template error: {0}")]
    Template(#[from] minijinja::Error),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot serialize the report: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot draw chart {file}: {message}")]
    Chart { file: String, message: String },
    #[error(
        "the runs loaded different data (stages: {}{}); comparing them would mix a code change with a data change",
        stages.join(", "),
        if differences.is_empty() { String::new() } else { format!("; {}", differences.join(", ")) }
    )]
    DataMismatch {
        stages: Vec<String>,
        /// What differs in the stock data, in words (`50 vs 500 symbols`, `seed 7 vs 42`).
        differences: Vec<String>,
    },
    #[error("the runs have no config in common (before: {}; after: {})", before.join(", "), after.join(", "))]
    NoCommonConfigs { before: Vec<String>, after: Vec<String> },
    #[error(
        "configs ran with other parameters in the two runs ({}); a speedup across changed configs measures the \
         change of config, not of the code",
        changes.join("; ")
    )]
    ConfigChanged {
        /// `config: stage.key: before -> after`, one per changed parameter.
        changes: Vec<String>,
    },
}
