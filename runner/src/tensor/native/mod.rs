//! The CPU training step (host batch -> forward -> MSE -> backward -> gradient buffers) of every
//! model kind, with the matrix products done by the `gemm` crate: `mlp` and `rnn` (LSTM and
//! GRU) behind one [`NativeNet`] interface, and the helpers they share.
//!
//! dfdx 0.13's CPU matmul is pinned to `gemm` 0.15, whose AVX-512 kernels only build on a nightly
//! compiler, so on stable Rust every dfdx product runs the AVX2 kernel. `gemm` 0.19 builds its
//! AVX-512 kernels on stable (`x86-v4`) and picks them at run time when the CPU has them; on the
//! MLP's shapes it is 2.5-3x faster than 0.15 here. So the CPU path computes forward and backward
//! passes itself, over host buffers it keeps between steps, and leaves the parameters where they
//! were: the model's flat dfdx tensors, updated by dfdx's fused Adam kernel from gradient
//! buffers allocated on the dfdx device ([`super::optim::AdamW::step_buffers`]).
//!
//! Each engine's math is the one its autodiff forward does (tests compare the two, and both
//! against finite differences). Validation on the CPU runs the same engines' forward passes.

mod mlp;
mod rnn;

pub use mlp::NativeMlp;
pub use rnn::NativeRnn;

use super::config::HiddenState;
use super::model::Model;
use super::TrainError;
use crate::arch::{Activation, ModelKind};
use dfdx::shapes::HasShape;
use dfdx::tensor::{Cpu, Storage};
use gemm::Parallelism;

/// A gradient buffer on the CPU device, the type dfdx's Adam kernel reads.
pub type CpuVec = <Cpu as Storage<f32>>::Vec;

/// The RNG stream of dropout masks; weight init uses stream 0 and epoch orders 1 + epoch.
pub(super) const DROPOUT_STREAM: u64 = u64::MAX;

/// Elementwise passes smaller than this run on the calling thread.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// A read-only strided view of an f32 matrix.
#[derive(Clone, Copy)]
pub(super) struct View<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<'a> View<'a> {
    /// The first `rows * cols` values of `data` as a row-major matrix.
    pub(super) fn new(data: &'a [f32], rows: usize, cols: usize) -> Self {
        assert!(
            data.len() >= rows * cols,
            "{} values for a {rows}x{cols} matrix",
            data.len()
        );
        Self {
            data,
            rows,
            cols,
            row_stride: cols as isize,
            col_stride: 1,
        }
    }

    pub(super) fn t(self) -> Self {
        Self {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }
}

/// `dst = a . b`, with `dst` row-major `a.rows x b.cols` (overwritten, never read).
pub(super) fn matmul(dst: &mut [f32], a: View<'_>, b: View<'_>) {
    matmul_into(dst, a, b, false);
}

/// `dst = a . b`, or `dst += a . b` with `accumulate`; `dst` row-major `a.rows x b.cols`.
/// Runs on the whole pool.
pub(super) fn matmul_into(dst: &mut [f32], a: View<'_>, b: View<'_>, accumulate: bool) {
    let parallelism = match rayon::current_num_threads() {
        1 => Parallelism::None,
        n => Parallelism::Rayon(n),
    };
    product(dst, a, b, accumulate, parallelism);
}

/// [`matmul_into`] on the calling thread only (for products inside a parallel loop).
pub(super) fn matmul_serial(dst: &mut [f32], a: View<'_>, b: View<'_>, accumulate: bool) {
    product(dst, a, b, accumulate, Parallelism::None);
}

fn product(dst: &mut [f32], a: View<'_>, b: View<'_>, accumulate: bool, parallelism: Parallelism) {
    assert_eq!(a.cols, b.rows, "inner dimensions");
    assert!(dst.len() >= a.rows * b.cols, "destination too small");
    // SAFETY: `View::new` checked that each operand's data holds its `rows x cols` elements at
    // the strides given (transposing swaps both, so the largest offset is unchanged); `dst` was
    // checked above; the three slices are distinct borrows, so they do not overlap.
    unsafe {
        gemm::gemm(
            a.rows,
            b.cols,
            a.cols,
            dst.as_mut_ptr(),
            1,
            b.cols as isize,
            accumulate,
            a.data.as_ptr(),
            a.col_stride,
            a.row_stride,
            b.data.as_ptr(),
            b.col_stride,
            b.row_stride,
            if accumulate { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Splits `len` elements of rows `width` wide into chunks for the pool (whole rows each).
pub(super) fn chunk_len(len: usize, width: usize) -> usize {
    if len < PARALLEL_MIN_ELEMENTS {
        return len.max(1);
    }
    let rows = len / width.max(1);
    let per_task = rows.div_ceil(4 * rayon::current_num_threads()).max(1);
    per_task * width
}

pub(super) fn activate(activation: Activation, z: f32) -> f32 {
    match activation {
        Activation::Relu => z.max(0.0),
        Activation::Gelu => {
            let inner = std::f32::consts::FRAC_2_PI.sqrt() * (z + 0.044715 * z * z * z);
            0.5 * z * (1.0 + inner.tanh())
        }
        Activation::Tanh => z.tanh(),
    }
}

/// d act / dz at `z`; `h` is `act(z)` when the caller has it without dropout scaling.
pub(super) fn activation_slope(activation: Activation, z: f32, h: Option<f32>) -> f32 {
    match activation {
        Activation::Relu => {
            if z > 0.0 {
                1.0
            } else {
                0.0
            }
        }
        Activation::Gelu => {
            let beta = std::f32::consts::FRAC_2_PI.sqrt();
            let kappa = 0.044715f32;
            let t = (beta * (z + kappa * z * z * z)).tanh();
            0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * beta * (1.0 + 3.0 * kappa * z * z)
        }
        Activation::Tanh => {
            let t = h.unwrap_or_else(|| z.tanh());
            1.0 - t * t
        }
    }
}

// The gates' sigmoids and tanhs: written as plain branch-free loops that the compiler
// vectorizes, compiled by `multiversion` for AVX-512 and AVX2 and picked at run time, so the
// portable binary uses the machine's full vector width. (`wide`'s vector `exp` fixes its width
// when it is compiled, which gave the portable build 4-wide SSE: a quarter of an LSTM's
// inference time went there.) The polynomials are Cephes' `expf` and `tanhf`, within a few
// units in the last place of `f32::exp` and `f32::tanh` (tested).

/// e^x: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two so `n * LN2_HI` is exact), e^r by a
/// degree-7 polynomial, 2^n from the exponent bits. Clamped to [-87, 88], where 2^n is normal.
#[inline(always)]
fn exp_lane(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r + 1.666_666_5e-1)
        * r
        + 0.5;
    let er = p * r * r + r + 1.0;
    f32::from_bits(((n as i32 + 127) as u32) << 23) * er
}

/// `v = 1 / (1 + exp(-v))`.
#[multiversion::multiversion(targets("x86_64+avx512f+avx512vl", "x86_64+avx2+fma"))]
pub(super) fn sigmoid_in_place(v: &mut [f32]) {
    for x in v {
        *x = 1.0 / (1.0 + exp_lane(-*x));
    }
}

/// `v = tanh(v)`: an odd polynomial below |x| = 0.625, `1 - 2 / (e^2|x| + 1)` above.
#[multiversion::multiversion(targets("x86_64+avx512f+avx512vl", "x86_64+avx2+fma"))]
pub(super) fn tanh_in_place(v: &mut [f32]) {
    for x in v {
        let a = x.abs();
        let z = *x * *x;
        let small = ((((-5.704_988_7e-3 * z + 2.063_909e-2) * z - 5.373_971_5e-2) * z + 1.333_144_2e-1) * z
            - 3.333_328e-1)
            * z
            * *x
            + *x;
        let large = (1.0 - 2.0 / (exp_lane(2.0 * a) + 1.0)).copysign(*x);
        *x = if a < 0.625 { small } else { large };
    }
}

/// A CPU engine: forward and backward of one model over host buffers kept between steps.
pub trait NativeNet: Send {
    /// Copies the model's current parameters into the host buffers the products read.
    fn refresh(&mut self, model: &Model<Cpu>);

    /// Forward pass over `rows` windows of `x` (`rows x seq_len * n_features`, as batches carry
    /// them); returns the predictions (`rows x outputs`). `train` applies dropout.
    fn forward(&mut self, x: &[f32], rows: usize, train: bool) -> &[f32];

    /// One training pass: forward with dropout, the mean squared error against `y`
    /// (`rows x outputs`), and backward into [`NativeNet::grads`]. Returns the loss.
    fn loss_and_grads(&mut self, x: &[f32], y: &[f32], rows: usize) -> f32;

    /// dL/dp of every parameter, in the model's parameter order, as Adam reads them.
    fn grads(&self) -> &[CpuVec];

    fn grads_mut(&mut self) -> &mut [CpuVec];
}

/// The engine for `model`'s kind; dropout masks are drawn from `seed`. `hidden_state` is the
/// recurrent models' initial-state knob.
pub fn engine(
    dev: &Cpu,
    model: &Model<Cpu>,
    seed: u64,
    hidden_state: HiddenState,
) -> Result<Box<dyn NativeNet>, TrainError> {
    Ok(match model.arch.kind {
        ModelKind::Mlp => Box::new(NativeMlp::new(dev, model, seed)?),
        ModelKind::Lstm | ModelKind::Gru => Box::new(NativeRnn::new(dev, model, seed, hidden_state)?),
    })
}

/// Gradient buffers shaped like `model`'s parameters, on the dfdx device.
pub(super) fn alloc_grads(dev: &Cpu, model: &Model<Cpu>) -> Result<Vec<CpuVec>, TrainError> {
    model
        .params
        .iter()
        .map(|p| Ok(dev.try_alloc_len(p.shape().0)?))
        .collect()
}

/// Host copies of `model`'s parameters, refreshed in place.
pub(super) fn copy_params(model: &Model<Cpu>, host: &mut Vec<Vec<f32>>) {
    host.resize_with(model.params.len(), Vec::new);
    for (p, h) in model.params.iter().zip(host.iter_mut()) {
        h.resize(p.shape().0, 0.0);
        p.copy_into(h);
    }
}

/// Scales the gradients so their global L2 norm is at most `max_norm` (PyTorch's
/// `clip_grad_norm_`: scale = min(1, max_norm / (norm + 1e-6))).
pub fn clip_global_norm(grads: &mut [CpuVec], max_norm: f64) {
    let sum_sq: f64 = grads.iter().flat_map(|g| g.iter()).map(|g| f64::from(*g).powi(2)).sum();
    let scale = (max_norm / (sum_sq.sqrt() + 1e-6)).min(1.0) as f32;
    if scale < 1.0 {
        for g in grads {
            g.iter_mut().for_each(|v| *v *= scale);
        }
    }
}

/// Test inputs: `n` values uniform in [-1, 1) from `seed`.
#[cfg(test)]
pub(super) fn random(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

#[cfg(test)]
mod activation_tests {
    /// Within a few ulp of the standard library over the whole useful range, including the
    /// tails where a sigmoid saturates and the small arguments where tanh(x) ~ x.
    #[test]
    fn sigmoid_and_tanh_match_the_standard_library() {
        let xs: Vec<f32> = (-200_000..=200_000)
            .map(|i| i as f32 * 1e-4)
            .chain([-100.0, -88.0, -30.0, 1e-6, -1e-6, 0.0, 30.0, 88.0, 100.0])
            .collect();
        let mut sig = xs.clone();
        super::sigmoid_in_place(&mut sig);
        let mut th = xs.clone();
        super::tanh_in_place(&mut th);
        let (mut worst_sig, mut worst_tanh) = (0.0f64, 0.0f64);
        for ((&x, &s), &t) in xs.iter().zip(&sig).zip(&th) {
            let want_s = 1.0 / (1.0 + (-f64::from(x)).exp());
            let want_t = f64::from(x).tanh();
            worst_sig = worst_sig.max((f64::from(s) - want_s).abs() / want_s.max(1e-30));
            worst_tanh = worst_tanh.max((f64::from(t) - want_t).abs() / want_t.abs().max(1e-30));
        }
        assert!(worst_sig < 1e-6, "sigmoid: worst relative error {worst_sig:e}");
        assert!(worst_tanh < 1e-6, "tanh: worst relative error {worst_tanh:e}");
    }
}
