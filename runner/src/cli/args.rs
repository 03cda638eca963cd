//! The command line's grammar (**cli** -> commands): every command, flag and argument, with
//! its help text and value checks. `commands` receives these parsed structs as they are.

use super::ab::{AbArgs, BisectArgs};
use super::data::{ImportArgs, SynthArgs};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Default of `measured run --lease-seconds`: a running run whose heartbeat is older is shown
/// as abandoned.
pub const DEFAULT_LEASE_SECONDS: f64 = 60.0;
/// Default of `measured run --db-wait` and `measured worker --db-wait`.
pub const DEFAULT_DB_WAIT_SECONDS: f64 = 120.0;

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
    /// Is command A faster than command B? Runs two or more commands in interleaved blocks
    /// until decided, prints the verdict and a table, and stores the run like any other.
    #[command(
        after_help = "Examples:\n  measured ab 'gzip -1 -c big.txt' 'gzip -9 -c big.txt'\n  measured ab -N 'sleep 0.100' 'sleep 0.110' --warmup 3 --export-markdown ab.md\n  measured ab 'xz -T{t} -c big.txt' -L t 1,2 --prepare 'sync' --save bench/xz.toml\n\nThe verdict line gives the speedup of each command over the first with its interval and the\nblocks it took; `--save FILE` keeps the manifest, which `measured run FILE` runs again."
    )]
    Ab(AbArgs),
    /// Finds the first commit where the primary metric regressed: each step compares the middle
    /// revision with the good end in paired blocks until decided.
    #[command(
        after_help = "Examples:\n  measured bisect bench/parse.toml --good v1.2.0 --bad main --build 'cargo build --release'\n  measured bisect experiments/prefetch.toml --good HEAD~16 --bad HEAD\n\nEach step is a stored run with its report; `bisect-<good>-<bad>.md` under <results>/<experiment>/\nlinks them.\nExit 0 when the first bad commit is named, 1 when a step cannot decide (it says so and stops)."
    )]
    Bisect(BisectArgs),
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
    History(HistoryArgs),
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
        /// Compare even when a config ran with other parameters in the two runs (another input
        /// file, argument or size): the result then measures the change of config too.
        #[arg(long)]
        allow_config_change: bool,
        /// The run-to-run variation of a whole run's level (one standard deviation, in percent)
        /// to judge levels against where no earlier runs of the experiment on this machine
        /// measure it.
        #[arg(long, value_name = "PERCENT", default_value_t = 5.0, value_parser = run_spread)]
        run_spread: f64,
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
    Worker(WorkerArgs),
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
    Synth(SynthArgs),
    /// Import OHLCV CSV files (Yahoo-style, tushare-style, or mapped with --columns).
    Import(ImportArgs),
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
    #[arg(long, default_value_t = DEFAULT_LEASE_SECONDS, value_parser = seconds_between::<1, 86400>)]
    pub lease_seconds: f64,
    /// At the end of a run, how many seconds to wait for an unreachable results database
    /// before leaving the unstored trials in the journal (0 to 86400).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_DB_WAIT_SECONDS, value_parser = seconds_between::<0, 86400>)]
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

/// `measured history`'s arguments.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// The experiment (its `[experiment] name`).
    pub experiment: String,
    /// `<stage>.<metric>`, `<stage>.seconds` or `trial.seconds` (default: the primary metric
    /// of the newest run).
    #[arg(long)]
    pub metric: Option<String>,
    /// At most this many of the newest runs.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub limit: u32,
    /// Smoke runs (`--smoke`) are left out unless this is given.
    #[arg(long)]
    pub include_smoke: bool,
    /// Files go to `<dir>/<experiment>/history/` (default: results/ under the git root of the
    /// current directory, else the current directory).
    #[arg(long)]
    pub results_dir: Option<PathBuf>,
}

/// `measured worker`'s arguments.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// Serve this run (id, unique prefix, or `latest`).
    #[arg(long, required_unless_present = "any", conflicts_with = "any")]
    pub run: Option<String>,
    /// Serve every queued run, oldest first.
    #[arg(long)]
    pub any: bool,
    /// Lease length in seconds, 0.1 to 86400 (default: the one given to `measured submit`).
    #[arg(long, value_parser = lease_seconds)]
    pub lease_seconds: Option<f64>,
    /// Exit after this many seconds without a claimable unit, even while other workers hold
    /// units (0 to 2592000, 30 days).
    #[arg(long, value_parser = seconds_between::<0, 2_592_000>)]
    pub max_idle_seconds: Option<f64>,
    /// Where the worker keeps the journal of its finished trials
    /// (`<dir>/<experiment>/<run-id>.worker-<pid>.journal.jsonl`); journals found there are
    /// stored first (default: results/ under the git root of the current directory, else
    /// the current directory).
    #[arg(long)]
    pub results_dir: Option<PathBuf>,
    /// How many seconds to keep retrying to store a finished trial in an unreachable
    /// database before stopping with the trials kept in the journal (0 to 86400).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_DB_WAIT_SECONDS, value_parser = seconds_between::<0, 86400>)]
    pub db_wait: f64,
}

impl SubmitArgs {
    /// The Slurm job array to start, with `--slurm`.
    pub fn slurm_options(&self) -> Option<crate::queue::SlurmOptions> {
        self.slurm.then(|| crate::queue::SlurmOptions {
            workers: self.workers.unwrap_or(1),
            partition: self.partition.clone(),
            gres: self.gres.clone(),
            time: self.time.clone(),
            sbatch_args: self.sbatch_arg.clone(),
        })
    }
}

impl RevArgs {
    /// The words that give these options on a command line (for the reproduce line).
    pub fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        for r in &self.revs {
            w.extend(["--rev".to_owned(), r.clone()]);
        }
        if let Some(b) = &self.build {
            w.extend(["--build".to_owned(), b.clone()]);
        }
        w
    }
}

/// `--run-spread`: a percentage above 0 and at most 100.
fn run_spread(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{text}` is not a percentage (write e.g. 5 for ±5%)"))?;
    if v > 0.0 && v <= 100.0 {
        Ok(v)
    } else {
        Err(format!("`{text}`: a run-to-run variation is above 0% and at most 100%"))
    }
}
