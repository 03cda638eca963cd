//! Tests of mixed precision: what an f16 product computes, loss scaling, and f16 training end
//! to end on both CPU engines' model kinds.

use crate::tensor::batches::HostBatch;
use crate::tensor::engine::{NativeCpuEngine, StepEngine};
use crate::tensor::native::{engine, random, NativeNet, Products, View};
use crate::tensor::optim::LossScaler;
use crate::tensor::tests::{learnable_windows, mlp, rnn, run_train};
use crate::tensor::train_loop::warm_up;
use crate::tensor::*;
use half::f16;

fn round16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|x| f16::from_f32(*x).to_f32()).collect()
}

/// An f16 product is the exact product of the operands rounded to f16, accumulated in f32 and
/// rounded to f16 once at the end: within one f16 unit in the last place of the exact sum, and
/// visibly different from the f32 product. Pre-converted f16 operands (the engines' weight
/// copies) give the same bits as converting on the fly, transposed views included, and
/// accumulation adds the rounded product to f32 values.
#[test]
fn f16_products_round_operands_and_result_once_and_accumulate_in_f32() {
    let (m, k, n) = (37, 300, 19);
    let a = random(m * k, 1);
    let b = random(k * n, 2);
    let (a16, b16) = (round16(&a), round16(&b));
    let mut half = vec![0.0; m * n];
    Products::F16.matmul(&mut half, View::new(&a, m, k), View::new(&b, k, n));
    let mut single = vec![0.0; m * n];
    Products::F32.matmul(&mut single, View::new(&a, m, k), View::new(&b, k, n));
    let mut differs = 0;
    for i in 0..m {
        for j in 0..n {
            let exact: f64 = (0..k)
                .map(|p| f64::from(a16[i * k + p]) * f64::from(b16[p * n + j]))
                .sum();
            let got = f64::from(half[i * n + j]);
            assert_eq!(got, f64::from(f16::from_f64(got).to_f32()), "results are f16 values");
            assert!(
                (got - exact).abs() <= exact.abs() * 2f64.powi(-10) + 2f64.powi(-24),
                "({i}, {j}): {got} vs exact {exact}"
            );
            differs += usize::from(half[i * n + j] != single[i * n + j]);
        }
    }
    assert!(
        differs > m * n / 2,
        "only {differs} of {} entries differ from f32",
        m * n
    );

    // Weights kept as f16 copies, read transposed: the same bits as rounding on the fly.
    let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
    let bt16: Vec<f16> = bt.iter().map(|x| f16::from_f32(*x)).collect();
    let mut from_copy = vec![0.0; m * n];
    Products::F16.matmul(&mut from_copy, View::new(&a, m, k), View::new(&bt16[..], n, k).t());
    assert_eq!(from_copy, half);
    // An f32 product reading an f16 copy widens it: the f32 product of the rounded values.
    let mut widened = vec![0.0; m * n];
    Products::F32.matmul(&mut widened, View::new(&a, m, k), View::new(&bt16[..], n, k).t());
    let mut rounded = vec![0.0; m * n];
    Products::F32.matmul(&mut rounded, View::new(&a, m, k), View::new(&b16, k, n));
    assert_eq!(widened, rounded);

    // Accumulation: f32 values plus the rounded product, in f32.
    let base = random(m * n, 3);
    let mut acc = base.clone();
    Products::F16.matmul_into(&mut acc, View::new(&a, m, k), View::new(&b, k, n), true);
    let want: Vec<f32> = base.iter().zip(&half).map(|(c, p)| c + p).collect();
    assert_eq!(acc, want);
}

/// The relative distance between two gradient vectors.
fn rel_dist(a: &[f32], b: &[f32]) -> f64 {
    let diff: f64 = a.iter().zip(b).map(|(x, y)| f64::from(x - y).powi(2)).sum();
    let norm: f64 = b.iter().map(|y| f64::from(*y).powi(2)).sum();
    (diff / norm.max(1e-30)).sqrt()
}

fn models(dev: &Cpu) -> Vec<(&'static str, Model<Cpu>, usize)> {
    vec![
        ("mlp", mlp(dev, &[24, 32, 16, 2], Activation::Gelu, 0.0, 3), 24),
        ("lstm", rnn(dev, ModelKind::Lstm, 4, &[16, 16], 2, 0.0, 3), 6 * 4),
        ("gru", rnn(dev, ModelKind::Gru, 4, &[16, 16], 2, 0.0, 3), 6 * 4),
    ]
}

/// With f16 products, every model kind's loss, gradients (loss-scaled, then divided back) and
/// predictions stay within f16's precision of the f32 engine's on the same weights and batch.
#[test]
fn f16_engines_track_the_f32_engines() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let dev = Cpu::seed_from_u64(0);
    let rows = 150;
    for (name, model, input) in models(&dev) {
        let x = random(rows * input, 4);
        let y = random(rows * 2, 5);
        let mut exact = engine(&dev, &model, 0, HiddenState::PerBatch, Products::F32).unwrap();
        let mut half = engine(&dev, &model, 0, HiddenState::PerBatch, Products::F16).unwrap();
        let (loss32, loss16) = pool.install(|| {
            (
                exact.loss_and_grads(&x, &y, rows).unwrap(),
                half.loss_and_grads_scaled(&x, &y, rows, 1024.0).unwrap(),
            )
        });
        assert!(
            ((loss16 - loss32) / loss32).abs() < 2e-3,
            "{name}: loss {loss16} vs {loss32}"
        );
        for (i, (g16, g32)) in half.grads().iter().zip(exact.grads()).enumerate() {
            let unscaled: Vec<f32> = g16.iter().map(|g| g / 1024.0).collect();
            let d = rel_dist(&unscaled, g32);
            assert!(d < 1e-2, "{name}: parameter {i} gradient off by {d:e}");
            assert!(
                d > 0.0,
                "{name}: parameter {i} gradient is bit-identical: no f16 product ran"
            );
        }
        let (p32, p16) = pool.install(|| {
            (
                exact.forward(&x, rows, false).unwrap().to_vec(),
                half.forward(&x, rows, false).unwrap().to_vec(),
            )
        });
        assert!(
            rel_dist(&p16, &p32) < 2e-3,
            "{name}: predictions {}",
            rel_dist(&p16, &p32)
        );
    }
}

/// Why the scale exists: a gradient below f16's smallest subnormal (6e-8) flushes to zero in an
/// f16 product. Unscaled, the first layer's gradient vanishes; scaled up it survives, and two
/// scales that keep it in f16's normal range agree once divided back.
#[test]
fn loss_scaling_keeps_gradients_f16_would_flush_to_zero() {
    let dev = Cpu::seed_from_u64(0);
    for (name, model, input) in models(&dev) {
        let rows = 64;
        let x = random(rows * input, 6);
        let mut net = engine(&dev, &model, 0, HiddenState::PerBatch, Products::F16).unwrap();
        // Targets a hair from the f16 model's own predictions: dL/dpred ~ 2/128 * 1e-7.
        let y: Vec<f32> = net.forward(&x, rows, false).unwrap().iter().map(|p| p + 1e-7).collect();
        let first =
            |net: &dyn NativeNet, scale: f32| -> Vec<f32> { net.grads()[0].iter().map(|g| g / scale).collect() };
        net.loss_and_grads_scaled(&x, &y, rows, 1.0).unwrap();
        let flushed = first(&*net, 1.0);
        assert!(
            flushed.iter().all(|g| *g == 0.0),
            "{name}: unscaled gradients survived f16"
        );
        let (s1, s2) = (2f32.powi(26), 2f32.powi(28));
        net.loss_and_grads_scaled(&x, &y, rows, s1).unwrap();
        let kept = first(&*net, s1);
        assert!(
            kept.iter().filter(|g| **g != 0.0).count() > kept.len() / 2,
            "{name}: scaled gradients flushed"
        );
        net.loss_and_grads_scaled(&x, &y, rows, s2).unwrap();
        let d = rel_dist(&first(&*net, s2), &kept);
        assert!(d < 2e-2, "{name}: two scales disagree by {d:e}");
    }
}

/// PyTorch's `GradScaler` rules: an overflow skips the step, leaves the gradients alone and
/// halves the scale; otherwise gradients are divided exactly, and the scale doubles after
/// exactly `GROWTH_INTERVAL` clean steps in a row.
#[test]
fn the_loss_scaler_skips_overflows_backs_off_and_grows() {
    let mut s = LossScaler::new();
    assert_eq!(s.scale(), 65536.0);
    for bad in [f32::INFINITY, f32::NAN, f32::NEG_INFINITY] {
        let mut g = [vec![1.0f32, 2.0], vec![3.0, bad]];
        assert!(!s.unscale(g.iter_mut().map(|v| &mut v[..])));
        assert_eq!(g[0], [1.0, 2.0], "a skipped step's gradients are untouched");
    }
    assert_eq!((s.scale(), s.skipped()), (8192.0, 3));
    let mut g = [vec![3.0 * 8192.0, -0.5 * 8192.0]];
    assert!(s.unscale(g.iter_mut().map(|v| &mut v[..])));
    assert_eq!(g[0], [3.0, -0.5]);
    for _ in 1..LossScaler::GROWTH_INTERVAL - 1 {
        assert!(s.unscale([&mut [1.0f32][..]]));
    }
    assert_eq!(s.scale(), 8192.0, "one clean step short of the interval");
    assert!(s.unscale([&mut [1.0f32][..]]));
    assert_eq!(s.scale(), 16384.0);
    // An overflow resets the count: the next growth needs a full interval again.
    assert!(!s.unscale([&mut [f32::INFINITY][..]]));
    for _ in 0..LossScaler::GROWTH_INTERVAL - 1 {
        s.unscale([&mut [1.0f32][..]]);
    }
    assert_eq!(s.scale(), 8192.0);
}

/// In the training step: a scale large enough to overflow the f16 products skips the update
/// (weights unchanged) and halves the scale; the next step at a sane scale updates.
#[test]
fn an_overflowing_f16_step_is_skipped_and_the_next_one_updates() {
    let dev = Cpu::seed_from_u64(0);
    let mut model = mlp(&dev, &[24, 32, 2], Activation::Relu, 0.0, 1);
    let params = TrainParams {
        precision: Precision::F16,
        ..Default::default()
    };
    let mut step = NativeCpuEngine::new(&dev, &model, &params, 0).unwrap();
    let batch = HostBatch {
        x: random(32 * 24, 1),
        y: random(32 * 2, 2),
        rows: 32,
    };
    let weights = |m: &Model<Cpu>| -> Vec<Vec<f32>> { m.params.iter().map(|p| p.as_vec()).collect() };
    let before = weights(&model);
    *step.scaler_mut().unwrap() = LossScaler::starting_at(2f32.powi(40));
    step.upload(&dev, &batch, false).unwrap();
    step.step(&dev, &mut model).unwrap();
    assert_eq!(weights(&model), before, "the overflowed step changed the weights");
    let scaler = step.scaler_mut().unwrap();
    assert_eq!((scaler.scale(), scaler.skipped()), (2f32.powi(39), 1));
    *scaler = LossScaler::new();
    step.upload(&dev, &batch, false).unwrap();
    step.step(&dev, &mut model).unwrap();
    assert_ne!(weights(&model), before);
    assert_eq!(step.scaler_mut().unwrap().skipped(), 0);
}

/// An MLP with one hidden layer of 64 set to train in f16, with its windows, parameters and
/// device: what the conversion-buffer tests train.
fn f16_mlp() -> (Arc<Windows>, TrainParams, Cpu, Model<Cpu>) {
    let windows = learnable_windows(300, 50, 3);
    let params = TrainParams {
        hidden: Some(vec![64]),
        precision: Precision::F16,
        ..Default::default()
    };
    let dev = Cpu::seed_from_u64(0);
    let arch = params.arch(windows.seq_len, windows.n_features, 1).unwrap();
    let model = Model::new(&dev, &arch, 0.0, 1).unwrap();
    (windows, params, dev, model)
}

/// The f16 products' conversion buffers live in the pool's threads while an f16 run trains, and
/// are freed when it ends, so they do not count toward what runs after it.
#[test]
fn f16_conversion_buffers_are_freed_when_training_ends() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| {
        let (windows, params, dev, mut model) = f16_mlp();
        let mut step = NativeCpuEngine::new(&dev, &model, &params, 0).unwrap();
        let rows = 64;
        let width = windows.seq_len * windows.n_features;
        let batch = HostBatch {
            x: random(rows * width, 1),
            y: random(rows, 2),
            rows,
        };
        step.upload(&dev, &batch, false).unwrap();
        step.step(&dev, &mut model).unwrap();
        assert!(
            crate::tensor::native::scratch_bytes() > 0,
            "an f16 step converts through the buffers"
        );
        drop(step);
        assert_eq!(crate::tensor::native::scratch_bytes(), 0);
    });
}

/// The warm-up step leaves the f16 conversion buffers it allocated to the training that
/// follows, so epoch 0 does not pay for them again; the training engine frees them when it ends.
#[test]
fn the_warm_up_step_leaves_its_f16_buffers_to_the_training() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| {
        let (windows, params, dev, model) = f16_mlp();
        crate::tensor::native::release_scratch();
        assert_eq!(crate::tensor::native::scratch_bytes(), 0);
        warm_up::<Cpu, NativeCpuEngine>(&dev, &windows, &model, &params, 0, 0.0).unwrap();
        assert!(
            crate::tensor::native::scratch_bytes() > 0,
            "the warm-up engine freed the buffers the training would reallocate in epoch 0"
        );
        drop(NativeCpuEngine::new(&dev, &model, &params, 0).unwrap());
        assert_eq!(
            crate::tensor::native::scratch_bytes(),
            0,
            "the training engine frees them"
        );
    });
}

/// End to end: f16 training learns what f32 training learns, for every model kind, and records
/// its scaling; f32 training records none.
#[test]
fn f16_training_learns_like_f32_and_records_its_loss_scaling() {
    let windows = learnable_windows(600, 200, 7);
    for model in [ModelKind::Mlp, ModelKind::Lstm, ModelKind::Gru] {
        let mut ratios = Vec::new();
        for precision in [Precision::F32, Precision::F16] {
            let params = TrainParams {
                model,
                hidden: Some(vec![32]),
                epochs: 8,
                batch_size: 32,
                lr: 3e-3,
                precision,
                ..Default::default()
            };
            let (trained, rec) = run_train(&windows, &params, 11);
            let mut vrec = crate::metrics::Recorder::new();
            validate(&trained, &ValidateParams::default(), &mut vrec).unwrap();
            ratios.push(vrec.single("mse_vs_zero").unwrap());
            let (scale, skipped) = (rec.single("loss_scale"), rec.single("skipped_steps"));
            if precision == Precision::F32 {
                assert_eq!((scale, skipped), (None, None));
            } else {
                // Fewer steps than the growth interval: the scale only ever halved.
                let skipped = skipped.expect("skipped_steps recorded");
                assert_eq!(scale, Some(65536.0 / 2f64.powf(skipped)), "{model:?}");
            }
        }
        let (r32, r16) = (ratios[0], ratios[1]);
        assert!(
            r32 < 0.3 && r16 < 0.3,
            "{model:?}: mse / predict-zero f32 {r32}, f16 {r16}"
        );
        assert!((r16 - r32).abs() < 0.05, "{model:?}: f16 {r16} vs f32 {r32}");
    }
}
