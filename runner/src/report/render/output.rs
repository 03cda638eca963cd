//! What `report --format` and `compare --format` print on stdout. The files (`report.md`,
//! `report.json`, charts, `compare.md`) are written either way; the format only chooses what a
//! pipe receives: a pull-request comment, the typed JSON, or the whole Markdown document.

use std::path::Path;

use serde::Serialize;

use super::compare_view::compare_view;
use super::markdown::{render_compare_github, render_compare_markdown, render_github, render_markdown};
use super::write::WrittenReport;
use crate::report::error::ReportError;
use crate::report::model::CompareModel;

/// The form `report` and `compare` print on stdout instead of their summary lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// A pull-request comment: a title, one verdict line per comparison, claim and guard, and
    /// the results table inside <details>; charts are linked, not inlined.
    Github,
    /// The typed model: report.json for `report`, the comparison's JSON for `compare`.
    Json,
    /// The whole Markdown document (report.md or compare.md).
    Markdown,
}

/// The stdout of `measured report --format <format>` for a written report.
pub fn report_output(
    format: OutputFormat,
    written: &WrittenReport,
    templates_dir: Option<&Path>,
) -> Result<String, ReportError> {
    match format {
        OutputFormat::Github => {
            let folder = written.paths.markdown.parent().unwrap_or(Path::new("."));
            render_github(&written.report, &link_target(folder), templates_dir)
        }
        OutputFormat::Json => json(&written.report),
        OutputFormat::Markdown => render_markdown(&written.report, templates_dir),
    }
}

/// The stdout of `measured compare --format <format>`; `document` is where compare.md was written.
pub fn compare_output(
    format: OutputFormat,
    model: &CompareModel,
    document: &Path,
    templates_dir: Option<&Path>,
) -> Result<String, ReportError> {
    match format {
        OutputFormat::Github => render_compare_github(model, &link_target(document), templates_dir),
        OutputFormat::Json => json(model),
        OutputFormat::Markdown => render_compare_markdown(&compare_view(model), templates_dir),
    }
}

fn json<T: Serialize>(value: &T) -> Result<String, ReportError> {
    let mut body = serde_json::to_string_pretty(value)?;
    body.push('\n');
    Ok(body)
}

/// A path as a relative Markdown link target: relative to the current directory (where a
/// comment is usually written from, the repository root), spaces escaped so the link holds.
fn link_target(path: &Path) -> String {
    crate::paths::relative_to_cwd(path)
        .display()
        .to_string()
        .replace(' ', "%20")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{simple_run, sweep_run};
    use crate::report::{build_report, compare_runs};

    #[test]
    fn a_github_comment_has_verdicts_then_folded_results_and_linked_charts() {
        let report = build_report(&sweep_run());
        let md = render_github(&report, "results/sweep/r1", None).unwrap();
        assert!(md.starts_with("### "), "{md}");
        let (head, details) = md.split_once("<details><summary>").expect("a <details> block");
        // One verdict line per comparison and claim, then one per guard, above the fold.
        let bullets = head.lines().filter(|l| l.starts_with("- ")).count();
        assert_eq!(bullets, report.summary.len() + report.guards.len(), "{head}");
        assert!(details.contains("| Config | n |") && details.trim_end().ends_with("</details>"));
        assert!(!report.charts.is_empty());
        for chart in &report.charts {
            assert!(md.contains(&format!("](results/sweep/r1/{})", chart.file)), "{md}");
        }
        assert!(
            !md.contains("![") && !md.contains("<svg"),
            "charts are linked, never inlined"
        );
    }

    #[test]
    fn the_comparison_json_is_typed_and_plain() {
        let before = simple_run("run-a", 0.8, 0.5);
        let mut after = simple_run("run-b", 0.8, 0.6);
        after.environment.insert("git_commit".to_owned(), "77b0e4d".to_owned());
        let model = compare_runs(&before, &after, Default::default(), &[]).unwrap();
        let printed = compare_output(OutputFormat::Json, &model, Path::new("c/compare.md"), None).unwrap();
        let json: serde_json::Value = serde_json::from_str(&printed).unwrap();
        let text = printed.replace("\\\"", "");
        assert!(!text.contains("**") && !text.contains('`'), "{printed}");
        let row = &json["results"][1];
        assert_eq!(
            (row["config"].as_str(), row["n_before"].as_u64()),
            (Some("reuse"), Some(8))
        );
        assert!(
            row["before_median"].is_f64() && row["speedup"].is_f64() && row["p"].is_f64(),
            "{row}"
        );
        assert_eq!(json["before"]["run_id"], "run-a");
        // The validation loss moved by 20%: the guard fails, in words and in the flags.
        assert_eq!(json["guards"][1]["verdict"], "fail");
        assert_eq!(row["changed_results"], true);
        assert_eq!(json["regression"], true);
        let changed: Vec<&str> = json["environment"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["changed"] == true)
            .map(|e| e["key"].as_str().unwrap())
            .collect();
        assert_eq!(changed, ["git_commit"]);
        // The comment says the same in Markdown, with the guard's failure emphasized.
        let comment = compare_output(OutputFormat::Github, &model, Path::new("c/compare.md"), None).unwrap();
        assert!(comment.contains("**but changed results**"), "{comment}");
        assert!(comment.contains("Environment changes: git_commit"), "{comment}");
        assert!(comment.contains("[c/compare.md](c/compare.md)"), "{comment}");
    }
}
