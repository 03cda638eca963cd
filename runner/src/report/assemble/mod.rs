//! Assembling the model (run data + stats -> **assemble** -> model): samples and comparison plans
//! (`samples`), the report of one run section by section (`report`, which calls on `tables`,
//! `others`, `bandwidth`, `by_size`, `neighbours`, `quality`, `gpu`, `scaling`, `stability`,
//! `sequential`, `provenance` and the chart plan in `charts`, with what each chart draws in
//! `plots`), the comparison of two runs (`compare`) and a metric's history over many runs
//! (`history`). Nothing here formats Markdown or draws; `render` does, from the model alone.

pub(crate) mod bandwidth;
mod by_size;
pub(crate) mod charts;
mod compare;
mod gpu;
mod history;
mod neighbours;
mod others;
mod plots;
mod provenance;
mod quality;
mod report;
pub(crate) mod samples;
pub(crate) mod scaling;
pub(crate) mod sequential;
pub(crate) mod stability;
mod tables;

pub use compare::{compare_runs, CompareOptions};
pub use history::build_history;
pub(crate) use history::{commit_label, machine_key};
pub use report::{build_report, questions};
pub(crate) use samples::{direction_of, metric_samples, settings_of};
