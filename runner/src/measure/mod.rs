//! Measuring what happens around a stage (exec -> measure): peak memory and the environment
//! fingerprint stored with every run and trial.

mod env;
mod rss;

pub use env::Fingerprint;
pub use rss::{peak_rss_bytes, reset_peak_rss};
