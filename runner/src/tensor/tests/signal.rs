//! The quickstart model on the synthetic market with its planted signal (market synth ->
//! normalize -> train -> validate): it must beat predicting zero and come close to the oracle,
//! the predictor that knows the planted coefficient.

use crate::features::{build_windows, NormalizeParams};
use crate::market::{synth_bars, CodeStyle, SynthOptions, SIGNAL_COEFFICIENT};
use crate::tensor::*;
use chrono::NaiveDate;
use std::sync::atomic::AtomicBool;

/// The validation MSE of the oracle, `SIGNAL_COEFFICIENT x` the window's last daily return,
/// divided by the MSE of predicting zero.
fn oracle_ratio(windows: &Windows) -> f64 {
    let set = &windows.valid;
    let oracle: Vec<f32> = set
        .last_return
        .iter()
        .map(|&r| (SIGNAL_COEFFICIENT * f64::from(r)) as f32)
        .collect();
    mse(&oracle, &set.targets) / mse(&vec![0.0; set.len()], &set.targets)
}

fn metric(rec: &Recorder, name: &str) -> f64 {
    rec.metrics()
        .iter()
        .find(|m| m.name == name && m.step.is_none())
        .unwrap_or_else(|| panic!("metric {name}"))
        .value
}

/// The quickstart's stages on the quickstart's market (the demo market, first 20 symbols),
/// with its model settings: hidden [64, 32], batch 128, 2 epochs, lr 0.001, seq_len 20,
/// preset minimal. Same data and settings as `experiments/quickstart.toml`, so the figures
/// are the ones docs/data.md states.
#[test]
fn the_quickstart_model_learns_the_planted_signal() {
    let market = SynthOptions {
        symbols: 50,
        days: 750,
        start: NaiveDate::from_ymd_opt(2021, 1, 4).unwrap(),
        seed: 20_240_601,
        style: CodeStyle::Mixed,
    };
    let mut bars = synth_bars(&market).unwrap();
    bars.symbols.truncate(20);
    let norm = NormalizeParams {
        seq_len: 20,
        preset: Some("minimal".into()),
        ..NormalizeParams::default()
    };
    let cancel = AtomicBool::new(false);
    let windows = Arc::new(build_windows(&bars, &norm, &mut Recorder::new(), &cancel).unwrap());
    let oracle = oracle_ratio(&windows);
    let params = TrainParams {
        hidden: Some(vec![64, 32]),
        batch_size: 128,
        epochs: 2,
        lr: 0.001,
        ..TrainParams::default()
    };
    for seed in [1, 2, 3, 4] {
        let mut rec = Recorder::new();
        let model = train(windows.clone(), &params, seed, &mut rec, &cancel).unwrap();
        let mut vrec = Recorder::new();
        validate(&model, &ValidateParams::default(), &mut vrec).unwrap();
        let ratio = metric(&vrec, "mse_vs_zero");
        eprintln!(
            "seed {seed}: mse {:.6}, mse_vs_zero {ratio:.4}, mse_vs_mean {:.4}, oracle {oracle:.4}, ic_per_date {:.4}, \
             ic_t {:.2}, direction {:.4}",
            metric(&vrec, "mse"),
            metric(&vrec, "mse_vs_mean"),
            metric(&vrec, "ic_per_date"),
            metric(&vrec, "ic_t"),
            metric(&vrec, "direction_accuracy"),
        );
        assert!(ratio < 0.95, "seed {seed}: validation MSE / naive zero = {ratio}");
        assert!(ratio - oracle < 0.05, "seed {seed}: {ratio} vs the oracle's {oracle}");
    }
    assert!(oracle < 0.9, "the planted signal is there: oracle ratio {oracle}");
}
