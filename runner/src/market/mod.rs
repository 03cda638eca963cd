//! Stock market data (CLI `data synth` / `data import`, a run's `[data]` -> `source` -> `write`
//! -> dataset versions in the `symbols`, `daily_bars` tables -> `read` -> `load` stage -> `Bars`
//! artifact).
//!
//! Sources (`source/`: the synthetic market generator, CSV import, a run's data preparation)
//! add immutable dataset versions ([`versions`]) to the stock tables of a database through the
//! bulk writers (`write/`); the `load` stage (`read/`) reads the versions of its run's
//! [`DataView`] back into the columnar [`crate::artifact::Bars`] with one of several fetch
//! strategies so the strategies themselves can be measured against each other. What all of them
//! share lives in leaf modules that use none of the three: `stock` (bars, symbols, codes,
//! errors), `synth_options` (what names a synthetic market), [`versions`], `identity` and
//! `pgbinary`. This file only declares the modules and re-exports what the rest of the crate
//! uses, so paths outside stay `crate::market::...`.

mod identity;
mod pgbinary;
mod read;
mod source;
mod stock;
mod synth_options;
pub mod versions;
mod write;

#[cfg(test)]
mod tests;
pub use identity::{
    bars_per_symbol, extent, identify, thousands, trading_days_held, BarSpan, DataIdentity, DataSource, Extent,
};
pub use read::error::LoadError;
pub(crate) use read::load::{describe as describe_selection, resolve as resolve_selection, view_codes};
pub use read::load::{load, load_within};
pub use source::catalog;
pub use source::import::{file_sha256, prepare, FileSummary, ImportPlan};
pub use source::import_options::{BadRow, ImportError, ImportOptions, ImportReport, Layout};
pub use source::import_write::{import, Imported};
pub use source::prepare::{
    apply as apply_data, decide as decide_data, pinned_view, stored_view, view as data_view, DataSpec, ImportDecl,
    Refusal, Requirement, Step, StockPlace, SynthDecl,
};
pub use source::synth::{synth, synth_bars, SynthReport, SIGNAL_COEFFICIENT};
pub use stock::{is_valid_code, MarketError, StockError};
pub use synth_options::{
    demo_options, CodeStyle, SynthOptions, DEMO_DAYS, DEMO_SEED, DEMO_START, DEMO_SYMBOLS, GENERATOR_VERSION,
};
pub use versions::{short, DataView, VersionRef};
