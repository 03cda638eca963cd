//! The MLP whose widths come from the manifest (train stage builds it, validate rebuilds it from
//! a `TrainedModel`); weights are runtime-shaped dfdx tensors on any device.
//!
//! dfdx 0.13's `Linear<I, O>` only takes compile-time sizes, so each layer holds its own
//! `(usize, usize)` weight (stored `in x out`, row-major, the same layout as
//! `TrainedModel::layers`) and `(usize,)` bias.

use super::config::Activation;
use super::TrainError;
use crate::artifact::{TargetScale, TrainedModel, Windows};
use dfdx::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use safetensors::tensor::{Dtype as StDtype, SafeTensors, TensorView};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// A batch of rows: `(rows, width)` on device `D` with tape `T`.
pub type Matrix<D, T = NoneTape> = Tensor<(usize, usize), f32, D, T>;

/// A batch's scalar loss (detached from the tape) and the gradients of every parameter.
pub type LossAndGrads<D> = (Tensor<(), f32, D>, Gradients<f32, D>);

/// One fully connected layer.
#[derive(Debug, Clone)]
pub struct Layer<D: Device<f32>> {
    pub weight: Matrix<D>,
    pub bias: Tensor<(usize,), f32, D>,
}

/// A multi-layer perceptron: `hidden.len() + 1` linear layers, the activation between them.
#[derive(Debug, Clone)]
pub struct Mlp<D: Device<f32>> {
    pub layers: Vec<Layer<D>>,
    /// Widths from input to output, e.g. `[960, 256, 128, 1]`.
    pub widths: Vec<usize>,
    pub activation: Activation,
    /// Dropout probability after each hidden activation, applied only when training.
    pub dropout: f64,
    /// The network's outputs are standardized targets; this maps them back to target units.
    pub target: TargetScale,
}

/// The output layer's initial weights are Glorot-uniform scaled by this, so a fresh model
/// predicts close to the (standardized) targets' mean instead of noise as large as the
/// targets themselves, which the first epochs would otherwise spend unlearning.
pub const OUTPUT_INIT_SCALE: f64 = 0.01;

impl<D: Device<f32>> Mlp<D>
where
    TrainError: From<D::Err>,
{
    /// A freshly initialized model. The weights are drawn on the host from `seed`, so CPU and
    /// CUDA start from bit-identical parameters: He-uniform (`sqrt(6 / fan_in)`) before
    /// ReLU/GELU, Glorot-uniform (`sqrt(6 / (fan_in + fan_out))`) before tanh, and for the linear
    /// output layer Glorot-uniform times [`OUTPUT_INIT_SCALE`]. Biases start at zero. The target
    /// scale starts as the identity; training sets it.
    pub fn new(dev: &D, widths: &[usize], activation: Activation, dropout: f64, seed: u64) -> Result<Self, TrainError> {
        if widths.len() < 2 {
            return Err(TrainError::Shape(format!(
                "an MLP needs an input and an output width, got {widths:?}"
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut layers = Vec::with_capacity(widths.len() - 1);
        for (i, pair) in widths.windows(2).enumerate() {
            let (fan_in, fan_out) = (pair[0], pair[1]);
            let is_output = i + 2 == widths.len();
            let bound = if is_output {
                OUTPUT_INIT_SCALE * (6.0 / (fan_in + fan_out) as f64).sqrt()
            } else if activation == Activation::Tanh {
                (6.0 / (fan_in + fan_out) as f64).sqrt()
            } else {
                (6.0 / fan_in as f64).sqrt()
            } as f32;
            let weight: Vec<f32> = (0..fan_in * fan_out).map(|_| rng.gen_range(-bound..bound)).collect();
            layers.push(Layer {
                weight: dev.try_tensor_from_vec(weight, (fan_in, fan_out))?,
                bias: dev.try_tensor_from_vec(vec![0.0; fan_out], (fan_out,))?,
            });
        }
        Ok(Self {
            layers,
            widths: widths.to_vec(),
            activation,
            dropout,
            target: TargetScale::IDENTITY,
        })
    }

    pub fn input_width(&self) -> usize {
        self.widths[0]
    }

    pub fn output_width(&self) -> usize {
        self.widths[self.widths.len() - 1]
    }

    /// Forward pass over a batch `(rows, input_width)`. With `T = OwnedTape` the result carries
    /// the tape for `backward()`; the parameters are retaped so their gradients land in it.
    /// `train` enables dropout.
    pub fn forward<T: Tape<f32, D> + Merge<T>>(
        &self,
        input: Matrix<D, T>,
        train: bool,
    ) -> Result<Matrix<D, T>, TrainError> {
        let first = input.try_matmul(self.layers[0].weight.retaped::<T>())?;
        self.forward_from_first_product(first, train)
    }

    /// The rest of the forward pass, given the first layer's `input x weight` product.
    fn forward_from_first_product<T: Tape<f32, D> + Merge<T>>(
        &self,
        first: Matrix<D, T>,
        train: bool,
    ) -> Result<Matrix<D, T>, TrainError> {
        let last = self.layers.len() - 1;
        let mut z = first;
        for (i, layer) in self.layers.iter().enumerate() {
            if i > 0 {
                z = z.try_matmul(layer.weight.retaped::<T>())?;
            }
            let shape = *z.shape();
            let bias = layer.bias.retaped::<T>().try_broadcast_like::<_, Axis<0>>(&shape)?;
            z = z.try_add(bias)?;
            if i < last {
                z = match self.activation {
                    Activation::Relu => z.try_relu()?,
                    Activation::Gelu => z.try_fast_gelu()?,
                    Activation::Tanh => z.try_tanh()?,
                };
                if train && self.dropout > 0.0 {
                    z = z.try_dropout(self.dropout)?;
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
    pub fn loss_and_grads(&self, input: Matrix<D>, target: Matrix<D>) -> Result<LossAndGrads<D>, TrainError> {
        let first = input.clone().try_matmul(self.layers[0].weight.clone())?;
        let first_leaf = first.clone();
        let pred = self.forward_from_first_product(first.traced(Gradients::leaky()), true)?;
        let loss = pred.try_sub(target)?.try_square()?.try_mean()?;
        let loss_value = loss.retaped::<NoneTape>();
        let grads = loss.try_backward()?;
        let first_grad = grads.get(&first_leaf);
        let weight_grad = input.try_permute::<_, Axes2<1, 0>>()?.try_matmul(first_grad)?;
        let surrogate = self.layers[0]
            .weight
            .clone()
            .traced(grads)
            .try_mul(weight_grad)?
            .try_sum()?;
        Ok((loss_value, surrogate.try_backward()?))
    }

    /// Copies the weights to the host.
    pub fn to_trained(&self, windows: Arc<Windows>) -> TrainedModel {
        TrainedModel {
            widths: self.widths.clone(),
            activation: self.activation.as_str().to_owned(),
            layers: self
                .layers
                .iter()
                .map(|l| (l.weight.as_vec(), l.bias.as_vec()))
                .collect(),
            target: self.target,
            windows,
        }
    }

    /// Uploads a host model to `dev` (dropout off: a rebuilt model is for inference).
    pub fn from_trained(dev: &D, model: &TrainedModel) -> Result<Self, TrainError> {
        let activation = Activation::parse(&model.activation)
            .ok_or_else(|| TrainError::Shape(format!("unknown activation `{}`", model.activation)))?;
        Self::from_host(dev, &model.widths, activation, &model.layers, model.target)
    }

    fn from_host(
        dev: &D,
        widths: &[usize],
        activation: Activation,
        host: &[(Vec<f32>, Vec<f32>)],
        target: TargetScale,
    ) -> Result<Self, TrainError> {
        if widths.len() < 2 || host.len() + 1 != widths.len() {
            return Err(TrainError::Shape(format!(
                "{} layers do not fit widths {widths:?}",
                host.len()
            )));
        }
        let mut layers = Vec::with_capacity(host.len());
        for (i, (w, b)) in host.iter().enumerate() {
            let (fan_in, fan_out) = (widths[i], widths[i + 1]);
            if w.len() != fan_in * fan_out || b.len() != fan_out {
                return Err(TrainError::Shape(format!(
                    "layer {i}: expected a {fan_in}x{fan_out} weight and {fan_out} biases, got \
                     {} and {}",
                    w.len(),
                    b.len()
                )));
            }
            layers.push(Layer {
                weight: dev.try_tensor_from_vec(w.clone(), (fan_in, fan_out))?,
                bias: dev.try_tensor_from_vec(b.clone(), (fan_out,))?,
            });
        }
        Ok(Self {
            layers,
            widths: widths.to_vec(),
            activation,
            dropout: 0.0,
            target,
        })
    }

    /// Writes the weights as safetensors: `layers.<i>.weight` (`[in, out]`, f32) and
    /// `layers.<i>.bias`, with the activation, widths and the target scale (`target_mean`,
    /// `target_sd`: predictions are `target_mean + target_sd * output`) in the header metadata.
    pub fn save_model(&self, path: &Path) -> Result<(), TrainError> {
        let host: Vec<(Vec<u8>, Vec<u8>)> = self
            .layers
            .iter()
            .map(|l| (f32_bytes(&l.weight.as_vec()), f32_bytes(&l.bias.as_vec())))
            .collect();
        let mut views = Vec::with_capacity(2 * host.len());
        for (i, (w, b)) in host.iter().enumerate() {
            let (fan_in, fan_out) = (self.widths[i], self.widths[i + 1]);
            views.push((
                format!("layers.{i}.weight"),
                TensorView::new(StDtype::F32, vec![fan_in, fan_out], w).map_err(st_err(path))?,
            ));
            views.push((
                format!("layers.{i}.bias"),
                TensorView::new(StDtype::F32, vec![fan_out], b).map_err(st_err(path))?,
            ));
        }
        let widths = self.widths.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        let metadata = HashMap::from([
            ("activation".to_owned(), self.activation.as_str().to_owned()),
            ("widths".to_owned(), widths),
            // Rust prints the shortest text that parses back to the same f64.
            ("target_mean".to_owned(), self.target.mean.to_string()),
            ("target_sd".to_owned(), self.target.sd.to_string()),
        ]);
        safetensors::serialize_to_file(views, &Some(metadata), path).map_err(st_err(path))
    }

    /// Reads a file written by [`Mlp::save_model`] onto `dev`.
    pub fn load_model(dev: &D, path: &Path) -> Result<Self, TrainError> {
        let bytes = std::fs::read(path).map_err(|e| TrainError::ModelFile {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let bad = |message: String| TrainError::ModelFile {
            path: path.display().to_string(),
            message,
        };
        let (_, header) = SafeTensors::read_metadata(&bytes).map_err(st_err(path))?;
        let meta = header
            .metadata()
            .as_ref()
            .ok_or_else(|| bad("no metadata (activation, widths)".into()))?;
        let activation = meta
            .get("activation")
            .and_then(|a| Activation::parse(a))
            .ok_or_else(|| bad("missing or unknown `activation` metadata".into()))?;
        let widths = meta
            .get("widths")
            .ok_or_else(|| bad("missing `widths` metadata".into()))?
            .split(',')
            .map(str::parse::<usize>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("bad `widths` metadata: {e}")))?;
        // Files written before the target scale was stored hold models that predict targets
        // directly: the identity.
        let number = |key: &str, default: f64| -> Result<f64, TrainError> {
            meta.get(key).map_or(Ok(default), |v| {
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| bad(format!("bad `{key}` metadata: {v:?}")))
            })
        };
        let target = TargetScale {
            mean: number("target_mean", 0.0)?,
            sd: number("target_sd", 1.0)?,
        };
        let tensors = SafeTensors::deserialize(&bytes).map_err(st_err(path))?;
        let read = |name: String| -> Result<Vec<f32>, TrainError> {
            let view = tensors.tensor(&name).map_err(st_err(path))?;
            if view.dtype() != StDtype::F32 {
                return Err(bad(format!("`{name}` is {:?}, expected F32", view.dtype())));
            }
            Ok(view
                .data()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        };
        let host = (0..widths.len().saturating_sub(1))
            .map(|i| Ok((read(format!("layers.{i}.weight"))?, read(format!("layers.{i}.bias"))?)))
            .collect::<Result<Vec<_>, TrainError>>()?;
        Self::from_host(dev, &widths, activation, &host, target)
    }
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn st_err(path: &Path) -> impl Fn(safetensors::SafeTensorError) -> TrainError + '_ {
    move |e| TrainError::ModelFile {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}
