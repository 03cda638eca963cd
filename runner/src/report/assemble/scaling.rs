//! The Scaling section (run data -> thread-count and problem-size groups -> fitted scaling models,
//! the types of `model::scaling`, in `report.json`; `render::scaling_view` formats them for
//! `report.md` and `render::charts` draws them).
//!
//! A config's thread count and problem size are its resolved stage parameters (from the run's
//! stored spec, so a variant can set them as well as a sweep axis; runs stored before specs only
//! have their sweep point). A parameter is read by its name, at the top of a stage's table or in
//! a command stage's `vars`:
//!
//! - **thread or worker counts**: [`THREAD_PARAMETERS`]. The value must be a whole number of at
//!   least 1; `threads = 0` ("every core") is not a count, and such configs are left out with a
//!   note.
//! - **problem sizes**: [`SIZE_PARAMETERS`]. A number is the size; a symbol selection counts its
//!   symbols (`{ first = 100 }` and `{ random = 100, seed = 1 }` are 100, a list is its length,
//!   `"all"` is unknown); a size text such as `"64MiB"` is bytes; a one-element list is its
//!   element. `batch_size` is deliberately absent: a train stage runs its epochs over the same
//!   windows whatever the batch size, so the batch size changes how the work is split, not how
//!   much there is, and a slope over it would not be a cost exponent.
//!
//! A parameter is a scaling axis when it takes at least two readable values across the run.
//! For each axis the configs are grouped by everything else they ran with (all other stage
//! parameters and sweep values); a group with at least two values of the axis is one curve.
//! Within a thread group, speedups are taken against its 1-thread config, or its smallest count
//! when it has none: `S(p) = T(p0) / T(p)` on medians and `E(p) = S(p) · p0 / p` (`S(p) / p`
//! for `p0 = 1`). The serial fraction and cost exponent come from [`crate::stats`]. Times are
//! the primary metric when it is a time (unit `s`), else `trial.seconds`.

use serde_json::Value;

use super::samples::{metric_samples, settings_of};
use crate::paths::file_safe;
use crate::report::model::{
    finite, AxisKind, ConfigData, Interval, ResultRow, RunData, Scaling, SizeAxis, SizeGroup, SizePoint, ThreadAxis,
    ThreadGroup, ThreadPoint,
};
use crate::stats::{
    amdahl_fit, bootstrap_median_ci, cost_exponent, median, power_fit, serial_fraction, speedup, CompareSettings,
};

/// Parameter names read as thread or worker counts.
pub const THREAD_PARAMETERS: [&str; 7] = [
    "threads",
    "num_threads",
    "n_threads",
    "workers",
    "num_workers",
    "jobs",
    "connections",
];

/// Parameter names read as problem sizes.
pub const SIZE_PARAMETERS: [&str; 5] = ["symbols", "rows", "days", "size", "sizes"];

/// A scaling parameter of one config: its path and its value, `None` when unreadable.
struct Found {
    path: String,
    kind: AxisKind,
    value: Option<f64>,
    bytes: bool,
    raw: String,
}

fn thread_count(v: &Value) -> Option<f64> {
    let n = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (n.is_finite() && n >= 1.0 && n.fract() == 0.0).then_some(n)
}

/// A problem size and whether it is in bytes.
fn size_of(key: &str, v: &Value) -> Option<(f64, bool)> {
    let positive = |x: f64| (x.is_finite() && x > 0.0).then_some((x, false));
    match v {
        Value::Number(n) => positive(n.as_f64()?),
        Value::String(s) => match s.trim().parse::<f64>() {
            Ok(x) => positive(x),
            Err(_) => crate::size::parse_size(s).ok().map(|b| (b as f64, true)),
        },
        Value::Object(m) => positive(m.get("first").or_else(|| m.get("random"))?.as_f64()?),
        Value::Array(a) if key == "symbols" => positive(a.len() as f64),
        Value::Array(a) if a.len() == 1 => size_of(key, &a[0]),
        _ => None,
    }
}

fn push_found(out: &mut Vec<Found>, path: String, key: &str, v: &Value) {
    let (kind, read) = if THREAD_PARAMETERS.contains(&key) {
        (AxisKind::Threads, thread_count(v).map(|n| (n, false)))
    } else if SIZE_PARAMETERS.contains(&key) {
        (AxisKind::Size, size_of(key, v))
    } else {
        return;
    };
    out.push(Found {
        path,
        kind,
        value: read.map(|r| r.0),
        bytes: read.is_some_and(|r| r.1),
        raw: v.to_string(),
    });
}

/// The scaling parameters of a config, from its stage parameters, else its sweep point.
fn found(c: &ConfigData) -> Vec<Found> {
    let mut out = Vec::new();
    if c.params.is_empty() {
        for (path, text) in &c.sweep {
            let key = path.rsplit('.').next().unwrap_or(path);
            // Sweep values are stored as TOML; read them as the stage parameters would be.
            let parsed = toml::from_str::<toml::Table>(&format!("v = {text}"))
                .ok()
                .and_then(|t| serde_json::to_value(&t["v"]).ok());
            if let Some(v) = parsed {
                push_found(&mut out, path.clone(), key, &v);
            }
        }
        return out;
    }
    for (stage, params) in &c.params {
        let Some(table) = params.as_object() else { continue };
        for (key, v) in table {
            push_found(&mut out, format!("stages.{stage}.{key}"), key, v);
        }
        if let Some(vars) = table.get("vars").and_then(Value::as_object) {
            for (key, v) in vars {
                push_found(&mut out, format!("stages.{stage}.vars.{key}"), key, v);
            }
        }
    }
    out
}

struct Axis {
    path: String,
    kind: AxisKind,
    bytes: bool,
}

/// Parameters with at least two readable values across the run, in order of first appearance.
fn axes(run: &RunData) -> Vec<Axis> {
    let mut seen: Vec<(String, AxisKind, Vec<f64>, bool)> = Vec::new();
    for f in run.configs.iter().flat_map(found) {
        let i = match seen.iter().position(|s| s.0 == f.path) {
            Some(i) => i,
            None => {
                seen.push((f.path.clone(), f.kind, Vec::new(), false));
                seen.len() - 1
            }
        };
        if let Some(v) = f.value {
            if !seen[i].2.contains(&v) {
                seen[i].2.push(v);
            }
            seen[i].3 |= f.bytes;
        }
    }
    seen.into_iter()
        .filter(|s| s.2.len() >= 2)
        .map(|(path, kind, _, bytes)| Axis { path, kind, bytes })
        .collect()
}

fn value_at(c: &ConfigData, path: &str) -> Option<f64> {
    found(c).into_iter().find(|f| f.path == path)?.value
}

/// JSON text with object keys sorted, so equal parameters give equal keys whatever their order.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = entries.iter().map(|(k, v)| format!("{k:?}:{}", canonical(v))).collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

fn remove_path(v: &mut Value, rest: &str) {
    match rest.split_once('.') {
        Some((head, tail)) => {
            if let Some(inner) = v.get_mut(head) {
                remove_path(inner, tail);
            }
        }
        None => {
            if let Some(m) = v.as_object_mut() {
                m.remove(rest);
            }
        }
    }
}

/// Everything a config ran with except the parameter at `path`.
fn group_key(c: &ConfigData, path: &str) -> String {
    let mut key = String::new();
    if c.params.is_empty() {
        // Without stored parameters, the variant stands for whatever it overrides.
        key.push_str(&c.variant);
        key.push('|');
    }
    for (stage, params) in &c.params {
        let mut p = params.clone();
        if let Some(rest) = path.strip_prefix(&format!("stages.{stage}.")) {
            remove_path(&mut p, rest);
        }
        key.push_str(&format!("{stage}={};", canonical(&p)));
    }
    for (k, v) in c.sweep.iter().filter(|(k, _)| k != path) {
        key.push_str(&format!("|{k}={v}"));
    }
    key
}

type Group<'a> = Vec<(&'a ConfigData, f64)>;

/// Configs that differ only in `axis`, each group sorted by its value; groups with fewer than
/// two values are dropped.
fn groups<'a>(run: &'a RunData, axis: &Axis) -> Vec<Group<'a>> {
    let mut keyed: Vec<(String, Group<'a>)> = Vec::new();
    for c in &run.configs {
        let Some(x) = value_at(c, &axis.path) else { continue };
        let key = group_key(c, &axis.path);
        match keyed.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push((c, x)),
            None => keyed.push((key, vec![(c, x)])),
        }
    }
    let mut out: Vec<Group<'a>> = Vec::new();
    for (_, members) in keyed {
        let mut xs: Vec<f64> = members.iter().map(|m| m.1).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        if xs.len() == members.len() {
            out.push(members);
            continue;
        }
        // Identical variants (an A/A run) repeat every value: one curve per variant.
        let mut by_variant: Vec<Group<'a>> = Vec::new();
        for m in members {
            match by_variant.iter_mut().find(|g| g[0].0.variant == m.0.variant) {
                Some(g) => g.push(m),
                None => by_variant.push(vec![m]),
            }
        }
        out.extend(by_variant);
    }
    for g in &mut out {
        g.sort_by(|a, b| a.1.total_cmp(&b.1));
        g.dedup_by(|a, b| a.1 == b.1);
    }
    out.retain(|g| g.len() >= 2);
    out
}

fn label(group: &Group<'_>, path: &str) -> String {
    let mut variants: Vec<&str> = Vec::new();
    for (c, _) in group {
        if !variants.contains(&c.variant.as_str()) {
            variants.push(&c.variant);
        }
    }
    let others: Vec<String> = group[0]
        .0
        .sweep
        .iter()
        .filter(|(k, _)| k != path)
        .map(|(k, v)| format!("{}={v}", k.rsplit('.').next().unwrap_or(k)))
        .collect();
    let mut s = variants.join(", ");
    if !others.is_empty() {
        s.push_str(" at ");
        s.push_str(&others.join(", "));
    }
    s
}

/// The metric scaling is computed on: the primary metric when it is a time, else the trial's.
pub(crate) fn timing_metric(run: &RunData) -> String {
    let primary = &run.compare.primary;
    let unit = run.configs.iter().find_map(|c| metric_samples(c, primary).unit);
    if unit.as_deref() == Some("s") {
        primary.clone()
    } else {
        "trial.seconds".to_owned()
    }
}

/// The axes the Scaling section shows, for the chart plan.
pub(crate) fn chart_axes(run: &RunData) -> Vec<(AxisKind, String)> {
    axes(run)
        .into_iter()
        .filter(|a| !groups(run, a).is_empty())
        .map(|a| (a.kind, a.path))
        .collect()
}

/// The interval of config `c`'s median (over `values`): its results row's when `primary` holds
/// the report's results rows (the scaling metric is the primary metric), computed once there;
/// else bootstrapped here.
fn median_ci(
    c: &ConfigData,
    values: &[f64],
    primary: Option<&[ResultRow]>,
    settings: &CompareSettings,
) -> Option<Interval> {
    match primary.and_then(|rows| rows.iter().find(|r| r.config == c.name)) {
        Some(r) => r.median_ci,
        None => bootstrap_median_ci(values, settings.resamples, settings.seed),
    }
}

fn thread_group(
    group: &Group<'_>,
    path: &str,
    metric: &str,
    primary: Option<&[ResultRow]>,
    settings: &CompareSettings,
) -> ThreadGroup {
    let samples: Vec<(f64, Vec<f64>)> = group
        .iter()
        .map(|(c, p)| (*p, metric_samples(c, metric).values))
        .collect();
    // Sorted ascending: the first point with samples is the 1-thread one when it has any.
    let reference = samples.iter().position(|(_, v)| !v.is_empty());
    let p0 = reference.map(|r| samples[r].0);
    let points: Vec<ThreadPoint> = group
        .iter()
        .zip(&samples)
        .enumerate()
        .map(|(i, ((c, p), (_, v)))| {
            let (s, ci) = match reference {
                Some(r) if r == i => (Some(1.0), None),
                Some(r) => {
                    let e = speedup(&samples[r].1, v, settings.resamples, settings.seed);
                    (finite(e.value), e.ci)
                }
                None => (None, None),
            };
            let scale = p0.map_or(f64::NAN, |p0| p0 / p);
            ThreadPoint {
                config: c.name.clone(),
                threads: *p as u64,
                n: v.len(),
                median_seconds: finite(median(v)),
                median_ci: median_ci(c, v, primary, settings),
                speedup: s,
                speedup_ci: ci,
                efficiency: s.and_then(|s| finite(s * scale)),
                efficiency_ci: ci.map(|(lo, hi)| (lo * scale, hi * scale)),
            }
        })
        .collect();
    let fit = serial_fraction(&samples, settings.resamples, settings.seed);
    let medians: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.threads as f64, p.median_seconds?)))
        .collect();
    ThreadGroup {
        label: label(group, path),
        reference: reference.map(|r| group[r].0.name.clone()),
        reference_threads: p0.map(|p| p as u64),
        points,
        n_points: samples.iter().filter(|(_, v)| !v.is_empty()).count(),
        serial_fraction: finite(fit.value),
        serial_fraction_ci: fit.ci,
        fit: amdahl_fit(&medians),
    }
}

fn size_group(
    group: &Group<'_>,
    path: &str,
    metric: &str,
    primary: Option<&[ResultRow]>,
    settings: &CompareSettings,
) -> SizeGroup {
    let samples: Vec<(f64, Vec<f64>)> = group
        .iter()
        .map(|(c, s)| (*s, metric_samples(c, metric).values))
        .collect();
    let fit = cost_exponent(&samples, settings.resamples, settings.seed);
    let points: Vec<SizePoint> = group
        .iter()
        .zip(&samples)
        .map(|((c, size), (_, v))| SizePoint {
            config: c.name.clone(),
            size: *size,
            n: v.len(),
            median_seconds: finite(median(v)),
            median_ci: median_ci(c, v, primary, settings),
        })
        .collect();
    let medians: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.size, p.median_seconds?)))
        .collect();
    SizeGroup {
        label: label(group, path),
        points,
        n_points: samples.iter().filter(|(_, v)| !v.is_empty()).count(),
        exponent: finite(fit.value),
        exponent_ci: fit.ci,
        fit: power_fit(&medians),
    }
}

/// The Scaling section of `run`; `None` when no variant or sweep axis varies a thread count or
/// a problem size. `results` are the report's results rows (one per config): on the primary
/// metric, the points' median intervals are theirs.
pub(crate) fn scaling(run: &RunData, results: &[ResultRow]) -> Option<Scaling> {
    let axes = axes(run);
    if axes.is_empty() {
        return None;
    }
    let metric = timing_metric(run);
    let primary = (metric == run.compare.primary).then_some(results);
    let settings = settings_of(run);
    let mut out = Scaling {
        metric,
        threads: Vec::new(),
        sizes: Vec::new(),
        notes: Vec::new(),
    };
    for axis in &axes {
        let what = match axis.kind {
            AxisKind::Threads => "a thread count (0 means every core)",
            AxisKind::Size => "a size",
        };
        for c in &run.configs {
            if let Some(f) = found(c).into_iter().find(|f| f.path == axis.path && f.value.is_none()) {
                out.notes.push(format!(
                    "{} is left out of {}: {} is not {what}.",
                    c.name, axis.path, f.raw
                ));
            }
        }
        let groups = groups(run, axis);
        if groups.is_empty() {
            out.notes.push(format!(
                "{} varies, but never with everything else fixed, so it has no scaling curve.",
                axis.path
            ));
            continue;
        }
        let chart = scaling_file(axis.kind, &axis.path);
        match axis.kind {
            AxisKind::Threads => out.threads.push(ThreadAxis {
                parameter: axis.path.clone(),
                chart,
                groups: groups
                    .iter()
                    .map(|g| thread_group(g, &axis.path, &out.metric, primary, &settings))
                    .collect(),
            }),
            AxisKind::Size => out.sizes.push(SizeAxis {
                parameter: axis.path.clone(),
                unit: if axis.bytes { "B" } else { "count" }.to_owned(),
                chart,
                groups: groups
                    .iter()
                    .map(|g| size_group(g, &axis.path, &out.metric, primary, &settings))
                    .collect(),
            }),
        }
    }
    Some(out)
}

/// File of the scaling chart of `parameter`; the Scaling section links to it by this name.
pub(crate) fn scaling_file(axis: AxisKind, parameter: &str) -> String {
    let what = match axis {
        AxisKind::Threads => "threads",
        AxisKind::Size => "size",
    };
    let short = parameter.strip_prefix("stages.").unwrap_or(parameter);
    format!("scaling_{what}_{}.svg", file_safe(short))
}
