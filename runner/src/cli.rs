//! Command-line interface (clap derive). Parses arguments and calls `commands`; nothing else.

use crate::commands::{self, RunOptions};
use crate::error::{CommandError, EXIT_OK};
use crate::globals::Globals;
use crate::paths::Root;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "measured",
    version = crate::build_info::version(),
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
    /// Results database: `postgres://...` or a SQLite file (a path as given is relative to the
    /// current directory). Default: results/measured.sqlite under the git root of the manifest,
    /// else under the git root of the current directory, else under the current directory.
    #[arg(long, global = true, env = "DATABASE_URL", hide_env_values = true)]
    pub database: Option<String>,
    /// Stock database, when it is not the results database.
    #[arg(long, global = true, env = "STOCK_DATABASE_URL", hide_env_values = true)]
    pub stock_database: Option<String>,
    /// No progress bar or status lines.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Colour on stderr: `auto` only on a terminal and without NO_COLOR, `always`, `never`.
    #[arg(long, global = true, value_enum, default_value_t = clap::ColorChoice::Auto)]
    pub color: clap::ColorChoice,
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
    /// Print the JSON Schema of experiment manifests (for editor completion and checking).
    #[command(
        after_help = "Examples:\n  measured schema > measured.schema.json\n\nEditors that read JSON Schemas for TOML (Even Better TOML, taplo) use it through a first line\n`#:schema <path>` in a manifest (relative to the manifest), or a [[rule]] in .taplo.toml.\n`measured check` still has the last word: the schema describes shapes, not meaning."
    )]
    Schema,
    /// Show configs, stage order, and every trial in the order it would run.
    #[command(
        after_help = "Examples:\n  measured plan experiments/quickstart.toml --seed 42\n  measured plan experiments/batch-size.toml --show-commands\n  measured plan experiments/quickstart.toml --rev main --rev HEAD --show-commands"
    )]
    Plan {
        file: PathBuf,
        /// Seed for the trial order (default: [schedule] seed, else drawn at random).
        #[arg(long)]
        seed: Option<u64>,
        /// Apply the manifest's `[smoke]` overrides (small sizes, 2 repetitions, no warm-up).
        #[arg(long)]
        smoke: bool,
        /// Under each config, list the parameters that differ from the first config, its git
        /// revision and checkout, and the command each command stage would run (repetition 0,
        /// seed 0).
        #[arg(long)]
        show_commands: bool,
        #[command(flatten)]
        revs: RevArgs,
    },
    /// Run an experiment (or resume an interrupted run), store every trial, print a summary.
    #[command(
        after_help = "Examples:\n  measured run experiments/quickstart.toml\n  measured run experiments/prefetch.toml --seed 7 --fail-on-regression\n  measured run experiments/quickstart.toml --rev main --rev HEAD --build 'cargo build --release'\n  measured run --resume 20261122-101500-3fa2"
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
    #[command(
        after_help = "Examples:\n  measured report latest\n  measured report latest --format github > comment.md\n  measured report latest --format json | jq '.results'"
    )]
    Report {
        /// Run id, a unique prefix of one, or `latest`.
        run: String,
        /// Reports go to `<dir>/<experiment>/<run-id>/` (default: results/ under the git root of
        /// the current directory, else the current directory).
        #[arg(long)]
        results_dir: Option<PathBuf>,
        /// Exit 1 when the primary metric regressed or a guard failed.
        #[arg(long)]
        fail_on_regression: bool,
        /// Print the report in this form on stdout instead of the summary lines (the files are
        /// written either way).
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<crate::report::OutputFormat>,
    },
    /// A metric over every stored run of an experiment, oldest first, with significant steps
    /// between consecutive runs flagged (Markdown table on stdout, plus .md and .svg files).
    #[command(
        after_help = "Examples:\n  measured history quickstart\n  measured history normalize-parallel --metric features.seconds --limit 50"
    )]
    History {
        /// The experiment (its `[experiment] name`).
        experiment: String,
        /// `<stage>.<metric>`, `<stage>.seconds` or `trial.seconds` (default: the primary metric
        /// of the newest run).
        #[arg(long)]
        metric: Option<String>,
        /// At most this many of the newest runs.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
        /// Smoke runs (`--smoke`) are left out unless this is given.
        #[arg(long)]
        include_smoke: bool,
        /// Files go to `<dir>/<experiment>/history/` (default: results/ under the git root of the
        /// current directory, else the current directory).
        #[arg(long)]
        results_dir: Option<PathBuf>,
    },
    /// Every stored run as a static HTML site: an index of experiments, each metric over the
    /// commits with its steps marked, and each run's report. Opens from file://, needs no
    /// network; re-publishing rewrites only what changed.
    #[command(
        after_help = "Examples:\n  measured publish\n  measured publish --out site --database postgres://ci@db/bench"
    )]
    Publish {
        /// The site's folder: new, empty, or one `publish` wrote before (default: results/site
        /// under the git root of the current directory, else the current directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Smoke runs (`--smoke`) are left out unless this is given.
        #[arg(long)]
        include_smoke: bool,
    },
    /// Before/after: compare two stored runs of one experiment (e.g. two git commits).
    #[command(
        after_help = "Examples:\n  measured compare 20261120-091500-1a2b 20261122-101500-3fa2 --fail-on-regression\n  measured compare main-run pr-run --format github > comment.md && gh pr comment \"$PR\" --body-file comment.md"
    )]
    Compare {
        /// The run before the change.
        before: String,
        /// The run after the change.
        after: String,
        /// Compare even when the runs loaded different data.
        #[arg(long)]
        allow_different_data: bool,
        /// Output goes to `<dir>/<experiment>/compare-<before>-vs-<after>/compare.md` (default:
        /// results/ under the git root of the current directory, else the current directory).
        #[arg(long)]
        results_dir: Option<PathBuf>,
        /// Exit 1 when the after run is slower on the primary metric or a guard failed.
        #[arg(long)]
        fail_on_regression: bool,
        /// Print the comparison in this form on stdout instead of the summary lines (compare.md
        /// is written either way).
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<crate::report::OutputFormat>,
    },
    /// Fill the stock database: synthetic markets or imported OHLCV files.
    #[command(
        subcommand,
        after_help = "Examples:\n  measured data synth --symbols 500 --days 2500 --seed 7\n  measured data import prices/*.csv --dry-run"
    )]
    Data(DataCommand),
    /// Show one run's trials and stage timings.
    #[command(after_help = "Example:\n  measured show latest")]
    Show {
        /// Run id, a unique prefix of one, or `latest`.
        run: String,
    },
    /// Queue an experiment's trials in Postgres for `measured worker`s (optionally a Slurm array).
    #[command(
        after_help = "Examples:\n  measured submit experiments/quickstart.toml\n  measured submit experiments/prefetch.toml --slurm --workers 8 --partition gpu --gres gpu:1 --time 02:00:00\n  measured submit experiments/prefetch.toml --slurm --workers 8 --dry-run\n\nNeeds DATABASE_URL=postgres://...; Slurm tasks get it through the environment (--export=ALL)."
    )]
    Submit(SubmitArgs),
    /// Claim and run queued units of trials until none remain (on any machine reaching the database).
    #[command(
        after_help = "Examples:\n  measured worker --run 20261122-101500-3fa2\n  measured worker --any --max-idle-seconds 300"
    )]
    Worker {
        /// Serve this run (id, unique prefix, or `latest`).
        #[arg(long, required_unless_present = "any", conflicts_with = "any")]
        run: Option<String>,
        /// Serve every queued run, oldest first.
        #[arg(long)]
        any: bool,
        /// Lease length in seconds, 0.1 to 86400 (default: the one given to `measured submit`).
        #[arg(long, value_parser = lease_seconds)]
        lease_seconds: Option<f64>,
        /// Exit after this many seconds without a claimable unit, even while other workers hold
        /// units (0 to 2592000, 30 days).
        #[arg(long, value_parser = seconds_between::<0, 2_592_000>)]
        max_idle_seconds: Option<f64>,
        /// Where the worker keeps the journal of its finished trials
        /// (`<dir>/<experiment>/<run-id>.worker-<pid>.journal.jsonl`); journals found there are
        /// stored first (default: results/ under the git root of the current directory, else
        /// the current directory).
        #[arg(long)]
        results_dir: Option<PathBuf>,
        /// How many seconds to keep retrying to store a finished trial in an unreachable
        /// database before stopping with the trials kept in the journal (0 to 86400).
        #[arg(long, value_name = "SECONDS", default_value_t = commands::DEFAULT_DB_WAIT_SECONDS, value_parser = seconds_between::<0, 86400>)]
        db_wait: f64,
    },
    /// Queue state of a submitted run: units, worker leases, Slurm array state.
    #[command(after_help = "Example:\n  measured status latest")]
    Status {
        /// Run id, a unique prefix of one, or `latest`.
        run: String,
    },
}

#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// The manifest to queue.
    pub file: PathBuf,
    /// Seed for the trial order and stage seeds (default: [schedule] seed, else drawn and stored).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Reduced-size run with the manifest's `[smoke]` overrides.
    #[arg(long)]
    pub smoke: bool,
    /// Lease a worker holds on a unit, in seconds (0.1 to 86400); renewed every third of it
    /// while the worker lives.
    #[arg(long, default_value_t = crate::queue::DEFAULT_LEASE_SECONDS, value_parser = lease_seconds)]
    pub lease_seconds: f64,
    /// Start the workers as a Slurm job array (`sbatch --array`).
    #[arg(long, requires = "workers")]
    pub slurm: bool,
    /// Number of array tasks (one worker each).
    #[arg(long, requires = "slurm")]
    pub workers: Option<u32>,
    /// Slurm partition.
    #[arg(long, requires = "slurm")]
    pub partition: Option<String>,
    /// Generic resources per task, e.g. `gpu:1`.
    #[arg(long, requires = "slurm")]
    pub gres: Option<String>,
    /// Time limit per task, e.g. `02:00:00`.
    #[arg(long, requires = "slurm")]
    pub time: Option<String>,
    /// Further sbatch option (repeatable), e.g. `--sbatch-arg=--mem=8G`.
    #[arg(long, requires = "slurm", allow_hyphen_values = true)]
    pub sbatch_arg: Vec<String>,
    /// Print the batch script; queue nothing, submit nothing.
    #[arg(long, requires = "slurm")]
    pub dry_run: bool,
    /// The script and task logs go to `<dir>/<experiment>/<run-id>/` (default: results/ under
    /// the git root of the manifest, else of the current directory, else the current directory).
    #[arg(long)]
    pub results_dir: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum DataCommand {
    /// Generate a seeded, reproducible synthetic market into the stock database.
    Synth(crate::market::SynthArgs),
    /// Import OHLCV CSV files (Yahoo-style, tushare-style, or mapped with --columns).
    Import(crate::market::ImportArgs),
    /// List the dataset versions in the stock database, with the runs that read each.
    #[command(after_help = "Example:\n  measured data ls")]
    Ls,
    /// Show one dataset version: its origin, lineage, extent and the runs that read it.
    #[command(after_help = "Example:\n  measured data show synth-50x750-2021-01-04-s20240601-mixed@1")]
    Show {
        /// `dataset@number`, a dataset (its newest version) or an id.
        version: String,
    },
    /// Delete a dataset version and its bars; refused while a stored run read it.
    #[command(after_help = "Example:\n  measured data rm prices@1")]
    Rm {
        /// `dataset@number`, a dataset (its newest version) or an id.
        version: String,
        /// Delete it even though stored runs read it (their reports keep what they recorded;
        /// `run --data` and `--resume` can no longer read it).
        #[arg(long)]
        force: bool,
    },
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The manifest to run.
    #[arg(required_unless_present = "resume")]
    pub file: Option<PathBuf>,
    /// Finish the missing trials of an interrupted run (id, prefix or `latest`).
    #[arg(long, conflicts_with_all = ["file", "seed", "smoke", "revs", "build"])]
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
    /// Where reports are written (`<dir>/<experiment>/<run-id>/`), with the run's journal of
    /// finished trials beside them (`<dir>/<experiment>/<run-id>.journal.jsonl`). Default:
    /// results/ under the git root of the manifest (with --resume, of the stored manifest's
    /// folder when it is still there), else of the current directory, else the current directory.
    #[arg(long)]
    pub results_dir: Option<PathBuf>,
    /// The run beats a heartbeat into the database; `runs` and `show` call a running run
    /// abandoned once its heartbeat is older than this many seconds (1 to 86400).
    #[arg(long, default_value_t = commands::DEFAULT_LEASE_SECONDS, value_parser = seconds_between::<1, 86400>)]
    pub lease_seconds: f64,
    /// At the end of a run, how many seconds to wait for an unreachable results database
    /// before leaving the unstored trials in the journal (0 to 86400).
    #[arg(long, value_name = "SECONDS", default_value_t = commands::DEFAULT_DB_WAIT_SECONDS, value_parser = seconds_between::<0, 86400>)]
    pub db_wait: f64,
    /// Prepare the data the manifest declares ([data]) and check every load stage against the
    /// stock database, then exit: no trial runs and no run is stored (exit 1 when unmet).
    #[arg(long, conflicts_with = "resume")]
    pub preflight_only: bool,
    /// Read these dataset versions instead of the data the manifest declares (`dataset@number`,
    /// a dataset for its newest version, or an id; `measured data ls` lists them). Repeat it for
    /// versions of several datasets; a report's reproduce line names the versions its run read.
    #[arg(long, value_name = "VERSION", conflicts_with = "resume")]
    pub data: Vec<String>,
    #[command(flatten)]
    pub revs: RevArgs,
}

/// Git revisions of the manifest's repository as the variants.
#[derive(Args, Debug, Clone, Default)]
pub struct RevArgs {
    /// A git revision to compare (repeatable): a branch, tag, sha, `HEAD~3`, or `:worktree` (the
    /// working tree with its uncommitted changes). Each becomes a variant named after it
    /// (`HEAD~3` -> `HEAD-3`), replacing the manifest's variants; the first is the baseline.
    #[arg(long = "rev", value_name = "REV")]
    pub revs: Vec<String>,
    /// With --rev: a shell command that builds each revision, run once in its checkout (in the
    /// manifest's folder there) before any trial; not timed, output logged beside the checkout.
    #[arg(long, value_name = "CMD", requires = "revs")]
    pub build: Option<String>,
}

impl From<RevArgs> for commands::RevOptions {
    fn from(a: RevArgs) -> Self {
        commands::RevOptions {
            revs: a.revs,
            build: a.build,
        }
    }
}

/// A number of seconds within `[MIN, MAX]`.
fn seconds_between<const MIN: u32, const MAX: u32>(s: &str) -> Result<f64, String> {
    seconds_in(s, f64::from(MIN), f64::from(MAX))
}

/// A queue lease in seconds: 0.1 (a worker renews it every third, so shorter only spins) to a
/// day.
fn lease_seconds(s: &str) -> Result<f64, String> {
    seconds_in(s, 0.1, 86_400.0)
}

/// A number of seconds from `min` to `max`.
fn seconds_in(s: &str, min: f64, max: f64) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if v.is_finite() && (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!("must be between {min} and {max} seconds"))
    }
}

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
        | Command::Plan { file: f, .. } => Root::of_manifest(f),
        _ => Root::of_cwd(),
    };
    let g = Globals::resolve(
        cli.global.database.as_deref(),
        cli.global.stock_database,
        cli.global.quiet,
        &root,
    );
    let result: Result<u8, CommandError> = match cli.command {
        Command::Check { files, smoke } => Ok(commands::check(&g, &files, smoke)),
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
        } => commands::plan(&g, &file, seed, smoke, show_commands, &revs.into()).map(|s| {
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
                lease_seconds: a.lease_seconds,
                db_wait_seconds: a.db_wait,
                revs: a.revs.into(),
                preflight_only: a.preflight_only,
                data: a.data,
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
            format,
        } => commands::report(
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
            results_dir,
            fail_on_regression,
            format,
        } => commands::compare(
            &g,
            &before,
            &after,
            allow_different_data,
            &root.results_dir(results_dir.as_deref()),
            fail_on_regression,
            format,
        ),
        Command::History {
            experiment,
            metric,
            limit,
            include_smoke,
            results_dir,
        } => commands::history(
            &g,
            &commands::HistoryOptions {
                experiment,
                metric,
                limit,
                include_smoke,
                results_dir: root.results_dir(results_dir.as_deref()),
            },
        ),
        Command::Publish { out, include_smoke } => commands::publish(
            &g,
            &crate::publish::PublishOptions {
                out: out.unwrap_or_else(|| root.results_dir(None).join("site")),
                include_smoke,
                templates_dir: commands::templates_dir().map(std::path::Path::to_path_buf),
            },
        ),
        Command::Data(DataCommand::Synth(a)) => commands::data_synth(&g, a.into()),
        Command::Data(DataCommand::Import(a)) => commands::data_import(&g, a.into()),
        Command::Data(DataCommand::Ls) => commands::data_ls(&g),
        Command::Data(DataCommand::Show { version }) => commands::data_show(&g, &version),
        Command::Data(DataCommand::Rm { version, force }) => commands::data_rm(&g, &version, force),
        Command::Show { run } => commands::show(&g, &run).map(|s| {
            print!("{s}");
            EXIT_OK
        }),
        Command::Submit(a) => commands::submit(
            &g,
            &commands::SubmitOptions {
                file: a.file,
                seed: a.seed,
                smoke: a.smoke,
                lease_seconds: a.lease_seconds,
                slurm: a.slurm.then(|| crate::queue::SlurmOptions {
                    workers: a.workers.unwrap_or(1),
                    partition: a.partition,
                    gres: a.gres,
                    time: a.time,
                    sbatch_args: a.sbatch_arg,
                }),
                dry_run: a.dry_run,
                results_dir: root.results_dir(a.results_dir.as_deref()),
            },
        ),
        Command::Worker {
            run,
            any: _,
            lease_seconds,
            max_idle_seconds,
            results_dir,
            db_wait,
        } => commands::worker(
            &g,
            &commands::WorkerArgs {
                run,
                lease_seconds,
                max_idle_seconds,
                results_dir: root.results_dir(results_dir.as_deref()),
                db_wait_seconds: db_wait,
            },
        ),
        Command::Status { run } => commands::status(&g, &run).map(|s| {
            print!("{s}");
            EXIT_OK
        }),
    };
    commands::finish(result)
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
