//! Integration tests: the `measured` binary and library against fixtures and real databases.

mod common;
mod docs;
mod durability;
mod experiments;
mod formats;
mod import;
mod manifests;
mod paths;
mod plan;
mod queue;
mod report_json;
mod reports;
mod runs;
mod transfer;
mod typos;
