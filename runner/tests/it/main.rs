//! Integration tests: the `measured` binary and library against fixtures and real databases.

mod common;
mod manifests;
mod plan;
mod queue;
mod runs;
mod transfer;
