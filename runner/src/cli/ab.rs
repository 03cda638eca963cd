//! The grammar of `measured ab` and `measured bisect` (**cli** -> commands): hyperfine's
//! everyday options for the first, the two ends of a regression for the second.

use clap::{ArgAction, Args};
use std::path::PathBuf;

/// `measured ab`'s arguments.
#[derive(Args, Debug, Clone)]
pub struct AbArgs {
    /// The commands, one argument each (quote them). The first is the baseline the others are
    /// compared with; a single command is measured alone.
    #[arg(required = true, value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// A name for each command, in order (give it once per command; default: made from the
    /// command's words, e.g. `gzip -9 big.txt` -> `gzip-9-big-txt`).
    #[arg(short = 'n', long = "command-name", value_name = "NAME")]
    pub names: Vec<String>,
    /// Runs of each command before the measured ones; stored, not counted.
    #[arg(short = 'w', long, value_name = "NUM", default_value_t = 1)]
    pub warmup: u32,
    /// Blocks run before the first look at the comparison (a block runs every command once,
    /// in shuffled order).
    #[arg(
        short = 'm',
        long = "min",
        visible_alias = "min-runs",
        value_name = "NUM",
        default_value_t = 10
    )]
    pub min: u32,
    /// Blocks at most: blocks are added until every comparison is decided, up to this many.
    #[arg(
        short = 'M',
        long = "max",
        visible_alias = "max-runs",
        value_name = "NUM",
        default_value_t = 200
    )]
    pub max: u32,
    /// Exactly this many blocks, without looking in between (no sequential stopping).
    #[arg(short = 'r', long, value_name = "NUM", conflicts_with_all = ["min", "max", "max_time"])]
    pub runs: Option<u32>,
    /// No block starts that would pass this much time in measured blocks (`90s`, `5m`; default
    /// 2m).
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// A command run before every run of a command, not timed (for example to clear a cache):
    /// once for all commands, or once per command, in order.
    #[arg(short = 'p', long, value_name = "CMD")]
    pub prepare: Vec<String>,
    /// The shell that runs each command: `sh` (the default), another shell, or a shell with
    /// its options (`"bash --norc"`); `none` runs the command without a shell.
    #[arg(short = 'S', long, value_name = "SHELL", default_value = "sh")]
    pub shell: String,
    /// No shell: each command is split into words as a shell would split them, without any
    /// expansion, and started directly (as `--shell none`).
    #[arg(short = 'N', conflicts_with = "shell")]
    pub no_shell: bool,
    /// `{VAR}` in the commands takes each of the comma-separated VALUES in turn, every command
    /// at every value (`-L threads 1,2,4`); repeat it for more variables (every combination).
    #[arg(
        short = 'L',
        long = "parameter-list",
        num_args = 2,
        value_names = ["VAR", "VALUES"],
        action = ArgAction::Append
    )]
    pub parameter_list: Vec<String>,
    /// Also write the results as a Markdown table to this file.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write the results as JSON to this file (hyperfine's `results` layout, with the
    /// comparisons added).
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write the manifest these options make to FILE, and run it from there: `measured check
    /// FILE` accepts it and `measured run FILE` runs the same comparison again (without it the
    /// manifest goes beside the reports, as `<results>/<name>/<name>-<hash>.toml`).
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// The experiment's name: runs, reports and `measured history` file it under this name.
    #[arg(long, value_name = "NAME", default_value = "ab")]
    pub name: String,
    /// Seed for the order of each block (default: drawn and stored).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Reports go to `<dir>/<name>/<run-id>/` (default: results/ under the git root of the
    /// current directory, else the current directory).
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<PathBuf>,
}

impl AbArgs {
    /// `--parameter-list` as (variable, values) pairs, in order.
    pub fn parameters(&self) -> Vec<(&str, &str)> {
        self.parameter_list
            .chunks(2)
            .filter_map(|p| match p {
                [name, values] => Some((name.as_str(), values.as_str())),
                _ => None,
            })
            .collect()
    }

    /// The shell that runs the commands, as given (`bash --norc`); `None` without one.
    pub fn shell(&self) -> Option<&str> {
        (!self.no_shell && self.shell != "none").then_some(self.shell.as_str())
    }
}

/// `measured bisect`'s arguments.
#[derive(Args, Debug, Clone)]
pub struct BisectArgs {
    /// The manifest whose primary metric regressed; its variants are replaced by the two
    /// revisions each step compares.
    pub file: PathBuf,
    /// A revision where the metric was good (an ancestor of `--bad`).
    #[arg(long, value_name = "REV")]
    pub good: String,
    /// A later revision where it is worse.
    #[arg(long, value_name = "REV")]
    pub bad: String,
    /// A shell command that builds each revision in its checkout (in the manifest's folder
    /// there), once per revision (default: the build the manifest's variants share).
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,
    /// Seed of every step's trial order (default: drawn per step and stored).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Reports go to `<dir>/<experiment>/` (default: results/ under the git root of the
    /// manifest, else of the current directory, else the current directory).
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<PathBuf>,
}
