//! What a rerun needs besides the command line, and whether the run's code was committed
//! (run data -> `Reproduction` in `report.json` -> the Reproduce section and the dirty-tree
//! warning under the report's title).

use crate::market::DataSource;
use crate::report::model::{DatabaseKind, Reproduction, RunData};

impl Reproduction {
    pub fn of(run: &RunData) -> Self {
        let env = |k: &str| run.environment.get(k).map(String::as_str);
        let build_commit = env("build_commit")
            .filter(|c| !c.is_empty() && *c != "unknown")
            .map(str::to_owned);
        Reproduction {
            build_dirty: env("build_dirty") == Some("true"),
            build_commit,
            code_commit: env("git_commit").unwrap_or("unknown").to_owned(),
            code_dirty: env("git_dirty") == Some("true"),
            data: run
                .stock_data
                .as_ref()
                .map(|d| d.sources.iter().map(how_made).collect())
                .unwrap_or_default(),
            results_database: DatabaseKind::of(&run.results_database),
            stock_database: run.stock_database.as_deref().map(DatabaseKind::of),
        }
    }

    /// The experiment's repository or the binary's build had uncommitted changes: the report
    /// cannot be reproduced from commits alone.
    pub fn dirty(&self) -> bool {
        self.code_dirty || self.build_dirty
    }

    /// The warning shown under a dirty run's title; `None` for a clean one.
    pub fn dirty_warning(&self) -> Option<String> {
        let what = match (self.code_dirty, self.build_dirty) {
            (false, false) => return None,
            (true, false) => "the experiment's repository had uncommitted changes",
            (false, true) => "the measured binary was built from a tree with uncommitted changes",
            (true, true) => {
                "the experiment's repository had uncommitted changes, and the measured binary was built \
                 from a tree with uncommitted changes"
            }
        };
        Some(format!(
            "Dirty tree: {what} when this run started, so its commits alone do not reproduce it."
        ))
    }

    /// The Reproduce section's lines after the command.
    pub fn lines(&self) -> Vec<String> {
        let dirty = |d: bool| if d { " (uncommitted changes)" } else { "" };
        let build = match &self.build_commit {
            Some(c) => format!("Binary: measured built from commit `{c}`{}.", dirty(self.build_dirty)),
            None => "Binary: build commit not recorded.".to_owned(),
        };
        let code = format!(
            "Experiment code: commit `{}`{}.",
            self.code_commit,
            dirty(self.code_dirty)
        );
        let data = if self.data.is_empty() {
            "Data: no stock data recorded with the run.".to_owned()
        } else {
            let shown: Vec<String> = self
                .data
                .iter()
                .map(|d| {
                    if d.starts_with(SYNTH) {
                        format!("`{d}`")
                    } else {
                        d.clone()
                    }
                })
                .collect();
            format!("Data: {}.", shown.join("; "))
        };
        let databases = match self.stock_database {
            Some(s) if s != self.results_database => format!(
                "Databases: results in {}, stock data in {}.",
                self.results_database.as_str(),
                s.as_str()
            ),
            _ => format!("Database: {}.", self.results_database.as_str()),
        };
        vec![build, code, data, databases]
    }
}

/// The command that makes a synthetic market.
const SYNTH: &str = "measured data synth";

/// How one source of stock data is made again (plain text: `report.json` holds no Markdown).
fn how_made(s: &DataSource) -> String {
    match s {
        DataSource::Synth {
            symbols,
            days,
            start,
            seed,
            style,
            generator,
        } => {
            let command =
                format!("{SYNTH} --symbols {symbols} --days {days} --start {start} --seed {seed} --style {style}");
            if *generator == crate::market::GENERATOR_VERSION {
                command
            } else {
                // Another generator makes other bars from the same options.
                format!("{command} (with generator {generator}: a measured whose generator is that version)")
            }
        }
        DataSource::Import { file, sha256, .. } => {
            format!("{file} (sha256 {sha256}) imported with measured data import")
        }
        DataSource::Files { files, extends, .. } => {
            let list = files
                .iter()
                .map(|f| format!("{} (sha256 {})", f.file, f.sha256))
                .collect::<Vec<_>>()
                .join(", ");
            match extends {
                Some(parent) => format!("{list} imported with measured data import --into, onto {parent}"),
                None => format!("{list} imported with measured data import"),
            }
        }
        DataSource::Unknown { .. } => s.to_string(),
    }
}
