//! The conditions a claim was made under (`requires` in a manifest's claim), checked against
//! the machine a run had and the parameters of the config that measured it. A claim whose
//! conditions this run did not meet is *not reproduced here*, never *refuted*: the experiment
//! did not recreate what the claim is about.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Parameter names that count threads or worker processes: a config asking for more of them
/// than the machine has cores cannot show the speedup a claim about them makes.
pub const PARALLELISM_PARAMS: [&str; 5] = ["threads", "workers", "num_threads", "jobs", "processes"];

/// What a claim needs from a run to be judged by it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClaimConditions {
    /// `"cuda"`: made on a GPU, so only a run with a CUDA device (and stages that ran on it)
    /// can judge it; `"cpu"`: made on a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Made on a machine with this many cores or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cores: Option<u32>,
    /// `stages.<stage>.<param>` -> the value the measured config must have (e.g. the problem
    /// size the claim was made at). Other configs of the variant are shown as context only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<(String, serde_json::Value)>,
    /// A condition on the workload, as two measured metrics: the claim holds only where one is
    /// below the other ("if prefetch time < GPU compute time"). Judged on the medians of the
    /// baseline it is compared with, where nothing the variant changes hides either of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds: Option<MetricBelow>,
}

/// `metric < below`, both `<stage>.<metric>` (or sums of them), of the baseline's trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricBelow {
    pub metric: String,
    pub below: String,
}

impl MetricBelow {
    /// `train.batch_prep_host_seconds < train.compute_seconds`.
    pub fn describe(&self) -> String {
        format!("{} < {}", self.metric, self.below)
    }
}

/// The baseline a claim's candidate is compared with, as [`MetricBelow`] reads it: its config's
/// name and the median of a metric over its successful trials, with that median as a report
/// shows it (`0.412 s`). `None` where no trial recorded the metric.
pub struct Measured<'a> {
    pub config: &'a str,
    pub median: &'a dyn Fn(&str) -> Option<(f64, String)>,
}

impl std::fmt::Debug for Measured<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Measured")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ClaimConditions {
    pub fn is_empty(&self) -> bool {
        self.device.is_none() && self.min_cores.is_none() && self.params.is_empty() && self.holds.is_none()
    }

    /// What a config must have for the claim to be judged at it, in words:
    /// `stages.load.symbols = { first = 500 }`, and for a claim made on N cores, `N threads or
    /// more` (see [`params_unmet`]).
    pub fn describe_params(&self) -> String {
        let mut parts: Vec<String> = self
            .params
            .iter()
            .map(|(path, v)| format!("{path} = {}", show(v)))
            .collect();
        if let Some(n) = self.min_cores {
            parts.push(format!("{n} threads or more (the claim was made on {n} cores)"));
        }
        parts.join(", ")
    }

    /// The conditions in words, for reports: `a CUDA device, 30 cores or more`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match self.device.as_deref() {
            Some("cuda") => parts.push("a CUDA device".to_owned()),
            Some(d) => parts.push(format!("device {d}")),
            None => {}
        }
        if let Some(n) = self.min_cores {
            parts.push(format!("{n} cores or more"));
        }
        for (path, v) in &self.params {
            parts.push(format!("{path} = {}", show(v)));
        }
        if let Some(h) = &self.holds {
            parts.push(h.describe());
        }
        parts.join(", ")
    }
}

/// What the measured trials of one config ran on, as their stages recorded it (`kinds::facts`):
/// `<stage>.<fact>` -> every value recorded (one when the trials agreed). A fact no trial
/// recorded is absent.
pub type RanFacts = BTreeMap<String, std::collections::BTreeSet<String>>;

/// What a config ran, for judging a claim's conditions: its parameters as the manifest gave
/// them (the request), what its trials recorded they ran on (`facts`, after defaults, `auto`
/// and any fallback were resolved), and the stages whose kind records a `device` fact.
#[derive(Debug, Clone, Copy)]
pub struct Ran<'a> {
    pub params: &'a indexmap::IndexMap<String, serde_json::Value>,
    pub facts: &'a RanFacts,
    /// Stages of a kind that records `device` (train, validate, transfer): a device condition
    /// is judged on what they recorded, and a stage that recorded nothing (a run stored before
    /// facts) cannot meet one.
    pub device_stages: &'a [String],
    /// The baseline the config is compared with, for a [`MetricBelow`] condition; `None` where
    /// there is none (a value claim is judged on its own config, passed here).
    pub baseline: Option<&'a Measured<'a>>,
}

/// Why a run cannot judge a claim, or `None` when it can. `env` holds the run's machine
/// (`cores`, `gpu` as in the stored fingerprint); `ran` what the measured config asked for and
/// what its trials recorded they ran on. Devices, precisions and thread counts are judged on
/// the recorded facts, never on the manifest's text: a `train` stage that defaulted to the CPU,
/// or fell back to f32, did not recreate a claim made on CUDA in f16.
pub fn unmet(conditions: &ClaimConditions, env: &BTreeMap<String, String>, ran: Ran<'_>) -> Option<String> {
    let mut missing = Vec::new();
    let cores: Option<u32> = env.get("cores").and_then(|c| c.parse().ok());
    let gpu = env.get("gpu").map(String::as_str).unwrap_or("unknown");
    let has_gpu = !(gpu.starts_with("none") || gpu == "unknown" || gpu.is_empty());
    match conditions.device.as_deref() {
        Some("cuda") if !has_gpu => missing.push(format!("no CUDA device ({gpu})")),
        Some(want) => missing.extend(device_unmet(want, ran)),
        None => {}
    }
    if let (Some(need), Some(have)) = (conditions.min_cores, cores) {
        if have < need {
            missing.push(format!("{have} cores"));
        }
    }
    missing.extend(params_unmet_ran(conditions, ran));
    missing.extend(requested_unmet(ran));
    if let Some(h) = &conditions.holds {
        missing.extend(holds_unmet(h, ran.baseline));
    }
    // A claim about N threads or workers is not about a config that asks for more of them than
    // the machine has: the extra ones only time-share cores.
    if let Some(have) = cores {
        for (path, n) in ran_thread_counts(ran) {
            if n > u64::from(have) {
                missing.push(format!("{path} = {n} on {have} cores (oversubscribed)"));
            }
        }
    }
    missing.dedup();
    if missing.is_empty() {
        return None;
    }
    let wanted = conditions.describe();
    Some(if wanted.is_empty() {
        format!("not reproduced here: this run had {}", missing.join(", "))
    } else {
        format!(
            "not reproduced here: the claim is for {wanted}; this run had {}",
            missing.join(", ")
        )
    })
}

/// Why `h` does not hold on what the baseline measured: both medians when it is not below, or
/// the metric no trial recorded. `None` when it holds.
fn holds_unmet(h: &MetricBelow, baseline: Option<&Measured<'_>>) -> Option<String> {
    let Some(base) = baseline else {
        return Some(format!("no baseline to measure {} on", h.describe()));
    };
    let (a, b) = ((base.median)(&h.metric), (base.median)(&h.below));
    match (a, b) {
        (Some((a, _)), Some((b, _))) if a < b => None,
        (Some((_, a)), Some((_, b))) => Some(format!(
            "{} = {a}, not below {} = {b} (medians in `{}`)",
            h.metric, h.below, base.config
        )),
        (None, _) => Some(format!("no {} recorded in `{}`", h.metric, base.config)),
        (_, None) => Some(format!("no {} recorded in `{}`", h.below, base.config)),
    }
}

/// The stages that did not run on `want` (`cuda` or `cpu`), as their facts say.
fn device_unmet(want: &str, ran: Ran<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for stage in ran.device_stages {
        let Some(values) = ran.facts.get(&format!("{stage}.device")) else {
            out.push(format!(
                "stage `{stage}` recorded no device (a run stored before facts)"
            ));
            continue;
        };
        for v in values.iter().filter(|v| v.as_str() != want) {
            let gpu = ran.facts.get(&format!("{stage}.gpu")).and_then(|g| g.iter().next());
            out.push(match (v.as_str(), gpu) {
                ("cpu", _) => format!("stage `{stage}` ran on the CPU"),
                ("cuda", Some(g)) => format!("stage `{stage}` ran on CUDA ({g})"),
                ("cuda", None) => format!("stage `{stage}` ran on CUDA"),
                (other, _) => format!("stage `{stage}` ran on {other}"),
            });
        }
    }
    out
}

/// A fact's values as one phrase: `f32`, or `f32 and f16` where trials differed.
fn values_phrase(values: &std::collections::BTreeSet<String>) -> String {
    values.iter().map(String::as_str).collect::<Vec<_>>().join(" and ")
}

/// A parameter value as a stage records the fact of the same name: text as it is, a list of
/// numbers comma-separated (`hidden = [64, 64]` is `64,64`). `None` for `auto` (resolved at
/// run time) and for values no fact is written as.
fn as_fact(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value as V;
    match v {
        V::String(s) if s == "auto" => None,
        V::String(s) => Some(s.clone()),
        V::Number(n) => Some(n.to_string()),
        V::Bool(b) => Some(b.to_string()),
        V::Array(items) => items
            .iter()
            .map(|i| i.as_f64().map(|_| i.to_string()))
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(",")),
        _ => None,
    }
}

/// Whether a recorded fact says what was asked: the same text, or for a per-layer list
/// (`hidden = "64,64"` of a 2-layer RNN) a single width every layer has (`hidden = 64`).
fn fact_is(fact: &str, asked: &str) -> bool {
    fact == asked || (!asked.contains(',') && fact.contains(',') && fact.split(',').all(|part| part == asked))
}

/// The configs' requests their trials did not honour: a stage parameter that is also a fact
/// (`precision`, `device`, `batch_size`, ...) whose recorded value differs from the one asked
/// for, as `stage `train` ran precision = f32 (f16 asked for)`.
fn requested_unmet(ran: Ran<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (stage, table) in ran.params {
        let Some(table) = table.as_object() else { continue };
        for (key, value) in table {
            let (Some(asked), Some(values)) = (as_fact(value), ran.facts.get(&format!("{stage}.{key}"))) else {
                continue;
            };
            if values.iter().any(|v| !fact_is(v, &asked)) {
                out.push(format!(
                    "stage `{stage}` ran {key} = {} ({asked} asked for)",
                    values_phrase(values)
                ));
            }
        }
    }
    out
}

/// [`params_unmet`] judged on what ran: a condition on a parameter that is also a fact is met
/// only when every measured trial recorded the value the claim needs.
fn params_unmet_ran(conditions: &ClaimConditions, ran: Ran<'_>) -> Vec<String> {
    let mut missing = Vec::new();
    for (path, want) in &conditions.params {
        let fact = path.strip_prefix("stages.").and_then(|p| ran.facts.get(p));
        match (fact, as_fact(want)) {
            (Some(values), Some(want_text)) => {
                if values.iter().any(|v| !fact_is(v, &want_text)) {
                    missing.push(format!("{path} = {} (as it ran)", values_phrase(values)));
                }
            }
            _ => missing.extend(param_unmet(path, want, ran.params)),
        }
    }
    if let Some(need) = conditions.min_cores {
        for (path, n) in ran_thread_counts(ran) {
            if n != u64::from(need) {
                missing.push(format!("{path} = {n}"));
            }
        }
    }
    missing
}

/// The thread counts a config ran with: the `threads` facts of stages that did not run on CUDA
/// (a CUDA stage's host pool does not do its work), else the counts its parameters set.
fn ran_thread_counts(ran: Ran<'_>) -> Vec<(String, u64)> {
    let recorded: Vec<(String, u64)> = ran
        .facts
        .iter()
        .filter_map(|(key, values)| {
            let stage = key.strip_suffix(".threads")?;
            let on_cuda = ran
                .facts
                .get(&format!("{stage}.device"))
                .is_some_and(|d| d.contains("cuda"));
            let most = values.iter().filter_map(|v| v.parse::<u64>().ok()).max()?;
            (!on_cuda).then(|| (format!("stages.{stage}.threads"), most))
        })
        .collect();
    if recorded.is_empty() {
        thread_counts(ran.params)
    } else {
        recorded
    }
}

/// Every thread or worker count a config sets (a [`PARALLELISM_PARAMS`] parameter of a stage,
/// or of a command stage's `vars`), as `(stages.<stage>.<key>, n)`.
pub fn thread_counts(params: &indexmap::IndexMap<String, serde_json::Value>) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (stage, p) in params {
        for (prefix, table) in [("", Some(p)), ("vars.", p.get("vars"))] {
            for key in PARALLELISM_PARAMS {
                if let Some(n) = table.and_then(|t| t.get(key)).and_then(serde_json::Value::as_u64) {
                    out.push((format!("stages.{stage}.{prefix}{key}"), n));
                }
            }
        }
    }
    out
}

/// The most threads or workers any stage of a config asks for; `None` when none names one.
pub fn config_threads(params: &indexmap::IndexMap<String, serde_json::Value>) -> Option<u64> {
    thread_counts(params).into_iter().map(|(_, n)| n).max()
}

/// The parameters of `conditions` a config does not have, as `path = <its value>`; empty when
/// the config is one the claim was made for. A claim made on N cores binds a config that sets
/// a thread or worker count: it is judged only at configs running exactly N (fewer cannot show
/// what N cores do; more is not what the claim measured); a config that sets none is bound by
/// the machine alone. This reads the request; [`unmet`] judges what ran.
pub fn params_unmet(
    conditions: &ClaimConditions,
    params: &indexmap::IndexMap<String, serde_json::Value>,
) -> Vec<String> {
    let mut missing = Vec::new();
    if let (Some(need), Some(threads)) = (conditions.min_cores, config_threads(params)) {
        if threads != u64::from(need) {
            missing.push(format!("{threads} threads"));
        }
    }
    for (path, want) in &conditions.params {
        missing.extend(param_unmet(path, want, params));
    }
    missing
}

/// `path = <its value>` when the config's parameter at `path` is not `want`.
fn param_unmet(
    path: &str,
    want: &serde_json::Value,
    params: &indexmap::IndexMap<String, serde_json::Value>,
) -> Option<String> {
    let got = param_at(params, path);
    (!got.is_some_and(|g| same(g, want)))
        .then(|| format!("{path} = {}", got.map_or_else(|| "not set".to_owned(), show)))
}

fn param_at<'a>(
    params: &'a indexmap::IndexMap<String, serde_json::Value>,
    path: &str,
) -> Option<&'a serde_json::Value> {
    let mut segs = path.strip_prefix("stages.")?.split('.');
    let mut v = params.get(segs.next()?)?;
    for s in segs {
        v = v.get(s)?;
    }
    Some(v)
}

/// Equal as a stage reads them: `500` and `500.0` are one number.
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as V;
    match (a, b) {
        (V::Number(x), V::Number(y)) => x.as_f64() == y.as_f64(),
        (V::Array(x), V::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (V::Object(x), V::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// A parameter value as a manifest would write it.
fn show(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => {
            let inner: Vec<String> = m.iter().map(|(k, v)| format!("{k} = {}", show(v))).collect();
            format!("{{ {} }}", inner.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
#[path = "tests/conditions.rs"]
mod tests;
