//! What an `ab` run found (ab -> **results** -> console, exports): each config's times from
//! its stored trials, each comparison from the run's report, and the console's text of them.

use crate::cli::AbArgs;
use crate::manifest::Experiment;
use crate::stats::Summary;
use std::fmt::Write as _;
use std::path::PathBuf;

use super::manifest::STAGE;
use crate::commands::run::Concluded;

/// One config's times, from its measured trials that succeeded.
pub(super) struct Row {
    pub config: String,
    /// The command as given (its `{VAR}`s unfilled).
    pub command: String,
    /// The sweep point's values, by variable.
    pub parameters: Vec<(String, String)>,
    pub times: Vec<f64>,
    pub summary: Summary,
}

/// What an `ab` run found: a row per config and a line per comparison.
pub(super) struct Results {
    pub rows: Vec<Row>,
    /// `(config, against, comparison)` from the report.
    pub comparisons: Vec<(String, String, crate::stats::Comparison)>,
    /// Why a sequential run stopped where it did.
    pub stop: Option<String>,
    pub run_id: Option<String>,
    pub report: Option<PathBuf>,
}

impl Results {
    pub(super) fn of(a: &AbArgs, exp: &Experiment, names: &[String], done: &Concluded) -> Results {
        let rows = exp
            .configs
            .iter()
            .map(|c| {
                let times: Vec<f64> = done
                    .stored
                    .iter()
                    .filter(|t| t.config == c.name && t.ok && !t.warmup)
                    .filter_map(|t| t.stages.iter().find(|s| s.name == STAGE))
                    .map(|s| s.seconds)
                    .collect();
                let command = names
                    .iter()
                    .position(|n| *n == c.variant)
                    .map_or_else(String::new, |i| a.commands[i].clone());
                let parameters = c
                    .sweep_point
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.rsplit('.').next().unwrap_or(k).to_owned(),
                            v.trim_matches('"').to_owned(),
                        )
                    })
                    .collect();
                Row {
                    config: c.name.clone(),
                    command,
                    parameters,
                    summary: Summary::of(&times),
                    times,
                }
            })
            .collect();
        let report = done.report.as_ref();
        Results {
            rows,
            comparisons: report.map_or_else(Vec::new, |w| {
                w.report
                    .comparisons
                    .iter()
                    .map(|c| (c.config.clone(), c.against.clone(), c.comparison.clone()))
                    .collect()
            }),
            stop: report.and_then(|w| w.report.method.sequential.as_ref().map(|s| s.stop_sentence())),
            run_id: done.run_id.clone(),
            report: report.map(|w| w.paths.markdown.clone()),
        }
    }

    /// The table, then one verdict line per comparison, then where the run and report are.
    pub(super) fn text(&self) -> String {
        let mut out = String::new();
        let width = self
            .rows
            .iter()
            .map(|r| r.config.chars().count())
            .max()
            .unwrap_or(6)
            .max(7);
        let _ = writeln!(
            out,
            "{:<width$}  {:>24}  {:>11}  {:>25}  {:>5}  command",
            "config", "mean ± sd", "median", "min … max", "runs"
        );
        for r in &self.rows {
            let s = &r.summary;
            let unit = Unit::of(s.mean);
            let _ = writeln!(
                out,
                "{:<width$}  {:>24}  {:>11}  {:>25}  {:>5}  {}",
                r.config,
                format!("{} ± {}", unit.show(s.mean), unit.show(s.stddev)),
                unit.show(s.median),
                format!("{} … {}", unit.show(s.min), unit.show(s.max)),
                s.n,
                crate::printable::printable(&r.command)
            );
        }
        out.push('\n');
        for (config, against, c) in &self.comparisons {
            let _ = writeln!(out, "{}", verdict_line(config, against, c));
        }
        if let Some(stop) = &self.stop {
            let _ = writeln!(out, "{stop}");
        }
        if let (Some(id), Some(report)) = (&self.run_id, &self.report) {
            let _ = writeln!(out, "run {id}; report: {}", report.display());
        }
        out
    }
}

/// `b vs a: slower, speedup 0.909x (95% CI 0.908x-0.910x), 15 blocks`.
pub(super) fn verdict_line(config: &str, against: &str, c: &crate::stats::Comparison) -> String {
    format!("{config} vs {against}: {}", crate::commands::evidence(c))
}

/// A unit of time chosen for one row, so that its figures read alike.
#[derive(Clone, Copy)]
pub(super) struct Unit {
    pub name: &'static str,
    pub per_second: f64,
}

impl Unit {
    pub(super) fn of(seconds: f64) -> Unit {
        let (name, per_second) = match seconds.abs() {
            s if s >= 1.0 || !s.is_finite() => ("s", 1.0),
            s if s >= 1e-3 => ("ms", 1e3),
            _ => ("µs", 1e6),
        };
        Unit { name, per_second }
    }

    /// `100.623 ms`; `-` for no value.
    pub(super) fn show(self, seconds: f64) -> String {
        if seconds.is_finite() {
            format!("{:.3} {}", seconds * self.per_second, self.name)
        } else {
            "-".to_owned()
        }
    }
}
