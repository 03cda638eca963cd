//! measured's LSTM and GRU against PyTorch's: the fixture `tests/fixtures/torch/rnn_adam.json`
//! (written by `bench/rnn_crosscheck.py`) holds PyTorch's starting weights, 20 batches and the
//! loss PyTorch computed before each of 20 Adam steps. Both of measured's engines replay those
//! steps from the same weights and must agree on every loss to 1e-4 relative.

use crate::arch::Arch;
use crate::tensor::native::{engine, Products};
use crate::tensor::optim::AdamW;
use crate::tensor::*;
use dfdx::prelude::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    features: usize,
    hidden: usize,
    layers: usize,
    days: usize,
    batch: usize,
    outputs: usize,
    lr: f64,
    x: Vec<Vec<f32>>,
    y: Vec<Vec<f32>>,
    kinds: std::collections::BTreeMap<String, Kind>,
}

#[derive(Deserialize)]
struct Kind {
    params: Vec<Vec<f32>>,
    losses: Vec<f64>,
}

fn fixture() -> Fixture {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/torch/rnn_adam.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)
}

#[test]
fn losses_agree_with_pytorch_for_20_adam_steps_on_both_engines() {
    let f = fixture();
    assert_eq!(f.kinds.len(), 2, "the fixture holds an LSTM and a GRU");
    for (name, kind) in &f.kinds {
        assert_eq!(kind.losses.len(), 20);
        let arch = Arch {
            kind: crate::arch::ModelKind::parse(name).unwrap(),
            seq_len: f.days,
            n_features: f.features,
            hidden: vec![f.hidden; f.layers],
            outputs: f.outputs,
            activation: Activation::Relu,
        };
        let dev = Cpu::default();
        let identity = crate::artifact::TargetScale::IDENTITY;

        // The CPU engine, driving dfdx's fused Adam as the training loop does.
        let mut model = Model::from_host(&dev, &arch, &kind.params, identity).unwrap();
        let mut opt = AdamW::new(&model, f.lr, 0.0).unwrap();
        let mut net = engine(&dev, &model, 0, HiddenState::PerBatch, Products::F32).unwrap();
        for (step, ((x, y), want)) in f.x.iter().zip(&f.y).zip(&kind.losses).enumerate() {
            let got = f64::from(net.loss_and_grads(x, y, f.batch).unwrap());
            assert!(
                relative(got, *want) <= 1e-4,
                "{name} native, step {step}: {got} vs PyTorch {want}"
            );
            opt.step_buffers(&mut model, net.grads()).unwrap();
            net.refresh(&model);
        }

        // dfdx's autodiff over the composed cells (the CUDA path's engine).
        let mut model = Model::from_host(&dev, &arch, &kind.params, identity).unwrap();
        let mut opt = AdamW::new(&model, f.lr, 0.0).unwrap();
        for (step, ((x, y), want)) in f.x.iter().zip(&f.y).zip(&kind.losses).enumerate() {
            let xt = dev.tensor_from_vec(x.clone(), (f.batch, f.days * f.features));
            let yt = dev.tensor_from_vec(y.clone(), (f.batch, f.outputs));
            let (loss, mut grads) = model.loss_and_grads(xt, yt).unwrap();
            let got = f64::from(loss.array());
            assert!(
                relative(got, *want) <= 1e-4,
                "{name} autodiff, step {step}: {got} vs PyTorch {want}"
            );
            opt.step(&mut model, &mut grads).unwrap();
        }
        // The steps moved the loss: a replay that ignored the updates could not pass.
        assert!(
            relative(kind.losses[19], kind.losses[0]) > 1e-2,
            "{name}: {:?}",
            kind.losses
        );
    }
}
