//! Measuring what happens around a stage (exec -> measure): peak memory, how busy the machine
//! was around each trial, GPU telemetry, and the environment fingerprint stored with every run
//! and trial.

mod busy;
mod env;
pub mod gpu;
mod load;
mod rss;

pub use busy::{busy_warning, frequency_warning, FrequencyFigures, LoadFigures, MachineLoad};
pub use env::Fingerprint;
pub(crate) use env::NO_REPO_COMMANDS;
pub use load::{LoadProbe, TickDelta, TrialLoad};
pub use rss::{peak_rss_bytes, reset_peak_rss, rss_bytes, PeakScope, PROCESS_PEAK_NOTE};
