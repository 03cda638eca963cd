//! The one converter between the CPU engine's parameter layout and cuDNN's packed weight
//! buffer (arch params <-> [`Block`]s <-> weight space), built from the offsets
//! `cudnnGetRNNWeightParams` reports.
//!
//! The CPU engine (and dfdx's forward, and safetensors files) keeps per layer `l`:
//! `rnn.l.weight_ih` `[in, gates * H]`, `rnn.l.weight_hh` `[H, gates * H]`, `rnn.l.bias_ih`
//! and `rnn.l.bias_hh` `[gates * H]`, row-major, multiplied as `x W`, gate `k` in columns
//! `k*H .. (k+1)*H`. cuDNN keeps, per pseudo-layer and linear layer ID, a matrix `[H, in]`
//! row-major (multiplied as `W x`: the CPU block transposed) and a bias `[H]`.
//!
//! Gate order: cuDNN's linear layer IDs for an LSTM are 0-3 on the input (`i`, `f`, `g` the
//! new memory, `o`) and 4-7 on the recurrent input, in the same order; for a GRU 0-2 on the
//! input (`r` reset, `z` update, `h` new memory) and 3-5 on the recurrent input. The CPU
//! engine's gates are PyTorch's: `i, f, g, o` and `r, z, n`, with the GRU's `n` being cuDNN's
//! `h` (both apply `r` to the recurrent product plus its bias). So the gate of linear layer ID
//! `id` is `id mod gates` in both: [`CPU_GATE`] writes the mapping out.

use super::api::{self, Api, CudnnError, Desc};
use crate::arch::ModelKind;
use std::ffi::c_void;
use std::ptr;

/// The CPU engine's gate for each cuDNN gate (the identity, written out: LSTM `i f g o`, GRU
/// `r z n` = cuDNN `r z h`).
pub const CPU_GATE: [&[usize]; 2] = [&[0, 1, 2, 3], &[0, 1, 2]];

fn cpu_gate(kind: ModelKind, gate: usize) -> usize {
    let table = if kind == ModelKind::Lstm {
        CPU_GATE[0]
    } else {
        CPU_GATE[1]
    };
    table[gate]
}

/// One matrix or bias of the weight space and where it comes from in the CPU layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The CPU parameter, by its index in `Arch::params` (`4 l` weight_ih, `4 l + 1`
    /// weight_hh, `4 l + 2` bias_ih, `4 l + 3` bias_hh).
    pub param: usize,
    /// The CPU engine's gate: columns `gate * hidden ..` of the parameter.
    pub gate: usize,
    /// Elements from the start of the weight space.
    pub offset: usize,
    /// `hidden`.
    pub rows: usize,
    /// The matrix's input width; 1 for a bias.
    pub cols: usize,
    /// Columns of the CPU parameter: `gates * hidden`.
    pub cpu_cols: usize,
}

impl Block {
    /// Where element `(r, c)` of the block is, in the weight space and in the CPU parameter:
    /// cuDNN's `[rows, cols]` row-major, the CPU's `[cols, cpu_cols]` row-major at column
    /// `gate * rows + r` (a bias is `[cpu_cols]`).
    pub fn index(&self, r: usize, c: usize) -> (usize, usize) {
        let packed = self.offset + r * self.cols + c;
        let cpu = c * self.cpu_cols + self.gate * self.rows + r;
        (packed, cpu)
    }

    pub fn len(&self) -> usize {
        self.rows * self.cols
    }

    /// The block as one transposing copy from the CPU parameter into the weight space.
    pub fn packing(&self) -> Transpose {
        Transpose {
            src: self.gate * self.rows,
            lda: self.cpu_cols,
            dst: self.offset,
            ldc: self.cols,
            m: self.cols,
            n: self.rows,
        }
    }

    /// The block as one transposing copy from the weight space (or its gradient) into the CPU
    /// parameter (or its gradient).
    pub fn unpacking(&self) -> Transpose {
        Transpose {
            src: self.offset,
            lda: self.cols,
            dst: self.gate * self.rows,
            ldc: self.cpu_cols,
            m: self.rows,
            n: self.cols,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A transposing copy as cuBLAS's `geam` takes it (column-major, `C = op(A)` with `op` the
/// transpose): `C`, at element `dst` of the destination, is `m x n` with leading dimension
/// `ldc`; `A`, at element `src` of the source, is `n x m` with leading dimension `lda`. The CUDA
/// path runs one per block; [`Transpose::apply`] is the same copy on the host, which the tests
/// hold to [`to_packed`] and [`from_packed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transpose {
    pub src: usize,
    pub lda: usize,
    pub dst: usize,
    pub ldc: usize,
    pub m: usize,
    pub n: usize,
}

impl Transpose {
    /// `C(i, j) = A(j, i)` on host buffers.
    pub fn apply(&self, src: &[f32], dst: &mut [f32]) {
        for j in 0..self.n {
            for i in 0..self.m {
                dst[self.dst + i + j * self.ldc] = src[self.src + j + i * self.lda];
            }
        }
    }
}

/// Every block of a network's weight space, asked of cuDNN for each pseudo-layer and linear
/// layer ID; `weights` is the weight space's address (only used to turn the addresses cuDNN
/// reports into offsets).
///
/// # Safety
/// `handle` and `rnn` are a live cuDNN handle and a set RNN descriptor of `api`'s library.
pub unsafe fn query(
    api: &Api,
    handle: Desc,
    rnn: Desc,
    kind: ModelKind,
    layers: usize,
    weight_bytes: usize,
    weights: *const c_void,
) -> Result<Vec<Block>, CudnnError> {
    let gates = kind.gates();
    let mut descs: [Desc; 2] = [ptr::null_mut(); 2];
    let mut blocks = Vec::with_capacity(layers * 4 * gates);
    let result = (|| {
        for d in descs.iter_mut() {
            // SAFETY: out-pointer to a live local; destroyed below.
            api.check("cudnnCreateTensorDescriptor", unsafe {
                (api.cudnnCreateTensorDescriptor)(d)
            })?;
        }
        for layer in 0..layers {
            for id in 0..2 * gates {
                let (mut m, mut b): (*mut c_void, *mut c_void) = (ptr::null_mut(), ptr::null_mut());
                // SAFETY: the descriptors are created; cuDNN writes the addresses and sets the
                // two descriptors to each block's shape.
                api.check("cudnnGetRNNWeightParams", unsafe {
                    (api.cudnnGetRNNWeightParams)(
                        handle,
                        rnn,
                        layer as i32,
                        weight_bytes,
                        weights,
                        id as i32,
                        descs[0],
                        &mut m,
                        descs[1],
                        &mut b,
                    )
                })?;
                let recurrent = id >= gates;
                let gate = cpu_gate(kind, id % gates);
                for (k, (desc, addr)) in [(descs[0], m), (descs[1], b)].into_iter().enumerate() {
                    let [_, rows, cols] = dims_of(api, desc)?;
                    let offset = (addr as usize).wrapping_sub(weights as usize);
                    if addr.is_null() || !offset.is_multiple_of(4) || offset + 4 * rows * cols > weight_bytes {
                        return Err(CudnnError(format!(
                            "cudnnGetRNNWeightParams put layer {layer} block {id} outside the weight space"
                        )));
                    }
                    blocks.push(Block {
                        param: 4 * layer + usize::from(recurrent) + 2 * k,
                        gate,
                        offset: offset / 4,
                        rows,
                        cols,
                        cpu_cols: gates * rows,
                    });
                }
            }
        }
        Ok(())
    })();
    for d in descs.into_iter().filter(|d| !d.is_null()) {
        // SAFETY: created above, destroyed once.
        unsafe { (api.cudnnDestroyTensorDescriptor)(d) };
    }
    result.map(|()| blocks)
}

/// The three dimensions cuDNN set on a block's descriptor (`[1, rows, cols]`).
fn dims_of(api: &Api, desc: Desc) -> Result<[usize; 3], CudnnError> {
    let (mut dtype, mut nb) = (0i32, 0i32);
    let (mut dims, mut strides) = ([0i32; 3], [0i32; 3]);
    // SAFETY: the arrays hold the 3 dimensions asked for.
    api.check("cudnnGetTensorNdDescriptor", unsafe {
        (api.cudnnGetTensorNdDescriptor)(desc, 3, &mut dtype, &mut nb, dims.as_mut_ptr(), strides.as_mut_ptr())
    })?;
    if nb != 3 || dtype != api::DATA_FLOAT || dims.iter().any(|d| *d < 1) {
        return Err(CudnnError(format!(
            "cudnnGetRNNWeightParams described a block as {nb} dimensions {dims:?} of type {dtype}"
        )));
    }
    Ok(dims.map(|d| d as usize))
}

/// The weight space (`len` elements) holding the CPU parameters `params` (in `Arch::params`
/// order; the head's, past the recurrent layers, are not read).
pub fn to_packed(blocks: &[Block], params: &[Vec<f32>], len: usize) -> Result<Vec<f32>, CudnnError> {
    let mut packed = vec![0.0f32; len];
    for b in blocks {
        let src = params.get(b.param).ok_or_else(|| missing(b))?;
        for r in 0..b.rows {
            for c in 0..b.cols {
                let (p, q) = b.index(r, c);
                *packed.get_mut(p).ok_or_else(|| missing(b))? = *src.get(q).ok_or_else(|| missing(b))?;
            }
        }
    }
    Ok(packed)
}

/// The CPU parameters held in the weight space `packed`, written into `params` (which has the
/// shapes `Arch::params` gives; the head's are left as they are).
pub fn from_packed(blocks: &[Block], packed: &[f32], params: &mut [Vec<f32>]) -> Result<(), CudnnError> {
    for b in blocks {
        let dst = params.get_mut(b.param).ok_or_else(|| missing(b))?;
        for r in 0..b.rows {
            for c in 0..b.cols {
                let (p, q) = b.index(r, c);
                *dst.get_mut(q).ok_or_else(|| missing(b))? = *packed.get(p).ok_or_else(|| missing(b))?;
            }
        }
    }
    Ok(())
}

fn missing(b: &Block) -> CudnnError {
    CudnnError(format!(
        "the weight block of parameter {} gate {} does not fit the model's parameters",
        b.param, b.gate
    ))
}
