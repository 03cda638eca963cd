//! An experiment's metrics over its runs (run digests -> **series** -> charts and tables).
//!
//! A series is one config on one machine (host, CPU, cores, OS, GPU) and one branch: runs from
//! different machines or branches are never joined into one line. Along a series, steps are
//! found as `measured history` finds them (`stats::runs`): each step's runs before against its
//! runs from it on, judged against the run-to-run variation they show, the most significant of
//! neighbouring candidates marked; a config that ran with other parameters breaks the series
//! there and is marked as a config change. Steps are not adjusted across the history (the method
//! text says so and gives the false-flag rate).

use serde::Serialize;

use super::digest::RunDigest;
use crate::stats::{steps, Direction, StepCall};

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
    /// The config's parameters in this run, as a hash: a change breaks the series.
    #[serde(skip)]
    pub params: String,
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
    /// The change into the later point, oriented so that above 1 is better, with its 95%
    /// interval from the run-to-run variation; `None` at a config change.
    pub speedup: Option<f64>,
    pub speedup_ci: Option<(f64, f64)>,
    pub p: Option<f64>,
    /// `improved`, `regressed` or `config changed`.
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
    /// Steps with runs enough around them to be tested.
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
        let env = envs.iter().position(|e| *e == run.machine_key).unwrap_or_default();
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
                params: run
                    .config_params
                    .iter()
                    .find(|(name, _)| *name == c.config)
                    .map(|(_, h)| h.clone())
                    .unwrap_or_default(),
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
    let (marked, tested) = series_steps(&series, direction, &settings);
    MetricChart {
        metric: metric.to_owned(),
        unit,
        direction,
        ticks,
        series,
        steps: marked,
        tested,
        alpha: settings.alpha,
        band: settings.band,
    }
}

/// The marked steps of every series (flagged steps and config changes), and how many steps had
/// runs enough around them to be tested.
fn series_steps(
    series: &[Series],
    direction: Direction,
    settings: &crate::stats::CompareSettings,
) -> (Vec<Step>, usize) {
    let oriented = |r: f64| match direction {
        Direction::LowerIsBetter => 1.0 / r,
        Direction::HigherIsBetter => r,
    };
    let mut marked = Vec::new();
    let mut tested = 0;
    for (si, s) in series.iter().enumerate() {
        let levels: Vec<f64> = s.points.iter().map(|p| p.median.max(f64::MIN_POSITIVE).ln()).collect();
        let breaks: Vec<bool> = s
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| i > 0 && p.params != s.points[i - 1].params)
            .collect();
        for (k, call) in steps(&levels, &breaks, settings.alpha, settings.band)
            .into_iter()
            .enumerate()
        {
            let (before, after) = (&s.points[k], &s.points[k + 1]);
            tested += usize::from(matches!(call, StepCall::Flagged(_) | StepCall::Steady(_)));
            let (speedup, speedup_ci, p, verdict) = match call {
                StepCall::Flagged(t) => {
                    let (a, b) = (oriented(t.ratio_ci.0), oriented(t.ratio_ci.1));
                    let sp = oriented(t.ratio);
                    (
                        Some(sp),
                        Some((a.min(b), a.max(b))),
                        Some(t.p),
                        if sp > 1.0 { "improved" } else { "regressed" },
                    )
                }
                StepCall::Break => (None, None, None, "config changed"),
                StepCall::Steady(_) | StepCall::Untested => continue,
            };
            marked.push(Step {
                series: si,
                x: after.x,
                from_run: before.run.clone(),
                to_run: after.run.clone(),
                from_commit: before.commit.clone(),
                to_commit: after.commit.clone(),
                speedup,
                speedup_ci,
                p,
                verdict: verdict.to_owned(),
            });
        }
    }
    (marked, tested)
}
