//! The training loop of the `train` stage (Windows -> host batches -> device -> forward/backward
//! -> AdamW), generic over the dfdx device, with the knobs experiments compare and the metrics
//! they are judged on.

use super::batches::{check_split, first_batch, BatchSource};
use super::engine::StepEngine;
use super::eval;
use super::model::Model;
use super::phases::{LoopDevice, Phase, PhaseClock};
use super::{TrainDevice, TrainError};
use crate::artifact::{TargetScale, Windows};
use crate::kinds::train::TrainParams;
use crate::metrics::Recorder;
use dfdx::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

// Long because: the epoch loop times its phases between its own statements; moving them into
// helpers would move the timer boundaries.
/// Trains a fresh model on `windows.train` and records the stage's metrics into `rec`:
/// - `first_step_seconds` (s): one untimed warm-up step before the first epoch (see
///   [`warm_up`]), which keeps one-time costs out of `epoch_seconds`;
/// - `epoch_seconds` (s) per epoch as a series, and their mean as a single value;
/// - `train_loss` (loss): the MSE over all training windows, in target units, with the weights
///   at the end of each epoch (a full pass, not timed, with the engine's inference: f16 products
///   under `precision = "f16"` on the CPU, f32 through dfdx on CUDA) as a series, and the last
///   epoch's value;
/// - `mean_batch_loss` (loss): the mean of the epoch's batch losses as a series, in standardized
///   target units, taken while the weights change (what the loop saw, not a model's MSE);
/// - `samples_per_second` (samples/s) over all epochs, and `train_steps` (count: optimizer
///   steps over all epochs, the warm-up step not included);
/// - with `target`, `valid_mse_vs_zero` (ratio) per epoch as a series, and `seconds_to_target`
///   (s, training time summed up to the end of the first epoch whose validation MSE / naive-zero
///   MSE is at or below the target) and `epochs_to_target` (count); a note instead when no
///   epoch reaches it;
/// - with `precision = "f16"`, `loss_scale` (the dynamic loss scale at the end) and
///   `skipped_steps` (count: steps skipped because their scaled gradients overflowed f16);
/// - for an MLP on CUDA under a CUDA graph, `cuda_graph_captures` (count);
/// - with `phase_timing`, the totals `prep_seconds`, `h2d_seconds`, `compute_seconds` and
///   `readback_seconds` (s), timed without synchronizing (see [`super::phases`]): host time on
///   the CPU, the device's timeline on CUDA. With `prefetch > 0`, prep is only the time spent
///   waiting for the producer thread, i.e. the part of batch preparation that was not hidden.
///   Also `loss_reads` (count: loss reads back to the host, the steps' and each epoch's mean)
///   and `readback_seconds_per_read` (s): the readback phase per read (on CUDA an interval
///   of the device's timeline: the copy of four bytes, not the host's wait);
/// - `readback_host_seconds_per_read` (s): the host clock around the steps' loss reads, per
///   read: on CUDA the first read of a step waits for the step's queued work, the stall an
///   `.item()` puts in the pipeline, and the wait is shared out over that step's reads;
/// - on CUDA, `sync_calls` (count: driver calls that made the host wait for the device during
///   the training steps: synchronizations and blocking copies), `sync_calls_per_step`, and
///   `query_calls` (count: polls, which never wait), from the counting forwarders
///   (`cuda_dl::CallCounts`); the per-epoch synchronization and final loss read are outside;
/// - `alloc_seconds` (s) and `allocations` (count) per epoch as series, and over all epochs:
///   the batch buffers the engine allocated (a new pair per batch, or once with
///   `buffer_reuse`) and the host time of those calls alone, timed apart from the copies into
///   them (what a buffer-reuse claim about allocation is judged on);
/// - `batch_prep_host_seconds` (s): the host clock around getting each batch and handing it to
///   the device (gathering, or waiting for the prefetch thread; staging and allocating; queuing
///   the copy), summed over all epochs: the batch preparation the host spends whether or not
///   the device is busy meanwhile, which the device-timeline phases on CUDA do not show.
///
/// `seed` drives three independent streams: weight init, the per-epoch visiting order, and the
/// device RNG (dropout masks).
pub fn run<D: TrainDevice + LoopDevice, E: StepEngine<D>>(
    dev: &D,
    windows: &Arc<Windows>,
    params: &TrainParams,
    seed: u64,
    rec: &mut Recorder,
    cancel: &AtomicBool,
) -> Result<Model<D>, TrainError>
where
    TrainError: From<D::Err>,
{
    check_windows(windows)?;
    let n = windows.train.len();
    let horizons = windows.horizons;
    let arch = params.arch(windows.seq_len, windows.n_features, horizons)?;
    crate::kinds::memory::check(params, windows.seq_len, windows.n_features, horizons)?;

    // The network learns standardized targets (training statistics only); predictions are
    // mapped back to target units with the same numbers, stored in the model.
    let scale = TargetScale::of(&windows.train.targets);
    let mut model = Model::new(dev, &arch, params.dropout, seed)?;
    model.target = scale;
    let mut engine = E::new(dev, &model, params, seed)?;
    let mut source = BatchSource::new(
        windows.clone(),
        scale,
        seed,
        params.shuffle,
        params.batch_size,
        params.epochs,
        params.prefetch,
    )?;
    let min_warm = params.warmup_seconds.unwrap_or_else(|| dev.default_warm_up_seconds());
    let warm = warm_up::<D, E>(dev, windows, &model, params, seed, min_warm)?;
    rec.record("first_step_seconds", warm.first_step, "s");
    rec.record("warmup_steps", warm.steps as f64, "count");
    // Every epoch starts with the same (empty) cache, epoch 0 included.
    dev.release_cached()?;
    let mut clock = PhaseClock::new(dev.phase_stamps()?, params.phase_timing);
    let steps_per_epoch = n.div_ceil(params.batch_size);
    let mut epoch_seconds = Vec::with_capacity(params.epochs);
    let mut last_epoch_loss = f64::NAN;
    let mut last_train_mse = f64::NAN;
    let mut global_step = 0usize;
    let valid_zero_mse = eval::mse(&vec![0.0; windows.valid.targets.len()], &windows.valid.targets);
    let mut step_calls = crate::cuda_dl::CallCounts::default();
    // Loss reads back to the host: the steps' (`loss_sync_every`) and each epoch's mean.
    let mut reads = 0usize;
    let mut prep_host = 0.0f64;
    // The steps' loss reads on the host's clock, and how many there were.
    let (mut read_host, mut step_reads) = (0.0f64, 0usize);
    let mut reached: Option<(usize, f64)> = None;
    let mut best: Option<(usize, f64)> = None;

    for epoch in 0..params.epochs {
        dev.try_synchronize()?;
        let epoch_start = Instant::now();
        let calls_at_start = crate::cuda_dl::CallCounts::now();
        let allocated_at_start = engine.allocations();
        clock.restart()?;
        // The epoch's mean loss is summed on the device, so it is exact whatever
        // `loss_sync_every` says; only the per-step reads below move data to the host.
        let mut loss_sum: Option<Tensor<(), f32, D>> = None;
        let mut last_read: Option<f32> = None;
        for step in 0..steps_per_epoch {
            if cancel.load(Ordering::Relaxed) {
                return Err(TrainError::Cancelled);
            }
            let prep_start = Instant::now();
            let batch = source.next_batch(epoch)?;
            clock.lap(Phase::Prep)?;

            engine.upload(dev, batch, params.buffer_reuse)?;
            prep_host += prep_start.elapsed().as_secs_f64();
            clock.lap(Phase::HostToDevice)?;

            let loss_value = engine.step(dev, &mut model)?;
            loss_sum = Some(match loss_sum.take() {
                None => loss_value.clone(),
                Some(sum) => sum.try_add(loss_value.clone())?,
            });
            clock.lap(Phase::Compute)?;

            let k = params.loss_sync_every;
            if k > 0 && (step + 1) % k == 0 {
                let read_start = Instant::now();
                for _ in 0..params.loss_reads_per_step {
                    last_read = Some(loss_value.array());
                }
                read_host += read_start.elapsed().as_secs_f64();
                step_reads += params.loss_reads_per_step;
                reads += params.loss_reads_per_step;
                clock.lap(Phase::Readback)?;
            }
            global_step += 1;
            if params.log_every > 0 && global_step.is_multiple_of(params.log_every) {
                tracing::debug!(epoch, step, global_step, loss = ?last_read, "train step");
            }
        }

        step_calls = step_calls.plus(crate::cuda_dl::CallCounts::now().since(calls_at_start));
        let allocated = engine.allocations().since(allocated_at_start);
        let sum = loss_sum.map(|s| s.array()).unwrap_or(0.0);
        reads += 1;
        clock.lap(Phase::Readback)?;
        dev.try_synchronize()?;
        let seconds = epoch_start.elapsed().as_secs_f64();
        // Outside the epoch's clock: the device is done, so every phase stamp reads now.
        clock.settle()?;
        let mean_loss = f64::from(sum) / steps_per_epoch as f64;
        if !mean_loss.is_finite() {
            return Err(TrainError::Diverged { epoch, loss: mean_loss });
        }
        epoch_seconds.push(seconds);
        // Untimed: the full-pass training MSE and, with a target, the validation ratio.
        let train_pred = eval::predict(windows, &windows.train, EVAL_BATCH, scale, |b| {
            engine.predict(dev, &model, b)
        })?;
        let train_mse = eval::mse(&train_pred, &windows.train.targets);
        tracing::debug!(epoch, seconds, batch_loss = mean_loss, train_mse, "train epoch");
        rec.record_step("epoch_seconds", epoch as i64, seconds, "s");
        rec.record_step("train_loss", epoch as i64, train_mse, "loss");
        rec.record_step("mean_batch_loss", epoch as i64, mean_loss, "loss");
        rec.record_step("alloc_seconds", epoch as i64, allocated.seconds, "s");
        rec.record_step("allocations", epoch as i64, allocated.count as f64, "count");
        last_epoch_loss = mean_loss;
        last_train_mse = train_mse;
        if let Some(target) = &params.target {
            let pred = eval::predict(windows, &windows.valid, EVAL_BATCH, scale, |b| {
                engine.predict(dev, &model, b)
            })?;
            let ratio = eval::mse(&pred, &windows.valid.targets) / valid_zero_mse;
            rec.record_step("valid_mse_vs_zero", epoch as i64, ratio, "ratio");
            if best.is_none_or(|(_, b)| ratio < b) {
                best = Some((epoch, ratio));
            }
            if reached.is_none() && ratio <= target.mse_vs_zero {
                reached = Some((epoch, epoch_seconds.iter().sum()));
            }
        }
        dev.release_cached()?;
    }

    let total: f64 = epoch_seconds.iter().sum();
    rec.record("epoch_seconds", total / epoch_seconds.len() as f64, "s");
    rec.record("train_loss", last_train_mse, "loss");
    rec.record("mean_batch_loss", last_epoch_loss, "loss");
    if let Some(target) = &params.target {
        match reached {
            Some((epoch, seconds)) => {
                rec.record("seconds_to_target", seconds, "s");
                rec.record("epochs_to_target", (epoch + 1) as f64, "count");
            }
            None => rec.note(format!(
                "the validation MSE never reached {} x the naive-zero MSE in {} epoch{}{}: no \
                 seconds_to_target or epochs_to_target recorded",
                target.mse_vs_zero,
                params.epochs,
                if params.epochs == 1 { "" } else { "s" },
                best.map_or_else(String::new, |(e, r)| format!(" (best {r:.4} after epoch {})", e + 1))
            )),
        }
    }
    let allocated = engine.allocations();
    rec.record("alloc_seconds", allocated.seconds, "s");
    rec.record("allocations", allocated.count as f64, "count");
    rec.record("samples_per_second", (n * params.epochs) as f64 / total, "samples/s");
    rec.record("train_steps", global_step as f64, "count");
    rec.record("batch_prep_host_seconds", prep_host, "s");
    if step_reads > 0 {
        rec.record("readback_host_seconds_per_read", read_host / step_reads as f64, "s");
    }
    if params.phase_timing {
        for (phase, spent) in Phase::ALL.iter().zip(clock.spent) {
            rec.record(phase.metric(), spent.as_secs_f64(), "s");
        }
        let readback = clock.spent[Phase::ALL.iter().position(|p| *p == Phase::Readback).unwrap_or(3)];
        rec.record("loss_reads", reads as f64, "count");
        rec.record(
            "readback_seconds_per_read",
            readback.as_secs_f64() / reads.max(1) as f64,
            "s",
        );
    }
    if dev.counts_driver_calls() {
        let waited = step_calls.synchronizing() as f64;
        rec.record("sync_calls", waited, "count");
        rec.record("sync_calls_per_step", waited / global_step.max(1) as f64, "count");
        rec.record("query_calls", step_calls.queries as f64, "count");
    }
    engine.record(rec);
    Ok(model)
}

/// Windows per batch of the untimed end-of-epoch evaluations.
const EVAL_BATCH: usize = 4096;

fn check_windows(windows: &Windows) -> Result<(), TrainError> {
    let set = &windows.train;
    if set.is_empty() {
        return Err(TrainError::EmptyData("the training split has no windows".into()));
    }
    if windows.input_len() == 0 || windows.horizons == 0 {
        return Err(TrainError::Shape(format!(
            "windows have {} inputs and {} horizons; both must be at least 1",
            windows.input_len(),
            windows.horizons
        )));
    }
    check_split("train", windows, set)?;
    check_split("valid", windows, &windows.valid)
}

/// What the warm-up did: the first step's wall time (from creating the engine to its loss read
/// back) and how many steps ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WarmUp {
    pub first_step: f64,
    pub steps: usize,
}

/// Training steps outside every clock, so one-time costs do not land in epoch 0: on CUDA,
/// loading the kernel modules (PTX compiled by the driver), creating the cuBLAS handle, the
/// first allocations, and the clocks of an idle GPU ramping up; on the CPU, first-touch page
/// faults and waking the thread pool. One step, then more on the same batch until
/// `min_seconds` have passed.
///
/// It changes nothing the training computes: a throwaway copy of the model, with dropout off
/// (so nothing is drawn from the device's generator), takes the step through a throwaway
/// engine (its own optimizer state and generators), on the training's first batch, built apart
/// from its batch source ([`first_batch`]: the training's visiting order is untouched). The
/// copy shares the parameters' buffers until its update writes them, and dfdx then copies them
/// (`Arc::make_mut`).
///
/// The device itself is built per trial: dfdx 0.13's device owns the generator it was seeded
/// with, and cannot be reseeded, so a device kept for the run could not give each trial its own
/// seed. The modules it loads are cached by the driver, and this step absorbs the reload.
pub fn warm_up<D: TrainDevice, E: StepEngine<D>>(
    dev: &D,
    windows: &Arc<Windows>,
    model: &Model<D>,
    params: &TrainParams,
    seed: u64,
    min_seconds: f64,
) -> Result<WarmUp, TrainError>
where
    TrainError: From<D::Err>,
{
    let batch = first_batch(windows, model.target, seed, params.shuffle, params.batch_size);
    let mut copy = model.clone();
    copy.dropout = 0.0;
    dev.try_synchronize()?;
    let start = Instant::now();
    let mut engine = E::new(dev, &copy, params, seed)?;
    let mut steps = 0;
    let mut first_step = 0.0;
    loop {
        engine.upload(dev, &batch, params.buffer_reuse)?;
        let loss = engine.step(dev, &mut copy)?;
        let _ = loss.array();
        dev.try_synchronize()?;
        steps += 1;
        let seconds = start.elapsed().as_secs_f64();
        if steps == 1 {
            first_step = seconds;
        }
        if seconds >= min_seconds {
            break;
        }
    }
    engine.keep_warm();
    Ok(WarmUp { first_step, steps })
}
