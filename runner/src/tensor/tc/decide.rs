//! Which step trains an MLP on CUDA, from the manifest's choice and the self-checks' outcomes
//! (`tensor::fastpath`), without CUDA: the checks are passed in, so the tests inject agreement,
//! disagreement and errors. `tensor::cuda::tc_check` passes the device's checks.

use crate::arch::{Arch, ModelKind};
use crate::kinds::train::{CudaGraph, Precision, TrainParams};
use crate::metrics::Recorder;
use crate::tensor::fastpath::{Differences, FastPath, Wanted};
use crate::tensor::TrainError;

/// The self-checks, run when (and the first time in the process that) a decision needs them:
/// the step in the requested precision against dfdx's f32 step, and the graph against eager
/// steps. Either returns the differences it found, or why it could not run.
#[derive(Clone, Copy)]
pub struct Checks<'a> {
    pub engine: &'a dyn Fn() -> Result<Differences, String>,
    pub graph: &'a dyn Fn() -> Result<Differences, String>,
}

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

/// How a training runs on CUDA once the self-checks decided: on the MLP step of
/// `tensor::cuda::tc_engine`
/// (`cublas`) or on dfdx, with `params` as they will run (precision and `cuda_graph`
/// resolved: a failed bf16 or f16 check leaves f32).
pub struct Resolved {
    pub cublas: bool,
    pub params: TrainParams,
}

/// How an MLP trains on CUDA. Records the facts `mlp_engine` and `cuda_graph` (and
/// `precision` where it fell back). A recurrent model is left as it is (cuDNN or dfdx decide).
pub fn resolve(
    params: &TrainParams,
    arch: &Arch,
    rows: usize,
    train_windows: usize,
    checks: Checks<'_>,
    rec: &mut Recorder,
) -> Result<Resolved, TrainError> {
    let dfdx = |rec: &mut Recorder| {
        rec.fact("mlp_engine", "dfdx");
        rec.fact("cuda_graph", "false");
        let mut f32_params = params.clone();
        f32_params.precision = Precision::F32;
        f32_params.cuda_graph = CudaGraph::Off;
        Ok(Resolved {
            cublas: false,
            params: f32_params,
        })
    };
    if params.model != ModelKind::Mlp {
        rec.fact("cuda_graph", "false");
        return Ok(Resolved {
            cublas: false,
            params: params.clone(),
        });
    }
    let full_batch = train_windows >= params.batch_size;
    let graphs_wanted = params.cuda_graph != CudaGraph::Off && full_batch;
    if params.cuda_graph == CudaGraph::On && !full_batch {
        rec.note(format!(
            "cuda_graph: no full batch of {} among {} training windows, so every step runs eagerly",
            params.batch_size, train_windows
        ));
    }
    if params.precision == Precision::F32 && !graphs_wanted {
        return dfdx(rec);
    }
    // Everything the checks depend on: the shape, and what the update check computes.
    let shape = format!(
        "mlp {:?} {}, {} rows, {}, lr {}, weight decay {}, clip {:?}, dropout {}",
        arch.mlp_widths(),
        arch.activation.as_str(),
        rows,
        params.precision.as_str(),
        params.lr,
        params.weight_decay,
        params.grad_clip,
        params.dropout
    );
    let path = match params.precision {
        Precision::F32 => CUBLAS_F32,
        Precision::Bf16 => BF16,
        Precision::F16 => F16,
    };
    if !path.decide(Wanted::Auto, &shape, checks.engine, rec)? {
        return dfdx(rec);
    }
    rec.fact("mlp_engine", "cublas");
    let mut resolved = params.clone();
    let graphs = if graphs_wanted {
        let wanted = match params.cuda_graph {
            CudaGraph::On => Wanted::Fast,
            _ => Wanted::Auto,
        };
        GRAPH.decide(wanted, &shape, checks.graph, rec)?
    } else {
        rec.fact("cuda_graph", "false");
        false
    };
    resolved.cuda_graph = if graphs { CudaGraph::On } else { CudaGraph::Off };
    Ok(Resolved {
        cublas: true,
        params: resolved,
    })
}
