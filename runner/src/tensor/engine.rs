//! How one training step runs on a device (the [`StepEngine`]s the training loop drives): dfdx's
//! autodiff on any device, with the batch upload the device provides, and the native CPU engine.

use super::batches::HostBatch;
use super::model::{InitialState, Matrix, Model};
use super::native::{self, NativeNet};
use super::optim::{clip_global_norm, AdamW, LossScaler};
use super::{TrainDevice, TrainError};
use crate::kinds::train::{HiddenState, Precision, TrainParams};
use crate::metrics::Recorder;
use dfdx::prelude::*;

/// How one training step runs on a device: how a host batch gets onto it (`buffer_reuse`
/// decides between fresh buffers and ones allocated once) and how forward, backward, gradient
/// clipping and the Adam update are computed.
pub trait StepEngine<D: TrainDevice>: Sized {
    fn new(dev: &D, model: &Model<D>, params: &TrainParams, seed: u64) -> Result<Self, TrainError>;

    /// Moves `batch` to the device, ready for the next [`StepEngine::step`].
    fn upload(&mut self, dev: &D, batch: &HostBatch, reuse: bool) -> Result<(), TrainError>;

    /// One optimizer step on the last uploaded batch; returns its loss, left on the device.
    fn step(&mut self, dev: &D, model: &mut Model<D>) -> Result<Tensor<(), f32, D>, TrainError>;

    /// The model's outputs for `batch` (inference: no dropout, no update), standardized.
    fn predict(&mut self, dev: &D, model: &Model<D>, batch: &HostBatch) -> Result<Vec<f32>, TrainError>;

    /// Records what the engine alone knows, once training ends.
    fn record(&self, _rec: &mut Recorder) {}

    /// Leaves what this engine warmed up (buffers it would free when dropped) to the engine
    /// that trains after it: called on the warm-up step's throwaway engine, so its first-use
    /// costs stay out of epoch 0.
    fn keep_warm(&mut self) {}

    /// The batch buffers this engine has allocated so far, with the host time the allocating
    /// calls took (timed apart from the copies into them).
    fn allocations(&self) -> Allocations {
        Allocations::default()
    }
}

/// Batch-buffer allocations counted by an engine: how many, and the host time of the calls
/// that made them (and released the buffers they replaced), apart from any copy.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Allocations {
    pub count: u64,
    pub seconds: f64,
}

impl Allocations {
    /// Counts `count` allocations made by `f`, timing it on the host clock.
    pub fn time<T>(&mut self, count: u64, f: impl FnOnce() -> T) -> T {
        let start = std::time::Instant::now();
        let out = f();
        self.seconds += start.elapsed().as_secs_f64();
        self.count += count;
        out
    }

    /// The allocations made since `earlier`.
    pub fn since(self, earlier: Allocations) -> Allocations {
        Allocations {
            count: self.count.saturating_sub(earlier.count),
            seconds: (self.seconds - earlier.seconds).max(0.0),
        }
    }
}

/// How a host batch becomes the device tensors of the next step, for the autodiff engine.
/// `reuse` (`buffer_reuse`) decides between destination tensors allocated per batch and ones
/// allocated once and overwritten; it must change nothing else.
pub trait Uploader<D: TrainDevice>: Sized {
    /// Everything the uploads need is allocated here, before any clock starts.
    fn new(dev: &D, model: &Model<D>, params: &TrainParams) -> Result<Self, TrainError>;

    /// The batch's `(inputs, targets)` on the device.
    fn upload(&mut self, dev: &D, batch: &HostBatch, reuse: bool) -> Result<(Matrix<D>, Matrix<D>), TrainError>;

    /// The destination tensors allocated so far ([`StepEngine::allocations`]).
    fn allocations(&self) -> Allocations {
        Allocations::default()
    }
}

/// dfdx's own copies from the batch's host `Vec`: a new tensor per batch, or
/// [`ReusedBuffers`] written with `copy_from`. The CPU's uploader; on CUDA see
/// `tensor::cuda::PinnedRing`.
pub struct HostUpload<D: Device<f32>> {
    buffers: ReusedBuffers<D>,
}

impl<D: TrainDevice> Uploader<D> for HostUpload<D>
where
    TrainError: From<D::Err>,
{
    fn new(_: &D, _: &Model<D>, _: &TrainParams) -> Result<Self, TrainError> {
        Ok(Self {
            buffers: ReusedBuffers::default(),
        })
    }

    fn upload(&mut self, dev: &D, batch: &HostBatch, reuse: bool) -> Result<(Matrix<D>, Matrix<D>), TrainError> {
        let input = batch.x.len() / batch.rows.max(1);
        let horizons = batch.y.len() / batch.rows.max(1);
        if reuse {
            self.buffers.fill(dev, batch, input, horizons)
        } else {
            Ok((
                dev.try_tensor_from_vec(batch.x.clone(), (batch.rows, input))?,
                dev.try_tensor_from_vec(batch.y.clone(), (batch.rows, horizons))?,
            ))
        }
    }
}

/// dfdx's autodiff end to end: the forward pass on the tape, `backward()`, clipping on the
/// device, fused Adam. Runs on any dfdx device; the CUDA path uses it, with its own uploader.
pub struct AutodiffEngine<D: TrainDevice, U = HostUpload<D>> {
    opt: AdamW<D>,
    /// A recurrent model's initial state (`hidden_state`).
    state: InitialState<D>,
    uploader: U,
    batch: Option<(Matrix<D>, Matrix<D>)>,
    grad_clip: Option<f64>,
}

impl<D: TrainDevice, U: Uploader<D>> StepEngine<D> for AutodiffEngine<D, U>
where
    TrainError: From<D::Err>,
{
    fn new(dev: &D, model: &Model<D>, params: &TrainParams, _: u64) -> Result<Self, TrainError> {
        if params.precision != Precision::F32 {
            // `TrainParams::check` keeps other precisions off CUDA; the CPU's autodiff engine is
            // a test reference only.
            return Err(TrainError::Internal(format!(
                "the autodiff engine trains in f32 only, not {}",
                params.precision.as_str()
            )));
        }
        Ok(Self {
            opt: AdamW::new(model, params.lr, params.weight_decay)?,
            state: match params.hidden_state {
                HiddenState::PerBatch => InitialState::PerBatch,
                HiddenState::Reuse => InitialState::Reuse(Vec::new()),
            },
            uploader: U::new(dev, model, params)?,
            batch: None,
            grad_clip: params.grad_clip,
        })
    }

    fn upload(&mut self, dev: &D, batch: &HostBatch, reuse: bool) -> Result<(), TrainError> {
        self.batch = Some(self.uploader.upload(dev, batch, reuse)?);
        Ok(())
    }

    fn allocations(&self) -> Allocations {
        self.uploader.allocations()
    }

    fn step(&mut self, _: &D, model: &mut Model<D>) -> Result<Tensor<(), f32, D>, TrainError> {
        let (x, y) = self
            .batch
            .take()
            .ok_or_else(|| TrainError::Internal("a step without an uploaded batch".into()))?;
        let (loss_value, mut grads) = model.loss_and_grads_with(x, y, &mut self.state)?;
        if let Some(max_norm) = self.grad_clip {
            grads = clip_global_norm(model, &grads, max_norm)?;
        }
        self.opt.step(model, &mut grads)?;
        Ok(loss_value)
    }

    fn predict(&mut self, dev: &D, model: &Model<D>, batch: &HostBatch) -> Result<Vec<f32>, TrainError> {
        autodiff_predict(dev, model, batch)
    }
}

/// dfdx's forward pass (no tape, no dropout) over one host batch.
pub fn autodiff_predict<D: TrainDevice>(dev: &D, model: &Model<D>, batch: &HostBatch) -> Result<Vec<f32>, TrainError>
where
    TrainError: From<D::Err>,
{
    let width = batch.x.len() / batch.rows.max(1);
    let x = dev.try_tensor_from_vec(batch.x.clone(), (batch.rows, width))?;
    Ok(model.forward(x, false)?.as_vec())
}

/// The CPU path: forward and backward on host buffers with the `gemm` crate's kernels
/// ([`native`], per model kind), dfdx's fused Adam on the parameter tensors. "Device" buffers
/// are host vectors here: a fresh pair per batch, or one pair overwritten in place. Under
/// `precision = "f16"` the products run in f16 and a [`LossScaler`] guards the updates.
pub struct NativeCpuEngine {
    net: Box<dyn NativeNet>,
    opt: AdamW<Cpu>,
    scaler: Option<LossScaler>,
    x: Vec<f32>,
    y: Vec<f32>,
    rows: usize,
    grad_clip: Option<f64>,
    /// The batch buffers allocated (a new pair per batch, or a reused pair that grows).
    allocated: Allocations,
    /// Whether dropping the engine frees the f16 conversion buffers (the warm-up engine leaves
    /// them to the training that follows, see [`StepEngine::keep_warm`]).
    release_on_drop: bool,
}

impl Drop for NativeCpuEngine {
    fn drop(&mut self) {
        if self.scaler.is_some() && self.release_on_drop {
            native::release_scratch();
        }
    }
}

impl NativeCpuEngine {
    /// The loss scaler, under `precision = "f16"` (tests start it where they need it).
    #[cfg(test)]
    pub(super) fn scaler_mut(&mut self) -> Option<&mut LossScaler> {
        self.scaler.as_mut()
    }

    /// Forward, backward, (f16: unscaling, overflow skip), clipping and the update; returns the
    /// loss.
    fn step_on_pool(&mut self, model: &mut Model<Cpu>) -> Result<f32, TrainError> {
        let loss = match &mut self.scaler {
            None => self.net.loss_and_grads(&self.x, &self.y, self.rows)?,
            Some(scaler) => {
                let loss = self
                    .net
                    .loss_and_grads_scaled(&self.x, &self.y, self.rows, scaler.scale())?;
                if !scaler.unscale(self.net.grads_mut().iter_mut().map(|g| &mut g[..])) {
                    // An f16 overflow: no update (the loss still counts, as in PyTorch).
                    return Ok(loss);
                }
                loss
            }
        };
        if let Some(max_norm) = self.grad_clip {
            native::clip_global_norm(self.net.grads_mut(), max_norm);
        }
        self.opt.step_buffers(model, self.net.grads())?;
        self.net.refresh(model);
        Ok(loss)
    }
}

impl StepEngine<Cpu> for NativeCpuEngine {
    fn new(dev: &Cpu, model: &Model<Cpu>, params: &TrainParams, seed: u64) -> Result<Self, TrainError> {
        let (products, scaler) = match params.precision {
            Precision::F32 => (native::Products::F32, None),
            Precision::F16 => (native::Products::F16, Some(LossScaler::new())),
            Precision::Bf16 => {
                return Err(TrainError::Internal(
                    "bf16 reached the CPU engine; `TrainParams::check` rejects it".into(),
                ))
            }
        };
        Ok(Self {
            net: native::engine(dev, model, seed, params.hidden_state, products)?,
            opt: AdamW::new(model, params.lr, params.weight_decay)?,
            scaler,
            x: Vec::new(),
            y: Vec::new(),
            rows: 0,
            grad_clip: params.grad_clip,
            allocated: Allocations::default(),
            release_on_drop: true,
        })
    }

    fn keep_warm(&mut self) {
        self.release_on_drop = false;
    }

    fn upload(&mut self, _: &Cpu, batch: &HostBatch, reuse: bool) -> Result<(), TrainError> {
        let (x, y) = (&mut self.x, &mut self.y);
        if reuse {
            // The pair is kept: an allocation only when a batch outgrows it (the first one).
            let grow = u64::from(x.capacity() < batch.x.len()) + u64::from(y.capacity() < batch.y.len());
            if grow > 0 {
                self.allocated.time(grow, || {
                    x.reserve(batch.x.len().saturating_sub(x.len()));
                    y.reserve(batch.y.len().saturating_sub(y.len()));
                });
            }
            x.clear();
            y.clear();
        } else {
            // A new pair per batch: the allocation (and the release of the pair it replaces)
            // timed apart from the copy into it.
            self.allocated.time(2, || {
                *x = Vec::with_capacity(batch.x.len());
                *y = Vec::with_capacity(batch.y.len());
            });
        }
        x.extend_from_slice(&batch.x);
        y.extend_from_slice(&batch.y);
        self.rows = batch.rows;
        Ok(())
    }

    fn allocations(&self) -> Allocations {
        self.allocated
    }

    fn step(&mut self, dev: &Cpu, model: &mut Model<Cpu>) -> Result<Tensor<(), f32, Cpu>, TrainError> {
        if self.rows == 0 {
            return Err(TrainError::Internal("a step without an uploaded batch".into()));
        }
        // The whole step runs on a thread of the pool, so its products and elementwise passes
        // fork from a worker (a cheap join) instead of each being injected into the pool from
        // outside and waited for on a lock (7% of a small MLP's step).
        let loss = rayon::scope(|_| self.step_on_pool(model))?;
        Ok(dev.try_tensor(loss)?)
    }

    fn predict(&mut self, _: &Cpu, _: &Model<Cpu>, batch: &HostBatch) -> Result<Vec<f32>, TrainError> {
        // On a thread of the pool, as `step` is.
        rayon::scope(|_| Ok(self.net.forward(&batch.x, batch.rows, false)?.to_vec()))
    }

    fn record(&self, rec: &mut Recorder) {
        if let Some(scaler) = &self.scaler {
            rec.record("loss_scale", f64::from(scaler.scale()), "");
            rec.record("skipped_steps", scaler.skipped() as f64, "count");
        }
    }
}

/// Device tensors allocated once and overwritten each batch (`buffer_reuse = true`). The last
/// batch of an epoch may be shorter, so it gets its own pair, allocated on first use.
#[derive(Default)]
pub struct ReusedBuffers<D: Device<f32>> {
    full: Option<(Matrix<D>, Matrix<D>)>,
    tail: Option<(Matrix<D>, Matrix<D>)>,
}

impl<D: Device<f32>> ReusedBuffers<D>
where
    TrainError: From<D::Err>,
{
    /// The pair for a batch of `rows`, made by `make` the first time a batch of that size comes.
    pub fn pair(
        &mut self,
        rows: usize,
        make: impl FnOnce() -> Result<(Matrix<D>, Matrix<D>), TrainError>,
    ) -> Result<&mut (Matrix<D>, Matrix<D>), TrainError> {
        let fits = |slot: &Option<(Matrix<D>, Matrix<D>)>| slot.as_ref().is_some_and(|(x, _)| x.shape().0 == rows);
        let slot = if self.full.is_none() || fits(&self.full) {
            &mut self.full
        } else {
            &mut self.tail
        };
        if !fits(slot) {
            *slot = Some(make()?);
        }
        Ok(slot.as_mut().expect("filled just above"))
    }

    /// `batch` copied into its pair with dfdx's `copy_from`; the pair's tensors, shared.
    pub fn fill(
        &mut self,
        dev: &D,
        batch: &HostBatch,
        input: usize,
        horizons: usize,
    ) -> Result<(Matrix<D>, Matrix<D>), TrainError> {
        let (x, y) = self.pair(batch.rows, || {
            Ok((
                dev.try_zeros_like(&(batch.rows, input))?,
                dev.try_zeros_like(&(batch.rows, horizons))?,
            ))
        })?;
        // The previous step's clones are gone by now, so these copies write in place.
        x.copy_from(&batch.x);
        y.copy_from(&batch.y);
        Ok((x.clone(), y.clone()))
    }
}
