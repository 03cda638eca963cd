//! The MLP's CPU step: `z = h W + b`, `h' = act(z) * mask`, loss `mean((z_L - y)^2)`, forward
//! and backward over host buffers with `gemm` products. The math is the one `mlp::forward` and
//! dfdx's autodiff do (tests compare the two, and both against finite differences).

use super::{
    activate, activation_slope, alloc_grads, check_rows, check_targets, chunk_len, CpuVec, HostParams, NativeNet,
    Products, View, DROPOUT_STREAM,
};
use crate::arch::Activation;
use crate::tensor::model::Model;
use crate::tensor::TrainError;
use dfdx::tensor::Cpu;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Forward and backward of an MLP on the CPU, with every buffer kept between steps.
#[derive(Clone)]
pub struct NativeMlp {
    widths: Vec<usize>,
    activation: Activation,
    dropout: f32,
    rng: ChaCha8Rng,
    /// Host copies of the parameters (each layer's weight, `in x out` row-major, then its
    /// bias), refreshed from the dfdx tensors after each update ([`NativeNet::refresh`]), with
    /// the precision of the products that read them.
    params: HostParams,
    /// Each layer's output before the activation; the last one is the prediction.
    pre: Vec<Vec<f32>>,
    /// Each hidden layer's activation times its dropout mask: the next layer's input.
    post: Vec<Vec<f32>>,
    /// Each hidden layer's dropout multipliers (0 or `1 / (1 - p)`); empty without dropout.
    masks: Vec<Vec<f32>>,
    /// dL/dz of the layer being differentiated, and dL/dh of the layer below it.
    dz: Vec<f32>,
    dh: Vec<f32>,
    /// dL/dW and dL/db per layer, in parameter order, on the dfdx device, as Adam reads them.
    grads: Vec<CpuVec>,
}

impl NativeMlp {
    /// Buffers for `model`; dropout masks are drawn from `seed`.
    pub fn new(dev: &Cpu, model: &Model<Cpu>, seed: u64, products: Products) -> Result<Self, TrainError> {
        let widths = model.arch.mlp_widths();
        let layers = widths.len() - 1;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(DROPOUT_STREAM);
        let mut native = Self {
            widths,
            activation: model.arch.activation,
            dropout: model.dropout as f32,
            rng,
            params: HostParams::new(products),
            pre: vec![Vec::new(); layers],
            post: vec![Vec::new(); layers - 1],
            masks: vec![Vec::new(); layers - 1],
            dz: Vec::new(),
            dh: Vec::new(),
            grads: alloc_grads(dev, model)?,
        };
        native.refresh(model);
        Ok(native)
    }

    fn layers(&self) -> usize {
        self.widths.len() - 1
    }
}

impl NativeNet for NativeMlp {
    fn refresh(&mut self, model: &Model<Cpu>) {
        self.params.refresh(model);
    }

    fn grads(&self) -> &[CpuVec] {
        &self.grads
    }

    fn grads_mut(&mut self) -> &mut [CpuVec] {
        &mut self.grads
    }

    /// Forward pass over `rows` rows of `x` (`rows x widths[0]`); returns the predictions
    /// (`rows x output width`). `train` applies dropout.
    fn forward(&mut self, x: &[f32], rows: usize, train: bool) -> Result<&[f32], TrainError> {
        check_rows(x.len(), rows, self.widths[0])?;
        let last = self.layers() - 1;
        let use_dropout = train && self.dropout > 0.0;
        for i in 0..=last {
            let (fan_in, fan_out) = (self.widths[i], self.widths[i + 1]);
            let (below, this_and_above) = self.post.split_at_mut(i);
            let input = if i == 0 { x } else { &below[i - 1][..] };
            let bias = &self.params[2 * i + 1];
            let z = &mut self.pre[i];
            z.resize(rows * fan_out, 0.0);
            self.params.products().matmul(
                z,
                View::new(input, rows, fan_in),
                self.params.weight(2 * i, fan_in, fan_out),
            );
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
                    let mask = (!mask.is_empty()).then(|| &mask[c * chunk..c * chunk + zc.len()]);
                    bias_activate(zc, hc, bias, mask, activation);
                });
        }
        Ok(&self.pre[last])
    }

    /// One training pass: forward with dropout, the mean squared error against `y`
    /// (`rows x output width`), and backward into [`NativeMlp::grads`]. Returns the loss.
    fn loss_and_grads_scaled(&mut self, x: &[f32], y: &[f32], rows: usize, loss_scale: f32) -> Result<f32, TrainError> {
        let last = self.layers() - 1;
        self.forward(x, rows, true)?;
        let pred = &self.pre[last];
        check_targets(pred.len(), y.len())?;
        let scale = 2.0 / pred.len() as f32 * loss_scale;
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
            let (gw, rest) = self.grads[2 * i..].split_at_mut(1);
            let (gw, gb) = (&mut gw[0], &mut rest[0]);
            self.params.products().matmul(
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
            self.params.products().matmul(
                &mut self.dh,
                View::new(&self.dz, rows, fan_out),
                self.params.weight(2 * i, fan_in, fan_out).t(),
            );
            let activation = self.activation;
            let (z, h, mask) = (&self.pre[i - 1], &self.post[i - 1], &self.masks[i - 1]);
            let chunk = chunk_len(self.dh.len(), fan_in);
            self.dh.par_chunks_mut(chunk).enumerate().for_each(|(c, dc)| {
                let at = c * chunk..c * chunk + dc.len();
                let (z, h) = (&z[at.clone()], &h[at.clone()]);
                let mask = (!mask.is_empty()).then(|| &mask[at]);
                through_activation(dc, z, h, mask, activation);
            });
            std::mem::swap(&mut self.dz, &mut self.dh);
        }
        Ok(loss)
    }
}

/// Rows of a layer's output, `fan_out = bias.len()` wide: `z += bias`, `h = act(z)`, then
/// `h *= mask` under dropout. One loop per activation, so that ReLU's compiles to vector
/// instructions instead of a `match` per element.
fn bias_activate(z: &mut [f32], h: &mut [f32], bias: &[f32], mask: Option<&[f32]>, activation: Activation) {
    match activation {
        Activation::Relu => bias_activate_with(z, h, bias, |z| activate(Activation::Relu, z)),
        Activation::Gelu => bias_activate_with(z, h, bias, |z| activate(Activation::Gelu, z)),
        Activation::Tanh => bias_activate_with(z, h, bias, |z| activate(Activation::Tanh, z)),
    }
    if let Some(mask) = mask {
        h.iter_mut().zip(mask).for_each(|(hv, m)| *hv *= m);
    }
}

#[inline(always)]
fn bias_activate_with(z: &mut [f32], h: &mut [f32], bias: &[f32], act: impl Fn(f32) -> f32) {
    let fan_out = bias.len();
    for (zr, hr) in z.chunks_exact_mut(fan_out).zip(h.chunks_exact_mut(fan_out)) {
        for ((zv, hv), b) in zr.iter_mut().zip(hr.iter_mut()).zip(bias) {
            *zv += b;
            *hv = act(*zv);
        }
    }
}

/// dL/dh into dL/dz: `d *= act'(z)`, times the dropout mask when there is one (`h` is the
/// layer's output, read for the slope only without dropout, where it is `act(z)`). One loop per
/// activation, as in [`bias_activate`].
fn through_activation(d: &mut [f32], z: &[f32], h: &[f32], mask: Option<&[f32]>, activation: Activation) {
    match activation {
        Activation::Relu => through_with(d, z, h, mask, |z, h| activation_slope(Activation::Relu, z, h)),
        Activation::Gelu => through_with(d, z, h, mask, |z, h| activation_slope(Activation::Gelu, z, h)),
        Activation::Tanh => through_with(d, z, h, mask, |z, h| activation_slope(Activation::Tanh, z, h)),
    }
}

#[inline(always)]
fn through_with(d: &mut [f32], z: &[f32], h: &[f32], mask: Option<&[f32]>, slope: impl Fn(f32, Option<f32>) -> f32) {
    match mask {
        None => d
            .iter_mut()
            .zip(z.iter().zip(h))
            .for_each(|(d, (z, h))| *d *= slope(*z, Some(*h))),
        Some(mask) => d
            .iter_mut()
            .zip(z.iter().zip(mask))
            .for_each(|(d, (z, m))| *d *= slope(*z, None) * m),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{clip_global_norm, random};
    use super::*;
    use crate::tensor::tests::{assert_finite_differences, mlp, nudge};
    use dfdx::prelude::*;

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
                let mlp = mlp(&dev, &widths, activation, 0.0, 3);
                let (inputs, outputs) = (widths[0], widths[widths.len() - 1]);
                let x = random(rows * inputs, 4);
                let y = random(rows * outputs, 5);
                let (loss, grads) = mlp
                    .loss_and_grads(
                        dev.tensor_from_vec(x.clone(), (rows, inputs)),
                        dev.tensor_from_vec(y.clone(), (rows, outputs)),
                    )
                    .unwrap();
                let mut native = NativeMlp::new(&dev, &mlp, 0, Products::F32).unwrap();
                let native_loss = pool.install(|| native.loss_and_grads(&x, &y, rows).unwrap());
                let what = format!("{widths:?} {activation:?}");
                close(native_loss, loss.array(), &format!("{what} loss"));
                for (i, (p, g)) in mlp.params.iter().zip(native.grads()).enumerate() {
                    for (a, b) in g.iter().zip(grads.get(p).as_vec()) {
                        close(*a, b, &format!("{what} parameter {i} grad"));
                    }
                }
                // Inference (no dropout) agrees with dfdx's forward pass too.
                let pred = mlp
                    .forward(dev.tensor_from_vec(x.clone(), (rows, inputs)), false)
                    .unwrap();
                let native_pred = pool.install(|| native.forward(&x, rows, false).unwrap().to_vec());
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
            let mlp = mlp(&dev, &[3, 6, 2], activation, 0.4, 8);
            let rows = 5;
            let x = random(rows * 3, 6);
            let y = random(rows * 2, 7);
            let start = NativeMlp::new(&dev, &mlp, 9, Products::F32).unwrap();
            let mut native = start.clone();
            native.loss_and_grads(&x, &y, rows).unwrap();
            assert!(
                native.masks[0].contains(&0.0) && native.masks[0].iter().any(|m| *m > 1.0),
                "the masks drop some units and scale the rest"
            );
            let analytic: Vec<Vec<f32>> = native.grads().iter().map(|g| g.to_vec()).collect();
            assert_finite_differences(&format!("{activation:?}"), &analytic, |at, delta| {
                let mut replay = start.clone();
                let mut host: Vec<Vec<f32>> = mlp.params.iter().map(|p| p.as_vec()).collect();
                nudge(&mut host, at, delta);
                replay.refresh(&Model::from_host(&dev, &mlp.arch, &host, mlp.target).unwrap());
                f64::from(replay.loss_and_grads(&x, &y, rows).unwrap())
            });
        }
    }

    #[test]
    fn clipping_scales_to_the_bound_and_leaves_small_gradients_alone() {
        let dev = Cpu::seed_from_u64(0);
        let mlp = mlp(&dev, &[3, 5, 1], Activation::Relu, 0.0, 1);
        let mut native = NativeMlp::new(&dev, &mlp, 0, Products::F32).unwrap();
        native.loss_and_grads(&[3.0; 12], &[-9.0; 4], 4).unwrap();
        let flat = |n: &NativeMlp| -> Vec<f32> { n.grads().iter().flat_map(|g| g.iter().copied()).collect() };
        let norm = |v: &[f32]| v.iter().map(|g| f64::from(*g).powi(2)).sum::<f64>().sqrt();
        let raw = flat(&native);
        assert!(norm(&raw) > 1.0, "the test needs a large gradient");
        let mut untouched = native.clone();
        clip_global_norm(untouched.grads_mut(), 1e9);
        assert_eq!(flat(&untouched), raw);
        clip_global_norm(native.grads_mut(), 1.0);
        let clipped = flat(&native);
        assert!((norm(&clipped) - 1.0).abs() < 1e-4, "norm {}", norm(&clipped));
        let scale = norm(&clipped) / norm(&raw);
        for (c, r) in clipped.iter().zip(&raw) {
            assert!((f64::from(*c) - scale * f64::from(*r)).abs() < 1e-5);
        }
    }
}
