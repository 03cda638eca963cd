//! The optimizer step of the training loop (backward -> [clip] -> Adam/AdamW -> parameters).
//!
//! dfdx's built-in `Adam` only walks compile-time `TensorCollection` models, so this drives the
//! same fused kernel (`AdamConfig::try_update`, CPU and CUDA) per parameter tensor of the
//! model's flat list, whatever its kind. The moment
//! buffers are allocated once here; a chain of tensor ops would allocate about ten temporaries
//! per parameter per step and run about 30% slower.

use super::model::{Model, Vector};
use super::TrainError;
use dfdx::prelude::*;
use dfdx::tensor_ops::{AdamConfig, WeightDecay};

/// A buffer on device `D` (a gradient or an Adam moment).
type DeviceVec<D> = <D as Storage<f32>>::Vec;

/// Adam with optional decoupled weight decay (AdamW), betas (0.9, 0.999), eps 1e-8, as in
/// PyTorch's defaults.
pub struct AdamW<D: Device<f32>> {
    cfg: AdamConfig,
    /// Steps taken so far; Adam's bias correction needs it (1-based at the kernel).
    t: i32,
    /// First and second moments, keyed by parameter like gradients are.
    moment1: Gradients<f32, D>,
    moment2: Gradients<f32, D>,
}

impl<D: Device<f32>> AdamW<D>
where
    TrainError: From<D::Err>,
{
    pub fn new(model: &Model<D>, lr: f64, weight_decay: f64) -> Result<Self, TrainError> {
        let mut moment1 = Gradients::leaky();
        let mut moment2 = Gradients::leaky();
        for p in &model.params {
            moment1.try_alloc_for(p)?;
            moment2.try_alloc_for(p)?;
        }
        Ok(Self {
            cfg: AdamConfig {
                lr,
                betas: [0.9, 0.999],
                eps: 1e-8,
                weight_decay: (weight_decay > 0.0).then_some(WeightDecay::Decoupled(weight_decay)),
            },
            t: 0,
            moment1,
            moment2,
        })
    }

    /// Applies one update from `grads` (which must hold a gradient for every parameter).
    pub fn step(&mut self, model: &mut Model<D>, grads: &mut Gradients<f32, D>) -> Result<(), TrainError> {
        self.t += 1;
        for p in &mut model.params {
            let m = self.moment1.get_or_alloc_mut(p)?;
            let v = self.moment2.get_or_alloc_mut(p)?;
            let g = grads.get_or_alloc_mut(p)?;
            self.cfg.try_update(self.t, p, m, v, g)?;
        }
        Ok(())
    }

    /// Applies one update from gradient buffers in the model's parameter order (the CPU
    /// engines' gradients, which they compute outside dfdx's tape).
    pub fn step_buffers(&mut self, model: &mut Model<D>, grads: &[DeviceVec<D>]) -> Result<(), TrainError> {
        if grads.len() != model.params.len() {
            return Err(TrainError::Internal(format!(
                "{} gradients for {} parameters",
                grads.len(),
                model.params.len()
            )));
        }
        self.t += 1;
        for (p, g) in model.params.iter_mut().zip(grads) {
            let m = self.moment1.get_or_alloc_mut(p)?;
            let v = self.moment2.get_or_alloc_mut(p)?;
            self.cfg.try_update(self.t, p, m, v, g)?;
        }
        Ok(())
    }
}

/// Gradients scaled so their global L2 norm is at most `max_norm` (PyTorch's
/// `clip_grad_norm_`: scale = min(1, max_norm / (norm + 1e-6))).
///
/// The scale stays on the device (no sync). dfdx does not let code outside it write a tensor
/// into a gradient buffer, so the scaled gradients are produced as the gradients of the linear
/// surrogate `sum_p <p, scale * g_p>`, whose derivative with respect to each `p` is exactly
/// `scale * g_p`. That costs a few elementwise passes over the parameters, only when clipping.
pub fn clip_global_norm<D: Device<f32>>(
    model: &Model<D>,
    grads: &Gradients<f32, D>,
    max_norm: f64,
) -> Result<Gradients<f32, D>, TrainError>
where
    TrainError: From<D::Err>,
{
    let param_grads: Vec<Vector<D>> = model.params.iter().map(|p| grads.get(p)).collect();
    // Matrices first, then vectors: the order the sum has always been taken in, so clipped
    // results stay bit-identical across versions.
    let specs = model.arch.params();
    let order = (0..specs.len())
        .filter(|&i| specs[i].shape.len() == 2)
        .chain((0..specs.len()).filter(|&i| specs[i].shape.len() != 2));
    let mut sum_sq: Option<Tensor<(), f32, D>> = None;
    for g in order.map(|i| &param_grads[i]) {
        let s = g.clone().try_square()?.try_sum()?;
        sum_sq = Some(match sum_sq.take() {
            None => s,
            Some(acc) => acc.try_add(s)?,
        });
    }
    let Some(sum_sq) = sum_sq else {
        return Ok(grads.clone());
    };
    let scale = sum_sq
        .try_sqrt()?
        .try_add(1e-6)?
        .try_recip()?
        .try_mul(max_norm as f32)?
        .try_clamp(0.0, 1.0)?;

    let mut surrogate: Option<Tensor<(), f32, D, OwnedTape<f32, D>>> = None;
    for (p, g) in model.params.iter().zip(param_grads) {
        let scaled = g.try_mul(scale.clone().try_broadcast_like(p.shape())?)?;
        let term = p.retaped::<OwnedTape<f32, D>>().try_mul(scaled)?.try_sum()?;
        surrogate = Some(match surrogate.take() {
            None => term,
            Some(acc) => acc.try_add(term)?,
        });
    }
    match surrogate {
        Some(s) => Ok(s.try_backward()?),
        None => Ok(grads.clone()),
    }
}

/// Dynamic loss scaling for f16 products, with PyTorch's `GradScaler` defaults: the loss's
/// gradient is multiplied by `scale` (initially 2^16) before the backward pass, so gradients too
/// small for f16 survive it; the gradients are divided by it again before clipping and the
/// update. A step whose gradients hold an infinity or NaN (an f16 overflow) is skipped and the
/// scale halved; after 2000 steps in a row without one, the scale doubles. Scales are powers of
/// two, so scaling and unscaling are exact.
#[derive(Debug, Clone)]
pub struct LossScaler {
    scale: f32,
    /// Steps since the last overflow or growth.
    good: u32,
    skipped: u64,
}

impl LossScaler {
    pub const INITIAL: f32 = 65536.0;
    pub const GROWTH_INTERVAL: u32 = 2000;
    /// Bounds that keep the scale a finite, normal power of two however long a run is.
    const MIN: f32 = 1.0 / 16_777_216.0;
    const MAX: f32 = 18_446_744_073_709_551_616.0;

    pub fn new() -> Self {
        Self::starting_at(Self::INITIAL)
    }

    /// A scaler starting at `scale` (a power of two).
    pub fn starting_at(scale: f32) -> Self {
        Self {
            scale,
            good: 0,
            skipped: 0,
        }
    }

    /// The factor the next backward pass is seeded with.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// Steps skipped for an overflow so far.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Divides every gradient by the scale the backward pass used and returns `true`, or
    /// returns `false` when any gradient is not finite: that step must be skipped, and the
    /// scale is halved. Either way the scale is updated for the next step.
    pub fn unscale<'a>(&mut self, grads: impl IntoIterator<Item = &'a mut [f32]>) -> bool {
        let mut grads: Vec<&mut [f32]> = grads.into_iter().collect();
        if grads.iter().any(|g| g.iter().any(|v| !v.is_finite())) {
            self.skipped += 1;
            self.good = 0;
            self.scale = (self.scale * 0.5).max(Self::MIN);
            return false;
        }
        let inverse = 1.0 / self.scale;
        for g in &mut grads {
            g.iter_mut().for_each(|v| *v *= inverse);
        }
        self.good += 1;
        if self.good == Self::GROWTH_INTERVAL {
            self.good = 0;
            self.scale = (self.scale * 2.0).min(Self::MAX);
        }
        true
    }
}

impl Default for LossScaler {
    fn default() -> Self {
        Self::new()
    }
}
