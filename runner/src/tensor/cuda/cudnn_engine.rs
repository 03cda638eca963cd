//! cuDNN's LSTM and GRU as the CUDA training engine and for validation (the `rnn_engine`
//! choice -> the self-check -> [`CudnnEngine`] or dfdx), and the self-check itself: one
//! training step (or forward pass) through cuDNN and through dfdx from the same weights and
//! batch, compared within the `check_step` tolerances (see `tensor::fastpath`).

use super::cudnn_rnn::CudnnRnn;
use super::PinnedRing;
use crate::artifact::{TargetScale, Windows};
use crate::kinds::train::{HiddenState, RnnEngine, TrainParams};
use crate::metrics::Recorder;
use crate::tensor::batches::{first_batch, HostBatch};
use crate::tensor::engine::{Allocations, StepEngine, Uploader};
use crate::tensor::equivalence::scaled_max_diff;
use crate::tensor::fastpath::{Differences, FastPath, Tolerances, Wanted};
use crate::tensor::model::{LossAndGrads, Matrix, Model};
use crate::tensor::optim::{clip_global_norm, AdamW};
use crate::tensor::TrainError;
use dfdx::prelude::*;

/// cuDNN against dfdx, recorded as the fact `rnn_engine`.
pub const CUDNN: FastPath = FastPath {
    fact: "rnn_engine",
    fast: "cudnn",
    reference: "dfdx",
    what: "cuDNN's RNN",
};

fn wanted(engine: RnnEngine) -> Wanted {
    match engine {
        RnnEngine::Auto => Wanted::Auto,
        RnnEngine::Cudnn => Wanted::Fast,
        RnnEngine::Dfdx => Wanted::Reference,
    }
}

/// Whether a training of `params` on `windows` runs on cuDNN: decided (and recorded) by the
/// self-check, for recurrent models; never for an MLP, which records no `rnn_engine`.
pub fn train_on_cudnn(
    dev: &Cuda,
    windows: &Windows,
    params: &TrainParams,
    seed: u64,
    rec: &mut Recorder,
) -> Result<bool, TrainError> {
    if !params.model.is_recurrent() {
        return Ok(false);
    }
    let arch = params.arch(windows.seq_len, windows.n_features, windows.horizons)?;
    let shape = shape_key(&arch, "train", params.batch_size.min(windows.train.len()));
    CUDNN.decide(
        wanted(params.rnn_engine),
        &shape,
        || check_step(dev, windows, params, seed).map_err(|e| e.to_string()),
        rec,
    )
}

/// Whether validating `model` in batches of `rows` runs on cuDNN (the self-check is one
/// forward pass on `rows` training windows).
pub fn predict_on_cudnn(
    dev: &Cuda,
    model: &crate::artifact::TrainedModel,
    rows: usize,
    engine: RnnEngine,
    rec: &mut Recorder,
) -> Result<bool, TrainError> {
    if !model.arch.kind.is_recurrent() {
        return Ok(false);
    }
    let rows = rows.min(model.windows.train.len()).max(1);
    let shape = shape_key(&model.arch, "inference", rows);
    CUDNN.decide(
        wanted(engine),
        &shape,
        || check_forward(dev, model, rows).map_err(|e| e.to_string()),
        rec,
    )
}

/// What the self-check's outcome is kept under: everything cuDNN's plan depends on.
fn shape_key(arch: &crate::arch::Arch, mode: &str, rows: usize) -> String {
    format!(
        "{} {mode}, {} features x {} days, hidden {:?}, {rows} rows",
        arch.kind.as_str(),
        arch.n_features,
        arch.seq_len,
        arch.hidden
    )
}

/// The head and the loss (dfdx) on a pass's top state: the loss, the gradients (the head's,
/// and the top state's, returned apart).
fn head_loss(
    model: &Model<Cuda>,
    top: &Matrix<Cuda>,
    target: Matrix<Cuda>,
) -> Result<(LossAndGrads<Cuda>, Matrix<Cuda>), TrainError> {
    let pred = head(model, top.clone().traced(Gradients::leaky()))?;
    let loss = pred.try_sub(target)?.try_square()?.try_mean()?;
    let value = loss.retaped::<NoneTape>();
    let grads = loss.try_backward()?;
    let d_top = grads.get(top);
    Ok(((value, grads), d_top))
}

/// The linear head on the top layer's last hidden state.
fn head<T: Tape<f32, Cuda> + Merge<T>>(
    model: &Model<Cuda>,
    top: Matrix<Cuda, T>,
) -> Result<Matrix<Cuda, T>, TrainError> {
    let arch = &model.arch;
    let (i, width) = (4 * arch.hidden.len(), top.shape().1);
    let product = top.try_matmul(model.matrix::<T>(i, width, arch.outputs)?)?;
    model.plus_bias(product, i + 1)
}

/// One training step's loss and the gradients of every parameter, through cuDNN.
pub fn loss_and_grads(
    net: &mut CudnnRnn,
    model: &Model<Cuda>,
    x: &Matrix<Cuda>,
    y: Matrix<Cuda>,
) -> Result<LossAndGrads<Cuda>, TrainError> {
    let pass = net.forward(model, x, true)?;
    let ((loss, mut grads), d_top) = head_loss(model, &pass.top, y)?;
    net.backward(model, x, &pass, &d_top, &mut grads)?;
    Ok((loss, grads))
}

/// The model's outputs for `x` (inference), through cuDNN.
pub fn predict(net: &mut CudnnRnn, model: &Model<Cuda>, x: &Matrix<Cuda>) -> Result<Matrix<Cuda>, TrainError> {
    let pass = net.forward(model, x, false)?;
    head(model, pass.top)
}

/// The self-check of a training: the first batch of the training, one step through dfdx
/// and through cuDNN from the same initial weights, dropout 0.
fn check_step(dev: &Cuda, windows: &Windows, params: &TrainParams, seed: u64) -> Result<Differences, TrainError> {
    let arch = params.arch(windows.seq_len, windows.n_features, windows.horizons)?;
    let scale = TargetScale::of(&windows.train.targets);
    let batch = first_batch(windows, scale, seed, params.shuffle, params.batch_size);
    let model = Model::new(dev, &arch, 0.0, seed)?;
    let (x, y) = upload(dev, &batch, windows)?;
    let (ref_loss, ref_grads) = model.loss_and_grads(x.clone(), y.clone())?;
    let ref_out = model.forward(x.clone(), false)?.as_vec();
    let mut net = CudnnRnn::new(dev, &arch, 0.0, seed, params.hidden_state)?;
    let (loss, grads) = loss_and_grads(&mut net, &model, &x, y)?;
    let out = predict(&mut net, &model, &x)?.as_vec();
    let (ref_loss, loss) = (f64::from(ref_loss.array()), f64::from(loss.array()));
    let mut worst = (0.0f64, String::new());
    for (p, spec) in model.params.iter().zip(arch.params()) {
        let diff = scaled_max_diff(&ref_grads.get(p).as_vec(), &grads.get(p).as_vec());
        if diff > worst.0 || worst.1.is_empty() || diff.is_nan() {
            worst = (diff, spec.name);
        }
    }
    Ok(Differences {
        loss: Some((loss - ref_loss).abs() / ref_loss.abs().max(f64::MIN_POSITIVE)),
        outputs: scaled_max_diff(&ref_out, &out),
        grads: Some(worst.0),
        worst_grad: worst.1,
        tolerances: Tolerances::F32,
    })
}

/// The self-check of a validation: one forward pass over `rows` windows, dfdx and cuDNN.
fn check_forward(dev: &Cuda, trained: &crate::artifact::TrainedModel, rows: usize) -> Result<Differences, TrainError> {
    let model = Model::from_trained(dev, trained)?;
    let windows = &trained.windows;
    let batch = first_batch(windows, trained.target, 0, false, rows);
    let (x, _) = upload(dev, &batch, windows)?;
    let ref_out = model.forward(x.clone(), false)?.as_vec();
    let mut net = CudnnRnn::new(dev, &model.arch, 0.0, 0, HiddenState::PerBatch)?;
    let out = predict(&mut net, &model, &x)?.as_vec();
    Ok(Differences {
        loss: None,
        outputs: scaled_max_diff(&ref_out, &out),
        grads: None,
        worst_grad: String::new(),
        tolerances: Tolerances::F32,
    })
}

fn upload(dev: &Cuda, batch: &HostBatch, windows: &Windows) -> Result<(Matrix<Cuda>, Matrix<Cuda>), TrainError> {
    let x = dev.try_tensor_from_vec(batch.x.clone(), (batch.rows, windows.input_len()))?;
    let y = dev.try_tensor_from_vec(batch.y.clone(), (batch.rows, windows.horizons))?;
    Ok((x, y))
}

/// A training step through cuDNN: batches from pinned memory, forward and backward through
/// cuDNN with dfdx's head and loss, clipping and fused Adam as the autodiff engine does.
pub struct CudnnEngine {
    net: CudnnRnn,
    opt: AdamW<Cuda>,
    uploader: PinnedRing,
    batch: Option<(Matrix<Cuda>, Matrix<Cuda>)>,
    grad_clip: Option<f64>,
}

impl StepEngine<Cuda> for CudnnEngine {
    fn new(dev: &Cuda, model: &Model<Cuda>, params: &TrainParams, seed: u64) -> Result<Self, TrainError> {
        let mut net = CudnnRnn::new(dev, &model.arch, model.dropout, seed, params.hidden_state)?;
        // Before the epoch's clock starts, as PyTorch's cached cuDNN descriptors are.
        net.prepare(params.batch_size, true)?;
        Ok(Self {
            net,
            opt: AdamW::new(model, params.lr, params.weight_decay)?,
            uploader: PinnedRing::new(dev, model, params)?,
            batch: None,
            grad_clip: params.grad_clip,
        })
    }

    fn upload(&mut self, dev: &Cuda, batch: &HostBatch, reuse: bool) -> Result<(), TrainError> {
        self.batch = Some(self.uploader.upload(dev, batch, reuse)?);
        Ok(())
    }

    fn allocations(&self) -> Allocations {
        self.uploader.allocations()
    }

    fn step(&mut self, _: &Cuda, model: &mut Model<Cuda>) -> Result<Tensor<(), f32, Cuda>, TrainError> {
        let (x, y) = self
            .batch
            .take()
            .ok_or_else(|| TrainError::Internal("a step without an uploaded batch".into()))?;
        let (loss, mut grads) = loss_and_grads(&mut self.net, model, &x, y)?;
        if let Some(max_norm) = self.grad_clip {
            grads = clip_global_norm(model, &grads, max_norm)?;
        }
        self.opt.step(model, &mut grads)?;
        Ok(loss)
    }

    fn predict(&mut self, dev: &Cuda, model: &Model<Cuda>, batch: &HostBatch) -> Result<Vec<f32>, TrainError> {
        let width = batch.x.len() / batch.rows.max(1);
        let x = dev.try_tensor_from_vec(batch.x.clone(), (batch.rows, width))?;
        Ok(predict(&mut self.net, model, &x)?.as_vec())
    }
}
