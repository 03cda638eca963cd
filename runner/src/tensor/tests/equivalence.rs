//! `check_step`: one step on the CPU's native engine against dfdx's autodiff (on the CPU in
//! this build: the same code the CUDA path runs), for every model kind.

use super::*;
use crate::tensor::equivalence::{one_step, scaled_max_diff, StepComparison, GRAD_TOLERANCE, LOSS_TOLERANCE};

#[test]
fn one_step_agrees_within_the_tolerances_for_every_kind() {
    let windows = learnable_windows(200, 20, 8);
    for model in [ModelKind::Mlp, ModelKind::Lstm, ModelKind::Gru] {
        let params = TrainParams {
            model,
            hidden: Some(vec![16]),
            batch_size: 64,
            // Ignored by the check, which turns dropout off on both sides.
            dropout: 0.3,
            ..TrainParams::default()
        };
        let dev = Cpu::seed_from_u64(3);
        let c = one_step(&dev, &windows, &params, 3).unwrap();
        assert!(c.cpu_loss > 0.0 && c.cpu_loss.is_finite(), "{model:?}: {c:?}");
        assert!(c.loss_rel_diff <= LOSS_TOLERANCE, "{model:?}: {c:?}");
        assert!(c.grad_max_rel_diff <= GRAD_TOLERANCE, "{model:?}: {c:?}");
        assert!(!c.worst.is_empty(), "{model:?}: {c:?}");
    }
}

#[test]
fn train_with_check_step_records_both_figures() {
    let windows = learnable_windows(120, 20, 5);
    let params = TrainParams {
        hidden: Some(vec![8]),
        batch_size: 32,
        check_step: true,
        ..TrainParams::default()
    };
    let (_, rec) = run_train(&windows, &params, 1);
    let loss = rec.single("step_loss_rel_diff").expect("recorded");
    let grads = rec.single("step_grad_max_rel_diff").expect("recorded");
    assert!((0.0..=LOSS_TOLERANCE).contains(&loss), "{loss}");
    assert!((0.0..=GRAD_TOLERANCE).contains(&grads), "{grads}");
    let (_, without) = run_train(
        &windows,
        &TrainParams {
            check_step: false,
            ..params
        },
        1,
    );
    assert_eq!(without.single("step_loss_rel_diff"), None);
}

#[test]
fn a_step_out_of_tolerance_fails_and_says_where() {
    let c = StepComparison {
        cpu_loss: 1.0,
        device_loss: 1.0,
        loss_rel_diff: 0.0,
        grad_max_rel_diff: 3e-3,
        worst: "layer1.weight".into(),
    };
    let mut rec = Recorder::new();
    let err = c.record(&mut rec).unwrap_err().to_string();
    assert!(err.starts_with("check_step: "), "{err}");
    assert!(err.contains("`layer1.weight`") && err.contains("3.00e-3"), "{err}");
    // The figures are recorded either way, so a failed trial still shows them.
    assert_eq!(rec.single("step_grad_max_rel_diff"), Some(3e-3));
    let loss_off = StepComparison {
        loss_rel_diff: 2e-5,
        grad_max_rel_diff: 0.0,
        ..c
    };
    assert!(loss_off.record(&mut Recorder::new()).is_err());
}

#[test]
fn scaled_difference_edge_cases() {
    assert_eq!(scaled_max_diff(&[0.0, 0.0], &[0.0, 0.0]), 0.0);
    assert_eq!(scaled_max_diff(&[2.0, -4.0], &[2.0, -3.0]), 0.25);
    assert_eq!(scaled_max_diff(&[0.0], &[1e-9]), f64::INFINITY);
    assert_eq!(scaled_max_diff(&[1.0, 2.0], &[1.0]), f64::INFINITY);
    assert_eq!(scaled_max_diff(&[1.0], &[f32::NAN]), f64::INFINITY);
    assert_eq!(scaled_max_diff(&[f32::INFINITY], &[f32::INFINITY]), f64::INFINITY);
}

#[test]
fn check_step_needs_f32() {
    let params = TrainParams {
        check_step: true,
        precision: Precision::F16,
        ..TrainParams::default()
    };
    let err = params.check().unwrap_err();
    assert_eq!(err.field, "check_step");
    assert!(err.to_string().contains("\"f16\""), "{err}");
}
