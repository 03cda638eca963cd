//! Tests of the tensor module: gradients against finite differences, learning, knob
//! invariance, persistence, validation metrics and parameter checks. Models are tiny so the
//! whole file runs in a few seconds in a debug build.

mod equivalence;
mod params;
mod phases;
mod precision;
mod rnn;
mod signal;
mod torch;
mod validate;
mod warmup;

use super::optim::clip_global_norm;
use super::*;
use crate::artifact::WindowSet;
use dfdx::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicBool, Ordering};

const SEQ: usize = 4;
const FEAT: usize = 3;

/// One symbol, windows one row apart. The target is a fixed linear function of the window's
/// last day plus a little noise, so a model can learn it and predicting 0 cannot.
pub(super) fn learnable_windows(n_train: usize, n_valid: usize, seed: u64) -> Arc<Windows> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut split = |n: usize| {
        let rows = n + SEQ - 1;
        let features: Vec<f32> = (0..rows * FEAT).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let targets = (0..n)
            .map(|i| {
                let last = &features[(i + SEQ - 1) * FEAT..(i + SEQ) * FEAT];
                0.8 * last[0] - 0.5 * last[1] + 0.3 * last[2] + rng.gen_range(-0.02..0.02)
            })
            .collect();
        // Four windows per date, so each date has a cross-section to rank; the last return is
        // the last row's first feature.
        let day0 = chrono::NaiveDate::from_ymd_opt(2020, 1, 1).unwrap();
        WindowSet {
            last_return: (0..n).map(|i| features[(i + SEQ - 1) * FEAT]).collect(),
            features,
            starts: (0..n as u32).collect(),
            targets,
            symbol_idx: vec![0; n],
            dates: (0..n).map(|i| day0 + chrono::Duration::days((i / 4) as i64)).collect(),
        }
    };
    let train = split(n_train);
    let valid = split(n_valid);
    Arc::new(Windows {
        seq_len: SEQ,
        n_features: FEAT,
        horizons: 1,
        feature_names: vec!["ret_1".into(), "volume_z".into(), "range".into()],
        symbols: vec!["SYN".into()],
        train,
        valid,
        content_hash: "test".into(),
    })
}

pub(super) fn run_train(windows: &Arc<Windows>, params: &TrainParams, seed: u64) -> (TrainedModel, Recorder) {
    let mut rec = Recorder::new();
    let model = train(windows.clone(), params, seed, &mut rec, &AtomicBool::new(false)).expect("training succeeds");
    (model, rec)
}

pub(super) fn series(rec: &Recorder, name: &str) -> Vec<f64> {
    rec.metrics()
        .iter()
        .filter(|m| m.name == name && m.step.is_some())
        .map(|m| m.value)
        .collect()
}

fn host_loss(model: &TrainedModel, x: &[f32], y: &[f32], rows: usize) -> f64 {
    let dev = Cpu::default();
    let net = Model::from_trained(&dev, model).unwrap();
    let xt = dev.tensor_from_vec(x.to_vec(), (rows, x.len() / rows));
    let pred = net.forward(xt, false).unwrap().as_vec();
    eval::mse(&pred, y)
}

/// An MLP of `widths` (input first) on one-day windows.
pub(super) fn mlp(dev: &Cpu, widths: &[usize], activation: Activation, dropout: f64, seed: u64) -> Model<Cpu> {
    Model::new(dev, &crate::arch::Arch::mlp(widths, activation), dropout, seed).unwrap()
}

/// A recurrent model over windows of `days` days of `features` features.
pub(super) fn rnn(
    dev: &Cpu,
    kind: ModelKind,
    features: usize,
    hidden: &[usize],
    outputs: usize,
    dropout: f64,
    seed: u64,
) -> Model<Cpu> {
    let arch = crate::arch::Arch {
        kind,
        seq_len: 1,
        n_features: features,
        hidden: hidden.to_vec(),
        outputs,
        activation: Activation::Relu,
    };
    Model::new(dev, &arch, dropout, seed).unwrap()
}

#[test]
fn gradients_match_finite_differences() {
    for activation in [Activation::Tanh, Activation::Gelu, Activation::Relu] {
        let dev = Cpu::seed_from_u64(3);
        let mlp = mlp(&dev, &[3, 4, 2], activation, 0.0, 11);
        let rows = 5;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let x: Vec<f32> = (0..rows * 3).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let y: Vec<f32> = (0..rows * 2).map(|_| rng.gen_range(-1.0..1.0)).collect();

        let xt = dev.tensor_from_vec(x.clone(), (rows, 3));
        let yt = dev.tensor_from_vec(y.clone(), (rows, 2));
        // The training path (first product off the tape) against a fully traced pass.
        let (_, grads) = mlp.loss_and_grads(xt.clone(), yt.clone()).unwrap();
        let pred = mlp.forward(xt.traced(Gradients::leaky()), true).unwrap();
        let traced = (pred - yt).square().mean().backward();
        for p in &mlp.params {
            for (a, b) in grads.get(p).as_vec().iter().zip(traced.get(p).as_vec()) {
                assert!((a - b).abs() <= 1e-6, "{activation:?}: {a} vs fully traced {b}");
            }
        }
        assert_eq!(grads.get(&mlp.params[1]).as_vec(), traced.get(&mlp.params[1]).as_vec());

        let base = mlp.to_trained(learnable_windows(1, 1, 0));
        let analytic: Vec<Vec<f32>> = mlp.params.iter().map(|p| grads.get(p).as_vec()).collect();
        assert_finite_differences(&format!("{activation:?}"), &analytic, |at, delta| {
            let mut m = base.clone();
            nudge(&mut m.params, at, delta);
            host_loss(&m, &x, &y, rows)
        });
    }
}

/// One parameter: its index in the model's list and the index within it.
pub(super) type ParamAt = (usize, usize);

/// Adds `delta` to one parameter of a model's flat list.
pub(super) fn nudge(params: &mut [Vec<f32>], (p, i): ParamAt, delta: f32) {
    params[p][i] += delta;
}

/// Asserts that every analytic gradient (`analytic[p]`, in the model's parameter order)
/// matches the central difference of `loss_nudged`, the loss with one parameter moved by a
/// delta.
pub(super) fn assert_finite_differences(label: &str, analytic: &[Vec<f32>], loss_nudged: impl Fn(ParamAt, f32) -> f64) {
    let eps = 1e-2f32;
    for (p, grad) in analytic.iter().enumerate() {
        for (i, &g) in grad.iter().enumerate() {
            let at = (p, i);
            let numeric = (loss_nudged(at, eps) - loss_nudged(at, -eps)) / (2.0 * f64::from(eps));
            let err = (numeric - f64::from(g)).abs();
            assert!(
                err <= 2e-3 + 2e-2 * numeric.abs(),
                "{label} parameter {p} [{i}]: backward {g}, numeric {numeric}"
            );
        }
    }
}

#[test]
fn training_beats_the_naive_baseline() {
    let windows = learnable_windows(512, 128, 1);
    let params = TrainParams {
        hidden: Some(vec![16]),
        batch_size: 32,
        epochs: 15,
        lr: 1e-2,
        ..TrainParams::default()
    };
    let (model, rec) = run_train(&windows, &params, 42);
    let losses = series(&rec, "train_loss");
    assert_eq!(losses.len(), 15);
    assert!(losses[14] < 0.2 * losses[0], "train loss {losses:?}");
    for name in ["epoch_seconds", "samples_per_second", "prep_seconds", "h2d_seconds"] {
        assert!(rec.single(name).is_some_and(|v| v > 0.0), "{name} recorded");
    }
    assert_eq!(series(&rec, "epoch_seconds").len(), 15);

    let mut vrec = Recorder::new();
    validate(&model, &ValidateParams::default(), &mut vrec).unwrap();
    let mse = vrec.single("mse").unwrap();
    let naive = vrec.single("naive_zero_mse").unwrap();
    assert!(mse < 0.1 * naive, "validation mse {mse} vs predict-zero {naive}");
    assert!(vrec.single("direction_accuracy").unwrap() > 0.9);
    assert!(vrec.single("ic").unwrap() > 0.9);
    assert_eq!(vrec.single("mse_vs_zero"), Some(mse / naive));
    let mean_mse = vrec.single("naive_mean_mse").unwrap();
    assert_eq!(vrec.single("mse_vs_mean"), Some(mse / mean_mse));
    // 128 windows, four per date: 32 cross-sections, each ranked well.
    assert_eq!(vrec.single("ic_dates"), Some(32.0));
    assert!(vrec.single("ic_per_date").unwrap() > 0.8);
    assert!(vrec.single("ic_t").unwrap() > 5.0);
    // The last-return baseline is in target units: MSE, sign and rank.
    assert!(vrec.single("naive_last_mse").is_some_and(|m| m > mse));
    assert!(vrec.single("naive_last_direction_accuracy").is_some());
    assert!(vrec.single("naive_last_ic").is_some());
    assert_eq!(vrec.single("valid_windows"), Some(128.0));
}

#[test]
fn knobs_change_speed_never_results() {
    // 150 windows in batches of 32: the last batch is short, exercising the second buffer.
    let windows = learnable_windows(150, 8, 2);
    for cpu_engine in [CpuEngine::Native, CpuEngine::Autodiff] {
        knobs_change_speed_never_results_with(&windows, cpu_engine);
    }
}

fn knobs_change_speed_never_results_with(windows: &Arc<Windows>, cpu_engine: CpuEngine) {
    let base = TrainParams {
        cpu_engine,
        hidden: Some(vec![8, 6]),
        activation: Activation::Gelu,
        dropout: 0.2,
        batch_size: 32,
        epochs: 3,
        lr: 5e-3,
        weight_decay: 0.01,
        grad_clip: Some(0.5),
        ..TrainParams::default()
    };
    let (reference, rec) = run_train(windows, &base, 9);
    let reference_losses = series(&rec, "train_loss");
    let reference_batch_losses = series(&rec, "mean_batch_loss");
    let knobs = [
        (true, 0, 1, 1, true),
        (false, 1, 1, 1, false),
        (true, 3, 0, 1, true),
        (false, 2, 4, 2, true),
        (true, 8, 2, 2, false),
    ];
    for (buffer_reuse, prefetch, loss_sync_every, loss_reads_per_step, phase_timing) in knobs {
        let params = TrainParams {
            buffer_reuse,
            prefetch,
            loss_sync_every,
            loss_reads_per_step,
            phase_timing,
            log_every: 2,
            ..base.clone()
        };
        let (model, rec) = run_train(windows, &params, 9);
        assert_eq!(series(&rec, "train_loss"), reference_losses, "{params:?}");
        assert_eq!(series(&rec, "mean_batch_loss"), reference_batch_losses, "{params:?}");
        assert_eq!(model.params, reference.params, "{params:?}");
        assert_eq!(rec.single("compute_seconds").is_some(), phase_timing);
    }
    let (_, other_seed) = run_train(windows, &base, 10);
    assert_ne!(series(&other_seed, "train_loss"), reference_losses, "{cpu_engine:?}");
}

#[test]
fn gradient_clipping_bounds_the_global_norm() {
    let dev = Cpu::seed_from_u64(0);
    let mlp = mlp(&dev, &[3, 5, 1], Activation::Relu, 0.0, 1);
    let x = dev.tensor_from_vec(vec![3.0; 12], (4, 3));
    let y = dev.tensor_from_vec(vec![-9.0; 4], (4, 1));
    let grads = mlp
        .forward(x.traced(Gradients::leaky()), true)
        .unwrap()
        .try_sub(y)
        .unwrap()
        .square()
        .mean()
        .backward();
    let flat = |g: &Gradients<f32, Cpu>| -> Vec<f32> { mlp.params.iter().flat_map(|p| g.get(p).as_vec()).collect() };
    let norm = |v: &[f32]| v.iter().map(|g| f64::from(*g).powi(2)).sum::<f64>().sqrt();
    let raw = flat(&grads);
    assert!(norm(&raw) > 1.0, "the test needs a large gradient");
    let clipped = flat(&clip_global_norm(&mlp, &grads, 1.0).unwrap());
    assert!((norm(&clipped) - 1.0).abs() < 1e-4, "norm {}", norm(&clipped));
    let scale = norm(&clipped) / norm(&raw);
    for (c, r) in clipped.iter().zip(&raw) {
        assert!((f64::from(*c) - scale * f64::from(*r)).abs() < 1e-5);
    }
    // Below the bound, gradients pass through unchanged.
    let untouched = flat(&clip_global_norm(&mlp, &grads, 1e9).unwrap());
    assert_eq!(untouched, raw);
}

#[test]
fn save_load_round_trip_for_every_model_kind() {
    let windows = learnable_windows(64, 16, 3);
    for (model, hidden) in [
        (ModelKind::Mlp, vec![5, 4]),
        (ModelKind::Lstm, vec![3, 3]),
        (ModelKind::Gru, vec![4]),
    ] {
        let params = TrainParams {
            model,
            hidden: Some(hidden),
            activation: Activation::Tanh,
            batch_size: 16,
            ..TrainParams::default()
        };
        let (trained, _) = run_train(&windows, &params, 1);
        let dev = Cpu::default();
        let net = Model::from_trained(&dev, &trained).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        net.save_model(&path).unwrap();
        let loaded = Model::load_model(&dev, &path).unwrap();
        assert_eq!(loaded.arch, trained.arch, "{model:?}");
        let back = loaded.to_trained(windows.clone());
        assert_eq!(back, trained, "{model:?}");
        // Inference through the loaded model: the same predictions at any batch size, and
        // validation scores them.
        let mut a = Recorder::new();
        validate(
            &back,
            &ValidateParams {
                batch_size: 7,
                ..ValidateParams::default()
            },
            &mut a,
        )
        .unwrap();
        let mut b = Recorder::new();
        validate(&trained, &ValidateParams::default(), &mut b).unwrap();
        assert_eq!(
            a.single("mse"),
            b.single("mse"),
            "{model:?}: batch size does not change predictions"
        );
        assert!(a.single("naive_zero_mse").is_some() && a.single("naive_last_mse").is_some());

        std::fs::write(&path, b"not a model").unwrap();
        assert!(matches!(
            Model::load_model(&dev, &path),
            Err(TrainError::ModelFile { .. })
        ));
        let mut broken = trained.clone();
        broken.params[0].pop();
        assert!(matches!(Model::from_trained(&dev, &broken), Err(TrainError::Shape(_))));
    }
}

/// A file written before models had kinds (an MLP with `activation` and `widths` only) still
/// loads, as the MLP it is.
#[test]
fn a_model_file_without_a_kind_loads_as_an_mlp() {
    use safetensors::tensor::{Dtype, TensorView};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.safetensors");
    let w: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let b: Vec<u8> = [0.5f32, -0.5].iter().flat_map(|v| v.to_le_bytes()).collect();
    let views = vec![
        (
            "layers.0.weight".to_owned(),
            TensorView::new(Dtype::F32, vec![3, 2], &w).unwrap(),
        ),
        (
            "layers.0.bias".to_owned(),
            TensorView::new(Dtype::F32, vec![2], &b).unwrap(),
        ),
    ];
    let meta = std::collections::HashMap::from([
        ("activation".to_owned(), "relu".to_owned()),
        ("widths".to_owned(), "3,2".to_owned()),
    ]);
    safetensors::serialize_to_file(views, &Some(meta), &path).unwrap();
    let dev = Cpu::default();
    let loaded = Model::load_model(&dev, &path).unwrap();
    assert_eq!(loaded.arch.kind, ModelKind::Mlp);
    assert_eq!(loaded.arch.mlp_widths(), vec![3, 2]);
    assert_eq!(loaded.params[1].as_vec(), vec![0.5, -0.5]);
    assert_eq!(loaded.target, crate::artifact::TargetScale::IDENTITY);
}

#[test]
fn cancellation_stops_training() {
    let windows = learnable_windows(64, 8, 4);
    for prefetch in [0, 2] {
        let params = TrainParams {
            hidden: Some(vec![4]),
            batch_size: 8,
            prefetch,
            ..TrainParams::default()
        };
        let cancel = AtomicBool::new(false);
        cancel.store(true, Ordering::Relaxed);
        let result = train(windows.clone(), &params, 0, &mut Recorder::new(), &cancel);
        assert!(matches!(result, Err(TrainError::Cancelled)), "prefetch {prefetch}");
    }
}

/// `hidden = [100000000]` used to abort the process for want of memory; now `train` refuses
/// it on the real windows before allocating, with the estimate.
#[test]
fn a_model_too_large_for_its_bound_is_an_error_before_anything_is_allocated() {
    let windows = learnable_windows(16, 4, 6);
    let params = TrainParams {
        hidden: Some(vec![100_000_000]),
        ..TrainParams::default()
    };
    let r = train(windows, &params, 0, &mut Recorder::new(), &AtomicBool::new(false));
    let Err(TrainError::Params(e)) = r else {
        panic!("expected a parameter error, got {r:?}")
    };
    // On these narrow windows the batch's activations take most of it.
    assert_eq!(e.field, "batch_size");
    assert!(e.message.contains("above the limit of 16.0 GiB"), "{}", e.message);
}

#[test]
fn malformed_windows_are_errors() {
    let mut windows = (*learnable_windows(16, 4, 5)).clone();
    windows.train.targets.pop();
    let r = train(
        Arc::new(windows),
        &TrainParams::default(),
        0,
        &mut Recorder::new(),
        &AtomicBool::new(false),
    );
    assert!(matches!(r, Err(TrainError::Shape(_))));
    let mut empty = (*learnable_windows(16, 4, 5)).clone();
    empty.train = WindowSet::default();
    let r = train(
        Arc::new(empty),
        &TrainParams::default(),
        0,
        &mut Recorder::new(),
        &AtomicBool::new(false),
    );
    assert!(matches!(r, Err(TrainError::EmptyData(_))));
}

#[test]
fn rank_and_sign_metrics() {
    let spearman_tied = spearman(&[1.0, 2.0, 2.0, 3.0], &[10.0, 20.0, 20.0, 30.0]).unwrap();
    assert!((spearman_tied - 1.0).abs() < 1e-12);
    let reversed = spearman(&[1.0, 2.0, 3.0], &[3.0, 1.0, 0.0]).unwrap();
    assert!((reversed + 1.0).abs() < 1e-12);
    assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
    // Zero targets are skipped; a zero prediction is a miss.
    let acc = direction_accuracy(&[0.5, -0.1, 0.0, 2.0], &[1.0, 1.0, 1.0, 0.0]).unwrap();
    assert!((acc - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(direction_accuracy(&[1.0], &[0.0]), None);
    assert!((mse(&[1.0, 3.0], &[0.0, 0.0]) - 5.0).abs() < 1e-12);
    assert!((mae(&[1.0, -3.0], &[0.0, 0.0]) - 2.0).abs() < 1e-12);
}

#[test]
fn targets_are_standardized_with_training_statistics_and_predictions_come_back_in_target_units() {
    // Targets far from mean 0 and sd 1: the model must still predict them in their own units.
    let base = learnable_windows(512, 128, 5);
    let mut shifted = (*base).clone();
    for set in [&mut shifted.train, &mut shifted.valid] {
        set.targets.iter_mut().for_each(|t| *t = 0.01 * *t + 0.002);
    }
    let windows = Arc::new(shifted);
    let params = TrainParams {
        hidden: Some(vec![16]),
        batch_size: 32,
        epochs: 15,
        lr: 1e-2,
        ..TrainParams::default()
    };
    let (model, _) = run_train(&windows, &params, 42);
    let want = crate::artifact::TargetScale::of(&windows.train.targets);
    assert_eq!(model.target, want);
    assert!((want.mean - 0.002).abs() < 0.003 && want.sd < 0.02, "{want:?}");
    let mut vrec = Recorder::new();
    validate(&model, &ValidateParams::default(), &mut vrec).unwrap();
    assert!(vrec.single("mse_vs_zero").unwrap() < 0.1);
    assert!(vrec.single("mse_vs_mean").unwrap() < 0.1);
    // Restoring undoes standardizing.
    for t in [-0.05f32, 0.0, 0.002, 0.03] {
        assert!((want.restore(want.standardize(t)) - t).abs() < 1e-7);
    }
}

#[test]
fn a_train_target_records_time_and_epochs_to_reach_it_or_a_note_when_never_reached() {
    let windows = learnable_windows(256, 64, 6);
    let reachable = TrainParams {
        hidden: Some(vec![16]),
        batch_size: 32,
        epochs: 6,
        lr: 1e-2,
        target: Some(TrainTarget { mse_vs_zero: 0.5 }),
        ..TrainParams::default()
    };
    let (_, rec) = run_train(&windows, &reachable, 3);
    let ratios = series(&rec, "valid_mse_vs_zero");
    assert_eq!(ratios.len(), 6);
    let first = ratios.iter().position(|&r| r <= 0.5).expect("reached");
    assert_eq!(rec.single("epochs_to_target"), Some((first + 1) as f64));
    let seconds: f64 = series(&rec, "epoch_seconds")[..=first].iter().sum();
    assert_eq!(rec.single("seconds_to_target"), Some(seconds));
    assert!(rec.notes().is_empty());

    let unreachable = TrainParams {
        epochs: 2,
        target: Some(TrainTarget { mse_vs_zero: 1e-9 }),
        ..reachable
    };
    let (_, rec) = run_train(&windows, &unreachable, 3);
    assert_eq!(rec.single("seconds_to_target"), None);
    assert_eq!(rec.single("epochs_to_target"), None);
    assert!(
        rec.notes()[0].contains("never reached 0.000000001 x the naive-zero MSE in 2 epochs"),
        "{:?}",
        rec.notes()
    );
}

/// `device = "auto"` in a build without CUDA trains on the CPU, exactly as `"cpu"` does, and
/// the stage notes where it ran and why.
#[test]
#[cfg(not(feature = "cuda"))]
fn auto_device_falls_back_to_the_cpu_with_a_note_and_the_same_results() {
    let windows = learnable_windows(64, 16, 4);
    let cpu = TrainParams {
        hidden: Some(vec![8]),
        batch_size: 16,
        epochs: 2,
        ..TrainParams::default()
    };
    let auto = TrainParams {
        device: DeviceKind::Auto,
        ..cpu.clone()
    };
    let (_, cpu_rec) = run_train(&windows, &cpu, 9);
    let (model, auto_rec) = run_train(&windows, &auto, 9);
    assert_eq!(series(&auto_rec, "train_loss"), series(&cpu_rec, "train_loss"));
    assert!(
        cpu_rec.notes().iter().all(|n| !n.contains("auto")),
        "{:?}",
        cpu_rec.notes()
    );
    assert!(
        auto_rec
            .notes()
            .contains(&"device = \"auto\" ran on the CPU: this binary was built without CUDA".to_owned()),
        "{:?}",
        auto_rec.notes()
    );
    let mut vrec = Recorder::new();
    let params = ValidateParams {
        device: DeviceKind::Auto,
        ..ValidateParams::default()
    };
    validate(&model, &params, &mut vrec).unwrap();
    assert!(vrec.single("mse").is_some());
    assert_eq!(vrec.notes().len(), 1, "{:?}", vrec.notes());
}

/// A batch whose shape does not fit the model is an error of the step, never a panic: inputs
/// that are not whole rows (or whole days), and targets that do not match the predictions.
#[test]
fn a_batch_that_does_not_fit_the_model_is_a_shape_error() {
    use super::native::{engine, Products};
    use crate::kinds::train::HiddenState;
    let dev = Cpu::default();
    let models = [
        mlp(&dev, &[3, 4, 1], Activation::Relu, 0.0, 1),
        rnn(&dev, ModelKind::Lstm, 3, &[4], 1, 0.0, 1),
        rnn(&dev, ModelKind::Gru, 3, &[4], 1, 0.0, 1),
    ];
    for model in &models {
        let kind = model.arch.kind;
        let mut net = engine(&dev, model, 0, HiddenState::PerBatch, Products::F32).unwrap();
        let (rows, x) = (2, vec![0.5f32; 6]);
        assert_eq!(net.forward(&x, rows, false).unwrap().len(), 2, "{kind:?}");
        for bad in [
            net.forward(&x[..5], rows, false).map(|p| p.len()),
            net.forward(&x, 4, false).map(|p| p.len()),
        ] {
            assert!(matches!(bad, Err(TrainError::Shape(_))), "{kind:?}: {bad:?}");
        }
        let wrong_targets = net.loss_and_grads(&x, &[0.0; 3], rows);
        assert!(
            matches!(wrong_targets, Err(TrainError::Shape(_))),
            "{kind:?}: {wrong_targets:?}"
        );
        assert!(net.loss_and_grads(&x, &[0.0; 2], rows).unwrap().is_finite(), "{kind:?}");
    }
}
