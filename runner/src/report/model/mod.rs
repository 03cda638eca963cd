//! The typed report model (run data -> assemble -> **model** -> render): what `report.json` and the
//! comparison's JSON hold, what `render` formats and what each chart draws (`charts`, kept out of
//! the JSON); also the run data `rundata` loads, with the run's `[compare]` settings (the
//! statistics' `CompareSpec`, which the store keeps with the run), which `assemble` reads. Types
//! only: nothing here uses the rest of `report`, nor the store.
//!
//! Values are data, never presentation. Numbers are JSON numbers in the metric's own unit,
//! named in a `unit` field beside them or, where it never varies, in the field name
//! (`_seconds`, `_bytes`). Ratios and speedups are plain factors (`1.31`), p-values plain
//! probabilities, fractions plain fractions (`0.02` for 2%). Intervals are `[low, high]` 95%
//! intervals; a `null` bound is not finite (an open-ended speedup). A value that could not be
//! computed (no samples, no comparison) is `null`. Verdicts are snake_case words. No string the
//! report writes carries Markdown; text the run recorded (descriptions, claims as written, error
//! messages) is passed through verbatim. `schema_version` grows whenever a field is renamed,
//! removed or retyped.

mod charts;
mod compare;
mod history;
mod report;
mod run;
mod scaling;
mod sections;

pub use charts::*;
pub use compare::*;
pub use history::*;
pub use report::*;
pub use run::*;
pub use scaling::*;
pub use sections::*;

/// An interval `(low, high)`.
pub type Interval = (f64, f64);

/// `Some(v)` for a finite value: the model holds no NaN or infinity outside intervals.
pub(crate) fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}
