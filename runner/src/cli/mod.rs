//! The command line (**cli** -> commands): clap's definitions of every command and flag, in
//! `args.rs` (and `data.rs` for `measured data`, `ab.rs` for `measured ab` and `measured bisect`). Parsing ends here; `commands::main` hands
//! each parsed struct to its command as it is.

mod ab;
mod args;
mod data;

pub use ab::{AbArgs, BisectArgs};
pub use args::{
    Cli, Command, DataCommand, GlobalArgs, HistoryArgs, RevArgs, RunArgs, SubmitArgs, WorkerArgs,
    DEFAULT_DB_WAIT_SECONDS, DEFAULT_LEASE_SECONDS,
};
pub use data::{ImportArgs, SynthArgs};
