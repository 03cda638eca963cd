//! The CUDA training path (`device = "cuda"`): the device, its memory settings and peak, phase
//! stamps as CUDA events on the training stream, and batches copied from pinned memory
//! ([`ring`]). The steps themselves are dfdx's autodiff ([`super::engine::AutodiffEngine`]).
//!
//! Everything here queues work on dfdx's stream (cudarc's device stream: the context's null
//! stream) and never synchronizes, except where a step must wait: reading the loss back, the
//! epoch's end, and a pinned slot whose previous copy the device has not done yet.

mod ring;

pub use ring::PinnedRing;

use super::engine::{autodiff_predict, AutodiffEngine};
use super::phases::{PhaseSource, Stamps};
use super::{eval, train_loop, Model, TrainError, TrainParams, ValidateParams};
use crate::artifact::{TrainedModel, Windows};
use crate::cuda_raw::{CudaFailure, Event, MemPool};
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

/// Binds the device's context to the calling thread, for the driver calls made here directly.
fn bind(dev: &Cuda) -> Result<(), TrainError> {
    Ok(crate::cuda_raw::call(
        "binding the context",
        dev.cudarc_device().bind_to_thread(),
    )?)
}

/// The stream dfdx queues all of this device's work on.
fn stream(dev: &Cuda) -> sys::CUstream {
    *dev.cudarc_device().cu_stream()
}

/// Trains on CUDA and records, besides the training loop's metrics, `device_mem_peak_bytes`:
/// the most device memory the stage's tensors held at once (the memory pool's high-water mark of
/// bytes in use, which includes the tensor cache), read from the driver after the last epoch.
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
    // Freed tensors wait in dfdx's cache for the next allocation of their size instead of going
    // back to the driver, as PyTorch's caching allocator does; and memory freed to the pool is
    // not returned to the driver at every synchronization.
    dev.try_enable_cache()?;
    let _cache = CacheGuard(&dev);
    let pool = MemPool::of_device(0)?;
    if let Some(pool) = &pool {
        pool.keep_all()?;
        pool.reset_peaks()?;
    }
    let model = train_loop::run::<_, AutodiffEngine<Cuda, PinnedRing>>(&dev, &windows, params, seed, rec, cancel)?;
    match &pool {
        Some(pool) => {
            let (used, _reserved) = pool.peaks()?;
            rec.record("device_mem_peak_bytes", used as f64, "B");
        }
        None => rec.note("no device_mem_peak_bytes: this device has no stream-ordered memory pool to read it from"),
    }
    Ok(model.to_trained(windows))
}

/// Empties dfdx's tensor cache when training ends, on every path out: dfdx 0.13 does not free
/// it when the device is dropped, and the device is built per trial. Declared after the device
/// and before every tensor, so it runs after the tensors have gone into the cache.
struct CacheGuard<'a>(&'a Cuda);

impl Drop for CacheGuard<'_> {
    fn drop(&mut self) {
        // Disabling empties the cache; tensors dropped later are freed directly.
        if let Err(e) = self.0.try_disable_cache() {
            tracing::warn!("cannot empty the CUDA tensor cache: {e}");
        }
    }
}

pub fn predict_cuda(model: &TrainedModel, params: &ValidateParams) -> Result<Vec<f32>, TrainError> {
    let dev = device(0)?;
    let net = Model::from_trained(&dev, model)?;
    let (windows, valid) = (&model.windows, &model.windows.valid);
    eval::predict(windows, valid, params.batch_size, model.target, |b| {
        autodiff_predict(&dev, &net, b)
    })
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

impl PhaseSource for Cuda {
    type Stamps = EventStamps;

    fn phase_stamps(&self) -> Result<EventStamps, TrainError> {
        bind(self)?;
        Ok(EventStamps {
            stream: stream(self),
            free: Vec::new(),
        })
    }
}
