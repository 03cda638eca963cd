//! Integration tests: the `measured` binary and library against fixtures and real databases.

mod ab;
mod architecture;
mod bisect;
mod busy;
mod claims;
mod color;
mod common;
#[cfg(feature = "cuda")]
mod cuda_calls;
mod data;
mod docs;
mod durability;
mod experiments;
mod formats;
mod fuzz;
mod gitrev;
mod history;
mod import;
mod manifests;
mod paths;
mod plan;
mod processes;
mod publish;
mod queue;
mod report_json;
mod reports;
mod runs;
mod sequential;
mod stage_notes;
mod stored;
mod terminal;
mod transfer;
mod trust;
mod typos;
mod versions;
