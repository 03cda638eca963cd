//! Training batches on their way to the GPU: staged in a ring of page-locked host buffers and
//! copied to the device asynchronously on the training stream, an event per slot guarding its
//! reuse. What PyTorch's `DataLoader(pin_memory=True)` with `.to(device, non_blocking=True)`
//! does.
//!
//! The host waits only when it comes back to a slot whose last copy the device has not done
//! yet, i.e. when it runs [`SLOTS`] batches ahead. `buffer_reuse` decides only where the copy
//! lands: device tensors allocated once and overwritten (`true`), or a zeroed tensor allocated
//! per batch (`false`, from dfdx's tensor cache once it holds a freed batch of that size, as
//! PyTorch's caching allocator would serve it, and filled with zeros first, as the source's
//! per-batch `Tensor::zeros` is). Both copy the same bytes the same way.

use super::context::{bind, stream};
use crate::cuda_raw::{htod_async, Event, PinnedBuf};
use crate::kinds::train::TrainParams;
use crate::tensor::batches::HostBatch;
use crate::tensor::engine::{Allocations, ReusedBuffers, Uploader};
use crate::tensor::{Matrix, Model, TrainError};
use cudarc::driver::sys;
use dfdx::shapes::HasShape;
use dfdx::tensor::{Cuda, ZerosTensor};

/// Batches in flight at most; the host waits for the oldest beyond this.
pub const SLOTS: usize = 3;

struct Slot {
    x: PinnedBuf,
    y: PinnedBuf,
    /// Recorded after this slot's last copies; done means the slot may be written again.
    copied: Event,
    in_flight: bool,
}

/// The pinned ring and, for `buffer_reuse`, the device tensors it overwrites.
pub struct PinnedRing {
    slots: Vec<Slot>,
    next: usize,
    stream: sys::CUstream,
    /// Reused destinations (`buffer_reuse`), written by the ring's own copies.
    reused: ReusedBuffers<Cuda>,
    /// The destination tensors allocated, and the host time of those calls.
    allocated: Allocations,
}

impl Uploader<Cuda> for PinnedRing {
    fn new(dev: &Cuda, model: &Model<Cuda>, params: &TrainParams) -> Result<Self, TrainError> {
        bind(dev)?;
        let input = model.arch.seq_len * model.arch.n_features;
        let floats = |width: usize| params.batch_size.saturating_mul(width).saturating_mul(4);
        let slots = (0..SLOTS)
            .map(|_| {
                Ok(Slot {
                    x: PinnedBuf::new(floats(input))?,
                    y: PinnedBuf::new(floats(model.arch.outputs))?,
                    copied: Event::new(false)?,
                    in_flight: false,
                })
            })
            .collect::<Result<Vec<_>, TrainError>>()?;
        Ok(Self {
            slots,
            next: 0,
            stream: stream(dev),
            reused: ReusedBuffers::default(),
            allocated: Allocations::default(),
        })
    }

    fn allocations(&self) -> Allocations {
        self.allocated
    }

    fn upload(
        &mut self,
        dev: &Cuda,
        batch: &HostBatch,
        reuse: bool,
    ) -> Result<(Matrix<Cuda>, Matrix<Cuda>), TrainError> {
        let rows = batch.rows.max(1);
        let (input, horizons) = (batch.x.len() / rows, batch.y.len() / rows);
        let slot = &mut self.slots[self.next];
        self.next = (self.next + 1) % SLOTS;
        if slot.in_flight {
            // A query first: waiting on a finished event is still a synchronization call, and
            // the loop's count of those (gpu-check check 11) should be its loss reads alone.
            if !slot.copied.ready()? {
                slot.copied.wait()?;
            }
            slot.in_flight = false;
        }
        let too_big = || TrainError::Internal(format!("a batch of {} rows is larger than batch_size", batch.rows));
        // SAFETY: the slot's last copies are done (its event, waited for above when needed).
        let x_bytes = unsafe { slot.x.write(&batch.x) }.ok_or_else(too_big)?;
        // SAFETY: as above.
        let y_bytes = unsafe { slot.y.write(&batch.y) }.ok_or_else(too_big)?;

        let stream = self.stream;
        let allocated = &mut self.allocated;
        // The allocating calls alone are timed (host clock: what dfdx's cache or the
        // stream-ordered pool costs the host, and queuing the fill), apart from the copies
        // below. Zeroed, as the source's `Tensor::zeros(shape, device)` per batch is: an
        // allocation and a fill kernel before the copy overwrites it.
        let mut fresh = || -> Result<(Matrix<Cuda>, Matrix<Cuda>), TrainError> {
            allocated.time(2, || {
                Ok((
                    dev.try_zeros_like(&(batch.rows, input))?,
                    dev.try_zeros_like(&(batch.rows, horizons))?,
                ))
            })
        };
        let copy = |(x, y): &mut (Matrix<Cuda>, Matrix<Cuda>)| -> Result<(), TrainError> {
            write(x, &slot.x, x_bytes, stream)?;
            write(y, &slot.y, y_bytes, stream)
        };
        let pair = if reuse {
            let pair = self.reused.pair(batch.rows, fresh)?;
            copy(pair)?;
            pair.clone()
        } else {
            let mut pair = fresh()?;
            copy(&mut pair)?;
            pair
        };
        slot.copied.record(self.stream)?;
        slot.in_flight = true;
        Ok(pair)
    }
}

/// The validation batches' way to the device: each staged in a pinned slot of a ring and
/// copied on dfdx's stream into a tensor allocated for it. Non-blocking, the host records an
/// event and goes on, waiting only when it comes back to a slot whose copy is not done
/// (PyTorch's `.to(device, non_blocking=True)` from pinned memory); blocking, it waits for each
/// copy (`non_blocking=False`). Everything else is the same both ways.
pub(super) struct ValidationUploads {
    slots: Vec<(PinnedBuf, Event, bool)>,
    next: usize,
    stream: sys::CUstream,
    non_blocking: bool,
}

impl ValidationUploads {
    /// A ring of [`SLOTS`] pinned buffers of `floats` inputs each.
    pub(super) fn new(dev: &Cuda, floats: usize, non_blocking: bool) -> Result<Self, TrainError> {
        bind(dev)?;
        let slots = (0..SLOTS)
            .map(|_| Ok((PinnedBuf::new(floats.saturating_mul(4))?, Event::new(false)?, false)))
            .collect::<Result<Vec<_>, TrainError>>()?;
        Ok(Self {
            slots,
            next: 0,
            stream: stream(dev),
            non_blocking,
        })
    }

    /// The batch's inputs on the device.
    pub(super) fn upload(&mut self, dev: &Cuda, batch: &HostBatch) -> Result<Matrix<Cuda>, TrainError> {
        let width = batch.x.len() / batch.rows.max(1);
        let (buf, copied, in_flight) = &mut self.slots[self.next];
        self.next = (self.next + 1) % SLOTS;
        if *in_flight {
            if !copied.ready()? {
                copied.wait()?;
            }
            *in_flight = false;
        }
        let too_big = || TrainError::Internal(format!("a batch of {} rows is larger than batch_size", batch.rows));
        // SAFETY: the slot's last copy is done (its event, waited for above when needed, or a
        // blocking copy).
        let bytes = unsafe { buf.write(&batch.x) }.ok_or_else(too_big)?;
        // SAFETY: `write` below fills every element before the forward pass reads them.
        let mut x: Matrix<Cuda> = unsafe { dev.try_alloc_uninit((batch.rows, width))? };
        write(&mut x, buf, bytes, self.stream)?;
        if self.non_blocking {
            copied.record(self.stream)?;
            *in_flight = true;
        } else {
            crate::cuda_raw::stream_sync(self.stream)?;
        }
        Ok(x)
    }

    /// Waits for every queued copy, so the pinned buffers can be freed.
    pub(super) fn finish(&mut self) -> Result<(), TrainError> {
        for (_, copied, in_flight) in &mut self.slots {
            if *in_flight {
                copied.wait()?;
                *in_flight = false;
            }
        }
        Ok(())
    }
}

/// Queues the copy of `bytes` from `src` into `dst` on `stream`.
fn write(dst: &mut Matrix<Cuda>, src: &PinnedBuf, bytes: usize, stream: sys::CUstream) -> Result<(), TrainError> {
    let before = dst.cu_device_ptr();
    // Unique by now: the step takes the batch, so its clones are gone before the next upload.
    // Were one still alive, dfdx would copy the tensor first (the write could then never reach
    // the clone) and `buffer_reuse` would quietly allocate: an error instead.
    let ptr = dst.cu_device_ptr_mut();
    if ptr != before {
        return Err(TrainError::Internal(
            "a reused batch tensor was still shared at the next upload".into(),
        ));
    }
    if bytes != dst.shape().0 * dst.shape().1 * 4 {
        return Err(TrainError::Shape(format!(
            "a batch of {bytes} bytes for a {:?} tensor",
            dst.shape()
        )));
    }
    // SAFETY: `ptr` holds `bytes` (checked above); `src` holds at least `bytes` and is not
    // written again until the slot's event, recorded after this copy, is done; the tensor's
    // memory is stream-ordered on `stream`, so it is not freed or reused before the copy runs.
    unsafe { htod_async(ptr, src.ptr, bytes, stream) }?;
    Ok(())
}

impl Drop for PinnedRing {
    fn drop(&mut self) {
        // The page-locked buffers are freed after this, so no copy may still read them: wait for
        // all work, not only the slots' events, which an upload that failed halfway may not
        // have recorded. (Engines are dropped outside every clock.)
        if let Err(e) = crate::cuda_raw::ctx_sync() {
            tracing::warn!("cannot wait for the batch copies before freeing their buffers: {e}");
        }
    }
}
