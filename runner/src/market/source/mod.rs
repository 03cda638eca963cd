//! Where the bars of a dataset version come from (CLI `data synth` / `data import`, a run's
//! `[data]` -> **source** -> write -> stock tables): the synthetic market generator, CSV import
//! (column mapping, validation, the import plan) and a run's data preparation, which generates or
//! imports what an experiment declares and says which versions the run reads.
//!
//! Each source hands its bars to [`super::write`] as one new dataset version; nothing here reads
//! bars back for a run (that is [`super::read`]).

pub mod catalog;
pub(super) mod csvmap;
pub(super) mod import;
pub(super) mod import_options;
pub(super) mod import_write;
pub(super) mod prepare;
pub(super) mod synth;
