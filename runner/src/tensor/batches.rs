//! Host-side batch preparation for the training loop (Windows -> host batches -> device):
//! the seeded visiting order of each epoch and the gather of windows into contiguous rows,
//! either inline or on a producer thread that runs up to N batches ahead.
//!
//! Both paths draw the order from the same per-epoch RNG and fill batches with the same code, so
//! `prefetch` changes when batches are built, never their contents. A window set's shape is
//! checked here before any gather reads it.

use super::TrainError;
use crate::artifact::{TargetScale, WindowSet, Windows};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Catches malformed windows before they become an out-of-bounds panic in a batch gather.
pub fn check_split(name: &str, windows: &Windows, set: &WindowSet) -> Result<(), TrainError> {
    if set.targets.len() != set.len() * windows.horizons {
        return Err(TrainError::Shape(format!(
            "{name}: {} targets for {} windows of {} horizons",
            set.targets.len(),
            set.len(),
            windows.horizons
        )));
    }
    let rows = set.features.len() / windows.n_features.max(1);
    if let Some(&start) = set.starts.iter().max() {
        if start as usize + windows.seq_len > rows {
            return Err(TrainError::Shape(format!(
                "{name}: a window starts at row {start} but only {rows} feature rows exist"
            )));
        }
    }
    Ok(())
}

/// One batch on the host: `rows` windows flattened into `x` and their targets in `y`.
#[derive(Debug, Default)]
pub struct HostBatch {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub rows: usize,
}

/// The order in which epoch `epoch` visits the `n` training windows. A stream separate from
/// weight init and dropout, keyed by epoch, so any producer can compute it independently.
pub fn epoch_order(seed: u64, epoch: usize, n: usize, shuffle: bool) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    if shuffle {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(1 + epoch as u64);
        order.shuffle(&mut rng);
    }
    order
}

/// Copies the windows `idx` of `set` into `batch`, reusing its allocations; targets are
/// standardized with `scale`.
pub fn gather(windows: &Windows, set: &WindowSet, idx: &[u32], scale: TargetScale, batch: &mut HostBatch) {
    let input = windows.input_len();
    let h = windows.horizons;
    batch.x.clear();
    batch.y.clear();
    batch.x.reserve(idx.len() * input);
    batch.y.reserve(idx.len() * h);
    for &i in idx {
        let i = i as usize;
        batch.x.extend_from_slice(windows.window(set, i));
        batch
            .y
            .extend(set.targets[i * h..(i + 1) * h].iter().map(|&t| scale.standardize(t)));
    }
    batch.rows = idx.len();
}

/// The first batch of epoch 0, exactly as a [`BatchSource`] with these settings hands it out,
/// built without one: the warm-up step and `check_step` compute on it and leave the training's
/// own source untouched.
pub fn first_batch(windows: &Windows, scale: TargetScale, seed: u64, shuffle: bool, batch_size: usize) -> HostBatch {
    let order = epoch_order(seed, 0, windows.train.len(), shuffle);
    let mut batch = HostBatch::default();
    gather(
        windows,
        &windows.train,
        &order[..batch_size.min(order.len())],
        scale,
        &mut batch,
    );
    batch
}

/// Batches of the whole run (all epochs, in order), as the training loop consumes them.
pub enum BatchSource {
    /// Built on demand by the caller's thread.
    Inline {
        windows: Arc<Windows>,
        scale: TargetScale,
        seed: u64,
        shuffle: bool,
        batch_size: usize,
        order: Vec<u32>,
        epoch: usize,
        next: usize,
        batch: HostBatch,
    },
    /// Built by a producer thread, handed over through a bounded channel; emptied batches go
    /// back through `recycle` so the producer does not allocate per batch.
    Prefetch {
        rx: Option<Receiver<HostBatch>>,
        recycle: Sender<HostBatch>,
        current: Option<HostBatch>,
        producer: Option<JoinHandle<()>>,
    },
}

impl BatchSource {
    pub fn new(
        windows: Arc<Windows>,
        scale: TargetScale,
        seed: u64,
        shuffle: bool,
        batch_size: usize,
        epochs: usize,
        prefetch: usize,
    ) -> Result<Self, TrainError> {
        if prefetch == 0 {
            return Ok(BatchSource::Inline {
                windows,
                scale,
                seed,
                shuffle,
                batch_size,
                order: Vec::new(),
                epoch: usize::MAX,
                next: 0,
                batch: HostBatch::default(),
            });
        }
        let (tx, rx) = mpsc::sync_channel(prefetch);
        let (recycle, returned) = mpsc::channel();
        let producer = std::thread::Builder::new()
            .name("batch-prefetch".into())
            .spawn(move || produce(&windows, scale, seed, shuffle, batch_size, epochs, &tx, &returned))
            .map_err(|e| TrainError::Internal(format!("cannot start the prefetch thread: {e}")))?;
        Ok(BatchSource::Prefetch {
            rx: Some(rx),
            recycle,
            current: None,
            producer: Some(producer),
        })
    }

    /// The next batch of epoch `epoch` (callers walk epochs and steps in order).
    pub fn next_batch(&mut self, epoch: usize) -> Result<&HostBatch, TrainError> {
        match self {
            BatchSource::Inline {
                windows,
                scale,
                seed,
                shuffle,
                batch_size,
                order,
                epoch: current_epoch,
                next,
                batch,
            } => {
                if *current_epoch != epoch {
                    *order = epoch_order(*seed, epoch, windows.train.len(), *shuffle);
                    *current_epoch = epoch;
                    *next = 0;
                }
                let end = (*next + *batch_size).min(order.len());
                gather(windows, &windows.train, &order[*next..end], *scale, batch);
                *next = end;
                Ok(batch)
            }
            BatchSource::Prefetch {
                rx, recycle, current, ..
            } => {
                if let Some(used) = current.take() {
                    // The producer may have finished; then the buffer is simply dropped.
                    let _ = recycle.send(used);
                }
                let batch = rx
                    .as_ref()
                    .and_then(|rx| rx.recv().ok())
                    .ok_or_else(|| TrainError::Internal("the prefetch thread stopped before the last batch".into()))?;
                Ok(current.insert(batch))
            }
        }
    }
}

impl Drop for BatchSource {
    fn drop(&mut self) {
        if let BatchSource::Prefetch { rx, producer, .. } = self {
            // Closing the channel first makes a producer blocked on a full channel return.
            rx.take();
            if let Some(handle) = producer.take() {
                let _ = handle.join();
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn produce(
    windows: &Windows,
    scale: TargetScale,
    seed: u64,
    shuffle: bool,
    batch_size: usize,
    epochs: usize,
    tx: &SyncSender<HostBatch>,
    returned: &Receiver<HostBatch>,
) {
    for epoch in 0..epochs {
        let order = epoch_order(seed, epoch, windows.train.len(), shuffle);
        for idx in order.chunks(batch_size) {
            let mut batch = returned.try_recv().unwrap_or_default();
            gather(windows, &windows.train, idx, scale, &mut batch);
            if tx.send(batch).is_err() {
                return; // the loop stopped early (error or cancellation)
            }
        }
    }
}
