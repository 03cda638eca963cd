//! Which step trains an MLP on CUDA, decided by self-checks before the first timed step (see
//! `tensor::fastpath`): the engine of [`super::tc_engine`] in the requested precision against
//! dfdx's f32 autodiff step (same weights and batch, dropout 0, within
//! `tensor::tc::tolerances`), then its CUDA graph against its eager steps (bit for bit).
//! Failing the first, the stage trains on dfdx in f32; failing the second, eagerly. Either way
//! the stage notes why, with the largest difference, and the facts `precision`, `mlp_engine`
//! and `cuda_graph` say what ran.

use super::tc_engine::TcEngine;
use crate::arch::ModelKind;
use crate::artifact::{TargetScale, Windows};
use crate::kinds::train::{CudaGraph, Precision, TrainParams};
use crate::metrics::Recorder;
use crate::tensor::batches::first_batch;
use crate::tensor::engine::StepEngine;
use crate::tensor::equivalence::scaled_max_diff;
use crate::tensor::fastpath::{Differences, FastPath, Wanted};
use crate::tensor::model::Model;
use crate::tensor::tc::plan::Buf;
use crate::tensor::tc::tolerances;
use crate::tensor::TrainError;
use dfdx::prelude::*;

/// The engine in f32 against dfdx (where graphs are what is wanted).
pub const CUBLAS_F32: FastPath = FastPath {
    fact: "mlp_engine",
    fast: "cublas",
    reference: "dfdx",
    what: "the cuBLAS MLP step",
};

/// The engine in bf16 or f16 against dfdx's f32 step.
pub const BF16: FastPath = FastPath {
    fact: "precision",
    fast: "bf16",
    reference: "f32",
    what: "the bf16 MLP step",
};

pub const F16: FastPath = FastPath {
    fact: "precision",
    fast: "f16",
    reference: "f32",
    what: "the f16 MLP step",
};

/// The captured step against the eager one.
pub const GRAPH: FastPath = FastPath {
    fact: "cuda_graph",
    fast: "true",
    reference: "false",
    what: "the CUDA graph of the MLP step",
};

/// How an MLP trains on CUDA: `None` on dfdx's f32 step with `params` as given; else on the
/// [`TcEngine`] with the returned parameters (precision and `cuda_graph` as they will run).
/// Records the facts `mlp_engine` and `cuda_graph` (and `precision` where it fell back).
pub fn resolve(
    dev: &Cuda,
    windows: &Windows,
    params: &TrainParams,
    seed: u64,
    rec: &mut Recorder,
) -> Result<Option<TrainParams>, TrainError> {
    let dfdx = |rec: &mut Recorder| {
        rec.fact("mlp_engine", "dfdx");
        rec.fact("cuda_graph", "false");
        Ok(None)
    };
    if params.model != ModelKind::Mlp {
        rec.fact("cuda_graph", "false");
        return Ok(None);
    }
    let full_batch = windows.train.len() >= params.batch_size;
    let graphs_wanted = params.cuda_graph != CudaGraph::Off && full_batch;
    if params.cuda_graph == CudaGraph::On && !full_batch {
        rec.note(format!(
            "cuda_graph: no full batch of {} among {} training windows, so every step runs eagerly",
            params.batch_size,
            windows.train.len()
        ));
    }
    if params.precision == Precision::F32 && !graphs_wanted {
        return dfdx(rec);
    }
    let arch = params.arch(windows.seq_len, windows.n_features, windows.horizons)?;
    let shape = format!(
        "mlp {:?} {}, {} rows, {}",
        arch.mlp_widths(),
        arch.activation.as_str(),
        params.batch_size.min(windows.train.len()),
        params.precision.as_str()
    );
    let path = match params.precision {
        Precision::F32 => CUBLAS_F32,
        Precision::Bf16 => BF16,
        Precision::F16 => F16,
    };
    let check = || check_engine(dev, windows, params, seed).map_err(|e| e.to_string());
    if !path.decide(Wanted::Auto, &shape, check, rec)? {
        return dfdx(rec);
    }
    rec.fact("mlp_engine", "cublas");
    let mut resolved = params.clone();
    let graphs = if graphs_wanted {
        let wanted = match params.cuda_graph {
            CudaGraph::On => Wanted::Fast,
            _ => Wanted::Auto,
        };
        let check = || check_graph(dev, windows, params, seed).map_err(|e| e.to_string());
        GRAPH.decide(wanted, &shape, check, rec)?
    } else {
        rec.fact("cuda_graph", "false");
        false
    };
    resolved.cuda_graph = if graphs { CudaGraph::On } else { CudaGraph::Off };
    Ok(Some(resolved))
}

/// The first training batch and a fresh model of `params` (dropout as given).
fn start(
    dev: &Cuda,
    windows: &Windows,
    params: &TrainParams,
    seed: u64,
    dropout: f64,
) -> Result<(Model<Cuda>, crate::tensor::batches::HostBatch), TrainError> {
    let arch = params.arch(windows.seq_len, windows.n_features, windows.horizons)?;
    let mut model = Model::new(dev, &arch, dropout, seed)?;
    let scale = TargetScale::of(&windows.train.targets);
    model.target = scale;
    let rows = params.batch_size.min(windows.train.len());
    Ok((model, first_batch(windows, scale, seed, params.shuffle, rows)))
}

/// One forward and backward pass through the engine in the requested precision and through
/// dfdx in f32, from the same weights and batch at dropout 0.
fn check_engine(dev: &Cuda, windows: &Windows, params: &TrainParams, seed: u64) -> Result<Differences, TrainError> {
    let (model, batch) = start(dev, windows, params, seed, 0.0)?;
    let x = dev.try_tensor_from_vec(batch.x.clone(), (batch.rows, windows.input_len()))?;
    let y = dev.try_tensor_from_vec(batch.y.clone(), (batch.rows, windows.horizons))?;
    let (ref_loss, ref_grads) = model.loss_and_grads(x, y)?;
    let ref_loss = f64::from(ref_loss.array());
    let mut engine = TcEngine::with_graphs(dev, &model, params, seed, false)?;
    let mut copy = model.clone();
    engine.upload(dev, &batch, false)?;
    engine.step_on_batch(dev, &mut copy, false, None)?;
    let loss = f64::from(engine.read(Buf::Loss, 1)?[0]);
    let grads = engine.grads()?;
    let mut worst = (0.0f64, String::new());
    for ((p, spec), g) in model.params.iter().zip(model.arch.params()).zip(&grads) {
        let diff = scaled_max_diff(&ref_grads.get(p).as_vec(), g);
        if diff > worst.0 || worst.1.is_empty() || diff.is_nan() {
            worst = (diff, spec.name);
        }
    }
    Ok(Differences {
        loss: Some((loss - ref_loss).abs() / ref_loss.abs().max(f64::MIN_POSITIVE)),
        outputs: 0.0,
        grads: Some(worst.0),
        worst_grad: worst.1,
        tolerances: tolerances(params.precision),
    })
}

/// Three full steps eagerly, and three through a graph (the first eager, the second captured and
/// launched, the third replayed), from the same weights, batch and dropout: the losses, the
/// last gradients and the weights after (reported as the outputs) must be identical.
fn check_graph(dev: &Cuda, windows: &Windows, params: &TrainParams, seed: u64) -> Result<Differences, TrainError> {
    const STEPS: usize = 3;
    let (model, batch) = start(dev, windows, params, seed, params.dropout)?;
    let mut eager = TcEngine::with_graphs(dev, &model, params, seed, false)?;
    let mut graphed = TcEngine::with_graphs(dev, &model, params, seed, true)?;
    let (mut a, mut b) = (model.clone(), model.clone());
    let mut loss = 0.0f64;
    for _ in 0..STEPS {
        eager.upload(dev, &batch, false)?;
        let la = f64::from(eager.step(dev, &mut a)?.array());
        graphed.upload(dev, &batch, false)?;
        let lb = f64::from(graphed.step(dev, &mut b)?.array());
        let diff = if la == lb {
            0.0
        } else {
            (la - lb).abs() / la.abs().max(f64::MIN_POSITIVE)
        };
        loss = loss.max(if diff.is_nan() { f64::INFINITY } else { diff });
    }
    if graphed.captures() == 0 {
        return Err(TrainError::Internal("no graph was captured in the self-check".into()));
    }
    let (ga, gb) = (eager.grads()?, graphed.grads()?);
    let names = model.arch.params();
    let mut worst = (0.0f64, String::new());
    let mut weights = 0.0f64;
    for (i, spec) in names.iter().enumerate() {
        let diff = scaled_max_diff(&ga[i], &gb[i]);
        if diff > worst.0 || worst.1.is_empty() || diff.is_nan() {
            worst = (diff, spec.name.clone());
        }
        weights = weights.max(scaled_max_diff(&a.params[i].as_vec(), &b.params[i].as_vec()));
    }
    Ok(Differences {
        loss: Some(loss),
        outputs: weights,
        grads: Some(worst.0),
        worst_grad: worst.1,
        tolerances: crate::tensor::fastpath::Tolerances::EXACT,
    })
}
