//! The MLP on dfdx tensors (init, autodiff forward and loss): layers whose widths come from the
//! manifest. Its parameters are the model's flat tensors, `layers.<i>.weight` viewed as
//! `(in, out)` row-major and `layers.<i>.bias` as `(out,)`.
//!
//! dfdx 0.13's `Linear<I, O>` only takes compile-time sizes, hence runtime-shaped tensors.

use super::model::{LossAndGrads, Matrix, Model, OUTPUT_INIT_SCALE};
use super::TrainError;
use crate::arch::{Activation, Arch};
use dfdx::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Initial parameters, drawn on the host from `seed`: He-uniform (`sqrt(6 / fan_in)`) before
/// ReLU/GELU, Glorot-uniform (`sqrt(6 / (fan_in + fan_out))`) before tanh, and for the linear
/// output layer Glorot-uniform times [`OUTPUT_INIT_SCALE`]. Biases start at zero.
pub fn init(arch: &Arch, seed: u64) -> Result<Vec<Vec<f32>>, TrainError> {
    let widths = arch.mlp_widths();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut params = Vec::with_capacity(2 * (widths.len() - 1));
    for (i, pair) in widths.windows(2).enumerate() {
        let (fan_in, fan_out) = (pair[0], pair[1]);
        let is_output = i + 2 == widths.len();
        let bound = if is_output {
            OUTPUT_INIT_SCALE * (6.0 / (fan_in + fan_out) as f64).sqrt()
        } else if arch.activation == Activation::Tanh {
            (6.0 / (fan_in + fan_out) as f64).sqrt()
        } else {
            (6.0 / fan_in as f64).sqrt()
        } as f32;
        params.push((0..fan_in * fan_out).map(|_| rng.gen_range(-bound..bound)).collect());
        params.push(vec![0.0; fan_out]);
    }
    Ok(params)
}

/// Forward pass over a batch `(rows, input_width)`.
pub fn forward<D: Device<f32>, T: Tape<f32, D> + Merge<T>>(
    model: &Model<D>,
    input: Matrix<D, T>,
    train: bool,
) -> Result<Matrix<D, T>, TrainError>
where
    TrainError: From<D::Err>,
{
    let widths = model.arch.mlp_widths();
    let first = input.try_matmul(model.matrix::<T>(0, widths[0], widths[1])?)?;
    forward_from_first_product(model, &widths, first, train)
}

/// The rest of the forward pass, given the first layer's `input x weight` product.
fn forward_from_first_product<D: Device<f32>, T: Tape<f32, D> + Merge<T>>(
    model: &Model<D>,
    widths: &[usize],
    first: Matrix<D, T>,
    train: bool,
) -> Result<Matrix<D, T>, TrainError>
where
    TrainError: From<D::Err>,
{
    let last = widths.len() - 2;
    let mut z = first;
    for i in 0..=last {
        if i > 0 {
            z = z.try_matmul(model.matrix::<T>(2 * i, widths[i], widths[i + 1])?)?;
        }
        z = model.plus_bias(z, 2 * i + 1)?;
        if i < last {
            z = match model.arch.activation {
                Activation::Relu => z.try_relu()?,
                Activation::Gelu => z.try_fast_gelu()?,
                Activation::Tanh => z.try_tanh()?,
            };
            if train && model.dropout > 0.0 {
                z = z.try_dropout(model.dropout)?;
            }
        }
    }
    Ok(z)
}

/// Mean squared error of one batch and the gradients of every parameter (training mode).
///
/// dfdx's matmul backward always computes both operands' gradients, so tracing the input
/// would also compute the input batch's gradient, which nothing uses: about 30% of the
/// matmul work of a 960-256-128 model. Instead the first product runs off the tape and the
/// tape starts at its output `z`. After backward, the first weight's gradient is
/// `input^T . dL/dz`, computed once; dfdx lets no outside code write a tensor into a gradient
/// buffer, so it enters the gradients as the derivative of the linear surrogate
/// `sum(weight * g)` (exactly `1 * g`), traced onto the same gradients.
pub fn loss_and_grads<D: Device<f32>>(
    model: &Model<D>,
    input: Matrix<D>,
    target: Matrix<D>,
) -> Result<LossAndGrads<D>, TrainError>
where
    TrainError: From<D::Err>,
{
    let widths = model.arch.mlp_widths();
    let first = input
        .clone()
        .try_matmul(model.matrix::<NoneTape>(0, widths[0], widths[1])?)?;
    let first_leaf = first.clone();
    let pred = forward_from_first_product(model, &widths, first.traced(Gradients::leaky()), true)?;
    let loss = pred.try_sub(target)?.try_square()?.try_mean()?;
    let loss_value = loss.retaped::<NoneTape>();
    let grads = loss.try_backward()?;
    let first_grad = grads.get(&first_leaf);
    let weight_grad = input.try_permute::<_, Axes2<1, 0>>()?.try_matmul(first_grad)?;
    let surrogate = model.params[0]
        .clone()
        .traced(grads)
        .try_reshape_like(&(widths[0], widths[1]))?
        .try_mul(weight_grad)?
        .try_sum()?;
    Ok((loss_value, surrogate.try_backward()?))
}
