//! Integration tests: the `measured` binary and library against fixtures and real databases.

mod claims;
mod common;
mod data;
mod docs;
mod durability;
mod experiments;
mod gitrev;
mod history;
mod import;
mod manifests;
mod paths;
mod plan;
mod queue;
mod report_json;
mod reports;
mod runs;
mod stored;
mod transfer;
mod typos;
