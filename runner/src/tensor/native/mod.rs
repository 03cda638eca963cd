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

use super::model::Model;
use super::TrainError;
use crate::arch::{Activation, ModelKind};
use crate::kinds::train::HiddenState;
use dfdx::shapes::HasShape;
use dfdx::tensor::{Cpu, Storage};
use gemm::Parallelism;
pub(super) use half::f16;
use half::slice::HalfFloatSliceExt;

/// A gradient buffer on the CPU device, the type dfdx's Adam kernel reads.
pub type CpuVec = <Cpu as Storage<f32>>::Vec;

/// The RNG stream of dropout masks; weight init uses stream 0 and epoch orders 1 + epoch.
pub(super) const DROPOUT_STREAM: u64 = u64::MAX;

/// Elementwise passes smaller than this run on the calling thread.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// A read-only strided view of a matrix (f32, or the f16 copies of [`Products::F16`]).
#[derive(Clone, Copy)]
pub(super) struct View<'a, T = f32> {
    data: &'a [T],
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<'a, T> View<'a, T> {
    /// The first `rows * cols` values of `data` as a row-major matrix.
    pub(super) fn new(data: &'a [T], rows: usize, cols: usize) -> Self {
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

    /// How many leading values of `data` the view reads (strides are positive: `new` and `t`
    /// make no others).
    fn extent(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            return 0;
        }
        (self.rows - 1) * self.row_stride as usize + (self.cols - 1) * self.col_stride as usize + 1
    }

    /// The same layout over other values.
    fn over<'b, U>(&self, data: &'b [U]) -> View<'b, U> {
        View {
            data,
            rows: self.rows,
            cols: self.cols,
            row_stride: self.row_stride,
            col_stride: self.col_stride,
        }
    }
}

/// An operand of a product: f32 values, or f16 copies an engine keeps (its weights under
/// [`Products::F16`]).
#[derive(Clone, Copy)]
pub(super) enum Operand<'a> {
    F32(View<'a, f32>),
    F16(View<'a, f16>),
}

impl<'a> From<View<'a, f32>> for Operand<'a> {
    fn from(v: View<'a, f32>) -> Self {
        Operand::F32(v)
    }
}

impl<'a> From<View<'a, f16>> for Operand<'a> {
    fn from(v: View<'a, f16>) -> Self {
        Operand::F16(v)
    }
}

impl Operand<'_> {
    pub(super) fn t(self) -> Self {
        match self {
            Operand::F32(v) => Operand::F32(v.t()),
            Operand::F16(v) => Operand::F16(v.t()),
        }
    }

    fn shape(&self) -> (usize, usize) {
        match self {
            Operand::F32(v) => (v.rows, v.cols),
            Operand::F16(v) => (v.rows, v.cols),
        }
    }
}

/// The precision of an engine's matrix products; everything between products (biases,
/// activations, cells, the loss, gradient sums) stays in f32 either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Products {
    /// f32 operands, f32 results.
    #[default]
    F32,
    /// Mixed precision: operands rounded to f16 (weights from f16 copies refreshed after each
    /// update, activations as they enter the product), products accumulated in f32 by the
    /// `gemm` crate's f16 kernel and returned rounded to f16, as CUDA's f16 GEMMs under autocast
    /// do. Values beyond f16's range (65504) become infinite, which loss scaling detects.
    F16,
}

impl Products {
    /// `dst = a . b`, with `dst` row-major `a.rows x b.cols` (overwritten, never read).
    pub(super) fn matmul<'a>(self, dst: &mut [f32], a: impl Into<Operand<'a>>, b: impl Into<Operand<'a>>) {
        self.matmul_into(dst, a, b, false);
    }

    /// `dst = a . b`, or `dst += a . b` with `accumulate`; `dst` row-major `a.rows x b.cols`.
    /// Runs on the whole pool.
    pub(super) fn matmul_into<'a>(
        self,
        dst: &mut [f32],
        a: impl Into<Operand<'a>>,
        b: impl Into<Operand<'a>>,
        accumulate: bool,
    ) {
        let parallelism = match rayon::current_num_threads() {
            1 => Parallelism::None,
            n => Parallelism::Rayon(n),
        };
        self.product(dst, a.into(), b.into(), accumulate, parallelism);
    }

    /// [`Products::matmul_into`] on the calling thread only (for products inside a parallel
    /// loop).
    pub(super) fn matmul_serial<'a>(
        self,
        dst: &mut [f32],
        a: impl Into<Operand<'a>>,
        b: impl Into<Operand<'a>>,
        accumulate: bool,
    ) {
        self.product(dst, a.into(), b.into(), accumulate, Parallelism::None);
    }

    fn product(self, dst: &mut [f32], a: Operand<'_>, b: Operand<'_>, accumulate: bool, parallelism: Parallelism) {
        let ((m, k), (k2, n)) = (a.shape(), b.shape());
        // Invariants of the engines' own buffers, not checks of input: a batch's shape is
        // checked (`check_rows`, `check_targets`) before any product runs.
        assert_eq!(k, k2, "inner dimensions");
        assert!(dst.len() >= m * n, "destination too small");
        if let (Products::F32, Operand::F32(a), Operand::F32(b)) = (self, a, b) {
            // Nothing to convert: the f32 path never touches the scratch.
            return gemm_f32(dst, a, b, accumulate, parallelism);
        }
        // Conversion buffers are taken out of the thread's scratch for the call (and put back
        // after), so a product started by work stolen while `gemm` waits finds none borrowed.
        let mut scratch = SCRATCH.with(|s| s.take());
        match self {
            Products::F32 => {
                let a = widen(&mut scratch.a32, a);
                let b = widen(&mut scratch.b32, b);
                gemm_f32(dst, a, b, accumulate, parallelism);
            }
            Products::F16 => {
                let a = narrow(&mut scratch.a16, a);
                let b = narrow(&mut scratch.b16, b);
                // Every element is written by the product (`dst` is not read), so stale values
                // from an earlier call need no clearing.
                let out = &mut scratch.out16;
                out.resize(m * n, f16::ZERO);
                gemm_f16(out, a, b, parallelism);
                let dst = &mut dst[..m * n];
                if accumulate {
                    let sum = &mut scratch.sum32;
                    sum.resize(m * n, 0.0);
                    out.convert_to_f32_slice(sum);
                    dst.iter_mut().zip(sum.iter()).for_each(|(d, s)| *d += s);
                } else {
                    out.convert_to_f32_slice(dst);
                }
            }
        }
        SCRATCH.with(|s| s.replace(scratch));
    }
}

/// `dst = a . b` (or `+=`) over f32 views.
fn gemm_f32(dst: &mut [f32], a: View<'_, f32>, b: View<'_, f32>, accumulate: bool, parallelism: Parallelism) {
    let alpha = if accumulate { 1.0 } else { 0.0 };
    gemm_any(dst, a, b, accumulate, alpha, 1.0, parallelism);
}

/// `dst = a . b` over f16 views, accumulated in f32 inside the kernel.
fn gemm_f16(dst: &mut [f16], a: View<'_, f16>, b: View<'_, f16>, parallelism: Parallelism) {
    gemm_any(dst, a, b, false, f16::ZERO, f16::ONE, parallelism);
}

/// `dst = alpha dst + beta a . b` (`dst` read only with `read_dst`), `dst` row-major.
fn gemm_any<T: Copy + 'static>(
    dst: &mut [T],
    a: View<'_, T>,
    b: View<'_, T>,
    read_dst: bool,
    alpha: T,
    beta: T,
    parallelism: Parallelism,
) {
    // The bounds the unsafe call below relies on; a batch's shape was checked before.
    assert!(
        a.data.len() >= a.extent() && b.data.len() >= b.extent(),
        "operand too small"
    );
    assert!(dst.len() >= a.rows * b.cols, "destination too small");
    // SAFETY: each view reads at most `extent()` values of its data and `dst` holds
    // `a.rows x b.cols` (both checked above; transposing swaps strides and sizes together, so the
    // extent is unchanged); the three slices are distinct borrows, so they do not overlap. `T` is
    // f32 or f16, types `gemm` multiplies.
    unsafe {
        gemm::gemm(
            a.rows,
            b.cols,
            a.cols,
            dst.as_mut_ptr(),
            1,
            b.cols as isize,
            read_dst,
            a.data.as_ptr(),
            a.col_stride,
            a.row_stride,
            b.data.as_ptr(),
            b.col_stride,
            b.row_stride,
            alpha,
            beta,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// A thread's conversion buffers for products whose operands are in the other precision.
#[derive(Default)]
struct Scratch {
    a32: Vec<f32>,
    b32: Vec<f32>,
    a16: Vec<f16>,
    b16: Vec<f16>,
    out16: Vec<f16>,
    sum32: Vec<f32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Frees the conversion buffers of the calling thread and of every thread of its pool, so that
/// what an f16 run converted does not stay allocated in the pool's threads and count toward the
/// memory of the stages and trials after it.
pub fn release_scratch() {
    rayon::broadcast(|_| SCRATCH.with(|s| drop(s.take())));
    SCRATCH.with(|s| drop(s.take()));
}

/// Bytes of conversion buffers the calling thread and its pool's threads hold.
#[cfg(test)]
pub(super) fn scratch_bytes() -> usize {
    fn held() -> usize {
        SCRATCH.with(|s| {
            let s = s.borrow();
            4 * (s.a32.capacity() + s.b32.capacity() + s.sum32.capacity())
                + 2 * (s.a16.capacity() + s.b16.capacity() + s.out16.capacity())
        })
    }
    rayon::broadcast(|_| held()).into_iter().sum::<usize>() + held()
}

/// `op` as f32: itself, or its f16 values widened into `buf`.
fn widen<'a>(buf: &'a mut Vec<f32>, op: Operand<'a>) -> View<'a, f32> {
    match op {
        Operand::F32(v) => v,
        Operand::F16(v) => {
            let n = v.extent();
            buf.resize(n, 0.0);
            v.data[..n].convert_to_f32_slice(buf);
            v.over(buf)
        }
    }
}

/// `op` as f16: itself, or its f32 values rounded into `buf`.
fn narrow<'a>(buf: &'a mut Vec<f16>, op: Operand<'a>) -> View<'a, f16> {
    match op {
        Operand::F16(v) => v,
        Operand::F32(v) => {
            let n = v.extent();
            buf.resize(n, f16::ZERO);
            buf.convert_from_f32_slice(&v.data[..n]);
            v.over(buf)
        }
    }
}

/// An engine's host copies of the model's parameters, in the model's order, refreshed after
/// each update: f32, and under [`Products::F16`] also f16 copies for the products to read.
#[derive(Clone)]
pub(super) struct HostParams {
    products: Products,
    values: Vec<Vec<f32>>,
    /// Empty under [`Products::F32`].
    half: Vec<Vec<f16>>,
}

impl HostParams {
    pub(super) fn new(products: Products) -> Self {
        Self {
            products,
            values: Vec::new(),
            half: Vec::new(),
        }
    }

    /// The precision of the products that read these parameters.
    pub(super) fn products(&self) -> Products {
        self.products
    }

    /// Copies `model`'s current parameters in place (and rounds them to f16 under F16).
    pub(super) fn refresh(&mut self, model: &Model<Cpu>) {
        self.values.resize_with(model.params.len(), Vec::new);
        for (p, h) in model.params.iter().zip(self.values.iter_mut()) {
            h.resize(p.shape().0, 0.0);
            p.copy_into(h);
        }
        if self.products == Products::F16 {
            self.half.resize_with(self.values.len(), Vec::new);
            for (h, f) in self.values.iter().zip(self.half.iter_mut()) {
                f.resize(h.len(), f16::ZERO);
                f.convert_from_f32_slice(h);
            }
        }
    }

    /// Parameter `i` as a `rows x cols` operand: its f16 copy under F16.
    pub(super) fn weight(&self, i: usize, rows: usize, cols: usize) -> Operand<'_> {
        match self.half.get(i) {
            Some(h) => View::new(h, rows, cols).into(),
            None => View::new(&self.values[i][..], rows, cols).into(),
        }
    }
}

impl std::ops::Index<usize> for HostParams {
    type Output = [f32];

    fn index(&self, i: usize) -> &[f32] {
        &self.values[i]
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

#[inline(always)]
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
#[inline(always)]
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
// units in the last place of `f32::exp` and `f32::tanh` (tested), evaluated with fused
// multiply-adds (both targets have them; a CPU with neither falls back to libm's `fmaf`).

/// e^x: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two so `n * LN2_HI` is exact), e^r by a
/// degree-7 polynomial, 2^n from the exponent bits. Clamped to [-87, 88], where 2^n is normal.
#[inline(always)]
fn exp_lane(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let n = x.mul_add(std::f32::consts::LOG2_E, 0.5).floor();
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, x));
    let p = [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5]
        .iter()
        .fold(1.987_569_1e-4_f32, |p, &c| p.mul_add(r, c));
    let er = (p * r).mul_add(r, r) + 1.0;
    // 2^n from n + 127 placed in the low mantissa bits by adding 2^23, then shifted into the
    // exponent: exact for the integral n in [-126, 127] the clamp leaves, and vector
    // instructions only (`n as i32` saturates, which compiles to a scalar loop per lane).
    f32::from_bits((n + 8_388_735.0).to_bits() << 23) * er
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
        let small = [2.063_909e-2, -5.373_971_5e-2, 1.333_144_2e-1, -3.333_328e-1]
            .iter()
            .fold(-5.704_988_7e-3_f32, |p, &c| p.mul_add(z, c))
            * z;
        let small = small.mul_add(*x, *x);
        let large = (1.0 - 2.0 / (exp_lane(2.0 * a) + 1.0)).copysign(*x);
        *x = if a < 0.625 { small } else { large };
    }
}

/// `len` values are `rows` rows of `width`: a batch's inputs as the model reads them.
pub(super) fn check_rows(len: usize, rows: usize, width: usize) -> Result<(), TrainError> {
    if len == rows * width {
        Ok(())
    } else {
        Err(TrainError::Shape(format!(
            "{len} values are not {rows} rows of {width}"
        )))
    }
}

/// One target per prediction.
pub(super) fn check_targets(predictions: usize, targets: usize) -> Result<(), TrainError> {
    if predictions == targets {
        Ok(())
    } else {
        Err(TrainError::Shape(format!(
            "{targets} targets for {predictions} predictions: the targets do not match the batch"
        )))
    }
}

/// A CPU engine: forward and backward of one model over host buffers kept between steps. A
/// batch whose shape does not fit the model is a [`TrainError::Shape`].
pub trait NativeNet: Send {
    /// Copies the model's current parameters into the host buffers the products read.
    fn refresh(&mut self, model: &Model<Cpu>);

    /// Forward pass over `rows` windows of `x` (`rows x seq_len * n_features`, as batches carry
    /// them); returns the predictions (`rows x outputs`). `train` applies dropout.
    fn forward(&mut self, x: &[f32], rows: usize, train: bool) -> Result<&[f32], TrainError>;

    /// One training pass: forward with dropout, the mean squared error against `y`
    /// (`rows x outputs`), and backward into [`NativeNet::grads`]. Returns the loss.
    fn loss_and_grads(&mut self, x: &[f32], y: &[f32], rows: usize) -> Result<f32, TrainError> {
        self.loss_and_grads_scaled(x, y, rows, 1.0)
    }

    /// [`NativeNet::loss_and_grads`] with the backward pass seeded by `loss_scale` times the
    /// loss's gradient, so the gradients come out multiplied by it (loss scaling keeps small
    /// f16 gradients from flushing to zero; the caller divides it out). A scale of 1 changes
    /// nothing: `x * 1.0 == x` exactly.
    fn loss_and_grads_scaled(&mut self, x: &[f32], y: &[f32], rows: usize, loss_scale: f32) -> Result<f32, TrainError>;

    /// dL/dp of every parameter, in the model's parameter order, as Adam reads them.
    fn grads(&self) -> &[CpuVec];

    fn grads_mut(&mut self) -> &mut [CpuVec];
}

/// The engine for `model`'s kind; dropout masks are drawn from `seed`. `hidden_state` is the
/// recurrent models' initial-state knob, `products` the precision of the matrix products.
pub fn engine(
    dev: &Cpu,
    model: &Model<Cpu>,
    seed: u64,
    hidden_state: HiddenState,
    products: Products,
) -> Result<Box<dyn NativeNet>, TrainError> {
    Ok(match model.arch.kind {
        ModelKind::Mlp => Box::new(NativeMlp::new(dev, model, seed, products)?),
        ModelKind::Lstm | ModelKind::Gru => Box::new(NativeRnn::new(dev, model, seed, hidden_state, products)?),
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
mod tests;
