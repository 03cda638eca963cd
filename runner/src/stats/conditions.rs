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
}

impl ClaimConditions {
    pub fn is_empty(&self) -> bool {
        self.device.is_none() && self.min_cores.is_none() && self.params.is_empty()
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
        parts.join(", ")
    }
}

/// Why a run cannot judge a claim, or `None` when it can. `env` holds the run's machine
/// (`cores`, `gpu` as in the stored fingerprint); `params` the measured config's resolved
/// parameters (stage name -> parameter table as JSON).
pub fn unmet(
    conditions: &ClaimConditions,
    env: &BTreeMap<String, String>,
    params: &indexmap::IndexMap<String, serde_json::Value>,
) -> Option<String> {
    let mut missing = Vec::new();
    let cores: Option<u32> = env.get("cores").and_then(|c| c.parse().ok());
    let gpu = env.get("gpu").map(String::as_str).unwrap_or("unknown");
    let has_gpu = !(gpu.starts_with("none") || gpu == "unknown" || gpu.is_empty());
    if conditions.device.as_deref() == Some("cuda") {
        let cpu_stage = params
            .iter()
            .find(|(_, p)| p.get("device").and_then(|d| d.as_str()) == Some("cpu"))
            .map(|(s, _)| s.clone());
        if !has_gpu {
            missing.push(format!("no CUDA device ({gpu})"));
        } else if let Some(stage) = cpu_stage {
            missing.push(format!("stage `{stage}` ran on the CPU"));
        }
    }
    if let (Some(need), Some(have)) = (conditions.min_cores, cores) {
        if have < need {
            missing.push(format!("{have} cores"));
        }
    }
    missing.extend(params_unmet(conditions, params));
    // A claim about N threads or workers is not about a config that asks for more of them than
    // the machine has: the extra ones only time-share cores.
    if let Some(have) = cores {
        for (path, n) in thread_counts(params) {
            if n > u64::from(have) {
                missing.push(format!("{path} = {n} on {have} cores (oversubscribed)"));
            }
        }
    }
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
/// a thread or worker count: it is judged only at configs running N or more (fewer threads
/// cannot show what N cores do); a config that sets none is bound by the machine alone.
pub fn params_unmet(
    conditions: &ClaimConditions,
    params: &indexmap::IndexMap<String, serde_json::Value>,
) -> Vec<String> {
    let mut missing = Vec::new();
    if let (Some(need), Some(threads)) = (conditions.min_cores, config_threads(params)) {
        if threads < u64::from(need) {
            missing.push(format!("{threads} threads"));
        }
    }
    for (path, want) in &conditions.params {
        let got = param_at(params, path);
        if !got.is_some_and(|g| same(g, want)) {
            missing.push(format!("{path} = {}", got.map_or_else(|| "not set".to_owned(), show)));
        }
    }
    missing
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
mod tests {
    use super::*;
    use serde_json::json;

    fn env(cores: &str, gpu: &str) -> BTreeMap<String, String> {
        [("cores", cores), ("gpu", gpu)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    fn params(v: serde_json::Value) -> indexmap::IndexMap<String, serde_json::Value> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_cuda_claim_on_a_cpu_build_is_not_reproduced() {
        let c = ClaimConditions {
            device: Some("cuda".into()),
            ..Default::default()
        };
        let why = unmet(&c, &env("2", "none (CPU build)"), &params(json!({}))).unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for a CUDA device; this run had no CUDA device (none (CPU build))"
        );
        // On a GPU host, a stage forced onto the CPU still does not reproduce it.
        let why = unmet(
            &c,
            &env("2", "NVIDIA H200, 570"),
            &params(json!({"train": {"device": "cpu"}})),
        )
        .unwrap();
        assert!(why.ends_with("this run had stage `train` ran on the CPU"), "{why}");
        assert_eq!(
            unmet(&c, &env("2", "NVIDIA H200, 570"), &params(json!({"train": {}}))),
            None
        );
    }

    #[test]
    fn a_thirty_worker_claim_on_two_cores_is_not_reproduced() {
        let c = ClaimConditions {
            device: Some("cuda".into()),
            min_cores: Some(30),
            ..Default::default()
        };
        let why = unmet(&c, &env("2", "none (CPU build)"), &params(json!({}))).unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for a CUDA device, 30 cores or more; this run had no CUDA \
             device (none (CPU build)), 2 cores"
        );
    }

    #[test]
    fn more_threads_than_cores_never_reproduce_a_claim() {
        let why = unmet(
            &ClaimConditions::default(),
            &env("2", "none (CPU build)"),
            &params(json!({"features": {"threads": 8}})),
        )
        .unwrap();
        assert_eq!(
            why,
            "not reproduced here: this run had stages.features.threads = 8 on 2 cores (oversubscribed)"
        );
        assert_eq!(
            unmet(
                &ClaimConditions::default(),
                &env("2", "none (CPU build)"),
                &params(json!({"features": {"threads": 2}}))
            ),
            None
        );
    }

    /// A claim made on 8 cores binds the configs' thread counts: fewer threads are context, 8
    /// are judged where the machine has 8 cores, and oversubscribed where it has 2.
    #[test]
    fn a_claim_made_on_eight_cores_is_judged_at_eight_threads_only() {
        let c = ClaimConditions {
            device: Some("cpu".into()),
            min_cores: Some(8),
            ..Default::default()
        };
        let at = |n: u64| params(json!({"features": {"threads": n, "parallel": true}}));
        assert_eq!(params_unmet(&c, &at(2)), ["2 threads"]);
        assert!(params_unmet(&c, &at(8)).is_empty());
        assert_eq!(config_threads(&at(8)), Some(8));
        assert_eq!(unmet(&c, &env("16", "none (CPU build)"), &at(8)), None);
        let why = unmet(&c, &env("2", "none (CPU build)"), &at(8)).unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for device cpu, 8 cores or more; this run had 2 cores, \
             stages.features.threads = 8 on 2 cores (oversubscribed)"
        );
        // A config that names no thread count is bound by the machine alone.
        assert!(params_unmet(&c, &params(json!({"train": {}}))).is_empty());
    }

    #[test]
    fn met_conditions_leave_the_claim_to_be_judged() {
        let c = ClaimConditions {
            min_cores: Some(2),
            params: vec![("stages.load.symbols".into(), json!({"first": 500}))],
            ..Default::default()
        };
        let p = params(json!({"load": {"symbols": {"first": 500.0}}}));
        assert_eq!(unmet(&c, &env("2", "none (CPU build)"), &p), None);
        let small = params(json!({"load": {"symbols": {"first": 10}}}));
        let why = unmet(&c, &env("2", "none (CPU build)"), &small).unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for 2 cores or more, stages.load.symbols = { first = 500 }; \
             this run had stages.load.symbols = { first = 10 }"
        );
    }
}
