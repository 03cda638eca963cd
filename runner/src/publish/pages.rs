//! The site's two kinds of listing page: the index (every experiment with its latest run) and
//! one page per experiment (each metric over its runs, per config, machine and branch).

use super::*;
use crate::report::format;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// A run as the index and the experiment pages list it.
#[derive(Serialize)]
struct RunLine<'a> {
    id: &'a str,
    href: String,
    started: String,
    commit: String,
    branch: String,
    machine: &'a str,
    status: &'a str,
    badges: &'a [digest::Badge],
    claims: &'a [digest::ClaimBadge],
    noise: &'a [String],
    load_recorded: bool,
    data: &'a [(String, String)],
}

fn run_line<'a>(d: &'a RunDigest, root: &str) -> RunLine<'a> {
    RunLine {
        id: &d.id,
        href: format!("{root}runs/{}/index.html", d.slug),
        started: d.started_at.format("%Y-%m-%d %H:%M").to_string(),
        commit: series::short_commit(d),
        branch: d.branch.clone().unwrap_or_else(|| "unknown".to_owned()),
        machine: &d.machine,
        status: &d.status,
        badges: &d.badges,
        claims: &d.claims,
        noise: &d.noise,
        load_recorded: d.load_recorded,
        data: &d.data,
    }
}

pub(super) fn index_page(
    experiments: &BTreeMap<&str, Vec<&RunDigest>>,
    summary: &Published,
    pages: &Pages,
) -> Result<String, PublishError> {
    #[derive(Serialize)]
    struct Row<'a> {
        name: &'a str,
        description: &'a str,
        href: String,
        runs: usize,
        latest: RunLine<'a>,
        /// Runs newer than `latest` that measured nothing (stopped): listed, not shown as
        /// the experiment's verdicts.
        stopped_since: Vec<RunLine<'a>>,
    }
    let rows: Vec<Row> = experiments
        .iter()
        .filter_map(|(name, runs)| {
            // The newest run that measured something; a stopped run does not hide it.
            let at = runs
                .iter()
                .rposition(|r| !r.measured_nothing)
                .unwrap_or(runs.len().checked_sub(1)?);
            let latest = runs[at];
            Some(Row {
                name,
                description: &latest.description,
                href: format!("experiments/{}.html", slug(name)),
                runs: runs.len(),
                latest: run_line(latest, ""),
                stopped_since: runs[at + 1..].iter().map(|r| run_line(r, "")).collect(),
            })
        })
        .collect();
    Ok(pages.render(
        "site_index.html.j2",
        &minijinja::context! {
            root => "",
            title => "Experiments",
            experiments => rows,
            runs => summary.runs,
            smoke_left_out => summary.smoke_left_out,
            version => crate::build_info::version(),
        },
    )?)
}

/// A series as the legend and the data table show it.
#[derive(Serialize)]
struct SeriesLine {
    config: String,
    machine: String,
    branch: String,
    env: usize,
    branch_index: usize,
    colour: String,
    points: usize,
}

#[derive(Serialize)]
struct StepLine {
    series: String,
    verdict: String,
    ratio: String,
    ci: String,
    p: String,
    from: String,
    to: String,
    to_href: String,
}

#[derive(Serialize)]
struct ChartView {
    metric: String,
    unit: String,
    better: &'static str,
    svg: minijinja::Value,
    caption: String,
    series: Vec<SeriesLine>,
    steps: Vec<StepLine>,
    /// Data table: one row per point.
    rows: Vec<Vec<String>>,
}

// Long because: it builds one page's template context (series, filters, charts) in the order the
// page shows them.
pub(super) fn experiment_page(name: &str, all: &[&RunDigest], pages: &Pages) -> Result<String, PublishError> {
    // A run that measured nothing (stopped) is listed, but has no point in any chart: it would
    // be a gap, or a false step against the runs around it.
    let measured: Vec<&RunDigest> = all.iter().copied().filter(|r| !r.measured_nothing).collect();
    let runs = measured.as_slice();
    let left_out = all.len() - runs.len();
    let mut envs: Vec<String> = Vec::new();
    let mut machines: Vec<String> = Vec::new();
    let mut branches: Vec<Option<String>> = Vec::new();
    for r in runs {
        if !envs.contains(&r.machine_key) {
            envs.push(r.machine_key.clone());
            machines.push(r.machine.clone());
        }
        if !branches.contains(&r.branch) {
            branches.push(r.branch.clone());
        }
    }
    // Metrics in the order the latest run lists them, then any only older runs had.
    let mut metrics: Vec<&str> = Vec::new();
    for r in runs.iter().rev() {
        for m in &r.metrics {
            if !metrics.contains(&m.name.as_str()) {
                metrics.push(&m.name);
            }
        }
    }
    let charts: Vec<MetricChart> = metrics
        .par_iter()
        .map(|m| series::metric_chart(m, runs, &envs, &branches))
        .collect();
    let branch_name = |i: usize| branches[i].clone().unwrap_or_else(|| "unknown branch".to_owned());
    let env_label = |i: usize| {
        format!(
            "{} ({})",
            machines[i],
            crate::digest::hex_sha256(envs[i].as_bytes())
                .chars()
                .take(8)
                .collect::<String>()
        )
    };
    let views: Vec<ChartView> = charts
        .iter()
        .map(|c| {
            let label = |si: usize| {
                let s = &c.series[si];
                format!("{} · {} · {}", s.config, machines[s.env], branch_name(s.branch))
            };
            let svg = chart::metric_svg(
                c,
                &format!("{} over {} runs of {name}", c.metric, c.ticks.len()),
                &|slug| format!("../runs/{slug}/index.html"),
            )
            .map_err(|message| PublishError::Chart {
                experiment: name.to_owned(),
                metric: c.metric.clone(),
                message,
            })?;
            let caption = format!(
                "{} over {} runs: {} series (one per config, machine and branch), median with its 95% CI; {} marked, {} steps tested.",
                c.metric,
                c.ticks.len(),
                c.series.len(),
                crate::report::format::plural(c.steps.len(), "step"),
                c.tested
            );
            Ok(ChartView {
                metric: c.metric.clone(),
                unit: c.unit.clone(),
                better: match c.direction {
                    crate::stats::Direction::LowerIsBetter => "lower is better",
                    crate::stats::Direction::HigherIsBetter => "higher is better",
                },
                svg: minijinja::Value::from_safe_string(svg),
                caption,
                series: c
                    .series
                    .iter()
                    .enumerate()
                    .map(|(i, s)| SeriesLine {
                        config: s.config.clone(),
                        machine: env_label(s.env),
                        branch: branch_name(s.branch),
                        env: s.env,
                        branch_index: s.branch,
                        colour: crate::report::palette_color(i),
                        points: s.points.len(),
                    })
                    .collect(),
                steps: c
                    .steps
                    .iter()
                    .map(|st| StepLine {
                        series: label(st.series),
                        verdict: st.verdict.clone(),
                        ratio: st.speedup.map_or_else(|| "—".to_owned(), format::factor),
                        ci: format::factor_interval(st.speedup_ci),
                        p: st.p.map_or_else(|| "—".to_owned(), format::p_value),
                        from: st.from_commit.clone(),
                        to: st.to_commit.clone(),
                        to_href: c
                            .ticks
                            .get(st.x)
                            .map_or(String::new(), |t| format!("../runs/{}/index.html", t.slug)),
                    })
                    .collect(),
                rows: c
                    .series
                    .iter()
                    .enumerate()
                    .flat_map(|(si, s)| {
                        let l = label(si);
                        s.points.iter().map(move |p| {
                            vec![
                                l.clone(),
                                p.run.clone(),
                                p.commit.clone(),
                                p.n.to_string(),
                                format::value(p.median, &c.unit),
                                format::value_interval(p.ci, &c.unit),
                            ]
                        })
                    })
                    .collect(),
            })
        })
        .collect::<Result<_, PublishError>>()?;
    // Filters: one radio group per dimension; the CSS that hides the other series names only
    // indices, never a recorded name.
    let mut filter_css = String::new();
    for i in 0..envs.len() {
        filter_css.push_str(&format!(
            "body:has(#env-e{i}:checked) [data-env]:not([data-env=\"e{i}\"]) {{ display: none; }}\n"
        ));
    }
    for i in 0..branches.len() {
        filter_css.push_str(&format!(
            "body:has(#branch-b{i}:checked) [data-branch]:not([data-branch=\"b{i}\"]) {{ display: none; }}\n"
        ));
    }
    let settings = runs.last().map(|r| r.settings);
    let mut method = settings.map_or(String::new(), |s| {
        format!(
            "Each point is a run's median over its measured trials, with a 95% percentile-bootstrap CI ({} resamples). \
             Along a series, each step compares the runs before it with the runs from it on (up to {} each, never \
             across a changed config): a two-sample t-test on the logs of the runs' medians, whose variance is the \
             run-to-run variation those runs show. A step is marked when p < {} and the 95% interval of the change \
             lies outside the ±{}% noise band, the most significant of neighbouring candidates. Steps are tested one \
             by one, not adjusted across the history: under identical code each is marked with probability at most \
             {}. A config that ran with other parameters is marked as a config change, not as a step. Runs from \
             different machines or branches are never joined into one line; speedups above 1 are better.",
            format::thousands(s.resamples),
            crate::stats::STEP_WINDOW,
            s.alpha,
            format::trimmed(s.band * 100.0),
            s.alpha
        )
    });
    if left_out > 0 {
        method.push_str(&format!(
            " {} that stopped or failed every trial {} listed below but left out of the charts and steps.",
            format::plural(left_out, "run"),
            if left_out == 1 { "is" } else { "are" }
        ));
    }
    let run_lines: Vec<RunLine> = all.iter().rev().map(|d| run_line(d, "../")).collect();
    Ok(pages.render(
        "site_experiment.html.j2",
        &minijinja::context! {
            root => "../",
            title => name,
            name => name,
            description => all.last().map(|r| r.description.as_str()).unwrap_or_default(),
            envs => (0..envs.len()).map(env_label).collect::<Vec<_>>(),
            branches => (0..branches.len()).map(branch_name).collect::<Vec<_>>(),
            filter_css => minijinja::Value::from_safe_string(filter_css),
            charts => views,
            method => method,
            runs => run_lines,
            version => crate::build_info::version(),
        },
    )?)
}
