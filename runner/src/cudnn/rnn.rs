//! One recurrent network's cuDNN setup for one batch shape (shape -> descriptors, sizes and
//! buffers -> forward and backward calls), independent of how device memory is allocated: the
//! CUDA path allocates through the driver, the tests through a recorder.
//!
//! What is asked of cuDNN, and why: LSTM or GRU cells, unidirectional, linear input, one input
//! and one recurrent bias per gate (PyTorch's cells, and the CPU engine's); f32 data and f32
//! math restricted to FMA kernels (`CUDNN_FMA_MATH`: no tensor cores, so no TF32); batch-major
//! unpacked sequences of one length, the layout the batches already have (`[rows, days,
//! features]`), which needs padded I/O enabled. Dropout applies between layers, as in PyTorch.

use super::api::{self, Api, CudnnError, Desc};
use crate::arch::ModelKind;
use std::ffi::c_void;
use std::ptr;

/// A device address, as the CUDA driver hands them out.
pub type DevPtr = *mut c_void;

/// Where the plan's buffers come from (workspace, reserve space, dropout states, the device
/// copy of the sequence lengths).
pub trait DeviceMemory {
    /// `bytes` of device memory, uninitialised.
    fn alloc(&mut self, bytes: usize) -> Result<DevPtr, CudnnError>;
    /// Copies `values` to `dst` (host to device, complete on return).
    fn upload_i32(&mut self, dst: DevPtr, values: &[i32]) -> Result<(), CudnnError>;
    /// Frees what `alloc` returned.
    fn free(&mut self, ptr: DevPtr);
}

/// The network and the batch shape a plan is for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RnnShape {
    pub kind: ModelKind,
    /// Features per day (the first layer's input width).
    pub input: usize,
    /// Hidden width, the same in every layer (cuDNN's stacked RNN has one).
    pub hidden: usize,
    pub layers: usize,
    /// Rows (windows) per batch.
    pub batch: usize,
    /// Days per window.
    pub seq_len: usize,
    /// Between layers, when training.
    pub dropout: f32,
    /// Training (reserve space kept for the backward pass) or inference.
    pub train: bool,
}

impl RnnShape {
    /// cuDNN's cell mode for the model kind; an error for a model that is not recurrent.
    pub fn mode(&self) -> Result<i32, CudnnError> {
        match self.kind {
            ModelKind::Lstm => Ok(api::MODE_LSTM),
            ModelKind::Gru => Ok(api::MODE_GRU),
            ModelKind::Mlp => Err(CudnnError("cuDNN's RNN runs LSTMs and GRUs, not an MLP".into())),
        }
    }

    /// Elements of one hidden (or cell) state for the batch: `[layers, batch, hidden]`.
    pub fn state_len(&self) -> usize {
        self.layers * self.batch * self.hidden
    }

    /// Elements of the input `[batch, seq_len, input]` and output `[batch, seq_len, hidden]`.
    pub fn x_len(&self) -> usize {
        self.batch * self.seq_len * self.input
    }

    pub fn y_len(&self) -> usize {
        self.batch * self.seq_len * self.hidden
    }

    fn dims(&self) -> Result<[i32; 6], CudnnError> {
        let to_i32 = |v: usize, what: &str| {
            i32::try_from(v)
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| CudnnError(format!("cuDNN needs a {what} between 1 and 2^31, got {v}")))
        };
        Ok([
            to_i32(self.input, "input width")?,
            to_i32(self.hidden, "hidden width")?,
            to_i32(self.layers, "layer count")?,
            to_i32(self.batch, "batch")?,
            to_i32(self.seq_len, "sequence length")?,
            to_i32(self.state_len(), "state size")?,
        ])
    }
}

/// The descriptors and buffers of one [`RnnShape`]; everything is destroyed and freed on drop.
pub struct RnnPlan<'a, M: DeviceMemory> {
    pub api: &'a Api,
    pub handle: Desc,
    pub shape: RnnShape,
    pub mem: M,
    pub rnn: Desc,
    dropout: Desc,
    pub x_desc: Desc,
    pub y_desc: Desc,
    /// `[layers, batch, hidden]`, for the hidden and (LSTM) cell states.
    pub h_desc: Desc,
    pub weight_bytes: usize,
    pub work_bytes: usize,
    pub reserve_bytes: usize,
    pub work: DevPtr,
    pub reserve: DevPtr,
    dropout_states: DevPtr,
    /// `[batch]` sequence lengths on the device, as the v8 calls take them.
    pub seq_lengths: DevPtr,
}

impl<'a, M: DeviceMemory> RnnPlan<'a, M> {
    // Long because: cuDNN's descriptors are created, set and sized in the order its API needs,
    // each call with its own error, into the one plan whose drop frees whatever was made.
    /// Creates and sets every descriptor, asks for the weight, workspace and reserve sizes and
    /// allocates the last two. `seed` seeds the dropout masks.
    ///
    /// # Safety
    /// `handle` is a live cuDNN handle of `api`'s library (`cudnnCreate`), bound to the
    /// device `mem` allocates on, and outlives the plan.
    pub unsafe fn new(api: &'a Api, handle: Desc, shape: RnnShape, mem: M, seed: u64) -> Result<Self, CudnnError> {
        let mode = shape.mode()?;
        let [input, hidden, layers, batch, seq_len, _] = shape.dims()?;
        let mut plan = RnnPlan {
            api,
            handle,
            shape,
            mem,
            rnn: ptr::null_mut(),
            dropout: ptr::null_mut(),
            x_desc: ptr::null_mut(),
            y_desc: ptr::null_mut(),
            h_desc: ptr::null_mut(),
            weight_bytes: 0,
            work_bytes: 0,
            reserve_bytes: 0,
            work: ptr::null_mut(),
            reserve: ptr::null_mut(),
            dropout_states: ptr::null_mut(),
            seq_lengths: ptr::null_mut(),
        };
        // From here on, whatever was made is undone by `Drop` if a later call fails.
        plan.set_dropout(seed)?;
        let c = |call: &str, status| api.check(call, status);
        // SAFETY: every call below gets out-pointers to live fields and descriptors set before
        // use; the arrays passed hold as many elements as their count says.
        unsafe {
            c(
                "cudnnCreateRNNDescriptor",
                (api.cudnnCreateRNNDescriptor)(&mut plan.rnn),
            )?;
            c(
                "cudnnSetRNNDescriptor_v8",
                (api.cudnnSetRNNDescriptor_v8)(
                    plan.rnn,
                    api::ALGO_STANDARD,
                    mode,
                    api::DOUBLE_BIAS,
                    api::UNIDIRECTIONAL,
                    api::LINEAR_INPUT,
                    api::DATA_FLOAT,
                    api::DATA_FLOAT,
                    api::FMA_MATH,
                    input,
                    hidden,
                    hidden,
                    layers,
                    plan.dropout,
                    api::PADDED_IO_ENABLED,
                ),
            )?;
            let lengths = vec![seq_len; shape.batch];
            let mut fill = 0.0f32;
            for (desc, width) in [(&mut plan.x_desc, input), (&mut plan.y_desc, hidden)] {
                c("cudnnCreateRNNDataDescriptor", (api.cudnnCreateRNNDataDescriptor)(desc))?;
                c(
                    "cudnnSetRNNDataDescriptor",
                    (api.cudnnSetRNNDataDescriptor)(
                        *desc,
                        api::DATA_FLOAT,
                        api::BATCH_MAJOR_UNPACKED,
                        seq_len,
                        batch,
                        width,
                        lengths.as_ptr(),
                        (&mut fill as *mut f32).cast(),
                    ),
                )?;
            }
            c(
                "cudnnCreateTensorDescriptor",
                (api.cudnnCreateTensorDescriptor)(&mut plan.h_desc),
            )?;
            let (dims, strides) = ([layers, batch, hidden], [batch * hidden, hidden, 1]);
            c(
                "cudnnSetTensorNdDescriptor",
                (api.cudnnSetTensorNdDescriptor)(plan.h_desc, api::DATA_FLOAT, 3, dims.as_ptr(), strides.as_ptr()),
            )?;
            c(
                "cudnnGetRNNWeightSpaceSize",
                (api.cudnnGetRNNWeightSpaceSize)(handle, plan.rnn, &mut plan.weight_bytes),
            )?;
            let fwd = if shape.train {
                api::FWD_TRAINING
            } else {
                api::FWD_INFERENCE
            };
            c(
                "cudnnGetRNNTempSpaceSizes",
                (api.cudnnGetRNNTempSpaceSizes)(
                    handle,
                    plan.rnn,
                    fwd,
                    plan.x_desc,
                    &mut plan.work_bytes,
                    &mut plan.reserve_bytes,
                ),
            )?;
        }
        plan.work = plan.mem.alloc(plan.work_bytes.max(1))?;
        if plan.reserve_bytes > 0 {
            plan.reserve = plan.mem.alloc(plan.reserve_bytes)?;
        }
        plan.seq_lengths = plan.mem.alloc(4 * shape.batch)?;
        plan.mem.upload_i32(plan.seq_lengths, &lengths_of(&shape))?;
        Ok(plan)
    }

    /// The dropout descriptor: the model's probability and its own RNG states when training
    /// with dropout between layers, else no dropout (and no states).
    fn set_dropout(&mut self, seed: u64) -> Result<(), CudnnError> {
        let api = self.api;
        let p = if self.shape.train && self.shape.layers > 1 {
            self.shape.dropout
        } else {
            0.0
        };
        let mut state_bytes = 0usize;
        // SAFETY: out-pointers to live fields; the states buffer holds `state_bytes`.
        unsafe {
            api.check(
                "cudnnCreateDropoutDescriptor",
                (api.cudnnCreateDropoutDescriptor)(&mut self.dropout),
            )?;
            if p > 0.0 {
                api.check(
                    "cudnnDropoutGetStatesSize",
                    (api.cudnnDropoutGetStatesSize)(self.handle, &mut state_bytes),
                )?;
                self.dropout_states = self.mem.alloc(state_bytes)?;
            }
            api.check(
                "cudnnSetDropoutDescriptor",
                (api.cudnnSetDropoutDescriptor)(self.dropout, self.handle, p, self.dropout_states, state_bytes, seed),
            )
        }
    }

    /// The forward pass over `x` (`[batch, seq_len, input]`) into `y` (`[batch, seq_len,
    /// hidden]`) from the initial states `hx`/`cx` (`[layers, batch, hidden]`; `cx` ignored by
    /// a GRU), writing the final states to `hy`/`cy`.
    ///
    /// # Safety
    /// Every pointer in `io` is a device buffer of the plan's shape (the weights of
    /// `weight_bytes`), live until the work queued on the handle's stream is done.
    pub unsafe fn forward(&mut self, io: &ForwardIo) -> Result<(), CudnnError> {
        let (api, s) = (self.api, &self.shape);
        let fwd = if s.train { api::FWD_TRAINING } else { api::FWD_INFERENCE };
        // SAFETY: every pointer is a device buffer of the plan's shape, owned by the caller or
        // the plan; the descriptors are set.
        let status = unsafe {
            (api.cudnnRNNForward)(
                self.handle,
                self.rnn,
                fwd,
                self.seq_lengths.cast_const().cast(),
                self.x_desc,
                io.x,
                self.y_desc,
                io.y,
                self.h_desc,
                io.hx,
                io.hy,
                self.h_desc,
                io.cx,
                io.cy,
                self.weight_bytes,
                io.weights,
                self.work_bytes,
                self.work,
                self.reserve_bytes,
                self.reserve,
            )
        };
        api.check("cudnnRNNForward", status)
    }

    /// The backward pass of the last training forward: input and initial-state gradients
    /// (`cudnnRNNBackwardData_v8`), then the weight gradients added into `dweights`
    /// (`cudnnRNNBackwardWeights_v8`), which the caller zeroes first.
    ///
    /// # Safety
    /// As [`RnnPlan::forward`], for `io` (the last forward's buffers) and `grads`.
    pub unsafe fn backward(&mut self, io: &ForwardIo, grads: &BackwardIo) -> Result<(), CudnnError> {
        let api = self.api;
        if !self.shape.train {
            return Err(CudnnError("a backward pass through an inference plan".into()));
        }
        let lengths = self.seq_lengths.cast_const().cast::<i32>();
        // SAFETY: as in `forward`; the reserve space holds the last training forward's state.
        unsafe {
            api.check(
                "cudnnRNNBackwardData_v8",
                (api.cudnnRNNBackwardData_v8)(
                    self.handle,
                    self.rnn,
                    lengths,
                    self.y_desc,
                    io.y,
                    grads.dy,
                    self.x_desc,
                    grads.dx,
                    self.h_desc,
                    io.hx,
                    grads.dhy,
                    grads.dhx,
                    self.h_desc,
                    io.cx,
                    grads.dcy,
                    grads.dcx,
                    self.weight_bytes,
                    io.weights,
                    self.work_bytes,
                    self.work,
                    self.reserve_bytes,
                    self.reserve,
                ),
            )?;
            api.check(
                "cudnnRNNBackwardWeights_v8",
                (api.cudnnRNNBackwardWeights_v8)(
                    self.handle,
                    self.rnn,
                    api::WGRAD_ADD,
                    lengths,
                    self.x_desc,
                    io.x,
                    self.h_desc,
                    io.hx,
                    self.y_desc,
                    io.y,
                    self.weight_bytes,
                    grads.dweights,
                    self.work_bytes,
                    self.work,
                    self.reserve_bytes,
                    self.reserve,
                ),
            )
        }
    }
}

fn lengths_of(shape: &RnnShape) -> Vec<i32> {
    vec![i32::try_from(shape.seq_len).unwrap_or(i32::MAX); shape.batch]
}

/// The device buffers of one forward pass.
pub struct ForwardIo {
    pub x: *const c_void,
    pub y: *mut c_void,
    pub hx: *const c_void,
    pub cx: *const c_void,
    pub hy: *mut c_void,
    pub cy: *mut c_void,
    pub weights: *const c_void,
}

/// The device buffers of one backward pass.
pub struct BackwardIo {
    pub dy: *const c_void,
    pub dx: *mut c_void,
    pub dhy: *const c_void,
    pub dcy: *const c_void,
    pub dhx: *mut c_void,
    pub dcx: *mut c_void,
    pub dweights: *mut c_void,
}

impl<M: DeviceMemory> Drop for RnnPlan<'_, M> {
    fn drop(&mut self) {
        let api = self.api;
        // SAFETY: each descriptor was created by this plan (or is null and skipped) and is
        // destroyed once; the buffers were allocated by `mem` and are freed once.
        unsafe {
            for desc in [self.x_desc, self.y_desc].into_iter().filter(|d| !d.is_null()) {
                (api.cudnnDestroyRNNDataDescriptor)(desc);
            }
            if !self.h_desc.is_null() {
                (api.cudnnDestroyTensorDescriptor)(self.h_desc);
            }
            if !self.rnn.is_null() {
                (api.cudnnDestroyRNNDescriptor)(self.rnn);
            }
            if !self.dropout.is_null() {
                (api.cudnnDestroyDropoutDescriptor)(self.dropout);
            }
        }
        for buf in [self.work, self.reserve, self.dropout_states, self.seq_lengths] {
            if !buf.is_null() {
                self.mem.free(buf);
            }
        }
    }
}
