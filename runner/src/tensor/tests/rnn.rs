//! Tests of the recurrent models: the CPU engine against dfdx's autodiff and both against
//! finite differences, the hidden-state knob, learning, and their parameters.

use crate::tensor::native::{engine, random, NativeNet, NativeRnn, Products};
use crate::tensor::tests::{assert_finite_differences, learnable_windows, nudge, rnn, run_train, series};
use crate::tensor::*;
use dfdx::prelude::*;

fn close(a: f32, b: f32, what: &str) {
    assert!((a - b).abs() <= 1e-5 + 1e-4 * b.abs(), "{what}: native {a} vs dfdx {b}");
}

/// The same loss, gradients and predictions as the dfdx composition of the cells, for both
/// kinds, one and two layers, several outputs, and a batch large enough that the per-day
/// passes run in parallel.
#[test]
fn native_engine_matches_dfdx_autodiff() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for kind in [ModelKind::Lstm, ModelKind::Gru] {
        for (features, hidden, days, rows) in [(3, vec![4], 4, 6), (3, vec![5, 5], 3, 7), (6, vec![16, 16], 5, 300)] {
            let dev = Cpu::seed_from_u64(1);
            let model = rnn(&dev, kind, features, &hidden, 2, 0.0, 3);
            let x = random(rows * days * features, 4);
            let y = random(rows * 2, 5);
            let (loss, grads) = model
                .loss_and_grads(
                    dev.tensor_from_vec(x.clone(), (rows, days * features)),
                    dev.tensor_from_vec(y.clone(), (rows, 2)),
                )
                .unwrap();
            let mut native = engine(&dev, &model, 0, HiddenState::PerBatch, Products::F32).unwrap();
            let native_loss = pool.install(|| native.loss_and_grads(&x, &y, rows).unwrap());
            let what = format!("{kind:?} {hidden:?} x{days} days, {rows} rows");
            close(native_loss, loss.array(), &format!("{what} loss"));
            let names = model.arch.params();
            for ((p, g), spec) in model.params.iter().zip(native.grads()).zip(&names) {
                let reference = grads.get(p).as_vec();
                assert!(
                    reference.iter().any(|v| *v != 0.0),
                    "{what}: {} has a gradient",
                    spec.name
                );
                for (a, b) in g.iter().zip(reference) {
                    close(*a, b, &format!("{what} {} grad", spec.name));
                }
            }
            let pred = model
                .forward(dev.tensor_from_vec(x.clone(), (rows, days * features)), false)
                .unwrap();
            let native_pred = pool.install(|| native.forward(&x, rows, false).unwrap().to_vec());
            for (a, b) in native_pred.iter().zip(pred.as_vec()) {
                close(*a, b, &format!("{what} prediction"));
            }
        }
    }
}

/// Inference keeps only rings of recent days (gates, cells, hidden states) where training
/// keeps every day; the predictions are bit-identical, whatever the number of days against the
/// rings' sizes (one day, a whole chunk, rings that wrap once and several times) and blocks.
#[test]
fn inference_rings_predict_exactly_as_training_buffers() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for kind in [ModelKind::Lstm, ModelKind::Gru] {
        for days in [1, 2, 5, 9, 17] {
            let (features, rows) = (3, 130);
            let dev = Cpu::seed_from_u64(9);
            let model = rnn(&dev, kind, features, &[6, 5], 1, 0.0, 10);
            let x = random(rows * days * features, 11);
            let mut native = engine(&dev, &model, 0, HiddenState::PerBatch, Products::F32).unwrap();
            let (kept_all, kept_rings) = pool.install(|| {
                let all = native.forward(&x, rows, true).unwrap().to_vec();
                (all, native.forward(&x, rows, false).unwrap().to_vec())
            });
            assert_eq!(kept_all.len(), rows);
            assert!(kept_all.iter().any(|v| *v != 0.0), "{kind:?} x{days}: predictions");
            let bits = |v: &[f32]| v.iter().map(|p| p.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&kept_all), bits(&kept_rings), "{kind:?} x{days} days");
        }
    }
}

/// Backpropagation through time, checked numerically: the autodiff composition (the CUDA
/// path's) without dropout, and the CPU engine with dropout between two layers, replaying the
/// same masks with one parameter nudged.
#[test]
fn gradients_match_finite_differences() {
    let (features, days, rows) = (2, 3, 4);
    let x = random(rows * days * features, 6);
    let y = random(rows, 7);
    for kind in [ModelKind::Lstm, ModelKind::Gru] {
        let dev = Cpu::seed_from_u64(2);
        let model = rnn(&dev, kind, features, &[3, 3], 1, 0.0, 8);
        let (_, grads) = model
            .loss_and_grads(
                dev.tensor_from_vec(x.clone(), (rows, days * features)),
                dev.tensor_from_vec(y.clone(), (rows, 1)),
            )
            .unwrap();
        let analytic: Vec<Vec<f32>> = model.params.iter().map(|p| grads.get(p).as_vec()).collect();
        let base: Vec<Vec<f32>> = model.params.iter().map(|p| p.as_vec()).collect();
        assert_finite_differences(&format!("{kind:?} autodiff"), &analytic, |at, delta| {
            let mut host = base.clone();
            nudge(&mut host, at, delta);
            let m = Model::from_host(&dev, &model.arch, &host, model.target).unwrap();
            let pred = m
                .forward(dev.tensor_from_vec(x.clone(), (rows, days * features)), false)
                .unwrap();
            eval::mse(&pred.as_vec(), &y)
        });

        let dropped = rnn(&dev, kind, features, &[3, 3], 1, 0.4, 8);
        let start = NativeRnn::new(&dev, &dropped, 9, HiddenState::PerBatch, Products::F32).unwrap();
        let mut native = start.clone();
        native.loss_and_grads(&x, &y, rows).unwrap();
        let analytic: Vec<Vec<f32>> = native.grads().iter().map(|g| g.to_vec()).collect();
        assert_finite_differences(&format!("{kind:?} native, dropout"), &analytic, |at, delta| {
            let mut replay = start.clone();
            let mut host: Vec<Vec<f32>> = dropped.params.iter().map(|p| p.as_vec()).collect();
            nudge(&mut host, at, delta);
            let m = Model::from_host(&dev, &dropped.arch, &host, dropped.target).unwrap();
            replay.refresh(&m);
            f64::from(replay.loss_and_grads(&x, &y, rows).unwrap())
        });
    }
}

/// `hidden_state = "reuse"` zeroes one buffer in place instead of allocating a zeroed one per
/// batch: the same losses and weights, bit for bit, with other knobs too, on both engines (the
/// autodiff one is the CUDA path's).
#[test]
fn the_hidden_state_knob_changes_allocation_never_results() {
    let windows = learnable_windows(150, 8, 2);
    let engines = [ModelKind::Lstm, ModelKind::Gru]
        .into_iter()
        .flat_map(|m| [(m, CpuEngine::Native), (m, CpuEngine::Autodiff)]);
    for (model, cpu_engine) in engines {
        let base = TrainParams {
            model,
            cpu_engine,
            hidden: Some(vec![6]),
            layers: Some(2),
            dropout: 0.2,
            batch_size: 32,
            epochs: 2,
            lr: 5e-3,
            grad_clip: Some(0.5),
            ..TrainParams::default()
        };
        let (reference, rec) = run_train(&windows, &base, 9);
        for (hidden_state, buffer_reuse, prefetch) in [
            (HiddenState::Reuse, false, 0),
            (HiddenState::Reuse, true, 2),
            (HiddenState::PerBatch, true, 1),
        ] {
            let params = TrainParams {
                hidden_state,
                buffer_reuse,
                prefetch,
                ..base.clone()
            };
            let (trained, other) = run_train(&windows, &params, 9);
            assert_eq!(series(&other, "train_loss"), series(&rec, "train_loss"), "{params:?}");
            assert_eq!(trained.params, reference.params, "{params:?}");
        }
    }
}

/// Both kinds learn the linear signal of the last day and beat predicting zero on held-out
/// windows, on the CPU engine and on the autodiff one.
#[test]
fn recurrent_models_learn() {
    let windows = learnable_windows(512, 128, 1);
    for model in [ModelKind::Lstm, ModelKind::Gru] {
        for cpu_engine in [CpuEngine::Native, CpuEngine::Autodiff] {
            let params = TrainParams {
                model,
                cpu_engine,
                hidden: Some(vec![16]),
                batch_size: 32,
                epochs: 12,
                lr: 1e-2,
                ..TrainParams::default()
            };
            let (trained, rec) = run_train(&windows, &params, 42);
            let losses = series(&rec, "train_loss");
            assert!(
                losses[11] < 0.3 * losses[0],
                "{model:?} {cpu_engine:?}: train loss {losses:?}"
            );
            let mut vrec = Recorder::new();
            validate(&trained, &ValidateParams::default(), &mut vrec).unwrap();
            let ratio = vrec.single("mse_vs_zero").unwrap();
            assert!(
                ratio < 0.3,
                "{model:?} {cpu_engine:?}: validation mse / predict-zero {ratio}"
            );
        }
    }
}
