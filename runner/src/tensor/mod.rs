//! Tensor work of the `train` and `validate` stages (Windows -> TrainedModel -> metrics): device
//! selection (CPU, or CUDA with the `cuda` feature), the models (`model`: an MLP, LSTM or GRU
//! as a flat list of parameter tensors), their optimizer glue and the training loop.
//!
//! Which engine computes a step, per device (one forward/backward each):
//! - CPU: `native`, forward and backward on host buffers with the `gemm` crate's kernels, one
//!   engine per model kind; `validate` runs the same forward pass.
//! - CUDA: dfdx's autodiff over the forward passes in `mlp` and `rnn`.
//!
//! Both drive dfdx's fused Adam on the same parameter tensors, and both clip by the global norm
//! the same way. The autodiff engine also runs on the CPU device, where the tests hold the
//! native engines to it and both to finite differences. What still differs between the devices:
//! dropout masks come from different generators (ChaCha8 on the CPU, dfdx's on CUDA), and the
//! CPU sums a batch's loss in f64, dfdx in f32; so CPU and CUDA agree to a tolerance at
//! dropout 0, not bit for bit. Every knob has a real implementation on each device.

mod batches;
#[cfg(feature = "cuda")]
mod cuda;
mod device;
mod engine;
pub mod equivalence;
mod error;
mod eval;
pub mod fastpath;
mod kinds;
mod mlp;
mod model;
mod native;
mod optim;
mod phases;
mod rnn;
pub mod tc;
mod train_loop;

#[cfg(test)]
mod tests;
pub use crate::kinds::memory;
pub use crate::kinds::train::{
    Activation, CpuEngine, CudaGraph, DeviceKind, HiddenState, ModelKind, Precision, RnnEngine, TrainParams,
    TrainTarget, ValidateParams,
};
pub use device::TrainDevice;
pub use error::TrainError;
pub use eval::{direction_accuracy, ic_per_date, mae, mse, spearman, DateIc};
pub use model::{Matrix, Model, Vector};

use crate::artifact::{TrainedModel, Windows};
use crate::metrics::Recorder;
use dfdx::tensor::Cpu;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Trains a model on `windows.train` with the effective `seed` (the manifest's, else one the
/// caller derives per repetition) and records the stage's metrics.
pub fn train(
    windows: Arc<Windows>,
    params: &TrainParams,
    seed: u64,
    rec: &mut Recorder,
    cancel: &AtomicBool,
) -> Result<TrainedModel, TrainError> {
    params.check()?;
    let device = resolve_device(params.device, rec);
    cudnn_needs_cuda(params.rnn_engine, device)?;
    let hidden = params.hidden_widths()?;
    record_model_facts(rec, device, params.model, &hidden, params.batch_size, params.precision);
    match device {
        DeviceKind::Cpu | DeviceKind::Auto => {
            let dev = Cpu::seed_from_u64(seed);
            if params.check_step {
                equivalence::one_step(&dev, &windows, params, seed)?.record(rec)?;
            }
            let model = match params.cpu_engine {
                CpuEngine::Native => {
                    train_loop::run::<_, engine::NativeCpuEngine>(&dev, &windows, params, seed, rec, cancel)?
                }
                CpuEngine::Autodiff => {
                    train_loop::run::<_, engine::AutodiffEngine<_>>(&dev, &windows, params, seed, rec, cancel)?
                }
            };
            Ok(model.to_trained(windows))
        }
        DeviceKind::Cuda => train_cuda(windows, params, seed, rec, cancel),
    }
}

/// Evaluates `model` on its validation windows and records `mse`, `mae`, the ratios
/// `mse_vs_zero` and `mse_vs_mean`, `direction_accuracy`, `ic`, `ic_per_date` with `ic_t`, and
/// the naive baselines (see `eval` for their definitions).
pub fn validate(model: &TrainedModel, params: &ValidateParams, rec: &mut Recorder) -> Result<(), TrainError> {
    params.check()?;
    eval::check_fits(model, &model.windows)?;
    let device = resolve_device(params.device, rec);
    cudnn_needs_cuda(params.rnn_engine, device)?;
    // Inference runs in f32 whatever precision trained the model.
    record_model_facts(
        rec,
        device,
        model.arch.kind,
        &model.arch.hidden,
        params.batch_size,
        Precision::F32,
    );
    let predictions = match device {
        DeviceKind::Cpu | DeviceKind::Auto => {
            if params.non_blocking {
                rec.note("non_blocking has no effect on the CPU: there is no copy to a device to overlap");
            }
            let dev = Cpu::default();
            // Inference in f32 whatever precision trained the model: its weights are the f32
            // master copies.
            let mut net = native::engine(
                &dev,
                &Model::from_trained(&dev, model)?,
                0,
                HiddenState::PerBatch,
                native::Products::F32,
            )?;
            let (windows, valid) = (&model.windows, &model.windows.valid);
            let mut log = eval::BatchLog::new(params.log_every);
            setup_hook();
            let start = std::time::Instant::now();
            let predictions = eval::predict(windows, valid, params.batch_size, model.target, |b| {
                let out = net.forward(&b.x, b.rows, false)?.to_vec();
                log.batch(|| Ok(out.clone()))?;
                Ok(out)
            })?;
            eval::record_batch_loop(rec, start.elapsed());
            log.record(rec);
            predictions
        }
        DeviceKind::Cuda => predict_cuda(model, params, rec)?,
    };
    eval::record_scores(model, &predictions, rec)
}

#[cfg(test)]
thread_local! {
    /// A pause at the end of a validation's setup, for the test that shows
    /// `batch_loop_seconds` leaves setup out.
    static SETUP_DELAY: std::cell::Cell<std::time::Duration> =
        const { std::cell::Cell::new(std::time::Duration::ZERO) };
}

/// Where a validation's setup ends and its batch loop begins (a test can slow the setup).
fn setup_hook() {
    #[cfg(test)]
    std::thread::sleep(SETUP_DELAY.with(std::cell::Cell::get));
}

/// Records what a model stage runs on (declared in `kinds::facts`): `device`, `gpu` (on
/// CUDA), `model`, `hidden`, `batch_size`, `precision` and `threads`.
fn record_model_facts(
    rec: &mut Recorder,
    device: DeviceKind,
    model: ModelKind,
    hidden: &[usize],
    batch_size: usize,
    precision: Precision,
) {
    let on_cuda = device == DeviceKind::Cuda;
    rec.fact("device", if on_cuda { "cuda" } else { "cpu" });
    if let Some(gpu) = on_cuda.then(|| crate::cuda_dl::device_name(0)).flatten() {
        rec.fact("gpu", gpu);
    }
    rec.fact("model", model.as_str());
    let widths: Vec<String> = hidden.iter().map(usize::to_string).collect();
    rec.fact(
        "hidden",
        if widths.is_empty() {
            "none".to_owned()
        } else {
            widths.join(",")
        },
    );
    rec.fact("batch_size", batch_size.to_string());
    rec.fact("precision", precision.as_str());
    rec.fact("threads", rayon::current_num_threads().to_string());
}

/// `rnn_engine = "cudnn"` on a stage that `device = "auto"` put on the CPU: an error, since
/// the choice cannot be honoured (`check()` refuses it with `device = "cpu"`).
fn cudnn_needs_cuda(engine: RnnEngine, device: DeviceKind) -> Result<(), TrainError> {
    if engine == RnnEngine::Cudnn && device != DeviceKind::Cuda {
        return Err(TrainError::Device(
            "rnn_engine = \"cudnn\" needs CUDA, and device = \"auto\" ran this stage on the CPU \
             (see the stage's note for why)"
                .into(),
        ));
    }
    Ok(())
}

/// The device to run on (`auto` resolved), noting what `auto` chose.
fn resolve_device(device: DeviceKind, rec: &mut Recorder) -> DeviceKind {
    let (resolved, note) = device.resolve();
    if let Some(note) = note {
        rec.note(note);
    }
    resolved
}

#[cfg(feature = "cuda")]
use cuda::{predict_cuda, train_cuda};

#[cfg(not(feature = "cuda"))]
fn train_cuda(
    _: Arc<Windows>,
    params: &TrainParams,
    _: u64,
    _: &mut Recorder,
    _: &AtomicBool,
) -> Result<TrainedModel, TrainError> {
    Err(without_cuda(params.check()))
}

#[cfg(not(feature = "cuda"))]
fn predict_cuda(_: &TrainedModel, params: &ValidateParams, _: &mut Recorder) -> Result<Vec<f32>, TrainError> {
    Err(without_cuda(params.check()))
}

/// The error for `device = "cuda"` in a build without the feature: the parameter check's own
/// message (`check()` refuses it before any run; this keeps direct callers from a panic).
#[cfg(not(feature = "cuda"))]
fn without_cuda(checked: Result<(), crate::params::ParamError>) -> TrainError {
    checked.err().map_or_else(
        || TrainError::Internal("cuda requested in a build without it".into()),
        TrainError::Params,
    )
}
