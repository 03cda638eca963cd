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

    /// Facts as trials recorded them: `("train.device", "cpu")`, a key given twice where
    /// trials differed.
    fn facts(pairs: &[(&str, &str)]) -> RanFacts {
        let mut out = RanFacts::new();
        for (k, v) in pairs {
            out.entry((*k).to_owned()).or_default().insert((*v).to_owned());
        }
        out
    }

    /// `unmet` of a config with these parameters and recorded facts; `train` is its stage that
    /// records a device.
    fn judge(
        c: &ClaimConditions,
        env: &BTreeMap<String, String>,
        p: serde_json::Value,
        f: &[(&str, &str)],
    ) -> Option<String> {
        let (p, f) = (params(p), facts(f));
        let stages = ["train".to_owned()];
        let device_stages: &[String] = if f.keys().any(|k| k.starts_with("train.")) || p.contains_key("train") {
            &stages
        } else {
            &[]
        };
        unmet(
            c,
            env,
            Ran {
                params: &p,
                facts: &f,
                device_stages,
            },
        )
    }

    fn cuda() -> ClaimConditions {
        ClaimConditions {
            device: Some("cuda".into()),
            ..Default::default()
        }
    }

    const H200: &str = "NVIDIA H200, 570";

    #[test]
    fn a_cuda_claim_on_a_cpu_build_is_not_reproduced() {
        let why = judge(&cuda(), &env("2", "none (CPU build)"), json!({}), &[]).unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for a CUDA device; this run had no CUDA device (none (CPU build))"
        );
    }

    /// The machine has a GPU, but the trials say `train` ran on the CPU (its default, with no
    /// `device` in the manifest): not reproduced, naming the stage. The manifest's text is not
    /// read: a config that wrote `device = "cpu"` but whose trials ran on CUDA is judged.
    #[test]
    fn a_cuda_claim_is_judged_on_the_device_the_stage_ran_on() {
        let why = judge(
            &cuda(),
            &env("16", H200),
            json!({"train": {}}),
            &[("train.device", "cpu")],
        )
        .unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for a CUDA device; this run had stage `train` ran on the CPU"
        );
        let ran_cuda = [("train.device", "cuda"), ("train.gpu", "NVIDIA H200")];
        assert_eq!(judge(&cuda(), &env("16", H200), json!({"train": {}}), &ran_cuda), None);
        // A run stored before facts: what `train` ran on is unknown, so the claim is not judged.
        let why = judge(&cuda(), &env("16", H200), json!({"train": {}}), &[]).unwrap();
        assert!(
            why.ends_with("stage `train` recorded no device (a run stored before facts)"),
            "{why}"
        );
        // Some trials on the CPU are enough to leave the claim unjudged.
        let mixed = [("train.device", "cuda"), ("train.device", "cpu")];
        let why = judge(&cuda(), &env("16", H200), json!({"train": {}}), &mixed).unwrap();
        assert!(why.ends_with("stage `train` ran on the CPU"), "{why}");
    }

    #[test]
    fn a_cpu_claim_is_not_reproduced_by_a_stage_that_ran_on_cuda() {
        let c = ClaimConditions {
            device: Some("cpu".into()),
            ..Default::default()
        };
        let ran = [("train.device", "cuda"), ("train.gpu", "NVIDIA H200")];
        let why = judge(&c, &env("16", H200), json!({"train": {"device": "auto"}}), &ran).unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for device cpu; this run had stage `train` ran on CUDA (NVIDIA H200)"
        );
        assert_eq!(
            judge(&c, &env("16", H200), json!({"train": {}}), &[("train.device", "cpu")]),
            None
        );
    }

    /// f16 asked for, f32 recorded (a fallback, or a build without it): the claim about f16 is
    /// not reproduced, whether the precision is the claim's condition or the config's request.
    #[test]
    fn f16_asked_for_and_f32_run_is_not_reproduced() {
        let ran = [("train.device", "cuda"), ("train.precision", "f32")];
        let asked = json!({"train": {"precision": "f16"}});
        let why = judge(&cuda(), &env("16", H200), asked.clone(), &ran).unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for a CUDA device; this run had stage `train` ran precision = f32 \
             (f16 asked for)"
        );
        let f16 = ClaimConditions {
            params: vec![("stages.train.precision".into(), json!("f16"))],
            ..cuda()
        };
        let why = judge(&f16, &env("16", H200), asked, &ran).unwrap();
        assert!(why.contains("stages.train.precision = f32 (as it ran)"), "{why}");
        let ran16 = [("train.device", "cuda"), ("train.precision", "f16")];
        assert_eq!(
            judge(&f16, &env("16", H200), json!({"train": {"precision": "f16"}}), &ran16),
            None
        );
        // One width for every layer of an RNN is recorded per layer.
        let rnn = [("train.device", "cuda"), ("train.hidden", "64,64")];
        assert_eq!(
            judge(&cuda(), &env("16", H200), json!({"train": {"hidden": 64}}), &rnn),
            None
        );
        let why = judge(&cuda(), &env("16", H200), json!({"train": {"hidden": 32}}), &rnn).unwrap();
        assert!(
            why.ends_with("stage `train` ran hidden = 64,64 (32 asked for)"),
            "{why}"
        );
        // `auto` and lists compare as the stage records them.
        let sized = json!({"train": {"device": "auto", "hidden": [64, 32]}});
        let ran = [("train.device", "cuda"), ("train.hidden", "64,32")];
        assert_eq!(judge(&cuda(), &env("16", H200), sized, &ran), None);
    }

    /// A claim made on 8 cores is judged at 8 threads: a run of 16 threads on a 16-core machine
    /// measured something else, and so did one whose config asked for 8 but whose stage
    /// recorded 16.
    #[test]
    fn sixteen_threads_do_not_reproduce_a_claim_made_on_eight_cores() {
        let c = ClaimConditions {
            device: Some("cpu".into()),
            min_cores: Some(8),
            ..Default::default()
        };
        let why = judge(
            &c,
            &env("16", "none (CPU build)"),
            json!({"features": {}}),
            &[("features.threads", "16")],
        )
        .unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for device cpu, 8 cores or more; this run had stages.features.threads = 16"
        );
        let asked8 = json!({"features": {"threads": 8}});
        let why = judge(
            &c,
            &env("16", "none (CPU build)"),
            asked8.clone(),
            &[("features.threads", "16")],
        )
        .unwrap();
        assert!(why.contains("stage `features` ran threads = 16 (8 asked for)"), "{why}");
        assert_eq!(
            judge(
                &c,
                &env("16", "none (CPU build)"),
                asked8.clone(),
                &[("features.threads", "8")]
            ),
            None
        );
        // 8 threads on 2 cores time-share them.
        let why = judge(&c, &env("2", "none (CPU build)"), asked8, &[("features.threads", "8")]).unwrap();
        assert!(
            why.ends_with("2 cores, stages.features.threads = 8 on 2 cores (oversubscribed)"),
            "{why}"
        );
    }

    #[test]
    fn a_thirty_worker_claim_on_two_cores_is_not_reproduced() {
        let c = ClaimConditions {
            device: Some("cuda".into()),
            min_cores: Some(30),
            ..Default::default()
        };
        let why = judge(&c, &env("2", "none (CPU build)"), json!({}), &[]).unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for a CUDA device, 30 cores or more; this run had no CUDA \
             device (none (CPU build)), 2 cores"
        );
    }

    /// The request side: which configs of a variant a claim is about, before anything ran.
    #[test]
    fn a_claim_made_on_eight_cores_is_about_configs_of_eight_threads() {
        let c = ClaimConditions {
            device: Some("cpu".into()),
            min_cores: Some(8),
            ..Default::default()
        };
        let at = |n: u64| params(json!({"features": {"threads": n, "parallel": true}}));
        assert_eq!(params_unmet(&c, &at(2)), ["2 threads"]);
        assert_eq!(params_unmet(&c, &at(16)), ["16 threads"]);
        assert!(params_unmet(&c, &at(8)).is_empty());
        assert_eq!(config_threads(&at(8)), Some(8));
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
        let p = json!({"load": {"symbols": {"first": 500.0}}});
        assert_eq!(judge(&c, &env("2", "none (CPU build)"), p, &[]), None);
        let small = json!({"load": {"symbols": {"first": 10}}});
        let why = judge(&c, &env("2", "none (CPU build)"), small, &[]).unwrap();
        assert_eq!(
            why,
            "not reproduced here: the claim is for 2 cores or more, stages.load.symbols = { first = 500 }; \
             this run had stages.load.symbols = { first = 10 }"
        );
    }
}
