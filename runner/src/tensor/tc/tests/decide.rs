//! The decision of which step trains an MLP on CUDA, with the self-checks' outcomes injected:
//! what runs, the parameters it runs with, the facts and notes, and which checks ran.

use super::super::decide::{resolve, Checks, Resolved};
use crate::kinds::train::{CudaGraph, ModelKind, Precision, TrainParams};
use crate::metrics::Recorder;
use crate::tensor::fastpath::{Differences, Tolerances};
use crate::tensor::TrainError;
use std::cell::Cell;

fn agree() -> Result<Differences, String> {
    Ok(Differences {
        loss: Some(1e-3),
        outputs: 0.0,
        grads: Some(1e-2),
        worst_grad: "layer.0.weight".into(),
        tolerances: super::super::tolerances(Precision::Bf16),
    })
}

/// An f32 step within `check_step`'s tolerances.
fn f32_agree() -> Result<Differences, String> {
    Ok(Differences {
        loss: Some(1e-7),
        grads: Some(1e-6),
        tolerances: Tolerances::F32,
        ..agree().unwrap()
    })
}

fn disagree() -> Result<Differences, String> {
    Ok(Differences {
        grads: Some(0.9),
        ..agree().unwrap()
    })
}

fn exact_but(diff: f64) -> Result<Differences, String> {
    Ok(Differences {
        loss: Some(0.0),
        outputs: diff,
        grads: Some(0.0),
        worst_grad: "layer.0.weight".into(),
        tolerances: Tolerances::EXACT,
    })
}

/// A training of `precision` and `graph` whose self-check outcomes are kept under a key no
/// other test uses (the outcomes are kept for the process): `lr` tells them apart.
fn params(precision: Precision, graph: CudaGraph, lr: f64) -> TrainParams {
    TrainParams {
        precision,
        cuda_graph: graph,
        lr,
        batch_size: 32,
        hidden: Some(vec![16]),
        ..Default::default()
    }
}

/// Runs the decision with the given checks, counting how often each ran.
fn run(
    p: &TrainParams,
    windows: usize,
    engine: fn() -> Result<Differences, String>,
    graph: fn() -> Result<Differences, String>,
) -> (Result<Resolved, TrainError>, Recorder, usize, usize) {
    let arch = p.arch(1, 8, 1).unwrap();
    let (ran_engine, ran_graph) = (Cell::new(0), Cell::new(0));
    let e = || {
        ran_engine.set(ran_engine.get() + 1);
        engine()
    };
    let g = || {
        ran_graph.set(ran_graph.get() + 1);
        graph()
    };
    let mut rec = Recorder::new();
    let checks = Checks { engine: &e, graph: &g };
    let r = resolve(p, &arch, p.batch_size.min(windows), windows, checks, &mut rec);
    (r, rec, ran_engine.get(), ran_graph.get())
}

#[test]
fn a_bf16_step_that_agrees_runs_with_its_graph() {
    let p = params(Precision::Bf16, CudaGraph::Auto, 1.01e-3);
    let (r, rec, e, g) = run(&p, 100, agree, || exact_but(0.0));
    let r = r.unwrap();
    assert!(r.cublas);
    assert_eq!(
        (r.params.precision, r.params.cuda_graph),
        (Precision::Bf16, CudaGraph::On)
    );
    let facts = rec.facts();
    assert_eq!(
        (
            facts["precision"].as_str(),
            facts["mlp_engine"].as_str(),
            facts["cuda_graph"].as_str()
        ),
        ("bf16", "cublas", "true")
    );
    assert_eq!((e, g), (1, 1));
}

/// The fallback trains in f32 on dfdx: the parameters it runs with say f32 (dfdx's step trains
/// in f32 only), the facts say what ran and why, and the graph is never checked.
#[test]
fn a_half_precision_step_that_disagrees_trains_in_f32_on_dfdx_and_says_why() {
    for (precision, lr) in [(Precision::Bf16, 1.02e-3), (Precision::F16, 1.03e-3)] {
        let p = params(precision, CudaGraph::Auto, lr);
        let (r, mut rec, e, g) = run(&p, 100, disagree, || panic!("the graph is not checked"));
        let r = r.unwrap();
        assert!(!r.cublas);
        assert_eq!(
            (r.params.precision, r.params.cuda_graph),
            (Precision::F32, CudaGraph::Off)
        );
        let facts = rec.take_facts();
        assert_eq!(facts["precision"], "f32");
        assert_eq!(
            (facts["mlp_engine"].as_str(), facts["cuda_graph"].as_str()),
            ("dfdx", "false")
        );
        let why = &facts["precision_fallback"];
        assert!(
            why.contains("differ by 9.00e-1") && why.ends_with("ran on the f32 path"),
            "{why}"
        );
        assert_eq!(rec.into_parts().1.len(), 1, "one note, with the shape");
        assert_eq!((e, g), (1, 0));
    }
}

#[test]
fn a_graph_that_differs_runs_eagerly_or_fails_when_insisted_on() {
    let p = params(Precision::F32, CudaGraph::Auto, 1.04e-3);
    let (r, rec, _, _) = run(&p, 100, f32_agree, || exact_but(1e-7));
    let r = r.unwrap();
    assert!(r.cublas, "the step itself agreed");
    assert_eq!(r.params.cuda_graph, CudaGraph::Off);
    let facts = rec.facts();
    assert_eq!(facts["cuda_graph"], "false");
    assert!(
        facts["cuda_graph_fallback"].contains("differ by 1.00e-7 (tolerance 0e0)"),
        "{facts:?}"
    );
    assert_eq!(facts["mlp_engine"], "cublas");

    let insisted = params(Precision::F32, CudaGraph::On, 1.05e-3);
    let (r, _, _, _) = run(&insisted, 100, f32_agree, || {
        Err("cuStreamBeginCapture: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED".into())
    });
    let err = r.err().expect("a failed graph check fails a stage that insists");
    assert!(
        err.to_string().contains("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
        "{err}"
    );
}

/// Nothing is checked where nothing would run on the step: f32 without graphs, a recurrent
/// model, or graphs without a full batch (f32).
#[test]
fn without_half_precision_or_a_graph_to_run_nothing_is_checked() {
    let never = || -> Result<Differences, String> { panic!("not checked") };
    for (p, windows) in [
        (params(Precision::F32, CudaGraph::Off, 1.06e-3), 100),
        (params(Precision::F32, CudaGraph::Auto, 1.07e-3), 10),
        (
            TrainParams {
                model: ModelKind::Lstm,
                hidden: Some(vec![8]),
                ..params(Precision::F32, CudaGraph::Auto, 1.08e-3)
            },
            100,
        ),
    ] {
        let (r, rec, e, g) = run(&p, windows, never, never);
        let r = r.unwrap();
        assert!(!r.cublas);
        assert_eq!(r.params.precision, Precision::F32);
        assert_eq!(rec.facts()["cuda_graph"], "false");
        assert_eq!((e, g), (0, 0));
    }
    // Insisting on graphs with no full batch says why none ran; bf16 still runs its step.
    let p = params(Precision::Bf16, CudaGraph::On, 1.09e-3);
    let (r, rec, e, g) = run(&p, 10, agree, never);
    let r = r.unwrap();
    assert!(r.cublas);
    assert_eq!(r.params.cuda_graph, CudaGraph::Off);
    assert_eq!((e, g), (1, 0));
    let notes = rec.into_parts().1;
    assert!(
        notes.iter().any(|n| n.contains("no full batch of 32 among 10")),
        "{notes:?}"
    );
}
