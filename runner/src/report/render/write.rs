//! Writing a run's report files (model -> render -> `report.md`, `report.json` and the SVG charts
//! in the run's folder).

use std::path::{Path, PathBuf};

use super::charts;
use super::markdown::render_markdown;
use crate::report::error::ReportError;
use crate::report::model::Report;

/// Files written by [`write_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportPaths {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub charts: Vec<PathBuf>,
}

/// A report and the files it was written to.
#[derive(Debug, Clone)]
pub struct WrittenReport {
    pub report: Report,
    pub paths: ReportPaths,
}

fn write_file(path: &Path, contents: &[u8]) -> Result<(), ReportError> {
    std::fs::write(path, contents).map_err(|source| ReportError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Writes `report.md`, `report.json` and the SVG charts the Markdown links to of `report` into
/// `out_dir` (created if missing).
pub(crate) fn write_files(
    report: Report,
    out_dir: &Path,
    templates_dir: Option<&Path>,
) -> Result<WrittenReport, ReportError> {
    std::fs::create_dir_all(out_dir).map_err(|source| ReportError::Io {
        path: out_dir.to_owned(),
        source,
    })?;
    let mut chart_paths = Vec::new();
    for (file, svg) in charts::render_charts(&report)? {
        let path = out_dir.join(&file);
        write_file(&path, svg.as_bytes())?;
        chart_paths.push(path);
    }
    let markdown = out_dir.join("report.md");
    write_file(&markdown, render_markdown(&report, templates_dir)?.as_bytes())?;
    let json = out_dir.join("report.json");
    let mut body = serde_json::to_string_pretty(&report)?;
    body.push('\n');
    write_file(&json, body.as_bytes())?;
    Ok(WrittenReport {
        report,
        paths: ReportPaths {
            markdown,
            json,
            charts: chart_paths,
        },
    })
}
