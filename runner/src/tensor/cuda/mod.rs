//! The CUDA training path (`device = "cuda"`): the device, its memory settings and peak, phase
//! stamps as CUDA events on the training stream, and batches copied from pinned memory
//! ([`ring`]). The steps are dfdx's autodiff ([`super::engine::AutodiffEngine`]), cuDNN's for
//! an LSTM or GRU ([`cudnn_engine`]), or, for an MLP in bf16 or f16 or under a CUDA graph, this
//! crate's cuBLAS step ([`tc_engine`], chosen by [`tc_check`]).
//!
//! Everything here queues work on dfdx's stream (cudarc's device stream: the context's null
//! stream) and never synchronizes, except where a step must wait: reading the loss back, the
//! epoch's end, and a pinned slot whose previous copy the device has not done yet.

mod context;
mod cudnn_engine;
mod cudnn_rnn;
mod ring;
mod tc_check;
mod tc_device;
mod tc_engine;

use context::{bind, stream};
pub use ring::PinnedRing;
use ring::ValidationUploads;

use super::engine::AutodiffEngine;
use super::phases::{LoopDevice, Stamps};
use super::{eval, train_loop, Model, TrainError};
use crate::artifact::{TrainedModel, Windows};
use crate::cuda_raw::{CudaFailure, Event, MemPool};
use crate::kinds::train::{TrainParams, ValidateParams};
use crate::metrics::Recorder;
use cudarc::driver::sys;
use dfdx::tensor::{Cache, Cuda};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

impl From<CudaFailure> for TrainError {
    fn from(e: CudaFailure) -> Self {
        TrainError::Device(format!("cuda: {e}"))
    }
}

/// GPU 0, or a message saying why not. Never `AutoDevice::default()`: it panics when no
/// device or driver is present.
pub fn device(seed: u64) -> Result<Cuda, TrainError> {
    // The libraries load at run time, and cudarc 0.9 unwraps `cuInit`: probe first.
    crate::cuda_dl::probe().map_err(|e| TrainError::Device(format!("cuda: {}", e.with_hint())))?;
    Cuda::try_build(0, seed).map_err(|e| {
        TrainError::Device(format!(
            "cannot open CUDA device 0 ({e}); check that a GPU and its driver are present, \
             that libcublas and libnvrtc are on LD_LIBRARY_PATH, or use `device = \"cpu\"`"
        ))
    })
}

/// Trains on CUDA and records, besides the training loop's metrics, `device_mem_peak_bytes`:
/// the most device memory allocated from the memory pool at once (the tensors, and dfdx's cache
/// of freed ones, which is emptied after each epoch's evaluation), read from the driver after
/// the last epoch. With `check_step`, the check runs first, on the same device, and takes some
/// of the one-time costs that `first_step_seconds` otherwise shows.
pub fn train_cuda(
    windows: Arc<Windows>,
    params: &TrainParams,
    seed: u64,
    rec: &mut Recorder,
    cancel: &AtomicBool,
) -> Result<TrainedModel, TrainError> {
    let dev = device(seed)?;
    bind(&dev)?;
    if params.check_step {
        super::equivalence::one_step(&dev, &windows, params, seed)?.record(rec)?;
    }
    // Declared after the device and before every tensor: dropped after the tensors, on every way
    // out, so their memory goes back as the settings below are undone.
    // The self-checks run here, before any timed step, on their own throwaway models.
    let cudnn = cudnn_engine::train_on_cudnn(&dev, &windows, params, seed, rec)?;
    let mlp = if cudnn {
        rec.fact("cuda_graph", "false");
        None
    } else {
        Some(tc_check::resolve(&dev, &windows, params, seed, rec)?)
    };
    // What runs: the MLP's resolved parameters (a failed bf16 or f16 check trains in f32).
    let (cublas, run) = match &mlp {
        Some(r) => (r.cublas, &r.params),
        None => (false, params),
    };
    let memory = DeviceMemory::keep(&dev, rec)?;
    let model = if cudnn {
        train_loop::run::<_, cudnn_engine::CudnnEngine>(&dev, &windows, run, seed, rec, cancel)?
    } else if cublas {
        train_loop::run::<_, tc_engine::TcEngine>(&dev, &windows, run, seed, rec, cancel)?
    } else {
        train_loop::run::<_, AutodiffEngine<Cuda, PinnedRing>>(&dev, &windows, run, seed, rec, cancel)?
    };
    memory.record_peak(rec);
    Ok(model.to_trained(windows))
}

/// For one training: freed tensors wait in dfdx's cache for the next allocation of their size
/// instead of going back to the driver, as PyTorch's caching allocator does; memory freed to the
/// pool is not returned to the driver at every synchronization (release threshold at its
/// maximum). Both are undone on drop: dfdx 0.13 does not free its cache with the device, which
/// is built per trial, and the pool belongs to the device, shared with later stages.
struct DeviceMemory<'a> {
    dev: &'a Cuda,
    /// The pool and the release threshold it had before.
    pool: Option<(MemPool, u64)>,
}

impl<'a> DeviceMemory<'a> {
    fn keep(dev: &'a Cuda, rec: &mut Recorder) -> Result<Self, TrainError> {
        dev.try_enable_cache()?;
        let pool = match Self::keep_pool() {
            Ok(pool) => pool,
            Err(e) => {
                rec.note(format!(
                    "the memory pool is left as it was, and no device_mem_peak_bytes: {e}"
                ));
                None
            }
        };
        Ok(Self { dev, pool })
    }

    fn keep_pool() -> Result<Option<(MemPool, u64)>, CudaFailure> {
        let Some(pool) = MemPool::of_device(0)? else {
            return Ok(None);
        };
        let before = pool.release_threshold()?;
        pool.set_release_threshold(u64::MAX)?;
        pool.reset_peaks()?;
        Ok(Some((pool, before)))
    }

    fn record_peak(&self, rec: &mut Recorder) {
        match self.pool.as_ref().map(|(pool, _)| pool.peaks()) {
            Some(Ok((used, _reserved))) => rec.record("device_mem_peak_bytes", used as f64, "B"),
            Some(Err(e)) => rec.note(format!("no device_mem_peak_bytes: {e}")),
            None => rec.note("no device_mem_peak_bytes: this device has no stream-ordered memory pool to read it from"),
        }
    }
}

impl Drop for DeviceMemory<'_> {
    fn drop(&mut self) {
        // Disabling empties the cache; tensors dropped later are freed directly.
        if let Err(e) = self.dev.try_disable_cache() {
            tracing::warn!("cannot empty the CUDA tensor cache: {e}");
        }
        if let Some((pool, before)) = &self.pool {
            let undone = crate::cuda_raw::ctx_sync()
                .and_then(|()| pool.set_release_threshold(*before))
                .and_then(|()| pool.trim());
            if let Err(e) = undone {
                tracing::warn!("cannot hand the training's pool memory back: {e}");
            }
        }
    }
}

pub fn predict_cuda(model: &TrainedModel, params: &ValidateParams, rec: &mut Recorder) -> Result<Vec<f32>, TrainError> {
    let dev = device(0)?;
    let cudnn = cudnn_engine::predict_on_cudnn(&dev, model, params.batch_size, params.rnn_engine, rec)?;
    let per_batch = crate::kinds::train::HiddenState::PerBatch;
    let mut rnn = if cudnn {
        let mut rnn = cudnn_rnn::CudnnRnn::new(&dev, &model.arch, 0.0, 0, per_batch)?;
        rnn.prepare(params.batch_size, false)?;
        Some(rnn)
    } else {
        None
    };
    let net = Model::from_trained(&dev, model)?;
    let (windows, valid) = (&model.windows, &model.windows.valid);
    let floats = params.batch_size.saturating_mul(windows.input_len());
    let mut uploads = ValidationUploads::new(&dev, floats, params.non_blocking)?;
    let mut log = eval::BatchLog::new(params.log_every);
    let start = std::time::Instant::now();
    let outputs = eval::predict_deferred(
        windows,
        valid,
        params.batch_size,
        model.target,
        |b| {
            let x = uploads.upload(&dev, b)?;
            let y = match rnn.as_mut() {
                Some(rnn) => cudnn_engine::predict(rnn, &net, &x)?,
                None => net.forward(x, false)?,
            };
            // A logged batch waits for its outputs, as a logged `.item()` does.
            log.batch(|| Ok(y.as_vec()))?;
            Ok(y)
        },
        |y| Ok(y.as_vec()),
    );
    // Every copy done before the pinned buffers go (the last reads waited for the outputs,
    // which came after them on the stream; this covers an error on the way).
    uploads.finish()?;
    // The host's clock: the outputs were read back, so the device has done the loop's work.
    eval::record_batch_loop(rec, start.elapsed());
    log.record(rec);
    outputs
}

/// Phase stamps as timing events recorded on the training stream, reused once read.
pub struct EventStamps {
    stream: sys::CUstream,
    free: Vec<Event>,
}

impl Stamps for EventStamps {
    type Stamp = Event;

    fn stamp(&mut self) -> Result<Event, TrainError> {
        let event = match self.free.pop() {
            Some(event) => event,
            None => Event::new(true)?,
        };
        event.record(self.stream)?;
        Ok(event)
    }

    fn ready(&self, stamp: &Event) -> Result<bool, TrainError> {
        Ok(stamp.ready()?)
    }

    fn wait(&self, stamp: &Event) -> Result<(), TrainError> {
        Ok(stamp.wait()?)
    }

    fn between(&self, start: &Event, end: &Event) -> Result<Duration, TrainError> {
        Ok(Duration::from_secs_f64(end.seconds_since(start)?.max(0.0)))
    }

    fn recycle(&mut self, stamp: Event) {
        self.free.push(stamp);
    }
}

impl LoopDevice for Cuda {
    type Stamps = EventStamps;

    fn counts_driver_calls(&self) -> bool {
        true
    }

    /// Half a second of steps: an idle GPU runs its first kernels at low clocks, and epochs
    /// timed while they ramp up come out slower (epoch 0 measured 9% above the next two on an
    /// H200, with one warm-up step).
    fn default_warm_up_seconds(&self) -> f64 {
        0.5
    }

    fn release_cached(&self) -> Result<(), TrainError> {
        Ok(self.try_empty_cache()?)
    }

    fn phase_stamps(&self) -> Result<EventStamps, TrainError> {
        bind(self)?;
        Ok(EventStamps {
            stream: stream(self),
            free: Vec::new(),
        })
    }
}
