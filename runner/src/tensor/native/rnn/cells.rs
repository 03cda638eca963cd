//! The recurrence's block layout ([`BLOCK_ROWS`] windows per block, days in chunks, inference's
//! rings of recent days) and the LSTM and GRU cells,
//! forward and backward, over one block's rows of one day.

use crate::tensor::native::{sigmoid_in_place, tanh_in_place};

/// Windows per block of the recurrence: each block runs its days on one thread, with products
/// of this many rows (a multiple of the AVX-512 kernel's 64). Fixed, so results do not depend
/// on the number of threads.
pub(super) const BLOCK_ROWS: usize = 128;

/// Days a block projects at once before running them (see `NativeRnn::forward`): small enough
/// that their gates (`CHUNK_DAYS x BLOCK_ROWS x 4H` values) stay in the core's cache.
pub(super) const CHUNK_DAYS: usize = 2;

/// The blocks of a batch of `rows` windows.
pub(super) fn blocks(rows: usize) -> Vec<std::ops::Range<usize>> {
    (0..rows)
        .step_by(BLOCK_ROWS)
        .map(|s| s..(s + BLOCK_ROWS).min(rows))
        .collect()
}

/// The first row of day `day` of block `b` in the block layout (then one row per window).
pub(super) fn first_row(b: &std::ops::Range<usize>, days: usize, day: usize) -> usize {
    b.start * days + day * b.len()
}

/// Each block's region of a buffer in the block layout (`width` values per row; a block's rows
/// are `days * len` contiguous rows). An empty buffer gives empty regions.
pub(super) fn block_regions<'a>(
    buf: &'a mut [f32],
    blocks: &[std::ops::Range<usize>],
    days: usize,
    width: usize,
) -> Vec<&'a mut [f32]> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut rest = buf;
    for b in blocks {
        let len = if rest.is_empty() { 0 } else { b.len() * days * width };
        let (region, tail) = std::mem::take(&mut rest).split_at_mut(len);
        out.push(region);
        rest = tail;
    }
    out
}

/// How many days of each per-day buffer a forward pass keeps per window. Training keeps every
/// day (backpropagation reads them). Inference keeps only what the recurrence reads again, as
/// rings indexed by `day % kept`, small enough to stay in the core's cache: the gates of one
/// chunk, the hidden states of two chunks (the layer above reads the current one, the next
/// day reads the previous), and the cells of two days.
#[derive(Clone, Copy)]
pub(super) struct Kept {
    pub(super) gates: usize,
    pub(super) h: usize,
    pub(super) c: usize,
}

impl Kept {
    pub(super) fn new(days: usize, train: bool) -> Self {
        if train {
            Self {
                gates: days,
                h: days,
                c: days,
            }
        } else {
            Self {
                gates: CHUNK_DAYS.min(days),
                h: (2 * CHUNK_DAYS).min(days),
                c: 2.min(days),
            }
        }
    }
}

/// Day `t - 1`'s slot of a ring of `kept` slots of `len` values (`zero` on day 0), and day
/// `t`'s to write.
pub(super) fn prev_and_next<'a>(
    buf: &'a mut [f32],
    t: usize,
    kept: usize,
    len: usize,
    zero: &'a [f32],
) -> (&'a [f32], &'a mut [f32]) {
    let next = t % kept;
    if t == 0 {
        return (zero, &mut buf[next * len..(next + 1) * len]);
    }
    let prev = (t - 1) % kept;
    if prev < next {
        let (done, rest) = buf.split_at_mut(next * len);
        (&done[prev * len..(prev + 1) * len], &mut rest[..len])
    } else {
        let (rest, done) = buf.split_at_mut(prev * len);
        (&done[..len], &mut rest[next * len..(next + 1) * len])
    }
}

/// One day of an LSTM block: `z` (`[m, 4H]`, `x W_ih + h W_hh`) gets the biases and becomes
/// the activated gates i, f, g, o; then `c = f c_prev + i g`, `tc = tanh(c)`, `h = o tc`.
pub(super) fn lstm_cell(
    z: &mut [f32],
    bias: &[f32],
    c_prev: &[f32],
    c: &mut [f32],
    tc: &mut [f32],
    h_out: &mut [f32],
    h: usize,
) {
    for (r, zr) in z.chunks_exact_mut(4 * h).enumerate() {
        zr.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
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
            &mut h_out[row.clone()],
            &c_prev[row],
        );
        for j in 0..h {
            let v = f[j] * cp[j] + i[j] * gg[j];
            c[j] = v;
            tc[j] = v;
        }
        tanh_in_place(tc);
        for j in 0..h {
            ho[j] = o[j] * tc[j];
        }
    }
}

/// One day of a GRU block: `a` (`[m, 3H]`, `x W_ih`) becomes the activated gates r, z, n from
/// `u` (`h_prev W_hh`, without its bias); then `h = n + z (h_prev - n)`.
pub(super) fn gru_cell(
    a: &mut [f32],
    u: &[f32],
    b_ih: &[f32],
    b_hh: &[f32],
    h_prev: &[f32],
    h_out: &mut [f32],
    h: usize,
) {
    for (r, (ar, ur)) in a.chunks_exact_mut(3 * h).zip(u.chunks_exact(3 * h)).enumerate() {
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
        let (ho, hp) = (&mut h_out[r * h..(r + 1) * h], &h_prev[r * h..(r + 1) * h]);
        for j in 0..h {
            ho[j] = n[j] + zg[j] * (hp[j] - n[j]);
        }
    }
}

/// One day of an LSTM block going back: from the gradient reaching this day's outputs
/// (`d_in`, from above, plus `d_h`, from day t + 1) and the cell's (`d_c`, updated to day
/// t - 1's), the gradients of the gate pre-activations `dz`.
#[allow(clippy::too_many_arguments)]
pub(super) fn lstm_cell_backward(
    acts: &[f32],
    tanh_c: &[f32],
    c_prev: &[f32],
    d_in: &[f32],
    d_h: &[f32],
    d_c: &mut [f32],
    dz: &mut [f32],
    h: usize,
) {
    for (r, (a, dzr)) in acts.chunks_exact(4 * h).zip(dz.chunks_exact_mut(4 * h)).enumerate() {
        for j in 0..h {
            let at = r * h + j;
            let (i, f, gg, o) = (a[j], a[h + j], a[2 * h + j], a[3 * h + j]);
            let tc = tanh_c[at];
            let dh = d_in[at] + d_h[at];
            let dc = d_c[at] + dh * o * (1.0 - tc * tc);
            dzr[j] = dc * gg * i * (1.0 - i);
            dzr[h + j] = dc * c_prev[at] * f * (1.0 - f);
            dzr[2 * h + j] = dc * i * (1.0 - gg * gg);
            dzr[3 * h + j] = dh * tc * o * (1.0 - o);
            d_c[at] = dc * f;
        }
    }
}

/// One day of a GRU block going back: the gradients of the input side `da` and of the
/// recurrent side `du` (their n blocks differ by the reset gate), and in `d_h` the direct part
/// of the gradient to `h_prev` (`dh z`; the caller adds `du W_hh^T`).
#[allow(clippy::too_many_arguments)]
pub(super) fn gru_cell_backward(
    acts: &[f32],
    u: &[f32],
    b_hh: &[f32],
    h_prev: &[f32],
    d_in: &[f32],
    d_h: &mut [f32],
    da: &mut [f32],
    du: &mut [f32],
    h: usize,
) {
    let rows = acts.chunks_exact(3 * h).zip(u.chunks_exact(3 * h));
    for (r, ((a, ur), (dar, dur))) in rows
        .zip(da.chunks_exact_mut(3 * h).zip(du.chunks_exact_mut(3 * h)))
        .enumerate()
    {
        for j in 0..h {
            let at = r * h + j;
            let (rg, zg, ng) = (a[j], a[h + j], a[2 * h + j]);
            let dh = d_in[at] + d_h[at];
            let dz = dh * (h_prev[at] - ng);
            let dpre_n = dh * (1.0 - zg) * (1.0 - ng * ng);
            let un = ur[2 * h + j] + b_hh[2 * h + j];
            let dpre_r = dpre_n * un * rg * (1.0 - rg);
            let dpre_z = dz * zg * (1.0 - zg);
            dar[j] = dpre_r;
            dar[h + j] = dpre_z;
            dar[2 * h + j] = dpre_n;
            dur[j] = dpre_r;
            dur[h + j] = dpre_z;
            dur[2 * h + j] = dpre_n * rg;
            d_h[at] = dh * zg;
        }
    }
}
