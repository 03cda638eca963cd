//! The Markdown view of the Scaling section (typed `Scaling` -> the strings `report.md.j2`
//! prints): the fit sentences that state n, the CI and that a fit is a model, and table cells.

use serde::Serialize;

use crate::report::format;
use crate::report::model::{Interval, Scaling, SizeGroup, ThreadGroup};

/// The Markdown view of the Scaling section: every figure formatted.
#[derive(Debug, Clone, Serialize)]
pub struct ScalingView {
    pub metric: String,
    /// Why the metric is not the primary one; empty when it is.
    pub metric_reason: String,
    pub threads: Vec<AxisView>,
    pub sizes: Vec<AxisView>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AxisView {
    pub parameter: String,
    pub chart: String,
    pub groups: Vec<GroupView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupView {
    pub label: String,
    /// The sentence stating the fit, its n and CI, and what it is.
    pub fit: String,
    /// Table cells, in the template's column order.
    pub rows: Vec<Vec<String>>,
}

const DASH: &str = "—";

fn number(v: Option<f64>) -> String {
    v.map_or_else(|| DASH.to_owned(), |v| format::sig(v, 3))
}

fn interval(ci: Option<Interval>) -> String {
    ci.map_or_else(
        || DASH.to_owned(),
        |(lo, hi)| format!("{}–{}", format::sig(lo, 3), format::sig(hi, 3)),
    )
}

fn ci_clause(ci: Option<Interval>) -> String {
    match ci {
        Some(_) => format!("95% CI {}", interval(ci)),
        None => "no CI: a point has fewer than 2 trials or the refits failed".to_owned(),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn thread_fit(g: &ThreadGroup) -> String {
    let reference = match (&g.reference, g.reference_threads) {
        (Some(name), Some(1)) => format!("Speedup S(p) = T(1)/T(p) against {name}; efficiency E(p) = S(p)/p."),
        (Some(name), Some(p0)) => format!(
            "Speedup S(p) = T({p0})/T(p) against {name} ({p0} thread{}, the smallest count: no 1-thread config); efficiency E(p) = S(p)·{p0}/p.",
            plural(p0)
        ),
        _ => "No config of this group has samples.".to_owned(),
    };
    let Some(f) = g.serial_fraction else {
        return format!(
            "{reference} No serial fraction: Amdahl's model could not be fitted to the medians at {} thread counts.",
            g.n_points
        );
    };
    let mut s = format!(
        "{reference} Serial fraction f = {} ({}): a model fit, not a measurement, of Amdahl's T(p) = T1·(f + (1 − f)/p) by weighted least squares to the medians at n = {} thread counts; the CI is a percentile bootstrap over the trials of each config.",
        format::sig(f, 3),
        ci_clause(g.serial_fraction_ci),
        g.n_points
    );
    if g.n_points == 2 {
        s.push_str(
            " With 2 points the fit is exact, so the CI comes only from trial noise, not from how well the model fits.",
        );
    }
    if f < 0.0 {
        s.push_str(" f below 0 means speedups above the thread ratio: the model does not describe these points.");
    } else if f > 1.0 {
        s.push_str(" f above 1 means more threads took longer: the model does not describe these points.");
    }
    s
}

fn size_fit(g: &SizeGroup) -> String {
    let Some(b) = g.exponent else {
        return format!(
            "No cost exponent: no power law could be fitted to the medians at {} sizes.",
            g.n_points
        );
    };
    let mut s = format!(
        "Cost exponent b = {} ({}) in T ∝ size^b: a model fit, the least-squares slope of log median time against log size at n = {} sizes (b = 1 is linear); the CI is a percentile bootstrap over the trials of each config.",
        format::sig(b, 3),
        ci_clause(g.exponent_ci),
        g.n_points
    );
    if g.n_points == 2 {
        s.push_str(" With 2 points the slope is exact, so the CI comes only from trial noise, not from how well a power law fits.");
    }
    s
}

fn seconds(v: Option<f64>) -> String {
    format::value(v.unwrap_or(f64::NAN), "s")
}

/// The Markdown view of `s`, in a report on `primary`.
pub(crate) fn view(s: &Scaling, primary: &str) -> ScalingView {
    let threads = s
        .threads
        .iter()
        .map(|a| AxisView {
            parameter: a.parameter.clone(),
            chart: a.chart.clone(),
            groups: a
                .groups
                .iter()
                .map(|g| GroupView {
                    label: format::cell(&g.label),
                    fit: thread_fit(g),
                    rows: g
                        .points
                        .iter()
                        .map(|p| {
                            let is_reference = g.reference.as_ref() == Some(&p.config);
                            vec![
                                format::cell(&p.config),
                                p.threads.to_string(),
                                p.n.to_string(),
                                seconds(p.median_seconds),
                                format::value_interval(p.median_ci, "s"),
                                p.speedup.map_or_else(|| DASH.to_owned(), format::factor),
                                if is_reference {
                                    "reference".to_owned()
                                } else {
                                    format::factor_interval(p.speedup_ci)
                                },
                                number(p.efficiency),
                                if is_reference {
                                    "reference".to_owned()
                                } else {
                                    interval(p.efficiency_ci)
                                },
                            ]
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let sizes = s
        .sizes
        .iter()
        .map(|a| AxisView {
            parameter: a.parameter.clone(),
            chart: a.chart.clone(),
            groups: a
                .groups
                .iter()
                .map(|g| GroupView {
                    label: format::cell(&g.label),
                    fit: size_fit(g),
                    rows: g
                        .points
                        .iter()
                        .map(|p| {
                            vec![
                                format::cell(&p.config),
                                if a.unit == "B" {
                                    format::size(p.size)
                                } else {
                                    format::trimmed(p.size)
                                },
                                p.n.to_string(),
                                seconds(p.median_seconds),
                                format::value_interval(p.median_ci, "s"),
                            ]
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    ScalingView {
        metric: s.metric.clone(),
        metric_reason: if s.metric == primary {
            String::new()
        } else {
            format!(" (the primary metric `{primary}` is not a time)")
        },
        threads,
        sizes,
        notes: s.notes.iter().map(|n| format::cell(n)).collect(),
    }
}
