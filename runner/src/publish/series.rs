//! An experiment's metrics over its runs (run digests -> **series** -> charts and tables).
//!
//! A series is one config on one machine and one branch: runs from different machines (their
//! fingerprint hash, like a testbed) or branches are never joined into one line. Along a series,
//! each point is tested against the previous one, as `measured history` does: Mann-Whitney U
//! (two-sided; runs are independent samples), then, when that is significant, the ratio of
//! medians with its bootstrap CI; a step is marked when the verdict is a change beyond the
//! noise band. Steps are not adjusted across the history (the method text says so and why).

use serde::Serialize;

use super::digest::RunDigest;
use crate::stats::{compare, mann_whitney_u, Direction, Verdict};

/// Where a run sits on the x axis of an experiment's charts, oldest first.
#[derive(Debug, Clone, Serialize)]
pub struct Tick {
    pub run: String,
    pub slug: String,
    /// Short commit, or the date when the commit is unknown.
    pub label: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Index into the chart's ticks.
    pub x: usize,
    pub run: String,
    pub slug: String,
    pub commit: String,
    pub n: usize,
    pub median: f64,
    pub ci: Option<(f64, f64)>,
    #[serde(skip)]
    pub samples: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub config: String,
    /// Index into the experiment's machines.
    pub env: usize,
    /// Index into the experiment's branches.
    pub branch: usize,
    pub points: Vec<Point>,
}

/// A marked change between two consecutive points of a series.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub series: usize,
    /// Index into the ticks of the later point.
    pub x: usize,
    pub from_run: String,
    pub to_run: String,
    pub from_commit: String,
    pub to_commit: String,
    /// later / earlier, ratio of medians.
    pub ratio: f64,
    pub ratio_ci: Option<(f64, f64)>,
    pub p: f64,
    /// `improved` or `regressed`.
    pub verdict: String,
}

/// One metric of an experiment over its runs.
#[derive(Debug, Clone, Serialize)]
pub struct MetricChart {
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    pub ticks: Vec<Tick>,
    pub series: Vec<Series>,
    pub steps: Vec<Step>,
    /// Consecutive-point pairs tested.
    pub tested: usize,
    pub alpha: f64,
    pub band: f64,
}

/// Short commit (`+dirty` when the tree had changes), or `unknown`.
pub fn short_commit(run: &RunDigest) -> String {
    match &run.commit {
        Some(c) => crate::report::commit_label(c, run.dirty),
        None => "unknown".to_owned(),
    }
}

/// Builds the chart of `metric` over `runs` (oldest first) of one experiment; `envs` and
/// `branches` index the machines and branches series are split by.
pub fn metric_chart(metric: &str, runs: &[&RunDigest], envs: &[String], branches: &[Option<String>]) -> MetricChart {
    let mut ticks = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    let mut unit = String::new();
    let mut direction = None;
    for run in runs {
        let Some(m) = run.metrics.iter().find(|m| m.name == metric) else {
            continue;
        };
        let x = ticks.len();
        ticks.push(Tick {
            run: run.id.clone(),
            slug: run.slug.clone(),
            label: if run.commit.is_some() {
                short_commit(run).chars().take(7).collect()
            } else {
                run.started_at.format("%m-%d %H:%M").to_string()
            },
        });
        unit.clone_from(&m.unit);
        direction.get_or_insert(m.direction);
        let env = envs.iter().position(|e| *e == run.environment).unwrap_or_default();
        let branch = branches.iter().position(|b| *b == run.branch).unwrap_or_default();
        for c in &m.configs {
            let Some(median) = c.median else { continue };
            let point = Point {
                x,
                run: run.id.clone(),
                slug: run.slug.clone(),
                commit: short_commit(run),
                n: c.n,
                median,
                ci: c.ci,
                samples: c.samples.clone(),
            };
            match series
                .iter_mut()
                .find(|s| s.config == c.config && s.env == env && s.branch == branch)
            {
                Some(s) => s.points.push(point),
                None => series.push(Series {
                    config: c.config.clone(),
                    env,
                    branch,
                    points: vec![point],
                }),
            }
        }
    }
    let direction = direction.unwrap_or_else(|| Direction::from_unit(&unit));
    let settings: crate::stats::CompareSettings = runs.last().map(|r| r.settings.into()).unwrap_or_default();
    let mut steps = Vec::new();
    let mut tested = 0;
    for (si, s) in series.iter().enumerate() {
        for pair in s.points.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            if before.samples.is_empty() || after.samples.is_empty() {
                continue;
            }
            tested += 1;
            // The verdict needs p < alpha: the bootstrap is only paid for where it can be met.
            if mann_whitney_u(&after.samples, &before.samples).1 >= settings.alpha {
                continue;
            }
            let c = compare(&before.samples, &after.samples, direction, &settings);
            let verdict = match c.verdict {
                Verdict::Faster => "improved",
                Verdict::Slower => "regressed",
                Verdict::NoChange | Verdict::Inconclusive => continue,
            };
            steps.push(Step {
                series: si,
                x: after.x,
                from_run: before.run.clone(),
                to_run: after.run.clone(),
                from_commit: before.commit.clone(),
                to_commit: after.commit.clone(),
                ratio: c.ratio,
                ratio_ci: c.ratio_ci,
                p: c.p_value,
                verdict: verdict.to_owned(),
            });
        }
    }
    MetricChart {
        metric: metric.to_owned(),
        unit,
        direction,
        ticks,
        series,
        steps,
        tested,
        alpha: settings.alpha,
        band: settings.band,
    }
}
