//! The MLP's training step on CUDA as this crate writes it, for tensor cores and CUDA graphs:
//! cuBLAS products (`cublasGemmEx`, bf16/f16 or f32 operands, f32 accumulation and results)
//! and the passes of `mlp.cu` between them, with f32 master weights and Adam state.
//!
//! - [`plan`]: a step as a list of operations, built and checked without a GPU;
//! - [`decide`]: which step runs, from the manifest and the self-checks' outcomes;
//! - [`math`]: the Rust reference of the kernels' per-element arithmetic (`mlp_math.h`);
//! - the executor and engine, which need the `cuda` feature, are `tensor::cuda::tc_engine`.
//!
//! Why the step's state lives on the device (`MmControl`): a captured CUDA graph replays its
//! kernels with the arguments they were captured with, so everything that changes from step to
//! step (Adam's step count, the loss scale, whether to skip, the dropout counter) is read from
//! device memory, written by the step's own control kernel.

pub mod decide;
pub mod math;
pub mod plan;

#[cfg(test)]
mod tests;

use crate::kinds::train::Precision;
use crate::tensor::fastpath::Tolerances;

/// The kernels' source, compiled to PTX at build time (`cuda` feature) and by the tests, for
/// the host, as C.
pub const KERNELS_CU: &str = include_str!("mlp.cu");
pub const MATH_H: &str = include_str!("mlp_math.h");

/// How far a step in `precision` may be from the f32 reference on the same weights and batch
/// before the self-check rejects it: relative to the reference's loss, and to the largest
/// element of each gradient tensor (the measures of `check_step`).
///
/// With `u` the unit roundoff (2^-8 for bf16, 2^-11 for f16), every operand of every product is
/// off by up to `u/2` relative; a gradient is a chain of up to two products per layer, so its
/// error relative to its largest element grows to a few `u`. The loss is held to `4u`, the
/// gradients to `16u` (bf16: 1.6% and 6.3%; f16: 0.2% and 0.8%): loose enough for a well-formed
/// step of the depths this crate trains, and far tighter than what a wrong transpose, layout or
/// missing term produces (differences of order 1). `docs/gpu-methodology.md` says the same.
pub fn tolerances(precision: Precision) -> Tolerances {
    let u = match precision {
        Precision::F32 => return Tolerances::F32,
        Precision::Bf16 => 2f64.powi(-8),
        Precision::F16 => 2f64.powi(-11),
    };
    Tolerances {
        loss: 4.0 * u,
        outputs: 16.0 * u,
        grads: 16.0 * u,
    }
}

/// The operand type of a step in `precision`.
pub fn operands(precision: Precision) -> plan::Elem {
    match precision {
        Precision::F32 => plan::Elem::F32,
        Precision::Bf16 => plan::Elem::Bf16,
        Precision::F16 => plan::Elem::F16,
    }
}
