//! The LSTM's and GRU's CPU step: the cells of `tensor::rnn` (PyTorch's), forward and
//! backpropagation through time over host buffers with `gemm` products.
//!
//! The batch's windows are cut into blocks of [`cells::BLOCK_ROWS`]; inside, buffers are laid out
//! block by block, and within a block day by day, so one block's rows of one day are
//! contiguous. Going forward, each block runs on its own thread through every layer, with no
//! synchronization: days come in chunks of [`cells::CHUNK_DAYS`], and for each chunk and layer
//! the block projects the chunk's inputs (`[days*rows, in] . W_ih`, one product) and then runs
//! its days (`h . W_hh` and the cell, day by day), so the projected gates are read back from
//! the core's cache. Training keeps every day's gate activations, cells and hidden states for
//! the backward pass; inference keeps only rings of the days still to be read (`Kept`). Going
//! back, each block runs its days in reverse on its own thread, and the weight gradients are
//! single products over every row (`X^T . dZ`, and `H_prev^T . dZ` per block).

mod cells;

use super::{alloc_grads, check_targets, CpuVec, HostParams, NativeNet, Operand, Products, View, DROPOUT_STREAM};
use crate::arch::ModelKind;
use crate::kinds::train::HiddenState;
use crate::tensor::model::Model;
use crate::tensor::TrainError;
use cells::{
    block_regions, blocks, first_row, gru_cell, gru_cell_backward, lstm_cell, lstm_cell_backward, prev_and_next, Kept,
    CHUNK_DAYS,
};
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

/// One layer's weights as the recurrence reads them.
struct LayerWeights<'a> {
    h: usize,
    width_in: usize,
    w_ih: Operand<'a>,
    w_hh: Operand<'a>,
    /// LSTM: `b_ih + b_hh`, added once.
    bias: Vec<f32>,
    b_ih: &'a [f32],
    b_hh: &'a [f32],
}

/// One block's regions of a layer's [`LayerBuffers`] (empty where the layer has none).
struct BlockBuffers<'a> {
    gates: &'a mut [f32],
    h: &'a mut [f32],
    c: &'a mut [f32],
    tanh_c: &'a mut [f32],
    u: &'a mut [f32],
    dropped: &'a mut [f32],
    mask: &'a [f32],
}

/// What the layer above reads: the hidden states `h`, after dropout (`dropped`) when there is
/// any.
fn layer_output<'a>(h: &'a [f32], dropped: &'a [f32]) -> &'a [f32] {
    if dropped.is_empty() {
        h
    } else {
        dropped
    }
}

impl LayerBuffers {
    /// What the layer above reads (see [`layer_output`]).
    fn output(&self) -> &[f32] {
        layer_output(&self.h, &self.dropped)
    }
}

/// Forward and backward of an LSTM or GRU on the CPU, with every buffer kept between steps.
#[derive(Clone)]
pub struct NativeRnn {
    kind: ModelKind,
    features: usize,
    hidden: Vec<usize>,
    outputs: usize,
    dropout: f32,
    /// One initial-state buffer zeroed in place each batch, or a fresh zeroed one per batch.
    /// Either way the state starts at zero, so results are the same.
    hidden_state: HiddenState,
    rng: ChaCha8Rng,
    /// Host copies of the parameters, in the model's order (see `Arch::params`), with the
    /// precision of the products that read them.
    params: HostParams,
    /// The batch in the block layout, `[days*rows, features]`.
    x: Vec<f32>,
    layers: Vec<LayerBuffers>,
    /// The zero initial state, `rows x` the widest layer (LSTM: hidden and cell share it, both
    /// stay zero).
    h0: Vec<f32>,
    /// Each window's last-day hidden state of the top layer (the head's input), and the
    /// predictions.
    last: Vec<f32>,
    pred: Vec<f32>,
    d_pred: Vec<f32>,
    /// Backward scratch: dL/dgates of all days, GRU's dL/du, the gradient flowing into a
    /// layer's outputs from above (and the one it sends below), the head's gradient to each
    /// window's last day, and a column of ones for bias sums.
    d_gates: Vec<f32>,
    d_u: Vec<f32>,
    d_out: Vec<f32>,
    d_below: Vec<f32>,
    d_last: Vec<f32>,
    ones: Vec<f32>,
    grads: Vec<CpuVec>,
    days: usize,
    rows: usize,
}

impl NativeRnn {
    /// Buffers for `model`; dropout masks are drawn from `seed`.
    pub fn new(
        dev: &Cpu,
        model: &Model<Cpu>,
        seed: u64,
        hidden_state: HiddenState,
        products: Products,
    ) -> Result<Self, TrainError> {
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
            hidden_state,
            rng,
            params: HostParams::new(products),
            x: Vec::new(),
            layers: vec![LayerBuffers::default(); arch.hidden.len()],
            h0: Vec::new(),
            last: Vec::new(),
            pred: Vec::new(),
            d_pred: Vec::new(),
            d_gates: Vec::new(),
            d_u: Vec::new(),
            d_out: Vec::new(),
            d_below: Vec::new(),
            d_last: Vec::new(),
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
        if self.hidden_state == HiddenState::Reuse && self.h0.len() == len {
            self.h0.fill(0.0);
        } else {
            self.h0 = vec![0.0; len];
        }
    }
}

impl NativeNet for NativeRnn {
    fn refresh(&mut self, model: &Model<Cpu>) {
        self.params.refresh(model);
    }

    fn grads(&self) -> &[CpuVec] {
        &self.grads
    }

    fn grads_mut(&mut self) -> &mut [CpuVec] {
        &mut self.grads
    }

    // Long because: the recurrence's loops over layers, blocks and days share the block buffers
    // laid out for it.
    fn forward(&mut self, x: &[f32], rows: usize, train: bool) -> Result<&[f32], TrainError> {
        let f = self.features;
        let days = x.len() / (rows * f).max(1);
        if days * rows * f != x.len() {
            return Err(TrainError::Shape(format!(
                "{} values are not {rows} windows of whole days of {f} features",
                x.len()
            )));
        }
        self.days = days;
        self.rows = rows;
        let blocks = blocks(rows);
        // The batch in the block layout (block by block, day by day), filled by each block's
        // thread a chunk at a time just before its projection reads it.
        self.x.resize(x.len(), 0.0);
        let widest = self.hidden.iter().copied().max().unwrap_or(0);
        self.zero_state(rows * widest);
        let g = self.gates();
        let lstm = self.kind == ModelKind::Lstm;
        let use_dropout = train && self.dropout > 0.0;
        let top = self.hidden.len() - 1;
        let n = days * rows;
        let kept = Kept::new(days, train);
        // Every layer's buffers sized for the batch, and the dropout masks drawn up front, layer
        // by layer (the only use of the generator, so the same masks as one layer at a time).
        for l in 0..=top {
            let h = self.hidden[l];
            let buf = &mut self.layers[l];
            buf.gates.resize(kept.gates * rows * g * h, 0.0);
            buf.h.resize(kept.h * rows * h, 0.0);
            if lstm {
                buf.c.resize(kept.c * rows * h, 0.0);
                buf.tanh_c.resize(kept.c * rows * h, 0.0);
            } else {
                buf.u.resize(kept.gates * rows * g * h, 0.0);
            }
            buf.mask.clear();
            buf.dropped.clear();
            if l < top && use_dropout {
                let keep = 1.0 - self.dropout;
                let p = self.dropout;
                let rng = &mut self.rng;
                buf.mask
                    .extend((0..n * h).map(|_| if rng.gen::<f32>() < p { 0.0 } else { 1.0 / keep }));
                buf.dropped.resize(n * h, 0.0);
            }
        }
        let weights: Vec<LayerWeights<'_>> = (0..=top)
            .map(|l| {
                let h = self.hidden[l];
                let width_in = if l == 0 { f } else { self.hidden[l - 1] };
                let p = 4 * l;
                let (b_ih, b_hh) = (&self.params[p + 2], &self.params[p + 3]);
                LayerWeights {
                    h,
                    width_in,
                    w_ih: self.params.weight(p, width_in, g * h),
                    w_hh: self.params.weight(p + 1, h, g * h),
                    bias: b_ih.iter().zip(b_hh).map(|(a, b)| a + b).collect(),
                    b_ih,
                    b_hh,
                }
            })
            .collect();
        // Each block on its own thread, from the first day to the last: the blocks are
        // independent through every layer, so nothing waits on another block.
        let mut per_block: Vec<Vec<BlockBuffers<'_>>> = blocks.iter().map(|_| Vec::with_capacity(top + 1)).collect();
        for (l, buf) in self.layers.iter_mut().enumerate() {
            let (h, gh) = (self.hidden[l], g * self.hidden[l]);
            let regions = block_regions(&mut buf.gates, &blocks, kept.gates, gh)
                .into_iter()
                .zip(block_regions(&mut buf.h, &blocks, kept.h, h))
                .zip(block_regions(&mut buf.c, &blocks, kept.c, h))
                .zip(block_regions(&mut buf.tanh_c, &blocks, kept.c, h))
                .zip(block_regions(&mut buf.u, &blocks, kept.gates, gh))
                .zip(block_regions(&mut buf.dropped, &blocks, days, h))
                .zip(block_regions(&mut buf.mask, &blocks, days, h));
            for (out, ((((((gates, h), c), tanh_c), u), dropped), mask)) in per_block.iter_mut().zip(regions) {
                out.push(BlockBuffers {
                    gates,
                    h,
                    c,
                    tanh_c,
                    u,
                    dropped,
                    mask,
                });
            }
        }
        let (h0, products) = (&self.h0, self.params.products());
        let weights = &weights;
        let work = per_block
            .into_iter()
            .zip(block_regions(&mut self.x, &blocks, days, f))
            .zip(blocks.clone());
        work.collect::<Vec<_>>()
            .into_par_iter()
            .for_each(|((mut bufs, x_block), b)| {
                let m = b.len();
                let windows = &x[b.start * days * f..b.end * days * f];
                // Days in chunks: a chunk's input projection, then its days, so the projected
                // gates are read back while still in the core's cache.
                for t0 in (0..days).step_by(CHUNK_DAYS) {
                    let t1 = (t0 + CHUNK_DAYS).min(days);
                    for t in t0..t1 {
                        for (r, window) in windows.chunks_exact(days * f).enumerate() {
                            x_block[(t * m + r) * f..(t * m + r + 1) * f].copy_from_slice(&window[t * f..(t + 1) * f]);
                        }
                    }
                    let x_block = &*x_block;
                    for (l, w) in weights.iter().enumerate() {
                        let (h, gh) = (w.h, g * w.h);
                        let (below, this_and_above) = bufs.split_at_mut(l);
                        let cur = &mut this_and_above[0];
                        // The chunk's days are contiguous in every ring (`Kept`).
                        let (input, first) = match below.last() {
                            None => (x_block, t0),
                            Some(below) => (layer_output(below.h, below.dropped), t0 % kept.h),
                        };
                        let g0 = t0 % kept.gates;
                        products.matmul_serial(
                            &mut cur.gates[g0 * m * gh..(g0 + t1 - t0) * m * gh],
                            View::new(&input[first * m * w.width_in..], (t1 - t0) * m, w.width_in),
                            w.w_ih,
                            false,
                        );
                        let zero = &h0[b.start * h..b.end * h];
                        for t in t0..t1 {
                            let (h_prev, h_out) = prev_and_next(cur.h, t, kept.h, m * h, zero);
                            let gt = t % kept.gates;
                            let zt = &mut cur.gates[gt * m * gh..(gt + 1) * m * gh];
                            if lstm {
                                products.matmul_serial(zt, View::new(h_prev, m, h), w.w_hh, true);
                                let (c_prev, c_out) = prev_and_next(cur.c, t, kept.c, m * h, zero);
                                let ct = t % kept.c;
                                let tc = &mut cur.tanh_c[ct * m * h..(ct + 1) * m * h];
                                lstm_cell(zt, &w.bias, c_prev, c_out, tc, h_out, h);
                            } else {
                                let ut = &mut cur.u[gt * m * gh..(gt + 1) * m * gh];
                                products.matmul_serial(ut, View::new(h_prev, m, h), w.w_hh, false);
                                gru_cell(zt, ut, w.b_ih, w.b_hh, h_prev, h_out, h);
                            }
                        }
                        if !cur.mask.is_empty() {
                            let days_done = t0 * m * h..t1 * m * h;
                            cur.dropped[days_done.clone()]
                                .iter_mut()
                                .zip(&cur.h[days_done.clone()])
                                .zip(&cur.mask[days_done])
                                .for_each(|((d, v), k)| *d = v * k);
                        }
                    }
                }
            });
        // The head on each window's last-day hidden state.
        let h = self.hidden[top];
        self.last.resize(rows * h, 0.0);
        for b in &blocks {
            let from = first_row(b, kept.h, (days - 1) % kept.h) * h;
            self.last[b.start * h..b.end * h].copy_from_slice(&self.layers[top].h[from..from + b.len() * h]);
        }
        let head = 4 * self.hidden.len();
        self.pred.resize(rows * self.outputs, 0.0);
        self.params.products().matmul(
            &mut self.pred,
            View::new(&self.last, rows, h),
            self.params.weight(head, h, self.outputs),
        );
        let bias = &self.params[head + 1];
        for row in self.pred.chunks_exact_mut(self.outputs) {
            row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
        }
        Ok(&self.pred)
    }

    // Long because: backpropagation through time mirrors `forward`'s loops and buffers, step for
    // step.
    fn loss_and_grads_scaled(&mut self, x: &[f32], y: &[f32], rows: usize, loss_scale: f32) -> Result<f32, TrainError> {
        self.forward(x, rows, true)?;
        check_targets(self.pred.len(), y.len())?;
        let (days, outputs) = (self.days, self.outputs);
        let n = days * rows;
        let g = self.gates();
        let lstm = self.kind == ModelKind::Lstm;
        let top = self.hidden.len() - 1;
        let blocks = blocks(rows);
        let scale = 2.0 / self.pred.len() as f32 * loss_scale;
        let products = self.params.products();
        let mut sum = 0.0f64;
        self.d_pred.clear();
        self.d_pred.extend(self.pred.iter().zip(y).map(|(p, t)| {
            let d = p - t;
            sum += f64::from(d * d);
            scale * d
        }));
        let loss = (sum / self.pred.len() as f64) as f32;

        // The head, and the gradient it sends to each window's last day.
        let h_top = self.hidden[top];
        let head = 4 * self.hidden.len();
        let (gw, gb) = self.grads[head..].split_at_mut(1);
        products.matmul(
            &mut gw[0][..],
            View::new(&self.last, rows, h_top).t(),
            View::new(&self.d_pred, rows, outputs),
        );
        gb[0].iter_mut().for_each(|v| *v = 0.0);
        for row in self.d_pred.chunks_exact(outputs) {
            gb[0].iter_mut().zip(row).for_each(|(g, d)| *g += d);
        }
        self.d_last.resize(rows * h_top, 0.0);
        products.matmul(
            &mut self.d_last,
            View::new(&self.d_pred, rows, outputs),
            self.params.weight(head, h_top, outputs).t(),
        );
        self.d_out.clear();
        self.d_out.resize(n * h_top, 0.0);
        for b in &blocks {
            let to = first_row(b, days, days - 1) * h_top;
            self.d_out[to..to + b.len() * h_top].copy_from_slice(&self.d_last[b.start * h_top..b.end * h_top]);
        }
        self.ones.resize(n, 1.0);

        for l in (0..=top).rev() {
            let h = self.hidden[l];
            let gh = g * h;
            let width_in = if l == 0 { self.features } else { self.hidden[l - 1] };
            let p = 4 * l;
            self.d_gates.resize(n * gh, 0.0);
            if !lstm {
                self.d_u.resize(n * gh, 0.0);
            }
            let buf = &self.layers[l];
            let (w_hh, b_hh) = (self.params.weight(p + 1, h, gh).t(), &self.params[p + 3]);
            let (h0, d_out) = (&self.h0, &self.d_out);
            let parts = block_regions(&mut self.d_gates, &blocks, days, gh)
                .into_iter()
                .zip(block_regions(
                    if lstm { &mut [] } else { &mut self.d_u },
                    &blocks,
                    days,
                    gh,
                ))
                .zip(blocks.iter().cloned())
                .collect::<Vec<_>>();
            parts.into_par_iter().for_each(|((dz, du), b)| {
                let m = b.len();
                let zero = &h0[b.start * h..b.end * h];
                let region = |width: usize| b.start * days * width..b.end * days * width;
                let (acts, hs, d_in) = (&buf.gates[region(gh)], &buf.h[region(h)], &d_out[region(h)]);
                // The recurrent gradients flowing back from day t + 1.
                let mut d_h = vec![0.0f32; m * h];
                let mut d_c = vec![0.0f32; if lstm { m * h } else { 0 }];
                for t in (0..days).rev() {
                    let (sh, sg) = (t * m * h..(t + 1) * m * h, t * m * gh..(t + 1) * m * gh);
                    let h_prev: &[f32] = if t == 0 { zero } else { &hs[(t - 1) * m * h..t * m * h] };
                    if lstm {
                        let cs = &buf.c[region(h)];
                        let c_prev: &[f32] = if t == 0 { zero } else { &cs[(t - 1) * m * h..t * m * h] };
                        let tc = &buf.tanh_c[region(h)][sh.clone()];
                        lstm_cell_backward(
                            &acts[sg.clone()],
                            tc,
                            c_prev,
                            &d_in[sh],
                            &d_h,
                            &mut d_c,
                            &mut dz[sg.clone()],
                            h,
                        );
                        if t > 0 {
                            products.matmul_serial(&mut d_h, View::new(&dz[sg], m, gh), w_hh, false);
                        }
                    } else {
                        let us = &buf.u[region(gh)][sg.clone()];
                        gru_cell_backward(
                            &acts[sg.clone()],
                            us,
                            b_hh,
                            h_prev,
                            &d_in[sh],
                            &mut d_h,
                            &mut dz[sg.clone()],
                            &mut du[sg.clone()],
                            h,
                        );
                        if t > 0 {
                            products.matmul_serial(&mut d_h, View::new(&du[sg], m, gh), w_hh, true);
                        }
                    }
                }
            });
            // Weight and bias gradients over all days at once.
            let input = if l == 0 {
                &self.x[..]
            } else {
                self.layers[l - 1].output()
            };
            let d_rec: &[f32] = if lstm { &self.d_gates } else { &self.d_u };
            let (gw_ih, rest) = self.grads[p..].split_at_mut(1);
            let (gw_hh, rest) = rest.split_at_mut(1);
            let (gb_ih, gb_hh) = rest.split_at_mut(1);
            products.matmul(
                &mut gw_ih[0][..],
                View::new(input, n, width_in).t(),
                View::new(&self.d_gates, n, gh),
            );
            // h_prev of day t is h of day t - 1, within each block; day 0's is zero.
            gw_hh[0].iter_mut().for_each(|v| *v = 0.0);
            if days > 1 {
                for b in &blocks {
                    let m = b.len();
                    let (hs, ds) = (b.start * days * h, b.start * days * gh);
                    products.matmul_into(
                        &mut gw_hh[0][..],
                        View::new(&self.layers[l].h[hs..], (days - 1) * m, h).t(),
                        View::new(&d_rec[ds + m * gh..], (days - 1) * m, gh),
                        true,
                    );
                }
            }
            // Bias gradients are sums over every row: kept in f32 whatever the precision, as
            // their scaled totals can leave f16's range when no single term does.
            Products::F32.matmul(
                &mut gb_ih[0][..],
                View::new(&self.ones, 1, n),
                View::new(&self.d_gates, n, gh),
            );
            Products::F32.matmul(&mut gb_hh[0][..], View::new(&self.ones, 1, n), View::new(d_rec, n, gh));
            if l == 0 {
                break;
            }
            // dL/d(outputs of the layer below), through its dropout mask.
            self.d_below.resize(n * width_in, 0.0);
            products.matmul(
                &mut self.d_below,
                View::new(&self.d_gates, n, gh),
                self.params.weight(p, width_in, gh).t(),
            );
            let mask = &self.layers[l - 1].mask;
            if !mask.is_empty() {
                self.d_below.iter_mut().zip(mask).for_each(|(d, m)| *d *= m);
            }
            std::mem::swap(&mut self.d_out, &mut self.d_below);
        }
        Ok(loss)
    }
}
