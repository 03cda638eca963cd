//! From parsed arguments to a command (binary -> **dispatch** -> each command): parses the
//! process arguments with `cli`'s grammar, resolves the global options, and hands each
//! command its parsed struct.

use crate::cli::{Cli, Command, DataCommand, RunArgs, SubmitArgs};
use crate::error::{CommandError, EXIT_OK};
use crate::globals::Globals;
use crate::paths::Root;
use clap::Parser;

// Long because: one `match` with an arm per command, each only handing parsed arguments to
// `commands`.
/// Parses the process arguments, runs the command, returns the exit code.
pub fn main() -> u8 {
    let cli = Cli::parse();
    let colour = crate::color::init(cli.global.color);
    init_tracing(cli.global.quiet, colour);
    // Default locations belong to the project of the manifest when the command has one, so a
    // command started from a subfolder or from elsewhere finds the same results.
    let root = match &cli.command {
        Command::Run(RunArgs { file: Some(f), .. })
        | Command::Submit(SubmitArgs { file: f, .. })
        | Command::Plan { file: f, .. }
        | Command::Bisect(crate::cli::BisectArgs { file: f, .. })
        | Command::Ab(crate::cli::AbArgs { save: Some(f), .. }) => Root::of_manifest(f),
        _ => Root::of_cwd(),
    };
    let g = Globals::resolve(
        cli.global.database.as_deref(),
        cli.global.stock_database,
        cli.global.quiet,
        &root,
    );
    let result: Result<u8, CommandError> = match cli.command {
        Command::Check { files, smoke } => Ok(crate::commands::check(&g, &files, smoke)),
        Command::Schema => {
            print!("{}", crate::manifest::manifest_schema_text());
            Ok(EXIT_OK)
        }
        Command::Plan {
            file,
            seed,
            smoke,
            show_commands,
            revs,
        } => crate::commands::plan(&g, &file, seed, smoke, show_commands, &revs).map(|s| {
            print!("{s}");
            EXIT_OK
        }),
        Command::Run(a) => crate::commands::run(&g, &a),
        Command::Ab(a) => crate::commands::ab(&g, &a, &root),
        Command::Bisect(a) => crate::commands::bisect(&g, &a, &root),
        Command::Runs { experiment, limit } => crate::commands::runs(&g, experiment.as_deref(), limit).map(|s| {
            print!("{s}");
            EXIT_OK
        }),
        Command::Report {
            run,
            results_dir,
            fail_on_regression,
            format,
        } => crate::commands::report(
            &g,
            &run,
            &root.results_dir(results_dir.as_deref()),
            fail_on_regression,
            format,
        ),
        Command::Compare {
            before,
            after,
            allow_different_data,
            allow_config_change,
            run_spread,
            results_dir,
            fail_on_regression,
            format,
        } => crate::commands::compare(
            &g,
            &before,
            &after,
            crate::report::CompareOptions {
                allow_different_data,
                allow_config_change,
                run_spread: run_spread / 100.0,
            },
            &root.results_dir(results_dir.as_deref()),
            fail_on_regression,
            format,
        ),
        Command::History(a) => crate::commands::history(&g, &a, &root.results_dir(a.results_dir.as_deref())),
        Command::Publish { out, include_smoke } => crate::commands::publish(
            &g,
            &crate::publish::PublishOptions {
                out: out.unwrap_or_else(|| root.results_dir(None).join("site")),
                include_smoke,
                templates_dir: crate::commands::templates_dir().map(std::path::Path::to_path_buf),
            },
        ),
        Command::Data(DataCommand::Synth(a)) => crate::commands::data_synth(&g, a.into()),
        Command::Data(DataCommand::Import(a)) => crate::commands::data_import(&g, a.into()),
        Command::Data(DataCommand::Ls) => crate::commands::data_ls(&g),
        Command::Data(DataCommand::Show { version }) => crate::commands::data_show(&g, &version),
        Command::Data(DataCommand::Rm { version, force }) => crate::commands::data_rm(&g, &version, force),
        Command::Show { run } => crate::commands::show(&g, &run).map(|s| {
            print!("{s}");
            EXIT_OK
        }),
        Command::Submit(a) => crate::commands::submit(&g, &a, &root.results_dir(a.results_dir.as_deref())),
        Command::Worker(a) => crate::commands::worker(&g, &a, &root.results_dir(a.results_dir.as_deref())),
        Command::Status { run } => crate::commands::status(&g, &run).map(|s| {
            print!("{s}");
            EXIT_OK
        }),
    };
    super::finish(result)
}

fn init_tracing(quiet: bool, colour: bool) {
    // sqlx warns about server notices and slow acquires while a database restarts; measured
    // reports outages itself, once, with what happens to the results.
    let default = if quiet { "error" } else { "warn,sqlx=error" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MEASURED_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_target(false)
        .try_init();
}
