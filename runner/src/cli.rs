//! Command-line interface (clap derive). Parses arguments and calls `commands`; nothing else.

use crate::commands::{self, Globals, RunOptions};
use crate::error::{CommandError, EXIT_OK};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "measured",
    version,
    about = "Turns performance claims into measurements: A/B experiments as TOML files, run with warm-up and interleaved repetitions, stored, and reported with confidence intervals.",
    after_help = "Examples:\n  measured run experiments/quickstart.toml\n  measured check experiments/*.toml\n  measured runs"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Debug)]
pub struct GlobalArgs {
    /// Results database: `postgres://...` or a SQLite file.
    #[arg(long, global = true, env = "DATABASE_URL", hide_env_values = true, default_value = crate::store::DEFAULT_SQLITE_PATH)]
    pub database: String,
    /// Stock database, when it is not the results database.
    #[arg(long, global = true, env = "STOCK_DATABASE_URL", hide_env_values = true)]
    pub stock_database: Option<String>,
    /// No progress bar or status lines.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Validate manifests; exit 0 when all are valid, 2 otherwise.
    #[command(after_help = "Example:\n  measured check experiments/*.toml")]
    Check {
        /// Manifest files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Also validate with the `[smoke]` overrides applied.
        #[arg(long)]
        smoke: bool,
    },
    /// Show configs, stage order, and every trial in the order it would run.
    #[command(after_help = "Example:\n  measured plan experiments/quickstart.toml --seed 42")]
    Plan {
        file: PathBuf,
        /// Seed for the trial order (default: [schedule] seed, else drawn at random).
        #[arg(long)]
        seed: Option<u64>,
        /// Apply the manifest's `[smoke]` overrides (small sizes, 2 repetitions, no warm-up).
        #[arg(long)]
        smoke: bool,
    },
    /// Run an experiment (or resume an interrupted run), store every trial, print a summary.
    #[command(
        after_help = "Examples:\n  measured run experiments/quickstart.toml\n  measured run experiments/prefetch.toml --seed 7 --fail-on-regression\n  measured run --resume 20261122-101500-3fa2"
    )]
    Run(RunArgs),
    /// List stored runs, newest first.
    #[command(after_help = "Example:\n  measured runs --experiment quickstart")]
    Runs {
        /// Only runs of this experiment.
        #[arg(long)]
        experiment: Option<String>,
        /// At most this many runs.
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// Render a stored run's report (report.md, report.json, SVG charts).
    #[command(after_help = "Example:\n  measured report latest")]
    Report {
        /// Run id, a unique prefix of one, or `latest`.
        run: String,
        /// Reports go to `<dir>/<experiment>/<run-id>/`.
        #[arg(long, default_value = "results")]
        results_dir: PathBuf,
        /// Exit 1 when the primary metric regressed or a guard failed.
        #[arg(long)]
        fail_on_regression: bool,
    },
    /// Before/after: compare two stored runs of one experiment (e.g. two git commits).
    #[command(
        after_help = "Example:\n  measured compare 20261120-091500-1a2b 20261122-101500-3fa2 --fail-on-regression"
    )]
    Compare {
        /// The run before the change.
        before: String,
        /// The run after the change.
        after: String,
        /// Compare even when the runs loaded different data.
        #[arg(long)]
        allow_different_data: bool,
        /// Output goes to `<dir>/<experiment>/compare-<before>-vs-<after>/compare.md`.
        #[arg(long, default_value = "results")]
        results_dir: PathBuf,
        /// Exit 1 when the after run is slower on the primary metric or a guard failed.
        #[arg(long)]
        fail_on_regression: bool,
    },
    /// Fill the stock database: synthetic markets or imported OHLCV files.
    #[command(subcommand)]
    Data(DataCommand),
    /// Show one run's trials and stage timings.
    #[command(after_help = "Example:\n  measured show latest")]
    Show {
        /// Run id, a unique prefix of one, or `latest`.
        run: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum DataCommand {
    /// Generate a seeded, reproducible synthetic market into the stock database.
    Synth(crate::market::SynthArgs),
    /// Import OHLCV CSV files (Yahoo-style, tushare-style, or mapped with --columns).
    Import(crate::market::ImportArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The manifest to run.
    #[arg(required_unless_present = "resume")]
    pub file: Option<PathBuf>,
    /// Finish the missing trials of an interrupted run (id, prefix or `latest`).
    #[arg(long, conflicts_with_all = ["file", "seed", "smoke"])]
    pub resume: Option<String>,
    /// Seed for the trial order and stage seeds (default: [schedule] seed, else drawn and stored).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Reduced-size run with the manifest's `[smoke]` overrides (2 repetitions, no warm-up).
    #[arg(long)]
    pub smoke: bool,
    /// Also write every run event as a JSON line to this file.
    #[arg(long)]
    pub json_events: Option<PathBuf>,
    /// Exit 1 when the primary metric regressed or a guard failed.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Do not render the report at the end.
    #[arg(long)]
    pub no_report: bool,
    /// Where reports are written (`<dir>/<experiment>/<run-id>/`).
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
}

/// Parses the process arguments, runs the command, returns the exit code.
pub fn main() -> u8 {
    let cli = Cli::parse();
    init_tracing(cli.global.quiet);
    let g = Globals {
        database: cli.global.database,
        stock_database: cli.global.stock_database,
        quiet: cli.global.quiet,
    };
    let result: Result<u8, CommandError> = match cli.command {
        Command::Check { files, smoke } => Ok(commands::check(&files, smoke)),
        Command::Plan { file, seed, smoke } => commands::plan(&file, seed, smoke).map(|s| {
            print!("{s}");
            EXIT_OK
        }),
        Command::Run(a) => commands::run(
            &g,
            &RunOptions {
                file: a.file,
                resume: a.resume,
                seed: a.seed,
                smoke: a.smoke,
                json_events: a.json_events,
                report: !a.no_report,
                fail_on_regression: a.fail_on_regression,
                results_dir: a.results_dir,
            },
        ),
        Command::Runs { experiment, limit } => commands::runs(&g, experiment.as_deref(), limit).map(|s| {
            print!("{s}");
            EXIT_OK
        }),
        Command::Report {
            run,
            results_dir,
            fail_on_regression,
        } => commands::report(&g, &run, &results_dir, fail_on_regression),
        Command::Compare {
            before,
            after,
            allow_different_data,
            results_dir,
            fail_on_regression,
        } => commands::compare(
            &g,
            &before,
            &after,
            allow_different_data,
            &results_dir,
            fail_on_regression,
        ),
        Command::Data(DataCommand::Synth(a)) => commands::data_synth(&g, a.into()),
        Command::Data(DataCommand::Import(a)) => commands::data_import(&g, a.into()),
        Command::Show { run } => commands::show(&g, &run).map(|s| {
            print!("{s}");
            EXIT_OK
        }),
    };
    commands::finish(result)
}

fn init_tracing(quiet: bool) {
    let default = if quiet { "error" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MEASURED_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
