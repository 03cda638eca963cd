//! What each config ran on: the What ran section, and an engine fallback shown in the model
//! section and `report.json`.

use super::*;
use std::collections::BTreeMap;

fn agreed(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

const FALLBACK: &str = "cuDNN's RNN self-check failed: its results disagree with dfdx's: the gradients of \
                        `rnn.0.weight_hh` differ by 3.10e-3 (tolerance 1e-4); ran on the dfdx path";

/// `quality_run` on CUDA: the baseline's LSTM ran on cuDNN, `reuse`'s fell back to dfdx in
/// every trial but one that was stored before the check existed.
fn cuda_run() -> RunData {
    let mut run = super::quality::quality_run(0.92);
    run.facts = vec![
        ConfigFacts {
            config: "baseline".into(),
            trials: 8,
            agreed: agreed(&[
                ("train.device", "cuda"),
                ("train.gpu", "NVIDIA H200"),
                ("train.rnn_engine", "cudnn"),
            ]),
            differed: Vec::new(),
        },
        ConfigFacts {
            config: "reuse".into(),
            trials: 8,
            agreed: agreed(&[
                ("train.device", "cuda"),
                ("train.gpu", "NVIDIA H200"),
                ("train.rnn_engine", "dfdx"),
            ]),
            differed: vec![DifferingFact {
                fact: "train.rnn_engine_fallback".into(),
                values: vec![
                    FactValue {
                        value: Some(FALLBACK.into()),
                        trials: 7,
                    },
                    FactValue { value: None, trials: 1 },
                ],
            }],
        },
    ];
    run
}

#[test]
fn an_engine_fallback_is_shown_with_the_model_quality_and_in_report_json() {
    let report = build_report(&cuda_run());
    let md = render_markdown(&report, None).unwrap();
    let from = md.find("## Model quality").unwrap();
    let what_ran = md.find("## What ran").unwrap();
    let to = md[what_ran..].find("\n## ").map_or(md.len(), |i| what_ran + i);
    insta::assert_snapshot!(&md[from..to]);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["facts"][0]["agreed"]["train.rnn_engine"], "cudnn");
    assert_eq!(json["facts"][1]["agreed"]["train.rnn_engine"], "dfdx");
    assert_eq!(json["facts"][1]["differed"][0]["fact"], "train.rnn_engine_fallback");
    assert_eq!(json["facts"][1]["differed"][0]["values"][0]["value"], FALLBACK);
}

#[test]
fn without_a_quality_section_the_fallback_is_listed_under_what_ran() {
    let mut run = cuda_run();
    for c in &mut run.configs {
        for t in &mut c.trials {
            for s in &mut t.stages {
                s.metrics.retain(|m| !m.name.starts_with("mse_vs"));
            }
        }
    }
    let md = render_markdown(&build_report(&run), None).unwrap();
    assert!(!md.contains("## Model quality"), "{md}");
    let what_ran = &md[md.find("## What ran").unwrap()..];
    assert!(
        what_ran.contains(&format!("- `train` (reuse): {FALLBACK}")),
        "{what_ran}"
    );
    assert!(what_ran.contains("| `train.rnn_engine` | cudnn | dfdx |"), "{what_ran}");
    assert!(!what_ran.contains("| `train.rnn_engine_fallback`"), "{what_ran}");
}
