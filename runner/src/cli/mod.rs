//! The command line (**cli** -> commands): clap's definitions of every command and flag, in
//! `args.rs` (and `data.rs` for `measured data`). Parsing ends here; `commands::main` hands
//! each parsed struct to its command as it is.

mod args;
mod data;

pub use args::{
    Cli, Command, DataCommand, GlobalArgs, HistoryArgs, RevArgs, RunArgs, SubmitArgs, WorkerArgs,
    DEFAULT_DB_WAIT_SECONDS, DEFAULT_LEASE_SECONDS,
};
pub use data::{ImportArgs, SynthArgs};
