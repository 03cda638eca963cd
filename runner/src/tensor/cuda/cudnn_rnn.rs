//! cuDNN's LSTM and GRU on the training device (model parameters -> packed weights ->
//! `cudnnRNNForward` / backward -> gradients of the same parameters): one training step's loss
//! and gradients, and inference, for [`super::cudnn_engine`] and the self-check.
//!
//! The model's parameters stay the master copy in the CPU engine's layout (so the optimizer,
//! clipping, `check_step`, the artifact and safetensors files see one layout on every device):
//! each step packs them into cuDNN's weight space with one transposing cuBLAS copy per block
//! (`cudnn::layout`), and unpacks the weight-space gradient the same way. The head (the
//! linear layer on the last day's hidden state) and the loss are dfdx's, on the top layer's
//! final hidden state `hy`, whose gradient goes back to cuDNN as `dhy` (the other layers'
//! `dhy`, `dcy` and every `dy` are zero: the loss reads only the last day's top state).
//! Everything is queued on dfdx's stream; nothing here synchronizes but the drop.

use super::context::stream;
use crate::arch::{Arch, ModelKind};
use crate::cudnn::layout::{self, Block, Transpose};
use crate::cudnn::{Api, BackwardIo, CudnnError, DevPtr, DeviceMemory, ForwardIo, RnnPlan, RnnShape};
use crate::kinds::train::HiddenState;
use crate::tensor::model::{Matrix, Model, Vector};
use crate::tensor::TrainError;
use cudarc::cublas::{sys as blas_sys, CudaBlas};
use cudarc::driver::{result, sys, DevicePtrMut};
use dfdx::prelude::*;
use std::ffi::c_void;

impl From<CudnnError> for TrainError {
    fn from(e: CudnnError) -> Self {
        TrainError::Device(format!("cudnn: {e}"))
    }
}

/// Plan buffers from the driver (`cuMemAlloc`, freed after the drop's synchronization).
pub struct DriverMemory;

impl DeviceMemory for DriverMemory {
    fn alloc(&mut self, bytes: usize) -> Result<DevPtr, CudnnError> {
        // SAFETY: plain allocation; cuDNN writes it before reading it.
        unsafe { result::malloc_sync(bytes) }.map(|p| p as DevPtr).map_err(|e| {
            CudnnError(format!(
                "cuMemAlloc of {bytes} bytes: {}",
                crate::cuda_raw::describe(&e)
            ))
        })
    }

    fn upload_i32(&mut self, dst: DevPtr, values: &[i32]) -> Result<(), CudnnError> {
        // SAFETY: `dst` was allocated for `values` by `alloc`.
        unsafe { result::memcpy_htod_sync(dst as sys::CUdeviceptr, values) }
            .map_err(|e| CudnnError(format!("cuMemcpyHtoD: {}", crate::cuda_raw::describe(&e))))
    }

    fn free(&mut self, ptr: DevPtr) {
        // SAFETY: allocated by `alloc`, freed once, after the owner synchronized.
        let _ = unsafe { result::free_sync(ptr as sys::CUdeviceptr) };
    }
}

/// One forward pass's buffers, kept for its backward pass.
pub struct Pass {
    rows: usize,
    y: Vector<Cuda>,
    hx: Vector<Cuda>,
    cx: Option<Vector<Cuda>>,
    hy: Vector<Cuda>,
    /// The top layer's final hidden state, `(rows, hidden)`: the head's input.
    pub top: Matrix<Cuda>,
}

/// cuDNN's network for one model's shape, with a plan per batch shape.
pub struct CudnnRnn {
    api: &'static Api,
    handle: *mut c_void,
    blas: CudaBlas,
    dev: Cuda,
    arch: Arch,
    dropout: f32,
    seed: u64,
    hidden_state: HiddenState,
    plans: Vec<RnnPlan<'static, DriverMemory>>,
    blocks: Vec<Block>,
    packed: Option<(Vector<Cuda>, Vector<Cuda>)>,
    /// Zeroed initial states kept per batch shape (`hidden_state = "reuse"`).
    reused: Vec<(usize, Vector<Cuda>, Option<Vector<Cuda>>)>,
}

impl CudnnRnn {
    /// cuDNN (loaded on first use), a handle and a cuBLAS handle on dfdx's stream.
    pub fn new(
        dev: &Cuda,
        arch: &Arch,
        dropout: f64,
        seed: u64,
        hidden_state: HiddenState,
    ) -> Result<Self, TrainError> {
        if !arch.kind.is_recurrent() || arch.hidden.is_empty() || arch.hidden.iter().any(|h| *h != arch.hidden[0]) {
            return Err(TrainError::Internal(format!(
                "cuDNN's RNN takes an LSTM or GRU with one hidden width, got a {} of {:?}",
                arch.kind.as_str(),
                arch.hidden
            )));
        }
        let api = Api::get()?;
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: an out-pointer to a local; the handle is destroyed in `Drop`.
        api.check("cudnnCreate", unsafe { (api.cudnnCreate)(&mut handle) })?;
        let blas = CudaBlas::new(dev.cudarc_device().clone());
        let net = CudnnRnn {
            api,
            handle,
            blas: blas.map_err(|e| TrainError::Device(format!("cublas: {e:?}")))?,
            dev: dev.clone(),
            arch: arch.clone(),
            dropout: dropout as f32,
            seed,
            hidden_state,
            plans: Vec::new(),
            blocks: Vec::new(),
            packed: None,
            reused: Vec::new(),
        };
        // SAFETY: the handle is live; dfdx's stream outlives the network (it is the device's).
        api.check("cudnnSetStream", unsafe {
            (api.cudnnSetStream)(net.handle, stream(dev).cast())
        })?;
        Ok(net)
    }

    fn shape(&self, rows: usize, train: bool) -> RnnShape {
        RnnShape {
            kind: self.arch.kind,
            input: self.arch.n_features,
            hidden: self.arch.hidden[0],
            layers: self.arch.hidden.len(),
            batch: rows,
            seq_len: self.arch.seq_len,
            dropout: self.dropout,
            train,
        }
    }

    /// Makes the plan for batches of `rows` now (descriptors, workspace and reserve, and the
    /// weight space the first time), so that the first timed step does not pay for it; a
    /// batch of another size still gets its plan on first use.
    pub fn prepare(&mut self, rows: usize, train: bool) -> Result<(), TrainError> {
        self.plan(rows, train).map(|_| ())
    }

    /// The plan for a batch of `rows` (made on first use, with the weight space and its
    /// layout the first time any plan is made).
    fn plan(&mut self, rows: usize, train: bool) -> Result<usize, TrainError> {
        let shape = self.shape(rows, train);
        if let Some(at) = self.plans.iter().position(|p| p.shape == shape) {
            return Ok(at);
        }
        // SAFETY: the handle is live and bound to dfdx's stream; `DriverMemory` allocates on
        // the current context, the device's.
        let plan = unsafe { RnnPlan::new(self.api, self.handle, shape, DriverMemory, self.seed) }?;
        if self.packed.is_none() {
            let len = plan.weight_bytes / 4;
            let weights: Vector<Cuda> = self.dev.try_zeros_like(&(len,))?;
            let grads: Vector<Cuda> = self.dev.try_zeros_like(&(len,))?;
            let base = weights.cu_device_ptr() as *const c_void;
            // SAFETY: the plan's descriptor is set; `base` is the weight space's address.
            self.blocks = unsafe {
                layout::query(
                    self.api,
                    self.handle,
                    plan.rnn,
                    self.arch.kind,
                    shape.layers,
                    plan.weight_bytes,
                    base,
                )
            }?;
            self.packed = Some((weights, grads));
        }
        self.plans.push(plan);
        Ok(self.plans.len() - 1)
    }

    /// One `geam` per block: `C = A^T` from `src` into `dst` (device addresses of f32 buffers).
    fn transpose(&self, t: Transpose, src: sys::CUdeviceptr, dst: sys::CUdeviceptr) -> Result<(), TrainError> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let dim = |v: usize| i32::try_from(v).map_err(|_| TrainError::Shape(format!("{v} is too large for cuBLAS")));
        // SAFETY: `src` and `dst` hold the blocks `t` describes (the layout was checked against
        // the weight space and the parameters' shapes); in-place form (`B = C`, `ldb = ldc`,
        // no transpose of B) with beta 0, so B is not read.
        let status = unsafe {
            let a = (src as *const f32).add(t.src);
            let c = (dst as *mut f32).add(t.dst);
            blas_sys::cublasSgeam(
                *self.blas.handle(),
                blas_sys::cublasOperation_t::CUBLAS_OP_T,
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                dim(t.m)?,
                dim(t.n)?,
                &alpha,
                a,
                dim(t.lda)?,
                &beta,
                c,
                dim(t.ldc)?,
                c,
                dim(t.ldc)?,
            )
        };
        if status != blas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(TrainError::Device(format!("cublasSgeam returned {status:?}")));
        }
        Ok(())
    }

    /// The model's recurrent parameters into the weight space.
    fn pack(&mut self, model: &Model<Cuda>) -> Result<(), TrainError> {
        let (weights, _) = self
            .packed
            .as_mut()
            .ok_or_else(|| TrainError::Internal("no weight space".into()))?;
        let dst = weights.cu_device_ptr_mut();
        for b in &self.blocks {
            self.transpose(b.packing(), model.params[b.param].cu_device_ptr(), dst)?;
        }
        Ok(())
    }

    /// The zeroed initial states `[layers, rows, hidden]`, `h` and (for an LSTM) `c`.
    /// In training, `hidden_state = "per_batch"` does what the source's baseline does every
    /// batch, `torch.zeros(...).to(device)`: zeros made on the host and copied to the device,
    /// one copy per state; predictions get new zeroed states on the device, as `nn.LSTM`
    /// called without a state does. `"reuse"` keeps one pair per batch shape on the device and
    /// zeroes it in place.
    fn zero_state(&mut self, rows: usize, train: bool) -> Result<(Vector<Cuda>, Option<Vector<Cuda>>), TrainError> {
        let len = self.shape(rows, true).state_len();
        let lstm = self.arch.kind == ModelKind::Lstm;
        if self.hidden_state == HiddenState::PerBatch && !train {
            let cx = if lstm {
                Some(self.dev.try_zeros_like(&(len,))?)
            } else {
                None
            };
            return Ok((self.dev.try_zeros_like(&(len,))?, cx));
        }
        if self.hidden_state == HiddenState::PerBatch {
            let from_host = |dev: &Cuda| dev.try_tensor_from_vec(vec![0.0f32; len], (len,));
            let cx = if lstm { Some(from_host(&self.dev)?) } else { None };
            return Ok((from_host(&self.dev)?, cx));
        }
        let at = match self.reused.iter().position(|(r, _, _)| *r == rows) {
            Some(at) => {
                let (_, h, c) = &mut self.reused[at];
                h.try_fill_with_zeros()?;
                if let Some(c) = c {
                    c.try_fill_with_zeros()?;
                }
                at
            }
            None => {
                let c = if lstm {
                    Some(self.dev.try_zeros_like(&(len,))?)
                } else {
                    None
                };
                self.reused.push((rows, self.dev.try_zeros_like(&(len,))?, c));
                self.reused.len() - 1
            }
        };
        let (_, h, c) = &self.reused[at];
        Ok((h.clone(), c.clone()))
    }

    // Long because: the buffers of one forward pass, the call, and the top state's copy, in
    // the order the stream runs them.
    /// The forward pass over `x` (`(rows, seq_len * n_features)`, day-major rows as the batches
    /// carry them: cuDNN's batch-major layout).
    pub fn forward(&mut self, model: &Model<Cuda>, x: &Matrix<Cuda>, train: bool) -> Result<Pass, TrainError> {
        let rows = x.shape().0;
        let at = self.plan(rows, train)?;
        self.pack(model)?;
        let s = self.plans[at].shape;
        let (hx, cx) = self.zero_state(rows, train)?;
        // SAFETY: written by cuDNN before it is read.
        let (mut y, mut hy, mut cy): (Vector<Cuda>, Vector<Cuda>, Vector<Cuda>) = unsafe {
            (
                self.dev.try_alloc_uninit((s.y_len(),))?,
                self.dev.try_alloc_uninit((s.state_len(),))?,
                self.dev.try_alloc_uninit((s.state_len(),))?,
            )
        };
        let weights = self.packed.as_ref().map(|(w, _)| w.cu_device_ptr()).unwrap_or(0);
        let ptr = |p: sys::CUdeviceptr| p as *mut c_void;
        let io = ForwardIo {
            x: ptr(x.cu_device_ptr()),
            y: ptr(y.cu_device_ptr_mut()),
            hx: ptr(hx.cu_device_ptr()),
            cx: cx.as_ref().map_or(std::ptr::null(), |c| ptr(c.cu_device_ptr())),
            hy: ptr(hy.cu_device_ptr_mut()),
            cy: if cx.is_some() {
                ptr(cy.cu_device_ptr_mut())
            } else {
                std::ptr::null_mut()
            },
            weights: ptr(weights),
        };
        // SAFETY: every buffer has the plan's shape and lives until the pass is done (the
        // tensors are stream-ordered on the handle's stream).
        unsafe { self.plans[at].forward(&io) }?;
        let h = s.hidden;
        // SAFETY: written by the copy below before it is read.
        let mut top: Matrix<Cuda> = unsafe { self.dev.try_alloc_uninit((rows, h))? };
        let offset = 4 * (s.layers - 1) * rows * h;
        // SAFETY: both hold `rows * h` floats from these addresses; queued on dfdx's stream.
        unsafe {
            result::memcpy_dtod_async(
                top.cu_device_ptr_mut(),
                hy.cu_device_ptr() + offset as u64,
                4 * rows * h,
                stream(&self.dev),
            )
        }
        .map_err(|e| TrainError::Device(format!("cuMemcpyDtoDAsync: {}", crate::cuda_raw::describe(&e))))?;
        Ok(Pass {
            rows,
            y,
            hx,
            cx,
            hy,
            top,
        })
    }

    // Long because: the backward pass's buffers, both cuDNN calls and the unpacking of the
    // weight gradient, in stream order.
    /// The backward pass of `pass` given the gradient of the loss with respect to its top
    /// state; the recurrent parameters' gradients are written into `grads` (allocated there as
    /// needed).
    pub fn backward(
        &mut self,
        model: &Model<Cuda>,
        x: &Matrix<Cuda>,
        pass: &Pass,
        d_top: &Matrix<Cuda>,
        grads: &mut Gradients<f32, Cuda>,
    ) -> Result<(), TrainError> {
        let at = self.plan(pass.rows, true)?;
        let s = self.plans[at].shape;
        let mut dhy: Vector<Cuda> = self.dev.try_zeros_like(&(s.state_len(),))?;
        let offset = 4 * (s.layers - 1) * s.batch * s.hidden;
        // SAFETY: both hold `rows * hidden` floats from these addresses; queued on the stream.
        unsafe {
            result::memcpy_dtod_async(
                dhy.cu_device_ptr_mut() + offset as u64,
                d_top.cu_device_ptr(),
                4 * s.batch * s.hidden,
                stream(&self.dev),
            )
        }
        .map_err(|e| TrainError::Device(format!("cuMemcpyDtoDAsync: {}", crate::cuda_raw::describe(&e))))?;
        let dy: Vector<Cuda> = self.dev.try_zeros_like(&(s.y_len(),))?;
        let dcy: Option<Vector<Cuda>> = match pass.cx {
            Some(_) => Some(self.dev.try_zeros_like(&(s.state_len(),))?),
            None => None,
        };
        // SAFETY: written by cuDNN; never read here.
        let mut dx: Vector<Cuda> = unsafe { self.dev.try_alloc_uninit((s.x_len(),))? };
        let (weights, dweights) = self
            .packed
            .as_mut()
            .ok_or_else(|| TrainError::Internal("no weight space".into()))?;
        dweights.try_fill_with_zeros()?;
        let ptr = |p: sys::CUdeviceptr| p as *mut c_void;
        let io = ForwardIo {
            x: ptr(x.cu_device_ptr()),
            y: ptr(pass.y.cu_device_ptr()),
            hx: ptr(pass.hx.cu_device_ptr()),
            cx: pass.cx.as_ref().map_or(std::ptr::null(), |c| ptr(c.cu_device_ptr())),
            hy: ptr(pass.hy.cu_device_ptr()),
            cy: std::ptr::null_mut(),
            weights: ptr(weights.cu_device_ptr()),
        };
        let back = BackwardIo {
            dy: ptr(dy.cu_device_ptr()),
            dx: ptr(dx.cu_device_ptr_mut()),
            dhy: ptr(dhy.cu_device_ptr()),
            dcy: dcy.as_ref().map_or(std::ptr::null(), |c| ptr(c.cu_device_ptr())),
            dhx: std::ptr::null_mut(),
            dcx: std::ptr::null_mut(),
            dweights: ptr(dweights.cu_device_ptr_mut()),
        };
        // SAFETY: the buffers of the training forward `pass` and of its gradients, each of the
        // plan's shape, alive until the stream has run the calls.
        unsafe { self.plans[at].backward(&io, &back) }?;
        let dw = dweights.cu_device_ptr();
        for b in &self.blocks {
            let g = grads.get_or_alloc_mut(&model.params[b.param])?;
            let dst = *g.device_ptr_mut();
            self.transpose(b.unpacking(), dw, dst)?;
        }
        Ok(())
    }
}

impl Drop for CudnnRnn {
    fn drop(&mut self) {
        // The plans' buffers and the handle go only once the stream has run every call.
        if let Err(e) = crate::cuda_raw::ctx_sync() {
            tracing::warn!("cannot wait for cuDNN's work before freeing its buffers: {e}");
        }
        self.plans.clear();
        // SAFETY: created in `new`, destroyed once, after its plans.
        unsafe { (self.api.cudnnDestroy)(self.handle) };
    }
}
