//! The `validate` stage's computation (TrainedModel -> predictions on `windows.valid` -> quality
//! metrics), with naive baselines so a model's numbers can be read against "no skill".
//!
//! Metrics pool every (window, horizon) pair. Direction accuracy counts a hit when prediction
//! and target have the same strict sign; pairs whose target is exactly 0 are left out, and a
//! prediction of exactly 0 is a miss. IC is the Spearman rank correlation (ties get average
//! ranks). A constant prediction has no direction and no rank order, so the predict-zero
//! baseline reports only MSE and MAE.
//!
//! The predict-last-return baseline uses the last day's `ret_1` feature. Features arrive
//! normalized and cannot be de-normalized here, so its magnitude is not in target units: it
//! reports only the sign-based direction accuracy and the rank-based IC, which need no scale.
//! With per-column standardization the sign is that of the return relative to its mean, close
//! to the raw sign for daily returns whose mean is near zero.

use super::batches::{gather, HostBatch};
use super::mlp::Mlp;
use super::train_loop::check_split;
use super::TrainError;
use crate::artifact::{TrainedModel, Windows};
use crate::metrics::Recorder;
use dfdx::prelude::*;

/// Predictions of `model` for every window of `windows.valid`, `horizons` per window.
pub fn predict_valid<D: Device<f32>>(
    dev: &D,
    model: &Mlp<D>,
    windows: &Windows,
    batch_size: usize,
) -> Result<Vec<f32>, TrainError>
where
    TrainError: From<D::Err>,
{
    let set = &windows.valid;
    check_split("valid", windows, set)?;
    if model.input_width() != windows.input_len() || model.output_width() != windows.horizons {
        return Err(TrainError::Shape(format!(
            "the model maps {} inputs to {} outputs, the windows have {} inputs and {} horizons",
            model.input_width(),
            model.output_width(),
            windows.input_len(),
            windows.horizons
        )));
    }
    let order: Vec<u32> = (0..set.len() as u32).collect();
    let mut batch = HostBatch::default();
    let mut out = Vec::with_capacity(set.len() * windows.horizons);
    for idx in order.chunks(batch_size.max(1)) {
        gather(windows, set, idx, &mut batch);
        let x = dev.try_tensor_from_vec(batch.x.clone(), (batch.rows, windows.input_len()))?;
        out.extend(model.forward(x, false)?.as_vec());
    }
    Ok(out)
}

/// Records the quality metrics of `model` on its validation windows.
pub fn record_scores(model: &TrainedModel, predictions: &[f32], rec: &mut Recorder) -> Result<(), TrainError> {
    let windows = &model.windows;
    let set = &windows.valid;
    if set.is_empty() {
        return Err(TrainError::EmptyData("the validation split has no windows".into()));
    }
    let targets = &set.targets;
    rec.record("valid_windows", set.len() as f64, "count");
    rec.record("mse", mse(predictions, targets), "loss");
    rec.record("mae", mae(predictions, targets), "loss");
    record_direction_and_ic("", predictions, targets, rec);

    let zeros = vec![0.0; targets.len()];
    rec.record("naive_zero_mse", mse(&zeros, targets), "loss");
    rec.record("naive_zero_mae", mae(&zeros, targets), "loss");

    if let Some(col) = windows.feature_names.iter().position(|f| f == "ret_1") {
        let last: Vec<f32> = (0..set.len())
            .flat_map(|i| {
                let row = set.starts[i] as usize + windows.seq_len - 1;
                let v = set.features[row * windows.n_features + col];
                std::iter::repeat_n(v, windows.horizons)
            })
            .collect();
        record_direction_and_ic("naive_last_", &last, targets, rec);
    }
    Ok(())
}

fn record_direction_and_ic(prefix: &str, pred: &[f32], target: &[f32], rec: &mut Recorder) {
    if let Some(acc) = direction_accuracy(pred, target) {
        rec.record(format!("{prefix}direction_accuracy"), acc, "score");
    }
    if let Some(ic) = spearman(pred, target) {
        rec.record(format!("{prefix}ic"), ic, "score");
    }
}

pub fn mse(pred: &[f32], target: &[f32]) -> f64 {
    let sum: f64 = pred
        .iter()
        .zip(target)
        .map(|(&p, &t)| (f64::from(p) - f64::from(t)).powi(2))
        .sum();
    sum / pred.len().max(1) as f64
}

pub fn mae(pred: &[f32], target: &[f32]) -> f64 {
    let sum: f64 = pred
        .iter()
        .zip(target)
        .map(|(&p, &t)| (f64::from(p) - f64::from(t)).abs())
        .sum();
    sum / pred.len().max(1) as f64
}

/// Share of pairs with a non-zero target whose prediction has the same strict sign.
pub fn direction_accuracy(pred: &[f32], target: &[f32]) -> Option<f64> {
    let (mut hits, mut counted) = (0usize, 0usize);
    for (&p, &t) in pred.iter().zip(target) {
        if t != 0.0 {
            counted += 1;
            if p * t > 0.0 {
                hits += 1;
            }
        }
    }
    (counted > 0).then(|| hits as f64 / counted as f64)
}

/// Spearman rank correlation; `None` when either side is constant (no rank order).
pub fn spearman(a: &[f32], b: &[f32]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    pearson(&ranks(a), &ranks(b))
}

/// 1-based ranks, ties sharing their average rank.
fn ranks(values: &[f32]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let rank = (start + end + 1) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (&x, &y) in a.iter().zip(b) {
        cov += (x - ma) * (y - mb);
        va += (x - ma).powi(2);
        vb += (y - mb).powi(2);
    }
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}
