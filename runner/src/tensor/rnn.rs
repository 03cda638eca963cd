//! LSTM and GRU on dfdx tensors (init, autodiff forward): the recurrent models on any dfdx
//! device, the CUDA path's engine and the reference the CPU engine (`native::rnn`) is tested
//! against. dfdx 0.13 has no recurrent module, so each cell is composed from its ops: one
//! input projection for all days, then per day a product with the recurrent weight, gate
//! slices, sigmoids and tanhs. Backpropagation through time is dfdx's tape over those ops.
//!
//! The cells are PyTorch's (`nn.LSTM`, `nn.GRU`, gate order i, f, g, o and r, z, n):
//! - LSTM: `z = x W_ih + b_ih + h W_hh + b_hh`; `i, f, o = sigmoid`, `g = tanh`;
//!   `c' = f c + i g`; `h' = o tanh(c')`.
//! - GRU: `a = x W_ih + b_ih`, `u = h W_hh + b_hh`; `r = sigmoid(a_r + u_r)`,
//!   `z = sigmoid(a_z + u_z)`, `n = tanh(a_n + r u_n)`; `h' = (1 - z) n + z h`.
//!
//! The state starts at zero for every batch; dropout applies to each layer's outputs except
//! the last's (as in PyTorch); the prediction is a linear head on the last day's hidden state.

use super::model::{InitialState, Matrix, Model, OUTPUT_INIT_SCALE};
use super::TrainError;
use crate::arch::{Arch, ModelKind};
use dfdx::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Initial parameters, drawn on the host from `seed` in [`Arch::params`] order: every
/// recurrent weight and bias uniform in `±1/sqrt(H)` (PyTorch's init), the head
/// Glorot-uniform times [`OUTPUT_INIT_SCALE`] with a zero bias.
pub fn init(arch: &Arch, seed: u64) -> Result<Vec<Vec<f32>>, TrainError> {
    if arch.hidden.is_empty() || arch.n_features == 0 {
        return Err(TrainError::Shape(format!(
            "a {} needs at least one layer and one feature, got hidden {:?} and {} features",
            arch.kind.as_str(),
            arch.hidden,
            arch.n_features
        )));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let specs = arch.params();
    let (recurrent, head) = specs.split_at(specs.len() - 2);
    let mut params = Vec::with_capacity(specs.len());
    for (i, spec) in recurrent.iter().enumerate() {
        let h = arch.hidden[i / 4];
        let bound = 1.0 / (h as f32).sqrt();
        params.push((0..spec.len()).map(|_| rng.gen_range(-bound..bound)).collect());
    }
    let (weight, bias) = (&head[0], &head[1]);
    let (fan_in, fan_out) = (weight.shape[0], weight.shape[1]);
    let bound = (OUTPUT_INIT_SCALE * (6.0 / (fan_in + fan_out) as f64).sqrt()) as f32;
    params.push((0..weight.len()).map(|_| rng.gen_range(-bound..bound)).collect());
    params.push(vec![0.0; bias.len()]);
    Ok(params)
}

// Long because: the dfdx graph of both cells, day by day; one function keeps the tape's path in
// view.
/// Forward pass over a batch `(rows, days * n_features)` (each row a window, day-major, as the
/// batches carry it); returns `(rows, outputs)`.
pub fn forward<D: Device<f32>, T: Tape<f32, D> + Merge<T>>(
    model: &Model<D>,
    input: Matrix<D, T>,
    train: bool,
    initial: &mut InitialState<D>,
) -> Result<Matrix<D, T>, TrainError>
where
    TrainError: From<D::Err>,
{
    let arch = &model.arch;
    let (rows, width) = *input.shape();
    let features = arch.n_features;
    if features == 0 || width % features != 0 || width == 0 {
        return Err(TrainError::Shape(format!(
            "{width} inputs per row are not whole days of {features} features"
        )));
    }
    let days = width / features;
    let gates = arch.kind.gates();
    let dev = input.device().clone();
    // Each day's columns of the batch; only the last slice carries the input's tape. Day by
    // day rather than one time-major product: a permute and a non-contiguous reshape (or a
    // stack) would have dfdx compile CUDA kernels at run time.
    let cols = |day: usize| day * features..(day + 1) * features;
    let mut inputs = (0..days - 1)
        .map(|day| input.with_empty_tape().try_slice((.., cols(day))))
        .collect::<Result<Vec<_>, _>>()?;
    inputs.push(input.try_slice((.., cols(days - 1)))?);
    let mut width_in = features;
    let layers = arch.hidden.len();
    let mut last_h: Option<Matrix<D, T>> = None;
    for (l, &h) in arch.hidden.iter().enumerate() {
        let p = 4 * l;
        let zeros = initial.zeros(&dev, rows, h)?;
        let mut state = zeros.retaped::<T>();
        let mut cell = (arch.kind == ModelKind::Lstm).then(|| zeros.retaped::<T>());
        let top = l + 1 == layers;
        let mut outputs = Vec::with_capacity(if top { 0 } else { days });
        for x_in in std::mem::take(&mut inputs) {
            let x = model.plus_bias(x_in.try_matmul(model.matrix::<T>(p, width_in, gates * h)?)?, p + 2)?;
            let w_hh = model.matrix::<T>(p + 1, h, gates * h)?;
            let recurrent = |h_prev: Matrix<D, T>| model.plus_bias(h_prev.try_matmul(w_hh)?, p + 3);
            let gate = |z: &Matrix<D, T>, k: usize| z.with_empty_tape().try_slice((.., k * h..(k + 1) * h));
            // Each tensor's tape is consumed exactly once: by the previous state's product
            // (LSTM) or its use in `h'` (GRU); other uses share it untaped.
            state = match cell.take() {
                Some(c) => {
                    let z = x.try_add(recurrent(state)?)?;
                    let i = gate(&z, 0)?.try_sigmoid()?;
                    let f = gate(&z, 1)?.try_sigmoid()?;
                    let g = gate(&z, 2)?.try_tanh()?;
                    let o = z.try_slice((.., 3 * h..4 * h))?.try_sigmoid()?;
                    let c = f.try_mul(c)?.try_add(i.try_mul(g)?)?;
                    let next = o.try_mul(c.with_empty_tape().try_tanh()?)?;
                    cell = Some(c);
                    next
                }
                None => {
                    let u = recurrent(state.with_empty_tape())?;
                    let r = gate(&x, 0)?.try_add(gate(&u, 0)?)?.try_sigmoid()?;
                    let z = gate(&x, 1)?.try_add(gate(&u, 1)?)?.try_sigmoid()?;
                    let u_n = u.try_slice((.., 2 * h..3 * h))?;
                    let n = x.try_slice((.., 2 * h..3 * h))?.try_add(r.try_mul(u_n)?)?.try_tanh()?;
                    // h' = n + z (h - n)
                    let n_again = n.with_empty_tape();
                    n.try_add(z.try_mul(state.try_sub(n_again)?)?)?
                }
            };
            if !top {
                outputs.push(state.with_empty_tape());
            }
        }
        // The cell's tape holds the last step's cell ops; the output must carry it.
        if let Some(c) = cell.take() {
            state = absorb(state, c);
        }
        width_in = h;
        if top {
            last_h = Some(state);
        } else {
            // Every day's output shares ops on `state`'s tape; the last day's carries them.
            if let Some(last) = outputs.last_mut() {
                *last = state;
            }
            inputs = if train && model.dropout > 0.0 {
                outputs
                    .into_iter()
                    .map(|o| o.try_dropout(model.dropout))
                    .collect::<Result<_, _>>()?
            } else {
                outputs
            };
        }
    }
    let last_h = last_h.ok_or_else(|| TrainError::Shape("a recurrent model without layers".into()))?;
    let head = 4 * layers;
    model.plus_bias(
        last_h.try_matmul(model.matrix::<T>(head, width_in, arch.outputs)?)?,
        head + 1,
    )
}

/// `x` carrying `other`'s tape as well (`other`'s value is dropped).
fn absorb<D: Device<f32>, T: Tape<f32, D> + Merge<T>>(x: Matrix<D, T>, other: Matrix<D, T>) -> Matrix<D, T> {
    let (x, tape) = x.split_tape();
    let (_, other_tape) = other.split_tape();
    x.put_tape(tape.merge(other_tape))
}
