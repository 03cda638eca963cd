//! The LSTM's and GRU's CPU step: the cells of `tensor::rnn` (PyTorch's), forward and
//! backpropagation through time over host buffers with `gemm` products.
//!
//! Everything is time-major inside: row `day * rows + window`, so each day's rows are one
//! contiguous block. Per layer, the input projection of all days is one product
//! (`[days*rows, in] . W_ih`), and so are the weight gradients after the backward sweep
//! (`X^T . dZ` and `H_prev^T . dZ`); only the recurrent product `h . W_hh` (and its transpose
//! going back) runs day by day. The gate activations, cells and hidden states of every day are
//! kept from the forward pass for the backward one.

use super::{
    alloc_grads, chunk_len, copy_params, matmul, matmul_into, sigmoid_in_place, tanh_in_place, CpuVec, NativeNet, View,
    DROPOUT_STREAM,
};
use crate::arch::ModelKind;
use crate::tensor::model::Model;
use crate::tensor::TrainError;
use dfdx::tensor::Cpu;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Per-layer buffers of the forward pass, read again by the backward one.
#[derive(Clone, Default)]
struct LayerBuffers {
    /// `[days*rows, G*H]`: the input projection, then (in place) the activated gates: LSTM
    /// i, f, g, o; GRU r, z, n.
    gates: Vec<f32>,
    /// `[days*rows, H]`: the hidden state after each day.
    h: Vec<f32>,
    /// LSTM `[days*rows, H]`: the cell after each day, and its tanh.
    c: Vec<f32>,
    tanh_c: Vec<f32>,
    /// GRU `[days*rows, G*H]`: `h_prev . W_hh + b_hh` of each day (its n block is needed going
    /// back).
    u: Vec<f32>,
    /// `[days*rows, H]`: `h` times the dropout mask (the next layer's input), and the mask;
    /// empty without dropout or on the top layer.
    dropped: Vec<f32>,
    mask: Vec<f32>,
}

/// Forward and backward of an LSTM or GRU on the CPU, with every buffer kept between steps.
#[derive(Clone)]
pub struct NativeRnn {
    kind: ModelKind,
    features: usize,
    hidden: Vec<usize>,
    outputs: usize,
    dropout: f32,
    /// `true`: one initial-state buffer zeroed in place each batch; `false`: a fresh zeroed one
    /// per batch. Either way the state starts at zero, so results are the same.
    reuse_state: bool,
    rng: ChaCha8Rng,
    /// Host copies of the parameters, in the model's order (see `Arch::params`).
    params: Vec<Vec<f32>>,
    /// The batch transposed to time-major `[days*rows, features]`.
    x: Vec<f32>,
    layers: Vec<LayerBuffers>,
    /// The zero initial state `[rows, H]` (LSTM: hidden and cell share it, both stay zero).
    h0: Vec<f32>,
    pred: Vec<f32>,
    /// Backward scratch: dL/dgates of all days, GRU's dL/du, the gradient flowing into a
    /// layer's outputs from above, the recurrent gradients and a column of ones for bias sums.
    d_gates: Vec<f32>,
    d_u: Vec<f32>,
    d_out: Vec<f32>,
    d_below: Vec<f32>,
    d_h: Vec<f32>,
    d_c: Vec<f32>,
    ones: Vec<f32>,
    grads: Vec<CpuVec>,
    days: usize,
    rows: usize,
}

impl NativeRnn {
    /// Buffers for `model`; dropout masks are drawn from `seed`.
    pub fn new(dev: &Cpu, model: &Model<Cpu>, seed: u64, reuse_state: bool) -> Result<Self, TrainError> {
        let arch = &model.arch;
        if !arch.kind.is_recurrent() || arch.hidden.is_empty() {
            return Err(TrainError::Shape(format!(
                "the recurrent engine needs an LSTM or GRU with at least one layer, got {} {:?}",
                arch.kind.as_str(),
                arch.hidden
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(DROPOUT_STREAM);
        let mut native = Self {
            kind: arch.kind,
            features: arch.n_features,
            hidden: arch.hidden.clone(),
            outputs: arch.outputs,
            dropout: model.dropout as f32,
            reuse_state,
            rng,
            params: Vec::new(),
            x: Vec::new(),
            layers: vec![LayerBuffers::default(); arch.hidden.len()],
            h0: Vec::new(),
            pred: Vec::new(),
            d_gates: Vec::new(),
            d_u: Vec::new(),
            d_out: Vec::new(),
            d_below: Vec::new(),
            d_h: Vec::new(),
            d_c: Vec::new(),
            ones: Vec::new(),
            grads: alloc_grads(dev, model)?,
            days: 0,
            rows: 0,
        };
        native.refresh(model);
        Ok(native)
    }

    fn gates(&self) -> usize {
        self.kind.gates()
    }

    /// The zero initial state for a batch of `rows` windows and the widest layer.
    fn zero_state(&mut self, len: usize) {
        if self.reuse_state && self.h0.len() == len {
            self.h0.fill(0.0);
        } else {
            self.h0 = vec![0.0; len];
        }
    }

    fn forward_pass(&mut self, x: &[f32], rows: usize, train: bool) -> &[f32] {
        let f = self.features;
        let days = x.len() / (rows * f).max(1);
        assert_eq!(days * rows * f, x.len(), "a batch of whole windows of whole days");
        self.days = days;
        self.rows = rows;
        // Time-major copy of the batch.
        self.x.resize(x.len(), 0.0);
        for (b, window) in x.chunks_exact(days * f).enumerate() {
            for (t, day) in window.chunks_exact(f).enumerate() {
                let at = (t * rows + b) * f;
                self.x[at..at + f].copy_from_slice(day);
            }
        }
        let widest = self.hidden.iter().copied().max().unwrap_or(0);
        self.zero_state(rows * widest);
        let g = self.gates();
        let use_dropout = train && self.dropout > 0.0;
        let top = self.hidden.len() - 1;
        for l in 0..=top {
            let h = self.hidden[l];
            let width_in = if l == 0 { f } else { self.hidden[l - 1] };
            let (below, this_and_above) = self.layers.split_at_mut(l);
            let buf = &mut this_and_above[0];
            let input: &[f32] = match below.last() {
                None => &self.x,
                Some(prev) if !prev.dropped.is_empty() => &prev.dropped,
                Some(prev) => &prev.h,
            };
            let p = 4 * l;
            let (w_ih, w_hh, b_ih, b_hh) = (
                &self.params[p],
                &self.params[p + 1],
                &self.params[p + 2],
                &self.params[p + 3],
            );
            let n = days * rows;
            buf.gates.resize(n * g * h, 0.0);
            buf.h.resize(n * h, 0.0);
            matmul(
                &mut buf.gates,
                View::new(input, n, width_in),
                View::new(w_ih, width_in, g * h),
            );
            let lstm = self.kind == ModelKind::Lstm;
            let bias: Vec<f32> = b_ih.iter().zip(b_hh).map(|(a, b)| a + b).collect();
            if lstm {
                buf.c.resize(n * h, 0.0);
                buf.tanh_c.resize(n * h, 0.0);
            } else {
                buf.u.resize(n * g * h, 0.0);
            }
            let h0 = &self.h0[..rows * h];
            for t in 0..days {
                let block = t * rows * g * h..(t + 1) * rows * g * h;
                let state = t * rows * h..(t + 1) * rows * h;
                let (h_done, h_rest) = buf.h.split_at_mut(state.start);
                let h_prev: &[f32] = if t == 0 { h0 } else { &h_done[state.start - rows * h..] };
                let h_out = &mut h_rest[..rows * h];
                if lstm {
                    // z = x W_ih + h W_hh, then the biases and the cell, in place.
                    matmul_into(
                        &mut buf.gates[block.clone()],
                        View::new(h_prev, rows, h),
                        View::new(w_hh, h, g * h),
                        true,
                    );
                    let (c_done, c_rest) = buf.c.split_at_mut(state.start);
                    let c_prev: &[f32] = if t == 0 { h0 } else { &c_done[state.start - rows * h..] };
                    let c_out = &mut c_rest[..rows * h];
                    let tanh_out = &mut buf.tanh_c[state.clone()];
                    let z = &mut buf.gates[block];
                    let chunk = chunk_len(rows * h, h) / h;
                    let bias = &bias;
                    z.par_chunks_mut(chunk * g * h)
                        .zip(c_out.par_chunks_mut(chunk * h))
                        .zip(tanh_out.par_chunks_mut(chunk * h))
                        .zip(h_out.par_chunks_mut(chunk * h))
                        .zip(c_prev.par_chunks(chunk * h))
                        .for_each(|((((z, c), tc), ho), cp)| {
                            for (r, zr) in z.chunks_exact_mut(g * h).enumerate() {
                                zr.iter_mut().zip(bias.iter()).for_each(|(v, b)| *v += b);
                                let (ifg, o) = zr.split_at_mut(3 * h);
                                sigmoid_in_place(&mut ifg[..2 * h]);
                                tanh_in_place(&mut ifg[2 * h..]);
                                sigmoid_in_place(o);
                                let (i, rest) = ifg.split_at(h);
                                let (f, gg) = rest.split_at(h);
                                let row = r * h..(r + 1) * h;
                                let (c, tc, ho, cp) = (
                                    &mut c[row.clone()],
                                    &mut tc[row.clone()],
                                    &mut ho[row.clone()],
                                    &cp[row],
                                );
                                for j in 0..h {
                                    c[j] = f[j] * cp[j] + i[j] * gg[j];
                                }
                                tc.copy_from_slice(c);
                                tanh_in_place(tc);
                                for j in 0..h {
                                    ho[j] = o[j] * tc[j];
                                }
                            }
                        });
                } else {
                    let u = &mut buf.u[block.clone()];
                    matmul(u, View::new(h_prev, rows, h), View::new(w_hh, h, g * h));
                    let a = &mut buf.gates[block];
                    let chunk = chunk_len(rows * h, h) / h;
                    a.par_chunks_mut(chunk * g * h)
                        .zip(u.par_chunks(chunk * g * h))
                        .zip(h_out.par_chunks_mut(chunk * h))
                        .zip(h_prev.par_chunks(chunk * h))
                        .for_each(|(((a, u), ho), hp)| {
                            for (r, (ar, ur)) in a.chunks_exact_mut(g * h).zip(u.chunks_exact(g * h)).enumerate() {
                                for j in 0..2 * h {
                                    ar[j] += b_ih[j] + ur[j] + b_hh[j];
                                }
                                let (rz, n) = ar.split_at_mut(2 * h);
                                sigmoid_in_place(rz);
                                let rg = &rz[..h];
                                for j in 0..h {
                                    n[j] += b_ih[2 * h + j] + rg[j] * (ur[2 * h + j] + b_hh[2 * h + j]);
                                }
                                tanh_in_place(n);
                                let zg = &rz[h..];
                                let (ho, hp) = (&mut ho[r * h..(r + 1) * h], &hp[r * h..(r + 1) * h]);
                                for j in 0..h {
                                    ho[j] = n[j] + zg[j] * (hp[j] - n[j]);
                                }
                            }
                        });
                }
            }
            if l < top && use_dropout {
                let keep = 1.0 - self.dropout;
                let p = self.dropout;
                let rng = &mut self.rng;
                buf.mask.clear();
                buf.mask
                    .extend((0..n * h).map(|_| if rng.gen::<f32>() < p { 0.0 } else { 1.0 / keep }));
                buf.dropped.clear();
                buf.dropped.extend(buf.h.iter().zip(&buf.mask).map(|(v, m)| v * m));
            } else {
                buf.mask.clear();
                buf.dropped.clear();
            }
        }
        // The head on the last day's hidden state.
        let h = self.hidden[top];
        let last = &self.layers[top].h[(days - 1) * rows * h..days * rows * h];
        let head = 4 * self.hidden.len();
        self.pred.resize(rows * self.outputs, 0.0);
        matmul(
            &mut self.pred,
            View::new(last, rows, h),
            View::new(&self.params[head], h, self.outputs),
        );
        let bias = &self.params[head + 1];
        for row in self.pred.chunks_exact_mut(self.outputs) {
            row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
        }
        &self.pred
    }

    fn training_pass(&mut self, x: &[f32], y: &[f32], rows: usize) -> f32 {
        self.forward_pass(x, rows, true);
        assert_eq!(self.pred.len(), y.len(), "targets do not match the batch");
        let (days, outputs) = (self.days, self.outputs);
        let n = days * rows;
        let g = self.gates();
        let top = self.hidden.len() - 1;
        let scale = 2.0 / self.pred.len() as f32;
        let mut sum = 0.0f64;
        let d_pred: Vec<f32> = self
            .pred
            .iter()
            .zip(y)
            .map(|(p, t)| {
                let d = p - t;
                sum += f64::from(d * d);
                scale * d
            })
            .collect();
        let loss = (sum / self.pred.len() as f64) as f32;

        // The head.
        let h_top = self.hidden[top];
        let head = 4 * self.hidden.len();
        {
            let last = &self.layers[top].h[(days - 1) * rows * h_top..n * h_top];
            let (gw, gb) = self.grads[head..].split_at_mut(1);
            matmul(
                &mut gw[0][..],
                View::new(last, rows, h_top).t(),
                View::new(&d_pred, rows, outputs),
            );
            gb[0].iter_mut().for_each(|v| *v = 0.0);
            for row in d_pred.chunks_exact(outputs) {
                gb[0].iter_mut().zip(row).for_each(|(g, d)| *g += d);
            }
        }
        // dL/d(outputs of the top layer): only its last day receives gradient.
        self.d_out.clear();
        self.d_out.resize(n * h_top, 0.0);
        matmul(
            &mut self.d_out[(days - 1) * rows * h_top..],
            View::new(&d_pred, rows, outputs),
            View::new(&self.params[head], h_top, outputs).t(),
        );
        self.ones.resize(n, 1.0);

        for l in (0..=top).rev() {
            let h = self.hidden[l];
            let width_in = if l == 0 { self.features } else { self.hidden[l - 1] };
            let p = 4 * l;
            self.d_gates.resize(n * g * h, 0.0);
            self.d_h.clear();
            self.d_h.resize(rows * h, 0.0);
            let lstm = self.kind == ModelKind::Lstm;
            if lstm {
                self.d_c.clear();
                self.d_c.resize(rows * h, 0.0);
            } else {
                self.d_u.resize(n * g * h, 0.0);
            }
            let buf = &self.layers[l];
            let w_hh = &self.params[p + 1];
            let b_hh = &self.params[p + 3];
            let h0 = &self.h0[..rows * h];
            for t in (0..days).rev() {
                let block = t * rows * g * h..(t + 1) * rows * g * h;
                let state = t * rows * h..(t + 1) * rows * h;
                let prev = state.start.saturating_sub(rows * h)..state.start;
                // dh = gradient from above + recurrent gradient from day t+1.
                let d_in = &self.d_out[state.clone()];
                let chunk = chunk_len(rows * h, h) / h;
                if lstm {
                    let c_prev: &[f32] = if t == 0 { h0 } else { &buf.c[prev.clone()] };
                    let acts = &buf.gates[block.clone()];
                    let tanh_c = &buf.tanh_c[state.clone()];
                    let dz = &mut self.d_gates[block.clone()];
                    dz.par_chunks_mut(chunk * g * h)
                        .zip(self.d_h.par_chunks_mut(chunk * h))
                        .zip(self.d_c.par_chunks_mut(chunk * h))
                        .enumerate()
                        .for_each(|(k, ((dz, dh), dc))| {
                            let r0 = k * chunk;
                            for r in 0..dz.len() / (g * h) {
                                let a = &acts[(r0 + r) * g * h..(r0 + r + 1) * g * h];
                                let dzr = &mut dz[r * g * h..(r + 1) * g * h];
                                for j in 0..h {
                                    let at = (r0 + r) * h + j;
                                    let (i, f, gg, o) = (a[j], a[h + j], a[2 * h + j], a[3 * h + j]);
                                    let tc = tanh_c[at];
                                    let dhv = d_in[at] + dh[r * h + j];
                                    let dcv = dc[r * h + j] + dhv * o * (1.0 - tc * tc);
                                    dzr[j] = dcv * gg * i * (1.0 - i);
                                    dzr[h + j] = dcv * c_prev[at] * f * (1.0 - f);
                                    dzr[2 * h + j] = dcv * i * (1.0 - gg * gg);
                                    dzr[3 * h + j] = dhv * tc * o * (1.0 - o);
                                    dc[r * h + j] = dcv * f;
                                }
                            }
                        });
                    if t > 0 {
                        matmul(&mut self.d_h, View::new(dz, rows, g * h), View::new(w_hh, h, g * h).t());
                    }
                } else {
                    let h_prev: &[f32] = if t == 0 { h0 } else { &buf.h[prev.clone()] };
                    let acts = &buf.gates[block.clone()];
                    let u = &buf.u[block.clone()];
                    let da = &mut self.d_gates[block.clone()];
                    let du = &mut self.d_u[block.clone()];
                    da.par_chunks_mut(chunk * g * h)
                        .zip(du.par_chunks_mut(chunk * g * h))
                        .zip(self.d_h.par_chunks_mut(chunk * h))
                        .enumerate()
                        .for_each(|(k, ((da, du), dh))| {
                            let r0 = k * chunk;
                            for r in 0..da.len() / (g * h) {
                                let a = &acts[(r0 + r) * g * h..(r0 + r + 1) * g * h];
                                let ur = &u[(r0 + r) * g * h..(r0 + r + 1) * g * h];
                                let dar = &mut da[r * g * h..(r + 1) * g * h];
                                let dur = &mut du[r * g * h..(r + 1) * g * h];
                                for j in 0..h {
                                    let at = (r0 + r) * h + j;
                                    let (rg, zg, ng) = (a[j], a[h + j], a[2 * h + j]);
                                    let dhv = d_in[at] + dh[r * h + j];
                                    let dz = dhv * (h_prev[at] - ng);
                                    let dpre_n = dhv * (1.0 - zg) * (1.0 - ng * ng);
                                    let un = ur[2 * h + j] + b_hh[2 * h + j];
                                    let dpre_r = dpre_n * un * rg * (1.0 - rg);
                                    let dpre_z = dz * zg * (1.0 - zg);
                                    dar[j] = dpre_r;
                                    dar[h + j] = dpre_z;
                                    dar[2 * h + j] = dpre_n;
                                    dur[j] = dpre_r;
                                    dur[h + j] = dpre_z;
                                    dur[2 * h + j] = dpre_n * rg;
                                    // The direct path h' = ... + z h.
                                    dh[r * h + j] = dhv * zg;
                                }
                            }
                        });
                    if t > 0 {
                        matmul_into(
                            &mut self.d_h,
                            View::new(du, rows, g * h),
                            View::new(w_hh, h, g * h).t(),
                            true,
                        );
                    }
                }
            }
            // Weight and bias gradients over all days at once.
            let input: &[f32] = if l == 0 {
                &self.x
            } else if !self.layers[l - 1].dropped.is_empty() {
                &self.layers[l - 1].dropped
            } else {
                &self.layers[l - 1].h
            };
            let d_rec: &[f32] = if lstm { &self.d_gates } else { &self.d_u };
            let (gw_ih, rest) = self.grads[p..].split_at_mut(1);
            let (gw_hh, rest) = rest.split_at_mut(1);
            let (gb_ih, rest) = rest.split_at_mut(1);
            matmul(
                &mut gw_ih[0][..],
                View::new(input, n, width_in).t(),
                View::new(&self.d_gates, n, g * h),
            );
            // h_prev of day t is h of day t-1; day 0's is zero and adds nothing.
            if days > 1 {
                matmul(
                    &mut gw_hh[0][..],
                    View::new(&self.layers[l].h, (days - 1) * rows, h).t(),
                    View::new(&d_rec[rows * g * h..], (days - 1) * rows, g * h),
                );
            } else {
                gw_hh[0].iter_mut().for_each(|v| *v = 0.0);
            }
            matmul(
                &mut gb_ih[0][..],
                View::new(&self.ones, 1, n),
                View::new(&self.d_gates, n, g * h),
            );
            matmul(
                &mut rest[0][..],
                View::new(&self.ones, 1, n),
                View::new(d_rec, n, g * h),
            );
            if l == 0 {
                break;
            }
            // dL/d(outputs of the layer below), through its dropout mask.
            self.d_below.resize(n * width_in, 0.0);
            matmul(
                &mut self.d_below,
                View::new(&self.d_gates, n, g * h),
                View::new(&self.params[p], width_in, g * h).t(),
            );
            let mask = &self.layers[l - 1].mask;
            if !mask.is_empty() {
                self.d_below.iter_mut().zip(mask).for_each(|(d, m)| *d *= m);
            }
            std::mem::swap(&mut self.d_out, &mut self.d_below);
        }
        loss
    }
}

impl NativeNet for NativeRnn {
    fn refresh(&mut self, model: &Model<Cpu>) {
        copy_params(model, &mut self.params);
    }

    fn forward(&mut self, x: &[f32], rows: usize, train: bool) -> &[f32] {
        self.forward_pass(x, rows, train)
    }

    fn loss_and_grads(&mut self, x: &[f32], y: &[f32], rows: usize) -> f32 {
        self.training_pass(x, y, rows)
    }

    fn grads(&self) -> &[CpuVec] {
        &self.grads
    }

    fn grads_mut(&mut self) -> &mut [CpuVec] {
        &mut self.grads
    }
}
