//! The CPU training step (host batch -> forward -> MSE -> backward -> gradient buffers), with the
//! matrix products done by the `gemm` crate.
//!
//! dfdx 0.13's CPU matmul is pinned to `gemm` 0.15, whose AVX-512 kernels only build on a nightly
//! compiler, so on stable Rust every dfdx product runs the AVX2 kernel. `gemm` 0.19 builds its
//! AVX-512 kernels on stable (`x86-v4`) and picks them at run time when the CPU has them; on the
//! MLP's shapes it is 2.5-3x faster than 0.15 here. So the CPU path computes the MLP's forward and
//! backward passes itself, over host buffers it keeps between steps, and leaves the parameters
//! where they were: runtime-shaped dfdx tensors, updated by dfdx's fused Adam kernel from
//! gradient buffers allocated on the dfdx device ([`super::optim::AdamW::step_buffers`]).
//!
//! The math is the one `Mlp::forward` and dfdx's autodiff do (tests compare the two, and both
//! against finite differences): `z = h W + b`, `h' = act(z) * mask`, loss `mean((z_L - y)^2)`.

use super::config::Activation;
use super::mlp::Mlp;
use super::TrainError;
use dfdx::tensor::{Cpu, Storage};
use gemm::Parallelism;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// A gradient buffer on the CPU device, the type dfdx's Adam kernel reads.
pub type CpuVec = <Cpu as Storage<f32>>::Vec;

/// The RNG stream of dropout masks; weight init uses stream 0 and epoch orders 1 + epoch.
const DROPOUT_STREAM: u64 = u64::MAX;

/// Elementwise passes smaller than this run on the calling thread.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// A read-only strided view of an f32 matrix.
#[derive(Clone, Copy)]
struct View<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<'a> View<'a> {
    /// The first `rows * cols` values of `data` as a row-major matrix.
    fn new(data: &'a [f32], rows: usize, cols: usize) -> Self {
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

    fn t(self) -> Self {
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
fn matmul(dst: &mut [f32], a: View<'_>, b: View<'_>) {
    assert_eq!(a.cols, b.rows, "inner dimensions");
    assert!(dst.len() >= a.rows * b.cols, "destination too small");
    let parallelism = match rayon::current_num_threads() {
        1 => Parallelism::None,
        n => Parallelism::Rayon(n),
    };
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
            false,
            a.data.as_ptr(),
            a.col_stride,
            a.row_stride,
            b.data.as_ptr(),
            b.col_stride,
            b.row_stride,
            0.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Splits `len` elements of rows `width` wide into chunks for the pool (whole rows each).
fn chunk_len(len: usize, width: usize) -> usize {
    if len < PARALLEL_MIN_ELEMENTS {
        return len.max(1);
    }
    let rows = len / width.max(1);
    let per_task = rows.div_ceil(4 * rayon::current_num_threads()).max(1);
    per_task * width
}

fn activate(activation: Activation, z: f32) -> f32 {
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
fn activation_slope(activation: Activation, z: f32, h: Option<f32>) -> f32 {
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

/// Forward and backward of an [`Mlp`] on the CPU, with every buffer kept between steps.
#[derive(Clone)]
pub struct NativeMlp {
    widths: Vec<usize>,
    activation: Activation,
    dropout: f32,
    rng: ChaCha8Rng,
    /// Host copies of each layer's weight (`in x out`, row-major) and bias, refreshed from the
    /// dfdx tensors after each update ([`NativeMlp::refresh`]).
    params: Vec<(Vec<f32>, Vec<f32>)>,
    /// Each layer's output before the activation; the last one is the prediction.
    pre: Vec<Vec<f32>>,
    /// Each hidden layer's activation times its dropout mask: the next layer's input.
    post: Vec<Vec<f32>>,
    /// Each hidden layer's dropout multipliers (0 or `1 / (1 - p)`); empty without dropout.
    masks: Vec<Vec<f32>>,
    /// dL/dz of the layer being differentiated, and dL/dh of the layer below it.
    dz: Vec<f32>,
    dh: Vec<f32>,
    /// dL/dW and dL/db per layer, on the dfdx device, as Adam reads them.
    pub grads: Vec<(CpuVec, CpuVec)>,
}

impl NativeMlp {
    /// Buffers for `model`; dropout masks are drawn from `seed`.
    pub fn new(dev: &Cpu, model: &Mlp<Cpu>, seed: u64) -> Result<Self, TrainError> {
        let layers = model.layers.len();
        let mut grads = Vec::with_capacity(layers);
        for pair in model.widths.windows(2) {
            grads.push((dev.try_alloc_len(pair[0] * pair[1])?, dev.try_alloc_len(pair[1])?));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(DROPOUT_STREAM);
        let mut native = Self {
            widths: model.widths.clone(),
            activation: model.activation,
            dropout: model.dropout as f32,
            rng,
            params: model
                .widths
                .windows(2)
                .map(|p| (vec![0.0; p[0] * p[1]], vec![0.0; p[1]]))
                .collect(),
            pre: vec![Vec::new(); layers],
            post: vec![Vec::new(); layers - 1],
            masks: vec![Vec::new(); layers - 1],
            dz: Vec::new(),
            dh: Vec::new(),
            grads,
        };
        native.refresh(model);
        Ok(native)
    }

    /// Copies the model's current parameters into the host buffers the products read.
    pub fn refresh(&mut self, model: &Mlp<Cpu>) {
        for (layer, (w, b)) in model.layers.iter().zip(&mut self.params) {
            layer.weight.copy_into(w);
            layer.bias.copy_into(b);
        }
    }

    fn layers(&self) -> usize {
        self.params.len()
    }

    /// Forward pass over `rows` rows of `x` (`rows x widths[0]`); returns the predictions
    /// (`rows x output width`). `train` applies dropout.
    pub fn forward(&mut self, x: &[f32], rows: usize, train: bool) -> &[f32] {
        let last = self.layers() - 1;
        let use_dropout = train && self.dropout > 0.0;
        for i in 0..=last {
            let (fan_in, fan_out) = (self.widths[i], self.widths[i + 1]);
            let (below, this_and_above) = self.post.split_at_mut(i);
            let input = if i == 0 { x } else { &below[i - 1][..] };
            let (weight, bias) = &self.params[i];
            let z = &mut self.pre[i];
            z.resize(rows * fan_out, 0.0);
            matmul(z, View::new(input, rows, fan_in), View::new(weight, fan_in, fan_out));
            let chunk = chunk_len(z.len(), fan_out);
            if i == last {
                z.par_chunks_mut(chunk).for_each(|zc| {
                    for row in zc.chunks_exact_mut(fan_out) {
                        row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
                    }
                });
                continue;
            }
            let activation = self.activation;
            let h = &mut this_and_above[0];
            h.resize(z.len(), 0.0);
            let mask = &mut self.masks[i];
            if use_dropout {
                let keep = 1.0 - self.dropout;
                let p = self.dropout;
                mask.clear();
                mask.extend((0..z.len()).map(|_| if self.rng.gen::<f32>() < p { 0.0 } else { 1.0 / keep }));
            } else {
                mask.clear();
            }
            let mask = &*mask;
            z.par_chunks_mut(chunk)
                .zip(h.par_chunks_mut(chunk))
                .enumerate()
                .for_each(|(c, (zc, hc))| {
                    let offset = c * chunk;
                    for (r, (zr, hr)) in zc
                        .chunks_exact_mut(fan_out)
                        .zip(hc.chunks_exact_mut(fan_out))
                        .enumerate()
                    {
                        for ((zv, hv), b) in zr.iter_mut().zip(hr.iter_mut()).zip(bias) {
                            *zv += b;
                            *hv = activate(activation, *zv);
                        }
                        if !mask.is_empty() {
                            let start = offset + r * fan_out;
                            hr.iter_mut()
                                .zip(&mask[start..start + fan_out])
                                .for_each(|(hv, m)| *hv *= m);
                        }
                    }
                });
        }
        &self.pre[last]
    }

    /// One training pass: forward with dropout, the mean squared error against `y`
    /// (`rows x output width`), and backward into [`NativeMlp::grads`]. Returns the loss.
    pub fn loss_and_grads(&mut self, x: &[f32], y: &[f32], rows: usize) -> f32 {
        let last = self.layers() - 1;
        self.forward(x, rows, true);
        let pred = &self.pre[last];
        assert_eq!(pred.len(), y.len(), "targets do not match the batch");
        let scale = 2.0 / pred.len() as f32;
        self.dz.clear();
        let mut sum = 0.0f64;
        self.dz.extend(pred.iter().zip(y).map(|(p, t)| {
            let d = p - t;
            sum += f64::from(d * d);
            scale * d
        }));
        let loss = (sum / pred.len() as f64) as f32;

        for i in (0..=last).rev() {
            let (fan_in, fan_out) = (self.widths[i], self.widths[i + 1]);
            let input = if i == 0 { x } else { &self.post[i - 1][..] };
            let (gw, gb) = &mut self.grads[i];
            matmul(
                &mut gw[..],
                View::new(input, rows, fan_in).t(),
                View::new(&self.dz, rows, fan_out),
            );
            gb.iter_mut().for_each(|g| *g = 0.0);
            for row in self.dz.chunks_exact(fan_out) {
                gb.iter_mut().zip(row).for_each(|(g, d)| *g += d);
            }
            if i == 0 {
                break;
            }
            // dL/dh of the layer below, then through its dropout and activation.
            self.dh.resize(rows * fan_in, 0.0);
            matmul(
                &mut self.dh,
                View::new(&self.dz, rows, fan_out),
                View::new(&self.params[i].0, fan_in, fan_out).t(),
            );
            let activation = self.activation;
            let (z, h, mask) = (&self.pre[i - 1], &self.post[i - 1], &self.masks[i - 1]);
            let chunk = chunk_len(self.dh.len(), fan_in);
            self.dh.par_chunks_mut(chunk).enumerate().for_each(|(c, dc)| {
                let offset = c * chunk;
                for (j, d) in dc.iter_mut().enumerate() {
                    let at = offset + j;
                    let slope = if mask.is_empty() {
                        activation_slope(activation, z[at], Some(h[at]))
                    } else {
                        activation_slope(activation, z[at], None) * mask[at]
                    };
                    *d *= slope;
                }
            });
            std::mem::swap(&mut self.dz, &mut self.dh);
        }
        loss
    }

    /// Scales the gradients so their global L2 norm is at most `max_norm` (PyTorch's
    /// `clip_grad_norm_`: scale = min(1, max_norm / (norm + 1e-6))).
    pub fn clip_global_norm(&mut self, max_norm: f64) {
        let sum_sq: f64 = self
            .grads
            .iter()
            .flat_map(|(w, b)| w.iter().chain(b.iter()))
            .map(|g| f64::from(*g).powi(2))
            .sum();
        let scale = (max_norm / (sum_sq.sqrt() + 1e-6)).min(1.0) as f32;
        if scale < 1.0 {
            for (w, b) in &mut self.grads {
                w.iter_mut().chain(b.iter_mut()).for_each(|g| *g *= scale);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::tests::{assert_finite_differences, nudge};
    use dfdx::prelude::*;

    fn random(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
    }

    fn close(a: f32, b: f32, what: &str) {
        assert!((a - b).abs() <= 1e-5 + 1e-4 * b.abs(), "{what}: native {a} vs dfdx {b}");
    }

    /// The same loss and gradients as dfdx's autodiff, for every activation, several layers,
    /// several outputs, and a batch large enough that the elementwise passes run in parallel.
    #[test]
    fn matches_dfdx_autodiff() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for (widths, rows) in [(vec![5, 7, 4, 2], 6), (vec![40, 128, 1], 300)] {
            for activation in [Activation::Relu, Activation::Gelu, Activation::Tanh] {
                let dev = Cpu::seed_from_u64(1);
                let mlp = Mlp::new(&dev, &widths, activation, 0.0, 3).unwrap();
                let (inputs, outputs) = (widths[0], widths[widths.len() - 1]);
                let x = random(rows * inputs, 4);
                let y = random(rows * outputs, 5);
                let (loss, grads) = mlp
                    .loss_and_grads(
                        dev.tensor_from_vec(x.clone(), (rows, inputs)),
                        dev.tensor_from_vec(y.clone(), (rows, outputs)),
                    )
                    .unwrap();
                let mut native = NativeMlp::new(&dev, &mlp, 0).unwrap();
                let native_loss = pool.install(|| native.loss_and_grads(&x, &y, rows));
                let what = format!("{widths:?} {activation:?}");
                close(native_loss, loss.array(), &format!("{what} loss"));
                for (l, (layer, (gw, gb))) in mlp.layers.iter().zip(&native.grads).enumerate() {
                    for (a, b) in gw.iter().zip(grads.get(&layer.weight).as_vec()) {
                        close(*a, b, &format!("{what} layer {l} weight grad"));
                    }
                    for (a, b) in gb.iter().zip(grads.get(&layer.bias).as_vec()) {
                        close(*a, b, &format!("{what} layer {l} bias grad"));
                    }
                }
                // Inference (no dropout) agrees with dfdx's forward pass too.
                let pred = mlp
                    .forward(dev.tensor_from_vec(x.clone(), (rows, inputs)), false)
                    .unwrap();
                let native_pred = pool.install(|| native.forward(&x, rows, false).to_vec());
                for (a, b) in native_pred.iter().zip(pred.as_vec()) {
                    close(*a, b, &format!("{what} prediction"));
                }
            }
        }
    }

    /// With dropout, the gradients are those of the loss under the step's masks: replaying the
    /// same RNG state with one parameter nudged gives the numeric derivative.
    #[test]
    fn dropout_gradients_match_finite_differences() {
        for activation in [Activation::Relu, Activation::Tanh] {
            let dev = Cpu::seed_from_u64(2);
            let mlp = Mlp::new(&dev, &[3, 6, 2], activation, 0.4, 8).unwrap();
            let rows = 5;
            let x = random(rows * 3, 6);
            let y = random(rows * 2, 7);
            let start = NativeMlp::new(&dev, &mlp, 9).unwrap();
            let mut native = start.clone();
            native.loss_and_grads(&x, &y, rows);
            assert!(
                native.masks[0].contains(&0.0) && native.masks[0].iter().any(|m| *m > 1.0),
                "the masks drop some units and scale the rest"
            );
            let analytic: Vec<[Vec<f32>; 2]> = native.grads.iter().map(|(w, b)| [w.to_vec(), b.to_vec()]).collect();
            assert_finite_differences(&format!("{activation:?}"), &analytic, |at, delta| {
                let mut replay = start.clone();
                nudge(&mut replay.params, at, delta);
                f64::from(replay.loss_and_grads(&x, &y, rows))
            });
        }
    }

    #[test]
    fn clipping_scales_to_the_bound_and_leaves_small_gradients_alone() {
        let dev = Cpu::seed_from_u64(0);
        let mlp = Mlp::new(&dev, &[3, 5, 1], Activation::Relu, 0.0, 1).unwrap();
        let mut native = NativeMlp::new(&dev, &mlp, 0).unwrap();
        native.loss_and_grads(&[3.0; 12], &[-9.0; 4], 4);
        let flat = |n: &NativeMlp| -> Vec<f32> {
            n.grads
                .iter()
                .flat_map(|(w, b)| w.iter().chain(b.iter()).copied())
                .collect()
        };
        let norm = |v: &[f32]| v.iter().map(|g| f64::from(*g).powi(2)).sum::<f64>().sqrt();
        let raw = flat(&native);
        assert!(norm(&raw) > 1.0, "the test needs a large gradient");
        let mut untouched = native.clone();
        untouched.clip_global_norm(1e9);
        assert_eq!(flat(&untouched), raw);
        native.clip_global_norm(1.0);
        let clipped = flat(&native);
        assert!((norm(&clipped) - 1.0).abs() < 1e-4, "norm {}", norm(&clipped));
        let scale = norm(&clipped) / norm(&raw);
        for (c, r) in clipped.iter().zip(&raw) {
            assert!((f64::from(*c) - scale * f64::from(*r)).abs() < 1e-5);
        }
    }
}
