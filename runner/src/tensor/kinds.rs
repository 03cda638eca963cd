//! What a model computes according to its kind (model -> `mlp` / `rnn`): its initial
//! parameters, its forward pass and a batch's loss with its gradients, each handed to the
//! kind's own code. The model's parameter list, its views and its files are `model`'s.

use super::model::{InitialState, LossAndGrads, Matrix, Model};
use super::{mlp, rnn, TrainError};
use crate::arch::{Arch, ModelKind};
use crate::artifact::TargetScale;
use dfdx::prelude::*;

impl<D: Device<f32>> Model<D>
where
    TrainError: From<D::Err>,
{
    /// A freshly initialized model. The parameters are drawn on the host from `seed` (see
    /// [`mlp::init`] and [`rnn::init`]), so CPU and CUDA start from bit-identical values. The
    /// target scale starts as the identity; training sets it.
    pub fn new(dev: &D, arch: &Arch, dropout: f64, seed: u64) -> Result<Self, TrainError> {
        let host = match arch.kind {
            ModelKind::Mlp => mlp::init(arch, seed)?,
            ModelKind::Lstm | ModelKind::Gru => rnn::init(arch, seed)?,
        };
        let mut model = Self::from_host(dev, arch, &host, TargetScale::IDENTITY)?;
        model.dropout = dropout;
        Ok(model)
    }

    /// Forward pass over a batch `(rows, seq_len * n_features)` (one flattened window per row).
    /// With `T = OwnedTape` the result carries the tape for `backward()`; the parameters are
    /// retaped so their gradients land in it. `train` enables dropout.
    pub fn forward<T: Tape<f32, D> + Merge<T>>(
        &self,
        input: Matrix<D, T>,
        train: bool,
    ) -> Result<Matrix<D, T>, TrainError> {
        self.forward_with(input, train, &mut InitialState::PerBatch)
    }

    /// [`Model::forward`] with a recurrent model's initial state from `state`.
    pub fn forward_with<T: Tape<f32, D> + Merge<T>>(
        &self,
        input: Matrix<D, T>,
        train: bool,
        state: &mut InitialState<D>,
    ) -> Result<Matrix<D, T>, TrainError> {
        match self.arch.kind {
            ModelKind::Mlp => mlp::forward(self, input, train),
            ModelKind::Lstm | ModelKind::Gru => rnn::forward(self, input, train, state),
        }
    }

    /// Mean squared error of one batch and the gradients of every parameter (training mode).
    pub fn loss_and_grads(&self, input: Matrix<D>, target: Matrix<D>) -> Result<LossAndGrads<D>, TrainError> {
        self.loss_and_grads_with(input, target, &mut InitialState::PerBatch)
    }

    /// [`Model::loss_and_grads`] with a recurrent model's initial state from `state`.
    pub fn loss_and_grads_with(
        &self,
        input: Matrix<D>,
        target: Matrix<D>,
        state: &mut InitialState<D>,
    ) -> Result<LossAndGrads<D>, TrainError> {
        match self.arch.kind {
            ModelKind::Mlp => mlp::loss_and_grads(self, input, target),
            ModelKind::Lstm | ModelKind::Gru => {
                let pred = self.forward_with(input.traced(Gradients::leaky()), true, state)?;
                let loss = pred.try_sub(target)?.try_square()?.try_mean()?;
                let loss_value = loss.retaped::<NoneTape>();
                Ok((loss_value, loss.try_backward()?))
            }
        }
    }
}
