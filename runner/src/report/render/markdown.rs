//! Markdown rendering (report model -> view -> minijinja templates -> report.md / compare.md,
//! and the pull-request comments of `--format github`).
//!
//! Templates are read from the templates directory at run time when it holds them, so a user
//! can restyle reports without rebuilding; otherwise the copies compiled into the binary are used.
//! A template gets the formatted view as `r` and the typed model (the contents of `report.json`,
//! or the comparison's JSON) as `data`.

use std::path::Path;

use minijinja::Environment;
use serde::Serialize;

use super::compare_view::compare_view;
use super::compare_view::CompareReport;
use super::view::view;
use crate::report::error::ReportError;
use crate::report::model::{CompareModel, Report};

const REPORT_TEMPLATE: &str = "report.md.j2";
const COMPARE_TEMPLATE: &str = "compare.md.j2";
const GITHUB_TEMPLATE: &str = "github.md.j2";
const COMPARE_GITHUB_TEMPLATE: &str = "compare_github.md.j2";
const BUILTIN_REPORT: &str = include_str!("../../../../templates/report.md.j2");
const BUILTIN_COMPARE: &str = include_str!("../../../../templates/compare.md.j2");
const BUILTIN_GITHUB: &str = include_str!("../../../../templates/github.md.j2");
const BUILTIN_COMPARE_GITHUB: &str = include_str!("../../../../templates/compare_github.md.j2");

fn environment(
    name: &'static str,
    builtin: &'static str,
    dir: Option<&Path>,
) -> Result<Environment<'static>, ReportError> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(true);
    // Missing fields are template bugs; fail loudly instead of printing nothing.
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    match dir {
        Some(d) if d.join(name).is_file() => env.set_loader(minijinja::path_loader(d)),
        _ => env.add_template(name, builtin)?,
    }
    Ok(env)
}

/// Renders template `name` from `dir` when it holds it, else the copy compiled in.
pub(super) fn render_named<T: Serialize>(
    name: &'static str,
    builtin: &'static str,
    dir: Option<&Path>,
    ctx: &T,
) -> Result<String, ReportError> {
    render(name, builtin, dir, ctx)
}

fn render<T: Serialize>(
    name: &'static str,
    builtin: &'static str,
    dir: Option<&Path>,
    ctx: &T,
) -> Result<String, ReportError> {
    let env = environment(name, builtin, dir)?;
    let out = env.get_template(name)?.render(ctx)?;
    Ok(out)
}

/// Renders a run report. `templates_dir` is used when it contains `report.md.j2`.
pub fn render_markdown(report: &Report, templates_dir: Option<&Path>) -> Result<String, ReportError> {
    let ctx = minijinja::context! { r => view(report), data => report };
    render(REPORT_TEMPLATE, BUILTIN_REPORT, templates_dir, &ctx)
}

/// Renders a run report as a pull-request comment. `folder` is where `report.md` and the charts
/// were written, as the comment's reader should see it (charts are linked there, never
/// inlined). `templates_dir` is used when it contains `github.md.j2`.
pub fn render_github(report: &Report, folder: &str, templates_dir: Option<&Path>) -> Result<String, ReportError> {
    let ctx = minijinja::context! { r => view(report), data => report, folder => folder };
    render(GITHUB_TEMPLATE, BUILTIN_GITHUB, templates_dir, &ctx)
}

/// Renders a before/after comparison as a pull-request comment; `document` is the path of the
/// full `compare.md`. `templates_dir` is used when it contains `compare_github.md.j2`.
pub fn render_compare_github(
    model: &CompareModel,
    document: &str,
    templates_dir: Option<&Path>,
) -> Result<String, ReportError> {
    let ctx = minijinja::context! { r => compare_view(model), data => model, document => document };
    render(COMPARE_GITHUB_TEMPLATE, BUILTIN_COMPARE_GITHUB, templates_dir, &ctx)
}

/// Renders a before/after comparison. `templates_dir` is used when it contains `compare.md.j2`.
pub fn render_compare_markdown(report: &CompareReport, templates_dir: Option<&Path>) -> Result<String, ReportError> {
    let ctx = minijinja::context! { r => report };
    render(COMPARE_TEMPLATE, BUILTIN_COMPARE, templates_dir, &ctx)
}
