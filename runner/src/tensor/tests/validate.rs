//! The validation stage's timing figures.

use super::*;

/// `batch_loop_seconds` times the validation loop alone: a setup slowed by 300 ms makes the
/// stage take at least that long and leaves the loop's figure below it; the figure is there
/// on every validation and is at most the stage's own time.
#[test]
fn the_validation_loop_metric_leaves_the_setup_out() {
    let windows = learnable_windows(64, 64, 4);
    let params = TrainParams {
        hidden: Some(vec![4]),
        batch_size: 16,
        epochs: 1,
        ..TrainParams::default()
    };
    let (model, _) = run_train(&windows, &params, 1);
    let timed = |delay_ms: u64| {
        crate::tensor::SETUP_DELAY.with(|d| d.set(std::time::Duration::from_millis(delay_ms)));
        let mut rec = Recorder::new();
        let start = std::time::Instant::now();
        validate(&model, &ValidateParams::default(), &mut rec).unwrap();
        let stage = start.elapsed().as_secs_f64();
        crate::tensor::SETUP_DELAY.with(|d| d.set(std::time::Duration::ZERO));
        (
            stage,
            rec.single("batch_loop_seconds")
                .expect("batch_loop_seconds is recorded"),
        )
    };
    let (stage, looped) = timed(0);
    assert!(looped > 0.0 && looped <= stage, "loop {looped} s, stage {stage} s");
    let (slow_stage, slow_loop) = timed(300);
    assert!(slow_stage >= 0.3, "the slowed setup took {slow_stage} s");
    assert!(
        slow_loop < 0.3,
        "the loop's figure took in the setup's pause: {slow_loop} s"
    );
}
