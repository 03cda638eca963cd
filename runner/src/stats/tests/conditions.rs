//! Tests of claim conditions judged on what ran (`stats/conditions.rs`).

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
            baseline: None,
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

/// "if prefetch time < GPU compute time": judged on the baseline's medians, with both
/// figures where it does not hold.
#[test]
fn a_condition_on_two_metrics_is_judged_on_the_baselines_medians() {
    let c = ClaimConditions {
        holds: Some(MetricBelow {
            metric: "train.batch_prep_host_seconds".into(),
            below: "train.compute_seconds".into(),
        }),
        ..Default::default()
    };
    let with = |prep: Option<f64>, compute: f64| {
        let median = move |m: &str| match m {
            "train.batch_prep_host_seconds" => prep.map(|v| (v, format!("{v} s"))),
            "train.compute_seconds" => Some((compute, format!("{compute} s"))),
            _ => None,
        };
        let base = Measured {
            config: "inline",
            median: &median,
        };
        let (p, f) = (params(json!({})), facts(&[]));
        unmet(
            &c,
            &env("16", H200),
            Ran {
                params: &p,
                facts: &f,
                device_stages: &[],
                baseline: Some(&base),
            },
        )
    };
    assert_eq!(with(Some(0.2), 0.5), None);
    assert_eq!(
        with(Some(0.7), 0.5).unwrap(),
        "not reproduced here: the claim is for train.batch_prep_host_seconds < train.compute_seconds; \
         this run had train.batch_prep_host_seconds = 0.7 s, not below train.compute_seconds = 0.5 s \
         (medians in `inline`)"
    );
    // Equal is not below.
    assert!(with(Some(0.5), 0.5).is_some());
    let why = with(None, 0.5).unwrap();
    assert!(
        why.ends_with("no train.batch_prep_host_seconds recorded in `inline`"),
        "{why}"
    );
    // No baseline at all: not judged rather than assumed.
    let (p, f) = (params(json!({})), facts(&[]));
    let no_base = Ran {
        params: &p,
        facts: &f,
        device_stages: &[],
        baseline: None,
    };
    let why = unmet(&c, &env("16", H200), no_base).unwrap();
    assert!(
        why.ends_with("no baseline to measure train.batch_prep_host_seconds < train.compute_seconds on"),
        "{why}"
    );
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
