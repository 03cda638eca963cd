//! The MLP's training step as `tensor::tc::plan` lays it out, executed on CUDA: the plan's
//! products through `cublasGemmEx` and `cublasSgemv`, its passes through the kernels of
//! `tensor/tc/mlp.cu` (PTX compiled at build time and embedded), all on one stream of its own,
//! which a CUDA graph can capture (dfdx's stream is the legacy null stream, which cannot be
//! captured).
//!
//! The master weights are the model's own dfdx tensors (f32, updated in place by the Adam
//! kernel); the gradients, Adam's moments, the activations and the half copies are this
//! engine's buffers. Each step is ordered after the work dfdx queued (the batch's upload) and
//! before what it queues next (the loss reads, evaluation) with an event each way.
//!
//! CUDA graphs: with `cuda_graph` on, the second full-size batch's step is captured (the first
//! runs eagerly, so cuBLAS has chosen its kernels and allocated what it needs), and every later
//! full-size step replays the graph; a partial batch runs eagerly. The loss is copied out of the
//! graph's buffer after the replay, so reads of it happen outside the graph, where and as often
//! as `loss_reads_per_step` asks. A graph is captured again if the weights move (a copy-on-write
//! of the model's tensors), since their addresses are in it.

use super::context::{bind, stream};
use super::tc_device::{blas_call, Blas, Graph, Kernels};
use super::PinnedRing;
use crate::cuda_raw::{call, DeviceBuf, Event, Stream};
use crate::kinds::train::{CudaGraph, TrainParams};
use crate::metrics::Recorder;
use crate::tensor::batches::HostBatch;
use crate::tensor::engine::{autodiff_predict, Allocations, StepEngine, Uploader};
use crate::tensor::model::{Matrix, Model};
use crate::tensor::tc::math::{act_code, AdamArgs, Control};
use crate::tensor::tc::plan::{self, Buf, Elem, GemmEx, Op};
use crate::tensor::TrainError;
use cudarc::cublas::sys as blas;
use cudarc::driver::{result, sys};
use dfdx::prelude::*;
use std::collections::HashMap;
use std::ffi::c_void;

mod probe;

/// Threads per block of every kernel (`MM_THREADS` in `mlp.cu` for the one-block reductions).
const THREADS: u32 = 256;

/// What a step computes besides its shape.
#[derive(Debug, Clone, Copy)]
pub struct StepConfig {
    pub elem: Elem,
    pub activation: i32,
    pub dropout: f32,
    pub seed: u64,
    pub max_norm: f32,
    pub scaled: bool,
    pub adam: AdamArgs,
}

impl StepConfig {
    pub fn of(params: &TrainParams, model: &Model<Cuda>, seed: u64) -> StepConfig {
        let elem = crate::tensor::tc::operands(params.precision);
        StepConfig {
            elem,
            activation: act_code(model.arch.activation),
            dropout: model.dropout as f32,
            seed,
            max_norm: params.grad_clip.map_or(0.0, |c| c as f32),
            scaled: elem == Elem::F16,
            adam: AdamArgs::new(params.lr, params.weight_decay),
        }
    }
}

/// The tensor-core MLP engine (see the module's documentation).
pub struct TcEngine {
    /// Dropped first (after `Drop` synchronized the stream): the graph, then the cuBLAS handle
    /// and the kernels' module it uses, then the buffers; the stream last.
    graph: Option<Graph>,
    blas: Blas,
    kernels: Kernels,
    bufs: HashMap<Buf, DeviceBuf>,
    widths: Vec<usize>,
    cfg: StepConfig,
    /// The rows the buffers hold (the batch size).
    capacity: usize,
    /// The model's parameter addresses, as of the last step.
    params: Vec<sys::CUdeviceptr>,
    halves_ready: bool,
    uploader: PinnedRing,
    batch: Option<(Matrix<Cuda>, Matrix<Cuda>)>,
    /// dfdx's stream -> this stream, and back.
    inbound: Event,
    outbound: Event,
    graphs: bool,
    eager_full_steps: u64,
    captures: u64,
    stream: Stream,
}

impl Drop for TcEngine {
    fn drop(&mut self) {
        // Nothing is freed while the stream may still use it.
        if let Err(e) = self.stream.sync() {
            tracing::warn!("the MLP step's stream did not finish: {e}");
        }
    }
}

impl TcEngine {
    /// The engine for `model` with graphs as `graphs` says (the self-checks choose).
    pub fn with_graphs(
        dev: &Cuda,
        model: &Model<Cuda>,
        params: &TrainParams,
        seed: u64,
        graphs: bool,
    ) -> Result<Self, TrainError> {
        bind(dev)?;
        let widths = model.arch.mlp_widths();
        let cfg = StepConfig::of(params, model, seed);
        let capacity = params.batch_size.max(1);
        let stream = Stream::new()?;
        let kernels = Kernels::load()?;
        let blas = Blas::new(stream.0)?;
        let mut bufs = HashMap::new();
        let mut alloc = |buf: Buf, bytes: usize| -> Result<(), TrainError> {
            bufs.insert(buf, DeviceBuf::filled(bytes.max(4), 0)?);
            Ok(())
        };
        let half = cfg.elem != Elem::F32;
        for (p, n) in plan::param_sizes(&widths).into_iter().enumerate() {
            alloc(Buf::Grad(p), 4 * n)?;
            alloc(Buf::Moment1(p), 4 * n)?;
            alloc(Buf::Moment2(p), 4 * n)?;
            if half && p % 2 == 0 {
                alloc(Buf::ParamHalf(p), 2 * n)?;
            }
        }
        for l in 0..widths.len() - 1 {
            let n = capacity * widths[l + 1];
            alloc(Buf::Z(l), 4 * n)?;
            alloc(Buf::D(l), 4 * n)?;
            alloc(Buf::H(l), cfg.elem.bytes() * n)?;
            if half {
                alloc(Buf::DHalf(l), 2 * n)?;
            }
        }
        alloc(Buf::X, 4 * capacity * widths[0])?;
        alloc(Buf::Y, 4 * capacity * widths[widths.len() - 1])?;
        if half {
            alloc(Buf::XHalf, 2 * capacity * widths[0])?;
        }
        alloc(Buf::Loss, 4)?;
        alloc(Buf::Partials, 8 * 2 * (widths.len() - 1))?;
        let ones = DeviceBuf::new(4 * capacity)?;
        let control = DeviceBuf::new(std::mem::size_of::<Control>())?;
        let start = [Control::start(cfg.scaled)];
        // SAFETY: both buffers hold what is copied: `capacity` f32 and one `Control` (copied as
        // a value, padding included, never read as bytes here).
        unsafe {
            call(
                "cuMemcpyHtoD (ones)",
                result::memcpy_htod_sync(ones.ptr, &vec![1.0f32; capacity]),
            )?;
            call("cuMemcpyHtoD (control)", result::memcpy_htod_sync(control.ptr, &start))?;
        }
        bufs.insert(Buf::Ones, ones);
        bufs.insert(Buf::Control, control);
        Ok(Self {
            widths,
            cfg,
            stream,
            kernels,
            blas,
            bufs,
            capacity,
            params: Vec::new(),
            halves_ready: false,
            uploader: PinnedRing::new(dev, model, params)?,
            batch: None,
            inbound: Event::new(false)?,
            outbound: Event::new(false)?,
            graphs,
            graph: None,
            eager_full_steps: 0,
            captures: 0,
        })
    }

    fn ptr(&self, buf: Buf) -> Result<sys::CUdeviceptr, TrainError> {
        match buf {
            Buf::Param(p) => self.params.get(p).copied(),
            other => self.bufs.get(&other).map(|b| b.ptr),
        }
        .ok_or_else(|| TrainError::Internal(format!("the step reads {buf:?}, which this engine did not allocate")))
    }

    fn launch(
        &self,
        f: sys::CUfunction,
        n: usize,
        one_block: bool,
        args: &mut [*mut c_void],
    ) -> Result<(), TrainError> {
        let blocks = if one_block {
            1
        } else {
            n.div_ceil(THREADS as usize).clamp(1, 4096) as u32
        };
        // SAFETY: `args` point at values of the kernel's parameter types, alive for the call;
        // every pointer among them addresses a buffer of this engine or the model.
        Ok(call("cuLaunchKernel", unsafe {
            result::launch_kernel(f, (blocks, 1, 1), (THREADS, 1, 1), 0, self.stream.0, args)
        })?)
    }

    /// Queues one operation of a plan on the engine's stream.
    // Long because: one arm per operation, each laying out its kernel's arguments in the order
    // and C types of its signature in `mlp.cu`; apart, the arms could not be read against it.
    fn run(&self, op: &Op) -> Result<(), TrainError> {
        macro_rules! args {
            ($($v:expr),*) => { &mut [$( (&$v) as *const _ as *mut c_void ),*] };
        }
        let k = &self.kernels;
        let c = &self.cfg;
        let ctl = self.ptr(Buf::Control)?;
        match *op {
            Op::Cast { src, dst, n, to } => {
                let (src, dst, count, kind) = (self.ptr(src)?, self.ptr(dst)?, n as u64, to.kind());
                self.launch(k.cast, n, false, args![src, dst, count, kind])
            }
            Op::BiasAct {
                z,
                bias,
                h,
                elem,
                rows,
                cols,
                layer,
            } => {
                let (z, bias, h, kind) = (self.ptr(z)?, self.ptr(bias)?, self.ptr(h)?, elem.kind());
                let (r, cl, act, p, seed, l) =
                    (rows as u64, cols as u32, c.activation, c.dropout, c.seed, layer as u32);
                self.launch(
                    k.bias_act,
                    rows * cols,
                    false,
                    args![z, bias, h, kind, r, cl, act, p, seed, ctl, l],
                )
            }
            Op::Bias { z, bias, rows, cols } => {
                let (z, bias, r, cl) = (self.ptr(z)?, self.ptr(bias)?, rows as u64, cols as u32);
                self.launch(k.bias, rows * cols, false, args![z, bias, r, cl])
            }
            Op::Mse { pred, y, n, dz } => {
                let (pred, y, count, dz, loss) = (
                    self.ptr(pred)?,
                    self.ptr(y)?,
                    n as u64,
                    self.ptr(dz)?,
                    self.ptr(Buf::Loss)?,
                );
                self.launch(k.mse, n, true, args![pred, y, count, dz, loss, ctl])
            }
            Op::ActBack { d, z, n, layer } => {
                let (d, z, count, act, p, seed, l) = (
                    self.ptr(d)?,
                    self.ptr(z)?,
                    n as u64,
                    c.activation,
                    c.dropout,
                    c.seed,
                    layer as u32,
                );
                self.launch(k.act_back, n, false, args![d, z, count, act, p, seed, ctl, l])
            }
            Op::SumSq { g, n, slot } => {
                let (g, count, partials, s) = (self.ptr(g)?, n as u64, self.ptr(Buf::Partials)?, slot as u32);
                self.launch(k.sumsq, n, true, args![g, count, partials, s])
            }
            Op::Control { count } => {
                let (partials, count, max_norm, scaled) =
                    (self.ptr(Buf::Partials)?, count as u32, c.max_norm, i32::from(c.scaled));
                self.launch(k.control, 1, true, args![partials, count, ctl, max_norm, scaled])
            }
            Op::Adam { param, n, half } => {
                let a = c.adam;
                let (p, m, v, g, count) = (
                    self.ptr(Buf::Param(param))?,
                    self.ptr(Buf::Moment1(param))?,
                    self.ptr(Buf::Moment2(param))?,
                    self.ptr(Buf::Grad(param))?,
                    n as u64,
                );
                let (copy, kind) = match half {
                    Some(e) => (self.ptr(Buf::ParamHalf(param))?, e.kind()),
                    None => (0u64, 0i32),
                };
                let (lr, b1, b2, eps, wd) = (a.lr, a.beta1, a.beta2, a.eps, a.weight_decay);
                self.launch(
                    k.adam,
                    n,
                    false,
                    args![p, m, v, g, count, ctl, lr, b1, b2, eps, wd, copy, kind],
                )
            }
            Op::Gemm(g) => self.gemm(&g),
            Op::Gemv(g) => {
                let int =
                    |v: usize| i32::try_from(v).map_err(|_| TrainError::Internal(format!("{v} exceeds cuBLAS's int")));
                let (alpha, beta) = (1.0f32, 0.0f32);
                // SAFETY: the buffers hold an `m x n` matrix, `n` ones and `m` results.
                blas_call("cublasSgemv", unsafe {
                    blas::cublasSgemv_v2(
                        self.blas.handle,
                        blas::cublasOperation_t::CUBLAS_OP_N,
                        int(g.m)?,
                        int(g.n)?,
                        &alpha,
                        self.ptr(g.a)? as *const f32,
                        int(g.lda)?,
                        self.ptr(g.x)? as *const f32,
                        1,
                        &beta,
                        self.ptr(g.y)? as *mut f32,
                        1,
                    )
                })
            }
        }
    }

    fn gemm(&self, g: &plan::Gemm) -> Result<(), TrainError> {
        let call = GemmEx::of(g).ok_or_else(|| TrainError::Internal(format!("{g:?} exceeds cuBLAS's int")))?;
        let op = |t: i32| {
            if t == plan::abi::CUBLAS_OP_T {
                blas::cublasOperation_t::CUBLAS_OP_T
            } else {
                blas::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let ty = |t: i32| match t {
            plan::abi::CUDA_R_16BF => blas::cudaDataType::CUDA_R_16BF,
            plan::abi::CUDA_R_16F => blas::cudaDataType::CUDA_R_16F,
            _ => blas::cudaDataType::CUDA_R_32F,
        };
        let (alpha, beta) = (1.0f32, call.beta);
        // SAFETY: the plan's buffers hold the matrices its leading dimensions describe (the
        // tests hold the plan to that); alpha and beta are f32, as CUBLAS_COMPUTE_32F reads them.
        blas_call("cublasGemmEx", unsafe {
            blas::cublasGemmEx(
                self.blas.handle,
                op(call.transa),
                op(call.transb),
                call.m,
                call.n,
                call.k,
                (&alpha as *const f32).cast(),
                self.ptr(g.a)? as *const c_void,
                ty(call.a_type),
                call.lda,
                self.ptr(g.b)? as *const c_void,
                ty(call.b_type),
                call.ldb,
                (&beta as *const f32).cast(),
                self.ptr(g.c)? as *mut c_void,
                ty(call.c_type),
                call.ldc,
                blas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        })
    }

    /// Captures `ops` as a graph and instantiates it (nothing runs).
    fn capture(&self, ops: &[Op]) -> Result<Graph, TrainError> {
        let s = self.stream.0;
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        // SAFETY: a live stream of this engine; the capture is ended below on every path.
        let begun = unsafe { sys::cuStreamBeginCapture_v2(s, mode) };
        call("cuStreamBeginCapture", begun.result())?;
        let queued = ops.iter().try_for_each(|op| self.run(op));
        let mut graph = std::ptr::null_mut();
        // SAFETY: ends the capture begun above, whatever happened in between.
        let ended = unsafe { sys::cuStreamEndCapture(s, &mut graph) };
        let ended = call("cuStreamEndCapture", ended.result());
        let discard = |graph: sys::CUgraph| {
            if !graph.is_null() {
                // SAFETY: a graph captured above that nothing else holds.
                let _ = unsafe { sys::cuGraphDestroy(graph) };
            }
        };
        if let Err(e) = queued {
            discard(graph);
            return Err(e);
        }
        ended?;
        let mut exec = std::ptr::null_mut();
        // SAFETY: a graph just captured; destroyed with the exec in `Graph`'s drop.
        let made = unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
        if let Err(e) = call("cuGraphInstantiate", made.result()) {
            discard(graph);
            return Err(e.into());
        }
        Ok(Graph {
            graph,
            exec,
            params: self.params.clone(),
        })
    }

    /// Runs the step on the uploaded batch (already copied into the engine's buffers): by the
    /// graph where one applies, else eagerly. `full_ops` stops before the update when false
    /// (the self-check's forward and backward only).
    fn queue_step(&mut self, rows: usize, update: bool) -> Result<(), TrainError> {
        // Laid out only where it is queued or captured, not on every replay.
        let ops = || {
            let mut ops = plan::step(&self.widths, rows, self.cfg.elem);
            if !update {
                ops.retain(|op| !matches!(op, Op::SumSq { .. } | Op::Control { .. } | Op::Adam { .. }));
            }
            ops
        };
        if !self.halves_ready {
            for op in plan::refresh_half(&self.widths, self.cfg.elem) {
                self.run(&op)?;
            }
            self.halves_ready = true;
        }
        let full = rows == self.capacity && update && self.graphs;
        if !full {
            return ops().iter().try_for_each(|op| self.run(op));
        }
        if self.graph.as_ref().is_some_and(|g| g.params != self.params) {
            self.graph = None;
        }
        if self.graph.is_none() && self.eager_full_steps == 0 {
            self.eager_full_steps += 1;
            return ops().iter().try_for_each(|op| self.run(op));
        }
        if self.graph.is_none() {
            self.graph = Some(self.capture(&ops())?);
            self.captures += 1;
        }
        let exec = self.graph.as_ref().map(|g| g.exec).expect("captured above");
        // SAFETY: an instantiated graph of this engine's stream's work.
        Ok(call(
            "cuGraphLaunch",
            unsafe { sys::cuGraphLaunch(exec, self.stream.0) }.result(),
        )?)
    }

    /// Copies the uploaded batch into the engine's fixed buffers and runs a step on it
    /// (`update`: the whole step; else forward and backward only), then copies the loss to
    /// `loss` when given. Ordered after dfdx's stream (the upload) and before what dfdx queues
    /// next (reads of the loss, evaluation, the next upload into memory the batch frees).
    pub(super) fn step_on_batch(
        &mut self,
        dev: &Cuda,
        model: &mut Model<Cuda>,
        update: bool,
        loss: Option<sys::CUdeviceptr>,
    ) -> Result<usize, TrainError> {
        let (x, y) = self
            .batch
            .take()
            .ok_or_else(|| TrainError::Internal("a step without an uploaded batch".into()))?;
        let rows = x.shape().0;
        if rows > self.capacity {
            return Err(TrainError::Internal(format!(
                "a batch of {rows} rows for buffers of {}",
                self.capacity
            )));
        }
        // Refilled in place: no allocation per step.
        self.params.clear();
        self.params
            .extend(model.params.iter_mut().map(|p| p.cu_device_ptr_mut()));
        let theirs = stream(dev);
        self.inbound.record(theirs)?;
        self.inbound.wait_on(self.stream.0)?;
        let (inputs, outputs) = (self.widths[0], self.widths[self.widths.len() - 1]);
        for (src, dst, width) in [
            (x.cu_device_ptr(), Buf::X, inputs),
            (y.cu_device_ptr(), Buf::Y, outputs),
        ] {
            let dst = self.ptr(dst)?;
            // SAFETY: both hold `rows x width` f32: the batch tensor, and the engine's buffer of
            // `capacity >= rows` rows.
            call("cuMemcpyDtoDAsync", unsafe {
                result::memcpy_dtod_async(dst, src, 4 * rows * width, self.stream.0)
            })?;
        }
        let queued = self.queue_step(rows, update).and_then(|()| match loss {
            Some(dst) => {
                let src = self.ptr(Buf::Loss)?;
                // SAFETY: one f32 each: the step's loss and the caller's scalar tensor.
                let copied = unsafe { result::memcpy_dtod_async(dst, src, 4, self.stream.0) };
                Ok(call("cuMemcpyDtoDAsync (the loss)", copied)?)
            }
            None => Ok(()),
        });
        if let Err(e) = queued {
            // The batch's memory goes back to dfdx only once this stream is done with it.
            let _ = self.stream.sync();
            return Err(e);
        }
        self.outbound.record(self.stream.0)?;
        self.outbound.wait_on(theirs)?;
        // The batch's tensors go back to dfdx's cache only now, after the wait above is queued.
        drop((x, y));
        Ok(rows)
    }
}

impl StepEngine<Cuda> for TcEngine {
    fn new(dev: &Cuda, model: &Model<Cuda>, params: &TrainParams, seed: u64) -> Result<Self, TrainError> {
        Self::with_graphs(dev, model, params, seed, params.cuda_graph == CudaGraph::On)
    }

    fn upload(&mut self, dev: &Cuda, batch: &HostBatch, reuse: bool) -> Result<(), TrainError> {
        self.batch = Some(self.uploader.upload(dev, batch, reuse)?);
        Ok(())
    }

    fn allocations(&self) -> Allocations {
        self.uploader.allocations()
    }

    fn step(&mut self, dev: &Cuda, model: &mut Model<Cuda>) -> Result<Tensor<(), f32, Cuda>, TrainError> {
        // SAFETY: written by the step's copy of the loss before anything reads it (dfdx's
        // stream waits for the step).
        let mut loss = unsafe { dev.try_alloc_uninit(()) }?;
        let dst = loss.cu_device_ptr_mut();
        self.step_on_batch(dev, model, true, Some(dst))?;
        Ok(loss)
    }

    fn predict(&mut self, dev: &Cuda, model: &Model<Cuda>, batch: &HostBatch) -> Result<Vec<f32>, TrainError> {
        // Evaluation reads the f32 master weights through dfdx, after the step (the events).
        autodiff_predict(dev, model, batch)
    }

    fn record(&self, rec: &mut Recorder) {
        if self.graphs {
            rec.record("cuda_graph_captures", self.captures as f64, "count");
        }
        if !self.cfg.scaled {
            return;
        }
        match self.control() {
            Ok(c) => {
                rec.record("loss_scale", f64::from(c.loss_scale), "");
                rec.record("skipped_steps", c.skipped as f64, "count");
            }
            Err(e) => rec.note(format!("no loss_scale or skipped_steps: {e}")),
        }
    }
}
