//! Rendering the model (model -> **render** -> files and stdout): the Markdown view of a report
//! (`view`, with `sections` and `scaling_view`) and of a comparison (`compare_view`) printed
//! through minijinja templates (`markdown`), what `--format` prints (`output`), a history's
//! Markdown and chart (`history`), the SVG charts (`charts`) and the writing of a run's report
//! files (`write`). It reads the model only, never the run data or `assemble`: a rendering is a
//! function of the model. Nothing in `assemble` or `model` uses it.

pub(crate) mod charts;
pub(crate) mod compare_view;
mod history;
mod markdown;
mod output;
mod scaling_view;
mod sections;
pub(crate) mod view;
mod write;

pub(crate) use charts::{padded_range, palette_color, render_charts, FONT as CHART_FONT};
pub use compare_view::compare_view;
pub use history::{history_svg, render_history_markdown};
pub use markdown::{render_compare_markdown, render_markdown};
pub use output::{compare_output, report_output, OutputFormat};
pub(crate) use write::write_files;
pub use write::WrittenReport;
