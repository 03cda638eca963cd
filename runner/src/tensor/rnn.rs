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
    // Time-major rows (day, window): each day's rows are one contiguous block.
    let mut seq: Option<Matrix<D, T>> = Some(
        input
            .try_reshape_like(&(rows, days, features))?
            .try_permute::<_, Axes3<1, 0, 2>>()?
            .try_reshape_like(&(days * rows, features))?,
    );
    let mut width_in = features;
    let layers = arch.hidden.len();
    let mut last_h: Option<Matrix<D, T>> = None;
    for (l, &h) in arch.hidden.iter().enumerate() {
        let p = 4 * l;
        let layer_input = seq
            .take()
            .ok_or_else(|| TrainError::Internal("a layer without input".into()))?;
        let proj = layer_input.try_matmul(model.matrix::<T>(p, width_in, gates * h)?)?;
        let shape = *proj.shape();
        let mut proj = proj.try_add(model.vector::<T>(p + 2).try_broadcast_like::<_, Axis<0>>(&shape)?)?;
        let zeros = initial.zeros(&dev, rows, h)?;
        let mut state = zeros.retaped::<T>();
        let mut cell = (arch.kind == ModelKind::Lstm).then(|| zeros.retaped::<T>());
        let top = l + 1 == layers;
        let mut outputs = Vec::with_capacity(if top { 0 } else { days });
        for day in 0..days {
            // The last day's slice takes `proj` and its tape; earlier ones share it untaped.
            let block = (day * rows)..((day + 1) * rows);
            let x = if day + 1 == days {
                let untaped = proj.with_empty_tape();
                std::mem::replace(&mut proj, untaped).try_slice((block, ..))?
            } else {
                proj.with_empty_tape().try_slice((block, ..))?
            };
            let w_hh = model.matrix::<T>(p + 1, h, gates * h)?;
            let b_hh = model.vector::<T>(p + 3);
            let recurrent = |h_prev: Matrix<D, T>| -> Result<Matrix<D, T>, TrainError> {
                let u = h_prev.try_matmul(w_hh)?;
                let shape = *u.shape();
                Ok(u.try_add(b_hh.try_broadcast_like::<_, Axis<0>>(&shape)?)?)
            };
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
            // Every output shares `state`'s tape ops; the stack carries them once.
            let last = outputs.len() - 1;
            outputs[last] = state;
            let mut stacked = outputs.try_stack()?.try_reshape_like(&(days * rows, h))?;
            if train && model.dropout > 0.0 {
                stacked = stacked.try_dropout(model.dropout)?;
            }
            seq = Some(stacked);
        }
    }
    let last_h = last_h.ok_or_else(|| TrainError::Shape("a recurrent model without layers".into()))?;
    let head = 4 * layers;
    let out = last_h.try_matmul(model.matrix::<T>(head, width_in, arch.outputs)?)?;
    let shape = *out.shape();
    Ok(out.try_add(model.vector::<T>(head + 1).try_broadcast_like::<_, Axis<0>>(&shape)?)?)
}

/// `x` carrying `other`'s tape as well (`other`'s value is dropped).
fn absorb<D: Device<f32>, T: Tape<f32, D> + Merge<T>>(x: Matrix<D, T>, other: Matrix<D, T>) -> Matrix<D, T> {
    let (x, tape) = x.split_tape();
    let (_, other_tape) = other.split_tape();
    x.put_tape(tape.merge(other_tape))
}
