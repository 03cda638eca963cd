//! The `validate` stage's computation (TrainedModel -> predictions on `windows.valid` -> quality
//! metrics), with naive baselines so a model's numbers can be read against "no skill".
//!
//! Predictions are in target units (log returns): the network's standardized outputs mapped
//! back with the training targets' mean and sd stored in the model. Metrics pool every
//! (window, horizon) pair:
//! - `mse`, `mae`; `naive_zero_mse`/`_mae` (predict 0), `naive_mean_mse` (predict the training
//!   targets' mean) and `naive_last_mse` (repeat the window's last daily return);
//! - `mse_vs_zero` = `mse / naive_zero_mse` and `mse_vs_mean` = `mse / naive_mean_mse`: below 1
//!   means skill over that baseline;
//! - `direction_accuracy`: a hit when prediction and target have the same strict sign, both in
//!   raw return units; pairs whose target is exactly 0 are left out, a prediction of exactly 0
//!   is a miss;
//! - `ic`: the Spearman rank correlation over all pairs (ties get average ranks);
//! - `ic_per_date`: the mean over validation dates of the Spearman correlation across the
//!   symbols of that date (dates with at least [`MIN_IC_SYMBOLS`] windows and no constant
//!   side), `ic_t` its t-statistic (mean / (sd / sqrt(dates))), `ic_dates` how many dates.
//!
//! A constant prediction has no direction and no rank order, so the predict-zero and
//! predict-mean baselines report only MSE (and MAE). The last-return baseline reads the raw
//! (split-adjusted, not normalized) return the windows carry, so all its metrics are in the
//! same units as the model's.

use super::batches::{check_split, gather, HostBatch};
use super::TrainError;
use crate::artifact::{TargetScale, TrainedModel, WindowSet, Windows};
use crate::metrics::Recorder;

/// Fewest windows on one date for that date's cross-sectional IC.
pub const MIN_IC_SYMBOLS: usize = 3;

/// An error unless `model` takes `windows`' inputs and predicts their horizons.
pub fn check_fits(model: &TrainedModel, windows: &Windows) -> Result<(), TrainError> {
    let arch = &model.arch;
    if !arch.accepts(windows.seq_len, windows.n_features) || arch.outputs != windows.horizons {
        return Err(TrainError::Shape(format!(
            "the {} model takes {} days of {} features to {} outputs, the windows have {} days of \
             {} features and {} horizons",
            arch.kind.as_str(),
            arch.seq_len,
            arch.n_features,
            arch.outputs,
            windows.seq_len,
            windows.n_features,
            windows.horizons
        )));
    }
    check_split("valid", windows, &windows.valid)
}

/// The validation loop's logging (`log_every`): every k-th batch, its mean prediction read to
/// the host and emitted as a debug event.
pub struct BatchLog {
    every: usize,
    batch: usize,
    logged: usize,
}

impl BatchLog {
    pub fn new(every: usize) -> Self {
        Self {
            every,
            batch: 0,
            logged: 0,
        }
    }

    /// Counts a batch and, when it is one to log, reads its outputs with `read` (on CUDA a wait
    /// for the device) and logs their mean.
    pub fn batch(&mut self, read: impl FnOnce() -> Result<Vec<f32>, TrainError>) -> Result<(), TrainError> {
        self.batch += 1;
        if self.every > 0 && self.batch.is_multiple_of(self.every) {
            let outputs = read()?;
            let mean = outputs.iter().map(|&v| f64::from(v)).sum::<f64>() / outputs.len().max(1) as f64;
            tracing::debug!(batch = self.batch, mean, "validation batch");
            self.logged += 1;
        }
        Ok(())
    }

    /// Records `logged_batches` (count) when logging was on.
    pub fn record(&self, rec: &mut Recorder) {
        if self.every > 0 {
            rec.record("logged_batches", self.logged as f64, "count");
        }
    }
}

/// Predictions for every window of `set` in target units: `forward` maps a batch to the
/// network's standardized outputs (`horizons` per window), `target` maps them back.
pub fn predict(
    windows: &Windows,
    set: &WindowSet,
    batch_size: usize,
    target: TargetScale,
    forward: impl FnMut(&HostBatch) -> Result<Vec<f32>, TrainError>,
) -> Result<Vec<f32>, TrainError> {
    predict_deferred(windows, set, batch_size, target, forward, Ok)
}

/// [`predict`] in two passes: `forward` maps each batch to a handle on its outputs (a device
/// tensor, which may still be computing), and `read` turns every handle into the outputs once
/// all batches are queued, in order. What a GPU validation loop that keeps its outputs on the
/// device until the end does.
pub fn predict_deferred<T>(
    windows: &Windows,
    set: &WindowSet,
    batch_size: usize,
    target: TargetScale,
    mut forward: impl FnMut(&HostBatch) -> Result<T, TrainError>,
    mut read: impl FnMut(T) -> Result<Vec<f32>, TrainError>,
) -> Result<Vec<f32>, TrainError> {
    let order: Vec<u32> = (0..set.len() as u32).collect();
    let mut batch = HostBatch::default();
    let mut pending = Vec::new();
    for idx in order.chunks(batch_size.max(1)) {
        gather(windows, set, idx, TargetScale::IDENTITY, &mut batch);
        pending.push((batch.rows, forward(&batch)?));
    }
    let mut out = Vec::with_capacity(set.len() * windows.horizons);
    for (rows, handle) in pending {
        let outputs = read(handle)?;
        if outputs.len() != rows * windows.horizons {
            return Err(TrainError::Shape(format!(
                "{} outputs for {rows} windows of {} horizons",
                outputs.len(),
                windows.horizons
            )));
        }
        out.extend(outputs.into_iter().map(|z| target.restore(z)));
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
    let h = windows.horizons;
    let model_mse = mse(predictions, targets);
    rec.record("valid_windows", set.len() as f64, "count");
    rec.record("mse", model_mse, "loss");
    rec.record("mae", mae(predictions, targets), "loss");
    record_direction_and_ic("", predictions, targets, rec);
    if let Some(ic) = ic_per_date(set, h, predictions) {
        rec.record("ic_per_date", ic.mean, "score");
        if let Some(t) = ic.t {
            rec.record("ic_t", t, "score");
        }
        rec.record("ic_dates", ic.dates as f64, "count");
    }

    let zeros = vec![0.0; targets.len()];
    let zero_mse = mse(&zeros, targets);
    rec.record("naive_zero_mse", zero_mse, "loss");
    rec.record("naive_zero_mae", mae(&zeros, targets), "loss");
    let means = vec![model.target.mean as f32; targets.len()];
    let mean_mse = mse(&means, targets);
    rec.record("naive_mean_mse", mean_mse, "loss");
    if zero_mse > 0.0 {
        rec.record("mse_vs_zero", model_mse / zero_mse, "ratio");
    }
    if mean_mse > 0.0 {
        rec.record("mse_vs_mean", model_mse / mean_mse, "ratio");
    }

    if set.last_return.len() == set.len() {
        let last: Vec<f32> = set
            .last_return
            .iter()
            .flat_map(|&r| std::iter::repeat_n(r, h))
            .collect();
        rec.record("naive_last_mse", mse(&last, targets), "loss");
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

/// The mean per-date cross-sectional IC, its t-statistic (`None` with fewer than two dates or
/// no spread) and the number of dates it averages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DateIc {
    pub mean: f64,
    pub t: Option<f64>,
    pub dates: usize,
}

/// Spearman IC across the windows of each date (first horizon), averaged over dates; `None`
/// when no date has [`MIN_IC_SYMBOLS`] windows with a rank order on both sides.
pub fn ic_per_date(set: &WindowSet, horizons: usize, predictions: &[f32]) -> Option<DateIc> {
    if set.dates.len() != set.len() {
        return None;
    }
    let mut by_date: std::collections::BTreeMap<chrono::NaiveDate, (Vec<f32>, Vec<f32>)> = Default::default();
    for (i, date) in set.dates.iter().enumerate() {
        let entry = by_date.entry(*date).or_default();
        entry.0.push(predictions[i * horizons]);
        entry.1.push(set.targets[i * horizons]);
    }
    let ics: Vec<f64> = by_date
        .values()
        .filter(|(p, _)| p.len() >= MIN_IC_SYMBOLS)
        .filter_map(|(p, t)| spearman(p, t))
        .collect();
    if ics.is_empty() {
        return None;
    }
    let n = ics.len() as f64;
    let mean = ics.iter().sum::<f64>() / n;
    let sd = (ics.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let t = (ics.len() >= 2 && sd > 0.0).then(|| mean / (sd / n.sqrt()));
    Some(DateIc {
        mean,
        t,
        dates: ics.len(),
    })
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

/// Records `batch_loop_seconds`: the validation loop alone on the host's clock (gathering,
/// copying, forward passes, reading the outputs back), without the device's setup, the
/// weights' upload, a self-check or the scoring that the whole stage's time includes.
pub fn record_batch_loop(rec: &mut Recorder, took: std::time::Duration) {
    rec.record("batch_loop_seconds", took.as_secs_f64(), "s");
}
