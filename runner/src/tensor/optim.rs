//! The optimizer step of the training loop (backward -> [clip] -> Adam/AdamW -> parameters).
//!
//! dfdx's built-in `Adam` only walks compile-time `TensorCollection` models, so this drives the
//! same fused kernel (`AdamConfig::try_update`, CPU and CUDA) per parameter tensor. The moment
//! buffers are allocated once here; a chain of tensor ops would allocate about ten temporaries
//! per parameter per step and run about 30% slower.

use super::mlp::{Matrix, Mlp};
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
    pub fn new(model: &Mlp<D>, lr: f64, weight_decay: f64) -> Result<Self, TrainError> {
        let mut moment1 = Gradients::leaky();
        let mut moment2 = Gradients::leaky();
        for layer in &model.layers {
            moment1.try_alloc_for(&layer.weight)?;
            moment1.try_alloc_for(&layer.bias)?;
            moment2.try_alloc_for(&layer.weight)?;
            moment2.try_alloc_for(&layer.bias)?;
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
    pub fn step(&mut self, model: &mut Mlp<D>, grads: &mut Gradients<f32, D>) -> Result<(), TrainError> {
        self.t += 1;
        for layer in &mut model.layers {
            let m = self.moment1.get_or_alloc_mut(&layer.weight)?;
            let v = self.moment2.get_or_alloc_mut(&layer.weight)?;
            let g = grads.get_or_alloc_mut(&layer.weight)?;
            self.cfg.try_update(self.t, &mut layer.weight, m, v, g)?;

            let m = self.moment1.get_or_alloc_mut(&layer.bias)?;
            let v = self.moment2.get_or_alloc_mut(&layer.bias)?;
            let g = grads.get_or_alloc_mut(&layer.bias)?;
            self.cfg.try_update(self.t, &mut layer.bias, m, v, g)?;
        }
        Ok(())
    }

    /// Applies one update from per-layer `(weight, bias)` gradient buffers, in layer order (the
    /// CPU path's gradients, which it computes outside dfdx's tape).
    pub fn step_buffers(
        &mut self,
        model: &mut Mlp<D>,
        grads: &[(DeviceVec<D>, DeviceVec<D>)],
    ) -> Result<(), TrainError> {
        if grads.len() != model.layers.len() {
            return Err(TrainError::Internal(format!(
                "{} gradient pairs for {} layers",
                grads.len(),
                model.layers.len()
            )));
        }
        self.t += 1;
        for (layer, (gw, gb)) in model.layers.iter_mut().zip(grads) {
            let m = self.moment1.get_or_alloc_mut(&layer.weight)?;
            let v = self.moment2.get_or_alloc_mut(&layer.weight)?;
            self.cfg.try_update(self.t, &mut layer.weight, m, v, gw)?;

            let m = self.moment1.get_or_alloc_mut(&layer.bias)?;
            let v = self.moment2.get_or_alloc_mut(&layer.bias)?;
            self.cfg.try_update(self.t, &mut layer.bias, m, v, gb)?;
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
    model: &Mlp<D>,
    grads: &Gradients<f32, D>,
    max_norm: f64,
) -> Result<Gradients<f32, D>, TrainError>
where
    TrainError: From<D::Err>,
{
    let weight_grads: Vec<Matrix<D>> = model.layers.iter().map(|l| grads.get(&l.weight)).collect();
    let bias_grads: Vec<Tensor<(usize,), f32, D>> = model.layers.iter().map(|l| grads.get(&l.bias)).collect();

    let mut sum_sq: Option<Tensor<(), f32, D>> = None;
    let mut accumulate = |s: Tensor<(), f32, D>| -> Result<(), TrainError> {
        sum_sq = Some(match sum_sq.take() {
            None => s,
            Some(acc) => acc.try_add(s)?,
        });
        Ok(())
    };
    for g in &weight_grads {
        accumulate(g.clone().try_square()?.try_sum()?)?;
    }
    for g in &bias_grads {
        accumulate(g.clone().try_square()?.try_sum()?)?;
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
    let mut add = |term: Tensor<(), f32, D, OwnedTape<f32, D>>| -> Result<(), TrainError> {
        surrogate = Some(match surrogate.take() {
            None => term,
            Some(acc) => acc.try_add(term)?,
        });
        Ok(())
    };
    for (layer, g) in model.layers.iter().zip(weight_grads) {
        let scaled = g.try_mul(scale.clone().try_broadcast_like(layer.weight.shape())?)?;
        let p = layer.weight.retaped::<OwnedTape<f32, D>>();
        add(p.try_mul(scaled)?.try_sum()?)?;
    }
    for (layer, g) in model.layers.iter().zip(bias_grads) {
        let scaled = g.try_mul(scale.clone().try_broadcast_like(layer.bias.shape())?)?;
        let p = layer.bias.retaped::<OwnedTape<f32, D>>();
        add(p.try_mul(scaled)?.try_sum()?)?;
    }
    match surrogate {
        Some(s) => Ok(s.try_backward()?),
        None => Ok(grads.clone()),
    }
}
