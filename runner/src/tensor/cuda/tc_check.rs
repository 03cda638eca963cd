//! Which step trains an MLP on CUDA, decided by self-checks before the first timed step (see
//! `tensor::fastpath`): the engine of [`super::tc_engine`] in the requested precision against
//! dfdx's f32 autodiff step (same weights and batch, dropout 0, within
//! `tensor::tc::tolerances`), then its CUDA graph against its eager steps (bit for bit).
//! The first check also compares one update (Adam, the clip) with Adam's first step on the host.
//! Failing the first, the stage trains on dfdx in f32; failing the second, eagerly. Either way
//! the stage notes why, with the largest difference, and the facts `precision`, `mlp_engine`
//! and `cuda_graph` say what ran.

use super::tc_engine::TcEngine;
use crate::artifact::{TargetScale, Windows};
use crate::kinds::train::{Precision, TrainParams};
use crate::metrics::Recorder;
use crate::tensor::batches::first_batch;
use crate::tensor::engine::StepEngine;
use crate::tensor::equivalence::scaled_max_diff;
use crate::tensor::fastpath::Differences;
use crate::tensor::model::Model;
use crate::tensor::tc::decide::{self, Checks, Resolved};
use crate::tensor::tc::plan::Buf;
use crate::tensor::tc::tolerances;
use crate::tensor::TrainError;
use dfdx::prelude::*;

/// How an MLP trains on CUDA ([`decide::resolve`] with this device's self-checks).
pub fn resolve(
    dev: &Cuda,
    windows: &Windows,
    params: &TrainParams,
    seed: u64,
    rec: &mut Recorder,
) -> Result<Resolved, TrainError> {
    let rows = params.batch_size.min(windows.train.len());
    let arch = params.arch(windows.seq_len, windows.n_features, windows.horizons)?;
    let checks = Checks {
        engine: &|| check_engine(dev, windows, params, seed).map_err(|e| e.to_string()),
        graph: &|| check_graph(dev, windows, params, seed).map_err(|e| e.to_string()),
    };
    decide::resolve(params, &arch, rows, windows.train.len(), checks, rec)
}

/// The first training batch and a fresh model of `params` (dropout as given).
fn start(
    dev: &Cuda,
    windows: &Windows,
    params: &TrainParams,
    seed: u64,
    dropout: f64,
) -> Result<(Model<Cuda>, crate::tensor::batches::HostBatch), TrainError> {
    let arch = params.arch(windows.seq_len, windows.n_features, windows.horizons)?;
    let mut model = Model::new(dev, &arch, dropout, seed)?;
    let scale = TargetScale::of(&windows.train.targets);
    model.target = scale;
    let rows = params.batch_size.min(windows.train.len());
    Ok((model, first_batch(windows, scale, seed, params.shuffle, rows)))
}

/// The most times the f16 check halves its loss scale looking for finite gradients: from 2^16
/// down to 2^-8, past which no scale would help.
const SCALE_TRIES: usize = 25;

/// One forward and backward pass through the engine in the requested precision and through
/// dfdx in f32, from the same weights and batch at dropout 0; then one update from those
/// weights. Under f16 the loss scale starts where training starts it (2^16) and is halved while
/// the gradients overflow, as the dynamic scaler's first steps do, so the check compares the
/// first step training would apply.
///
/// The update is held to the reference's Adam step computed on the host from dfdx's gradients
/// (clipped as the stage clips): Adam's first moment, `(1 - beta1) g`, within the gradients'
/// tolerance of each tensor's scale, and the change of every weight whose gradient is at least a
/// tenth of its tensor's largest, there `-lr (g / (|g| + eps) + weight_decay w)`, within the same
/// tolerance of `lr` (a first Adam step is the gradient's sign, which rounding flips only where
/// the gradient is near zero).
fn check_engine(dev: &Cuda, windows: &Windows, params: &TrainParams, seed: u64) -> Result<Differences, TrainError> {
    let (model, batch) = start(dev, windows, params, seed, 0.0)?;
    let x = dev.try_tensor_from_vec(batch.x.clone(), (batch.rows, windows.input_len()))?;
    let y = dev.try_tensor_from_vec(batch.y.clone(), (batch.rows, windows.horizons))?;
    let (ref_loss, ref_grads) = model.loss_and_grads(x, y)?;
    let ref_loss = f64::from(ref_loss.array());
    let ref_grads: Vec<Vec<f32>> = model.params.iter().map(|p| ref_grads.get(p).as_vec()).collect();
    // Declared before the engine, so dropped after it (the engine's stream may still read it).
    let mut copy = model.clone();
    let mut engine = TcEngine::with_graphs(dev, &model, params, seed, false)?;
    let mut scale = crate::tensor::optim::LossScaler::INITIAL;
    let mut grads = Vec::new();
    for _ in 0..SCALE_TRIES {
        engine.upload(dev, &batch, false)?;
        engine.step_on_batch(dev, &mut copy, false, None)?;
        grads = engine.grads()?;
        let finite = grads.iter().flatten().all(|g| g.is_finite());
        if finite || params.precision != Precision::F16 {
            break;
        }
        scale *= 0.5;
        engine.set_loss_scale(scale)?;
    }
    let loss = f64::from(engine.read(Buf::Loss, 1)?[0]);
    let names: Vec<String> = model.arch.params().into_iter().map(|spec| spec.name).collect();
    let mut worst = (0.0f64, String::new());
    let mut note = |diff: f64, what: String| {
        if diff > worst.0 || worst.1.is_empty() || diff.is_nan() {
            worst = (diff, what);
        }
    };
    for (i, g) in grads.iter().enumerate() {
        note(scaled_max_diff(&ref_grads[i], g), names[i].clone());
    }
    // The update, from the same weights: the engine's step against Adam's first step on the host.
    let before: Vec<Vec<f32>> = copy.params.iter().map(|p| p.as_vec()).collect();
    engine.upload(dev, &batch, false)?;
    engine.step_on_batch(dev, &mut copy, true, None)?;
    let clip = clip_factor(&ref_grads, params.grad_clip);
    let (lr, wd) = (params.lr as f32, params.weight_decay as f32);
    for (i, g) in ref_grads.iter().enumerate() {
        let m_ref: Vec<f32> = g.iter().map(|v| 0.1 * v * clip).collect();
        let m = engine.read(Buf::Moment1(i), g.len())?;
        note(
            scaled_max_diff(&m_ref, &m),
            format!("{} (Adam's first moment)", names[i]),
        );
        let after = copy.params[i].as_vec();
        let largest = g.iter().fold(0f32, |a, v| a.max(v.abs()));
        let mut change = 0f64;
        for (j, gj) in g.iter().enumerate() {
            if gj.abs() < 0.1 * largest || largest == 0.0 {
                continue;
            }
            let g = gj * clip;
            let want = -lr * (g / (g.abs() + 1e-8) + wd * before[i][j]);
            let got = after[j] - before[i][j];
            change = change.max(f64::from((got - want).abs() / lr));
        }
        note(change, format!("{} (its Adam update, relative to lr)", names[i]));
    }
    Ok(Differences {
        loss: Some((loss - ref_loss).abs() / ref_loss.abs().max(f64::MIN_POSITIVE)),
        outputs: 0.0,
        grads: Some(worst.0),
        worst_grad: worst.1,
        tolerances: tolerances(params.precision),
    })
}

/// The factor clipping to `max_norm` multiplies every gradient by (PyTorch's formula, the norm
/// over all of them in f64); 1 without clipping.
fn clip_factor(grads: &[Vec<f32>], max_norm: Option<f64>) -> f32 {
    let Some(max_norm) = max_norm else { return 1.0 };
    let norm = grads
        .iter()
        .flatten()
        .map(|g| f64::from(*g).powi(2))
        .sum::<f64>()
        .sqrt();
    (max_norm / (norm + 1e-6)).min(1.0) as f32
}

/// How far `b` is from `a` where the graph check wants them identical: 0 only when every value
/// has the same bits (an overflowed step's infinities and NaNs included), else the scaled
/// difference, at least the smallest positive one (so `-0` against `0` counts).
fn bit_diff(a: &[f32], b: &[f32]) -> f64 {
    if a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()) {
        return 0.0;
    }
    scaled_max_diff(a, b).max(f64::MIN_POSITIVE)
}

/// Three full steps eagerly, and three through a graph (the first eager, the second captured and
/// launched, the third replayed), from the same weights, batch and dropout: the losses, the
/// last gradients and the weights after (reported as the outputs) must be identical, bit for
/// bit (an f16 step that overflowed and was skipped alike in both counts as identical).
fn check_graph(dev: &Cuda, windows: &Windows, params: &TrainParams, seed: u64) -> Result<Differences, TrainError> {
    const STEPS: usize = 3;
    let (model, batch) = start(dev, windows, params, seed, params.dropout)?;
    // Declared before the engines, so dropped after them (their streams may still read these).
    let (mut a, mut b) = (model.clone(), model.clone());
    let mut eager = TcEngine::with_graphs(dev, &model, params, seed, false)?;
    let mut graphed = TcEngine::with_graphs(dev, &model, params, seed, true)?;
    let mut loss = 0.0f64;
    for _ in 0..STEPS {
        eager.upload(dev, &batch, false)?;
        let la = f64::from(eager.step(dev, &mut a)?.array());
        graphed.upload(dev, &batch, false)?;
        let lb = f64::from(graphed.step(dev, &mut b)?.array());
        let diff = if la == lb {
            0.0
        } else {
            (la - lb).abs() / la.abs().max(f64::MIN_POSITIVE)
        };
        loss = loss.max(if diff.is_nan() { f64::INFINITY } else { diff });
    }
    if graphed.captures() == 0 {
        return Err(TrainError::Internal("no graph was captured in the self-check".into()));
    }
    let (ga, gb) = (eager.grads()?, graphed.grads()?);
    let names = model.arch.params();
    let mut worst = (0.0f64, String::new());
    let mut weights = 0.0f64;
    for (i, spec) in names.iter().enumerate() {
        let diff = bit_diff(&ga[i], &gb[i]);
        if diff > worst.0 || worst.1.is_empty() || diff.is_nan() {
            worst = (diff, spec.name.clone());
        }
        weights = weights.max(bit_diff(&a.params[i].as_vec(), &b.params[i].as_vec()));
    }
    Ok(Differences {
        loss: Some(loss),
        outputs: weights,
        grads: Some(worst.0),
        worst_grad: worst.1,
        tolerances: crate::tensor::fastpath::Tolerances::EXACT,
    })
}
