//! The model every part of training and validation works on, whatever its kind (train builds
//! it, the optimizer updates it, validate rebuilds it from a `TrainedModel`, files keep it): an
//! [`Arch`] and its parameter tensors on a dfdx device.
//!
//! Every parameter is a flat `(usize,)` tensor in [`Arch::params`] order, so the optimizer,
//! gradient clipping, the CPU engines, the artifact and safetensors files walk one list and
//! never need to know the kind. The autodiff forward passes view a matrix parameter as
//! `(rows, cols)` with a reshape, which in dfdx keeps the tensor's id and storage: no copy, and
//! its gradient lands in the flat parameter's slot. What a model computes according to its
//! kind (initial values, forward pass, loss) is in `kinds`, which calls `mlp` and `rnn`.

use super::TrainError;
use crate::arch::{Activation, Arch, ModelKind};
use crate::artifact::{TargetScale, TrainedModel, Windows};
use dfdx::prelude::*;
use safetensors::tensor::{Dtype as StDtype, SafeTensors, TensorView};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// A batch of rows: `(rows, width)` on device `D` with tape `T`.
pub type Matrix<D, T = NoneTape> = Tensor<(usize, usize), f32, D, T>;

/// One flat parameter tensor (or its gradient).
pub type Vector<D, T = NoneTape> = Tensor<(usize,), f32, D, T>;

/// A batch's scalar loss (detached from the tape) and the gradients of every parameter.
pub type LossAndGrads<D> = (Tensor<(), f32, D>, Gradients<f32, D>);

/// The output layer's initial weights are Glorot-uniform scaled by this, so a fresh model
/// predicts close to the (standardized) targets' mean instead of noise as large as the
/// targets themselves, which the first epochs would otherwise spend unlearning.
pub const OUTPUT_INIT_SCALE: f64 = 0.01;

/// Where a recurrent model's zero initial state comes from (`hidden_state`): a tensor
/// allocated zeroed for every batch, or buffers allocated once (one per batch shape) and
/// zeroed in place. The values are zero either way.
pub enum InitialState<D: Device<f32>> {
    PerBatch,
    Reuse(Vec<Matrix<D>>),
}

impl<D: Device<f32>> InitialState<D>
where
    TrainError: From<D::Err>,
{
    /// A zero `(rows, width)` state.
    pub fn zeros(&mut self, dev: &D, rows: usize, width: usize) -> Result<Matrix<D>, TrainError> {
        match self {
            InitialState::PerBatch => Ok(dev.try_zeros_like(&(rows, width))?),
            InitialState::Reuse(buffers) => {
                let at = match buffers.iter().position(|b| *b.shape() == (rows, width)) {
                    // The previous batch's uses are gone, so this zeroes the buffer in place.
                    Some(at) => {
                        buffers[at].try_fill_with_zeros()?;
                        at
                    }
                    None => {
                        buffers.push(dev.try_zeros_like(&(rows, width))?);
                        buffers.len() - 1
                    }
                };
                Ok(buffers[at].clone())
            }
        }
    }
}

/// A model of any kind on device `D`.
#[derive(Debug, Clone)]
pub struct Model<D: Device<f32>> {
    pub arch: Arch,
    /// Flat parameter tensors in `arch.params()` order.
    pub params: Vec<Vector<D>>,
    /// Dropout probability (MLP: after each hidden activation; recurrent: between layers),
    /// applied only when training.
    pub dropout: f64,
    /// The network's outputs are standardized targets; this maps them back to target units.
    pub target: TargetScale,
}

impl<D: Device<f32>> Model<D>
where
    TrainError: From<D::Err>,
{
    /// Uploads host parameters (dropout off: a rebuilt model is for inference).
    pub fn from_host(dev: &D, arch: &Arch, host: &[Vec<f32>], target: TargetScale) -> Result<Self, TrainError> {
        let specs = arch.params();
        if specs.len() != host.len() {
            return Err(TrainError::Shape(format!(
                "a {} model of this shape has {} parameter tensors, got {}",
                arch.kind.as_str(),
                specs.len(),
                host.len()
            )));
        }
        let mut params = Vec::with_capacity(host.len());
        for (spec, values) in specs.iter().zip(host) {
            if values.len() != spec.len() {
                return Err(TrainError::Shape(format!(
                    "`{}`: expected {:?} = {} values, got {}",
                    spec.name,
                    spec.shape,
                    spec.len(),
                    values.len()
                )));
            }
            params.push(dev.try_tensor_from_vec(values.clone(), (values.len(),))?);
        }
        Ok(Self {
            arch: arch.clone(),
            params,
            dropout: 0.0,
            target,
        })
    }

    /// Uploads a host model to `dev` (dropout off).
    pub fn from_trained(dev: &D, model: &TrainedModel) -> Result<Self, TrainError> {
        Self::from_host(dev, &model.arch, &model.params, model.target)
    }

    /// Copies the parameters to the host.
    pub fn to_trained(&self, windows: Arc<Windows>) -> TrainedModel {
        TrainedModel {
            arch: self.arch.clone(),
            params: self.params.iter().map(|p| p.as_vec()).collect(),
            target: self.target,
            windows,
        }
    }

    /// Parameter `i` viewed as a `(rows, cols)` matrix on tape `T` (same id and storage).
    pub fn matrix<T: Tape<f32, D>>(&self, i: usize, rows: usize, cols: usize) -> Result<Matrix<D, T>, TrainError> {
        Ok(self.params[i].retaped::<T>().try_reshape_like(&(rows, cols))?)
    }

    /// Parameter `i` on tape `T`.
    pub fn vector<T: Tape<f32, D>>(&self, i: usize) -> Vector<D, T> {
        self.params[i].retaped::<T>()
    }

    /// `z` plus parameter `i`, a bias, added to every row.
    pub fn plus_bias<T: Tape<f32, D> + Merge<T>>(&self, z: Matrix<D, T>, i: usize) -> Result<Matrix<D, T>, TrainError> {
        let shape = *z.shape();
        Ok(z.try_add(self.vector::<T>(i).try_broadcast_like::<_, Axis<0>>(&shape)?)?)
    }

    /// Writes the parameters as safetensors, each under its [`Arch::params`] name and shape
    /// (f32), with the architecture (`kind`, `seq_len`, `n_features`, `hidden`, `outputs`,
    /// `activation`; for the MLP also `widths`) and the target scale (`target_mean`,
    /// `target_sd`: predictions are `target_mean + target_sd * output`) in the header metadata.
    pub fn save_model(&self, path: &Path) -> Result<(), TrainError> {
        let specs = self.arch.params();
        let bytes: Vec<Vec<u8>> = self.params.iter().map(|p| f32_bytes(&p.as_vec())).collect();
        let mut views = Vec::with_capacity(specs.len());
        for (spec, data) in specs.iter().zip(&bytes) {
            views.push((
                spec.name.clone(),
                TensorView::new(StDtype::F32, spec.shape.clone(), data).map_err(st_err(path))?,
            ));
        }
        let list = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        let arch = &self.arch;
        let mut metadata = HashMap::from([
            ("kind".to_owned(), arch.kind.as_str().to_owned()),
            ("activation".to_owned(), arch.activation.as_str().to_owned()),
            ("seq_len".to_owned(), arch.seq_len.to_string()),
            ("n_features".to_owned(), arch.n_features.to_string()),
            ("hidden".to_owned(), list(&arch.hidden)),
            ("outputs".to_owned(), arch.outputs.to_string()),
            // Rust prints the shortest text that parses back to the same f64.
            ("target_mean".to_owned(), self.target.mean.to_string()),
            ("target_sd".to_owned(), self.target.sd.to_string()),
        ]);
        if arch.kind == ModelKind::Mlp {
            metadata.insert("widths".to_owned(), list(&arch.mlp_widths()));
        }
        safetensors::serialize_to_file(views, &Some(metadata), path).map_err(st_err(path))
    }

    /// Reads a file written by [`Model::save_model`] onto `dev`. Files from before model kinds
    /// existed carry only `activation` and `widths`: they are MLPs over `widths[0]` inputs.
    pub fn load_model(dev: &D, path: &Path) -> Result<Self, TrainError> {
        let bytes = std::fs::read(path).map_err(|e| TrainError::ModelFile {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let (_, header) = SafeTensors::read_metadata(&bytes).map_err(st_err(path))?;
        let meta = header.metadata().as_ref().ok_or_else(|| TrainError::ModelFile {
            path: path.display().to_string(),
            message: "no metadata (kind, widths)".into(),
        })?;
        let (arch, target) = arch_from_metadata(meta).map_err(|message| TrainError::ModelFile {
            path: path.display().to_string(),
            message,
        })?;
        let tensors = SafeTensors::deserialize(&bytes).map_err(st_err(path))?;
        let mut host = Vec::new();
        for spec in arch.params() {
            let view = tensors.tensor(&spec.name).map_err(st_err(path))?;
            if view.dtype() != StDtype::F32 || view.shape() != spec.shape.as_slice() {
                return Err(TrainError::ModelFile {
                    path: path.display().to_string(),
                    message: format!(
                        "`{}` is {:?} {:?}, expected F32 {:?}",
                        spec.name,
                        view.dtype(),
                        view.shape(),
                        spec.shape
                    ),
                });
            }
            host.push(
                view.data()
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            );
        }
        Self::from_host(dev, &arch, &host, target)
    }
}

/// Most elements one tensor named in a model file's metadata may declare (a bound on what an
/// untrusted file can make this process allocate before its data is read).
const MAX_META_WIDTH: usize = 1 << 28;

/// The architecture and target scale a model file's metadata describes.
fn arch_from_metadata(meta: &HashMap<String, String>) -> Result<(Arch, TargetScale), String> {
    let list = |key: &str| -> Result<Vec<usize>, String> {
        let text = meta.get(key).ok_or_else(|| format!("missing `{key}` metadata"))?;
        if text.is_empty() {
            return Ok(Vec::new());
        }
        text.split(',')
            .map(|v| match v.parse::<usize>() {
                Ok(n) if n <= MAX_META_WIDTH => Ok(n),
                _ => Err(format!("bad `{key}` metadata: {:?}", crate::metrics::cut(text, 40))),
            })
            .collect()
    };
    let one = |key: &str| -> Result<usize, String> {
        match list(key)?.as_slice() {
            [n] => Ok(*n),
            _ => Err(format!("bad `{key}` metadata: expected one number")),
        }
    };
    let activation = meta
        .get("activation")
        .and_then(|a| Activation::parse(a))
        .ok_or("missing or unknown `activation` metadata")?;
    let arch = match meta.get("kind") {
        None => {
            let widths = list("widths")?;
            if widths.len() < 2 {
                return Err("bad `widths` metadata: an input and an output width are needed".into());
            }
            Arch::mlp(&widths, activation)
        }
        Some(kind) => Arch {
            kind: ModelKind::parse(kind)
                .ok_or_else(|| format!("unknown `kind` metadata {:?}", crate::metrics::cut(kind, 40)))?,
            seq_len: one("seq_len")?,
            n_features: one("n_features")?,
            hidden: list("hidden")?,
            outputs: one("outputs")?,
            activation,
        },
    };
    // Files written before the target scale was stored hold models that predict targets
    // directly: the identity.
    let number = |key: &str, default: f64| -> Result<f64, String> {
        meta.get(key).map_or(Ok(default), |v| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("bad `{key}` metadata: {:?}", crate::metrics::cut(v, 40)))
        })
    };
    let target = TargetScale {
        mean: number("target_mean", 0.0)?,
        sd: number("target_sd", 1.0)?,
    };
    Ok((arch, target))
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
