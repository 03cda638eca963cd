//! Step plans against dfdx and the CPU engine, through the host interpreter, and the cuBLAS
//! calls they ask for.

use super::super::math::AdamArgs;
use super::super::plan::{self, Buf, Elem, GemmEx, Op};
use super::super::{operands, tolerances};
use super::host::{config, differences, reference, Host};
use crate::arch::Activation;
use crate::kinds::train::Precision;
use crate::tensor::equivalence::scaled_max_diff;
use crate::tensor::native::random;
use crate::tensor::optim::LossScaler;
use crate::tensor::tests::mlp;
use dfdx::prelude::*;

/// The plan, interpreted, is dfdx's step: in f32 within `check_step`'s tolerances, and in bf16
/// and f16 within the self-check's (and not identical: the operands really are rounded).
#[test]
fn a_planned_step_computes_dfdxs_loss_and_gradients_in_every_precision() {
    let dev = Cpu::seed_from_u64(0);
    for (widths, rows, activation) in [
        (vec![12, 16, 8, 3], 10, Activation::Relu),
        (vec![20, 24, 1], 7, Activation::Gelu),
        (vec![6, 5], 4, Activation::Tanh),
    ] {
        let model = mlp(&dev, &widths, activation, 0.0, 3);
        let params: Vec<Vec<f32>> = model.params.iter().map(|p| p.as_vec()).collect();
        let x = random(rows * widths[0], 4);
        let y = random(rows * widths[widths.len() - 1], 5);
        let (ref_loss, ref_grads) = reference(&model, &dev, &widths, rows, &x, &y);
        for precision in [Precision::F32, Precision::Bf16, Precision::F16] {
            let elem = operands(precision);
            let mut host = Host::new(
                &params,
                &widths,
                rows,
                elem,
                config(activation, precision == Precision::F16),
            );
            let loss = host.step(&widths, rows, elem, &x, &y);
            // The gradients the kernels leave are scaled by the loss scale; unscale to compare.
            let scale = if precision == Precision::F16 {
                LossScaler::INITIAL
            } else {
                1.0
            };
            for i in 0..params.len() {
                let g: Vec<f32> = host.get(Buf::Grad(i)).iter().map(|v| v / scale).collect();
                host.set(Buf::Grad(i), g);
            }
            let (loss_diff, grad_diff) = differences(&host, loss, ref_loss, &ref_grads);
            let t = tolerances(precision);
            let what = format!("{widths:?} {activation:?} {}", precision.as_str());
            assert!(
                loss_diff <= t.loss && grad_diff <= t.grads,
                "{what}: loss {loss_diff:e}, grads {grad_diff:e}"
            );
            if precision == Precision::Bf16 {
                assert!(grad_diff > 1e-4, "{what}: bf16 rounding left no trace ({grad_diff:e})");
                assert!(
                    grad_diff < t.grads / 4.0,
                    "{what}: within a quarter of the bound ({grad_diff:e})"
                );
            }
        }
    }
}

/// A wrong transpose is caught: the self-check's bound is far below what a layout error gives.
#[test]
fn a_plan_with_a_wrong_transpose_is_outside_the_bf16_bound() {
    let dev = Cpu::seed_from_u64(0);
    let (widths, rows) = (vec![8, 8, 2], 8);
    let model = mlp(&dev, &widths, Activation::Relu, 0.0, 3);
    let params: Vec<Vec<f32>> = model.params.iter().map(|p| p.as_vec()).collect();
    let (x, y) = (random(rows * 8, 4), random(rows * 2, 5));
    let (ref_loss, ref_grads) = reference(&model, &dev, &widths, rows, &x, &y);
    let mut host = Host::new(&params, &widths, rows, Elem::Bf16, config(Activation::Relu, false));
    host.set(Buf::X, x);
    host.set(Buf::Y, y);
    let mut ops = plan::step(&widths, rows, Elem::Bf16);
    // The first layer's forward product reading its weight transposed (square, so it runs).
    if let Some(Op::Gemm(g)) = ops.iter_mut().find(|op| matches!(op, Op::Gemm(_))) {
        g.trans_a = true;
    }
    ops.iter().for_each(|op| host.run(op));
    let (loss_diff, grad_diff) = differences(&host, host.get(Buf::Loss)[0], ref_loss, &ref_grads);
    let t = tolerances(Precision::Bf16);
    assert!(
        loss_diff > t.loss || grad_diff > 10.0 * t.grads,
        "loss {loss_diff:e}, grads {grad_diff:e}"
    );
}

/// Several f32 steps with clipping and weight decay end where the CPU engine's do (dfdx's Adam):
/// the update, the clip and the control's step count are the reference's.
#[test]
fn planned_updates_follow_the_cpu_engine_over_several_steps() {
    use crate::kinds::train::TrainParams;
    use crate::tensor::batches::HostBatch;
    use crate::tensor::engine::{NativeCpuEngine, StepEngine};
    let dev = Cpu::seed_from_u64(0);
    let (widths, rows) = (vec![10, 12, 2], 6);
    let mut model = mlp(&dev, &widths, Activation::Tanh, 0.0, 3);
    let params: Vec<Vec<f32>> = model.params.iter().map(|p| p.as_vec()).collect();
    let train = TrainParams {
        lr: 1e-2,
        weight_decay: 0.05,
        grad_clip: Some(0.1),
        ..Default::default()
    };
    let mut cfg = config(Activation::Tanh, false);
    cfg.clip = Some(0.1);
    cfg.adam = AdamArgs::new(train.lr, train.weight_decay);
    let mut host = Host::new(&params, &widths, rows, Elem::F32, cfg);
    let mut engine = NativeCpuEngine::new(&dev, &model, &train, 0).unwrap();
    for s in 0..4 {
        let (x, y) = (random(rows * 10, 10 + s), random(rows * 2, 20 + s));
        let batch = HostBatch {
            x: x.clone(),
            y: y.clone(),
            rows,
        };
        engine.upload(&dev, &batch, false).unwrap();
        let loss = engine.step(&dev, &mut model).unwrap().array();
        let host_loss = host.step(&widths, rows, Elem::F32, &x, &y);
        assert!(
            (loss - host_loss).abs() <= 1e-5 * loss.abs(),
            "step {s}: {loss} vs {host_loss}"
        );
    }
    for (i, p) in model.params.iter().enumerate() {
        let diff = scaled_max_diff(&p.as_vec(), host.get(Buf::Param(i)));
        assert!(diff < 1e-5, "parameter {i}: {diff:e}");
    }
    assert_eq!(host.control.t, 4);
}

/// A graph replays kernels whose arguments were fixed at capture, so dropout must draw from
/// the step counter on the device: two steps of the same plan draw different masks, and the
/// same step, replayed from the same state, the same ones.
#[test]
fn dropout_masks_change_per_step_and_repeat_from_the_same_state() {
    let dev = Cpu::seed_from_u64(0);
    let (widths, rows) = (vec![6, 32, 1], 16);
    let model = mlp(&dev, &widths, Activation::Relu, 0.0, 3);
    let params: Vec<Vec<f32>> = model.params.iter().map(|p| p.as_vec()).collect();
    let (x, y) = (random(rows * 6, 4), random(rows, 5));
    let mut cfg = config(Activation::Relu, false);
    cfg.dropout = 0.5;
    cfg.adam = AdamArgs::new(0.0, 0.0);
    let run = |steps: usize| {
        let mut host = Host::new(&params, &widths, rows, Elem::F32, cfg);
        (0..steps)
            .map(|_| host.step(&widths, rows, Elem::F32, &x, &y))
            .collect::<Vec<_>>()
    };
    let (a, b) = (run(2), run(2));
    assert_eq!(a, b, "the same state replays the same masks");
    assert_ne!(a[0], a[1], "with lr 0 only the mask differs between the steps");
}

/// The `cublasGemmEx` calls of a bf16 step: bf16 operands, f32 results, f32 compute, the
/// leading dimensions of row-major buffers, and no product reading an f32 master weight.
#[test]
fn a_bf16_step_asks_cublas_for_bf16_products_with_f32_accumulation() {
    let widths = [960, 2048, 1024, 512, 5];
    let calls: Vec<(plan::Gemm, GemmEx)> = plan::step(&widths, 1024, Elem::Bf16)
        .into_iter()
        .filter_map(|op| match op {
            Op::Gemm(g) => Some((g, GemmEx::of(&g).unwrap())),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls.len(),
        3 * 4 - 1,
        "forward, weight gradient and input gradient per layer, but the first"
    );
    use plan::abi::*;
    for (g, call) in &calls {
        assert_eq!(
            (call.a_type, call.b_type, call.c_type),
            (CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F),
            "{g:?}"
        );
        assert_eq!(
            (call.compute, call.algo, call.beta),
            (CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT, 0.0)
        );
        assert!(
            !matches!(g.a, Buf::Param(_)) && !matches!(g.b, Buf::Param(_)),
            "{g:?} reads an f32 master"
        );
        // A column-major read of a row-major buffer: the leading dimension is its row width.
        let rows_a = if call.transa == CUBLAS_OP_N { call.m } else { call.k };
        let rows_b = if call.transb == CUBLAS_OP_N { call.k } else { call.n };
        assert!(
            call.lda >= rows_a && call.ldb >= rows_b && call.ldc >= call.m,
            "{call:?}"
        );
    }
    let first = calls[0].1;
    assert_eq!(
        (
            first.transa,
            first.transb,
            first.m,
            first.n,
            first.k,
            first.lda,
            first.ldb,
            first.ldc
        ),
        (CUBLAS_OP_N, CUBLAS_OP_N, 2048, 1024, 960, 2048, 960, 2048),
        "the first layer's forward product, Z^T = W^T X^T"
    );
    // The last layer's weight gradient and the gradient into the layer below it.
    let (dw, dh) = (calls[4].1, calls[5].1);
    assert_eq!(
        (dw.transa, dw.transb, dw.m, dw.n, dw.k, dw.lda, dw.ldb),
        (CUBLAS_OP_N, CUBLAS_OP_T, 5, 512, 1024, 5, 512)
    );
    assert_eq!(
        (dh.transa, dh.transb, dh.m, dh.n, dh.k, dh.lda, dh.ldb, dh.ldc),
        (CUBLAS_OP_T, CUBLAS_OP_N, 512, 1024, 5, 5, 5, 512)
    );
    // f32 operands ask for f32 types with the same compute type (no TF32).
    let f32_call = plan::step(&widths, 1024, Elem::F32)
        .into_iter()
        .find_map(|op| if let Op::Gemm(g) = op { GemmEx::of(&g) } else { None })
        .unwrap();
    assert_eq!((f32_call.a_type, f32_call.compute), (CUDA_R_32F, CUBLAS_COMPUTE_32F));
}

/// Every buffer a step reads was written before it in the step, or is an input the engine
/// fills (the batch, the parameters and their half copies, the ones, the control).
#[test]
fn every_buffer_a_step_reads_is_written_first_or_is_an_input() {
    for elem in [Elem::F32, Elem::Bf16, Elem::F16] {
        let widths = [7, 9, 4, 2];
        let mut written: Vec<Buf> = vec![Buf::X, Buf::Y, Buf::Ones, Buf::Control];
        written.extend((0..6).flat_map(|p| [Buf::Param(p), Buf::ParamHalf(p), Buf::Moment1(p), Buf::Moment2(p)]));
        for op in plan::step(&widths, 5, elem) {
            let (reads, writes): (Vec<Buf>, Vec<Buf>) = match op {
                Op::Cast { src, dst, .. } => (vec![src], vec![dst]),
                Op::Gemm(g) => (vec![g.a, g.b], vec![g.c]),
                Op::Gemv(g) => (vec![g.a, g.x], vec![g.y]),
                Op::BiasAct { z, bias, h, .. } => (vec![z, bias], vec![z, h]),
                Op::Bias { z, bias, .. } => (vec![z, bias], vec![z]),
                Op::Mse { pred, y, dz, .. } => (vec![pred, y], vec![dz, Buf::Loss]),
                Op::ActBack { d, z, .. } => (vec![d, z], vec![d]),
                Op::SumSq { g, .. } => (vec![g], vec![Buf::Partials]),
                Op::Control { .. } => (vec![Buf::Partials], vec![]),
                Op::Adam { param, .. } => (vec![Buf::Grad(param)], vec![Buf::Param(param)]),
            };
            for r in reads {
                assert!(
                    written.contains(&r),
                    "{op:?} reads {r:?} before anything wrote it ({})",
                    elem.as_str()
                );
            }
            written.extend(writes);
        }
    }
}

#[test]
fn the_self_checks_bounds_follow_each_formats_roundoff() {
    let (bf, h, f) = (
        tolerances(Precision::Bf16),
        tolerances(Precision::F16),
        tolerances(Precision::F32),
    );
    assert_eq!((bf.loss, bf.grads), (4.0 / 256.0, 16.0 / 256.0));
    assert_eq!((h.loss, h.grads), (4.0 / 2048.0, 16.0 / 2048.0));
    assert_eq!(f, crate::tensor::fastpath::Tolerances::F32);
}
