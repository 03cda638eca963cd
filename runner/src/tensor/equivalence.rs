//! One training step computed two ways and compared (`check_step = true`): the CPU's native
//! engine, and dfdx's autodiff on the training device (CUDA, or the CPU itself in a build
//! without it), from the same initial weights and the same first batch, with dropout 0 (the two
//! devices draw their masks from different generators).
//!
//! Tolerances, for f32 products of the sizes these models use:
//! - the loss agrees within [`LOSS_TOLERANCE`] (relative): the two sides sum a batch's squared
//!   errors in different orders (the CPU in f64, dfdx in f32), which moves the mean by a few
//!   f32 roundings, about 1e-7 relative per thousand terms;
//! - each gradient tensor agrees within [`GRAD_TOLERANCE`] of its largest element: a
//!   gradient is a sum over the batch's rows of products whose order differs between gemm and
//!   cuBLAS (which computes in plain f32 here: no TF32, it is off by default), so its error
//!   grows with the batch and is judged against the tensor's own scale, not element by
//!   element, where tiny gradients would make any relative bound meaningless.

use super::batches::first_batch;
use super::model::Model;
use super::native::{self, Products};
use super::{TrainDevice, TrainError};
use crate::artifact::{TargetScale, Windows};
use crate::kinds::train::{HiddenState, TrainParams};
use crate::metrics::Recorder;
use dfdx::prelude::*;
use std::sync::Arc;

/// The most the two losses may differ, relative to the CPU's.
pub const LOSS_TOLERANCE: f64 = 1e-5;

/// The most any gradient element may differ, relative to the largest element of its tensor.
pub const GRAD_TOLERANCE: f64 = 1e-4;

/// How far the two steps are apart.
#[derive(Debug, Clone, PartialEq)]
pub struct StepComparison {
    pub cpu_loss: f64,
    pub device_loss: f64,
    /// |device - cpu| / |cpu|.
    pub loss_rel_diff: f64,
    /// The largest, over parameter tensors, of max |device - cpu| / max |cpu|.
    pub grad_max_rel_diff: f64,
    /// The parameter tensor where `grad_max_rel_diff` was found.
    pub worst: String,
}

impl StepComparison {
    /// Records `step_loss_rel_diff` and `step_grad_max_rel_diff`, and returns an error saying
    /// which figure is out of tolerance, if one is.
    pub fn record(&self, rec: &mut Recorder) -> Result<(), TrainError> {
        rec.record("step_loss_rel_diff", self.loss_rel_diff, "ratio");
        rec.record("step_grad_max_rel_diff", self.grad_max_rel_diff, "ratio");
        if self.loss_rel_diff <= LOSS_TOLERANCE && self.grad_max_rel_diff <= GRAD_TOLERANCE {
            return Ok(());
        }
        Err(TrainError::StepMismatch(format!(
            "one step on the CPU and on the training device disagree: loss {} vs {} (relative \
             difference {:.2e}, tolerance {LOSS_TOLERANCE:e}); gradients differ by up to {:.2e} of \
             their scale in `{}` (tolerance {GRAD_TOLERANCE:e})",
            self.cpu_loss, self.device_loss, self.loss_rel_diff, self.grad_max_rel_diff, self.worst
        )))
    }
}

/// Computes the first step of a training with `params` and `seed` on the CPU's native engine
/// and with dfdx's autodiff on `dev`, dropout 0 and f32 products on both, and compares them.
/// Changes nothing the training itself then computes: both models are throwaway copies built
/// from the seed, and the batch is built apart from the training's batch source.
pub fn one_step<D: TrainDevice>(
    dev: &D,
    windows: &Arc<Windows>,
    params: &TrainParams,
    seed: u64,
) -> Result<StepComparison, TrainError>
where
    TrainError: From<D::Err>,
{
    let arch = params.arch(windows.seq_len, windows.n_features, windows.horizons)?;
    let scale = TargetScale::of(&windows.train.targets);
    let batch = first_batch(windows, scale, seed, params.shuffle, params.batch_size);
    let (rows, input, horizons) = (batch.rows, windows.input_len(), windows.horizons);

    let cpu = Cpu::seed_from_u64(seed);
    let cpu_model = Model::<Cpu>::new(&cpu, &arch, 0.0, seed)?;
    let mut net = native::engine(&cpu, &cpu_model, seed, HiddenState::PerBatch, Products::F32)?;
    let cpu_loss = f64::from(net.loss_and_grads(&batch.x, &batch.y, rows)?);

    let model = Model::new(dev, &arch, 0.0, seed)?;
    let x = dev.try_tensor_from_vec(batch.x.clone(), (rows, input))?;
    let y = dev.try_tensor_from_vec(batch.y.clone(), (rows, horizons))?;
    let (loss, grads) = model.loss_and_grads(x, y)?;
    let device_loss = f64::from(loss.array());

    let specs = arch.params();
    if net.grads().len() != specs.len() || model.params.len() != specs.len() {
        return Err(TrainError::Internal(format!(
            "{} parameter tensors, {} CPU gradients and {} device parameters",
            specs.len(),
            net.grads().len(),
            model.params.len()
        )));
    }
    let mut worst = (0.0f64, String::new());
    for ((param, cpu_grad), spec) in model.params.iter().zip(net.grads()).zip(&specs) {
        let device_grad = grads.get(param).as_vec();
        let diff = scaled_max_diff(cpu_grad, &device_grad);
        if diff > worst.0 || worst.1.is_empty() {
            worst = (diff, spec.name.to_string());
        }
    }
    Ok(StepComparison {
        cpu_loss,
        device_loss,
        loss_rel_diff: (device_loss - cpu_loss).abs() / cpu_loss.abs().max(f64::MIN_POSITIVE),
        grad_max_rel_diff: worst.0,
        worst: worst.1,
    })
}

/// max |a - b| / max |a|: 0 when both are all zeros; infinite when only `b` is not, when a
/// value is not finite, or when the lengths differ.
pub fn scaled_max_diff(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.iter().chain(b).any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    let scale = a.iter().map(|v| f64::from(v.abs())).fold(0.0, f64::max);
    let diff = a
        .iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).abs())
        .fold(0.0, f64::max);
    if diff == 0.0 {
        0.0
    } else if scale == 0.0 {
        f64::INFINITY
    } else {
        diff / scale
    }
}
