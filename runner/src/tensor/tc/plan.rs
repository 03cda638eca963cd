//! One training step of an MLP as a list of device operations ([`Op`]): cuBLAS products
//! between row-major buffers, and the passes of `mlp.cu` between them. The plan is plain data,
//! built here without CUDA, so its shapes, transposes and leading dimensions are checked on
//! any machine: the tests run it through a host interpreter against dfdx's autodiff, and read
//! the `cublasGemmEx` calls it asks for ([`GemmEx::of`]).
//!
//! Layout: every matrix is row-major, as the CPU engine keeps them (a layer's weight is
//! `in x out`, its bias `out`; activations `rows x width`). cuBLAS is column-major, so a
//! row-major `r x c` buffer is read as its transpose, `c x r` with leading dimension `c`:
//! `Z = H W` is computed as `Z^T = W^T H^T`, and so on (see [`step`]).

/// A device buffer of the step, named by role; the executor maps each to an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Buf {
    /// Parameter `i` in the model's order (layer `l`'s weight is `2l`, its bias `2l + 1`):
    /// the f32 master copy, updated in place.
    Param(usize),
    /// A weight's bf16 or f16 copy, which the products read (half precisions only).
    ParamHalf(usize),
    Grad(usize),
    Moment1(usize),
    Moment2(usize),
    /// The batch's inputs and targets (f32), and the inputs' half copy.
    X,
    XHalf,
    Y,
    /// Layer `l`'s output before its activation (f32).
    Z(usize),
    /// Hidden layer `l`'s activation times its dropout mask, in the operand precision.
    H(usize),
    /// dL/dz of layer `l` (f32), and its half copy.
    D(usize),
    DHalf(usize),
    /// `rows` ones (f32): the bias gradients are `D^T 1`.
    Ones,
    /// The step's loss (one f32).
    Loss,
    /// Each gradient's sum of squares (f64, one per parameter).
    Partials,
    /// The step's state (`MmControl`).
    Control,
}

/// The element type of a product's operands. Results and accumulation are f32 either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Elem {
    F32,
    Bf16,
    F16,
}

impl Elem {
    /// The `kind` argument of `mlp.cu`'s kernels.
    pub fn kind(self) -> i32 {
        match self {
            Elem::F32 => 0,
            Elem::Bf16 => 1,
            Elem::F16 => 2,
        }
    }

    pub fn bytes(self) -> usize {
        match self {
            Elem::F32 => 4,
            Elem::Bf16 | Elem::F16 => 2,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Elem::F32 => "f32",
            Elem::Bf16 => "bf16",
            Elem::F16 => "f16",
        }
    }
}

/// `C = op(A) op(B)` (or `C += ...` with `accumulate`), column-major as cuBLAS reads it:
/// `op(A)` is `m x k`, `op(B)` `k x n`, `C` `m x n`; A and B of type `operands`, C f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemm {
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Buf,
    pub lda: usize,
    pub b: Buf,
    pub ldb: usize,
    pub c: Buf,
    pub ldc: usize,
    pub operands: Elem,
    pub accumulate: bool,
}

/// `y = A x` in f32, with `A` column-major `m x n` (leading dimension `lda`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemv {
    pub m: usize,
    pub n: usize,
    pub a: Buf,
    pub lda: usize,
    pub x: Buf,
    pub y: Buf,
}

/// One operation of a step, in order on one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `dst = src` as bf16 or f16 (`mm_cast`).
    Cast {
        src: Buf,
        dst: Buf,
        n: usize,
        to: Elem,
    },
    Gemm(Gemm),
    Gemv(Gemv),
    /// A hidden layer's bias, activation and dropout (`mm_bias_act`); `h` in `elem`.
    BiasAct {
        z: Buf,
        bias: Buf,
        h: Buf,
        elem: Elem,
        rows: usize,
        cols: usize,
        layer: usize,
    },
    /// The output layer's bias (`mm_bias`).
    Bias {
        z: Buf,
        bias: Buf,
        rows: usize,
        cols: usize,
    },
    /// The loss and its scaled gradient (`mm_mse`).
    Mse {
        pred: Buf,
        y: Buf,
        n: usize,
        dz: Buf,
    },
    /// Back through a hidden layer's activation and dropout (`mm_act_back`).
    ActBack {
        d: Buf,
        z: Buf,
        n: usize,
        layer: usize,
    },
    /// `Partials[slot]` = the sum of squares of `g` (`mm_sumsq`).
    SumSq {
        g: Buf,
        n: usize,
        slot: usize,
    },
    /// The update's decision: loss scale, skip, clip (`mm_control_step`).
    Control {
        count: usize,
    },
    /// Adam on parameter `param` (`n` values), refreshing its half copy when `half` is set.
    Adam {
        param: usize,
        n: usize,
        half: Option<Elem>,
    },
}

/// How many values each parameter has: `widths[l] x widths[l + 1]` for a weight, then
/// `widths[l + 1]` for its bias.
pub fn param_sizes(widths: &[usize]) -> Vec<usize> {
    widths.windows(2).flat_map(|w| [w[0] * w[1], w[1]]).collect()
}

/// The operand buffer of layer `l`'s input: the batch (or its half copy) for the first layer,
/// else the hidden layer below.
fn input(l: usize, operands: Elem) -> Buf {
    match (l, operands) {
        (0, Elem::F32) => Buf::X,
        (0, _) => Buf::XHalf,
        (l, _) => Buf::H(l - 1),
    }
}

/// The operand buffer of layer `l`'s weight.
fn weight(l: usize, operands: Elem) -> Buf {
    match operands {
        Elem::F32 => Buf::Param(2 * l),
        _ => Buf::ParamHalf(2 * l),
    }
}

/// One training step on a batch of `rows` rows for an MLP of `widths` (input first): forward,
/// the loss, backward into the gradients, the update's decision and Adam. Half operands cast
/// the batch, each layer's activation (in the activation pass) and each `dL/dz` before the
/// products that read them; the weights' half copies are refreshed by the update.
// Long because: it reads top to bottom as the math does (forward per layer, the loss, backward
// per layer, the update), each product's transposes beside the formula it computes.
pub fn step(widths: &[usize], rows: usize, operands: Elem) -> Vec<Op> {
    let layers = widths.len() - 1;
    let half = operands != Elem::F32;
    let mut ops = Vec::new();
    if half {
        ops.push(Op::Cast {
            src: Buf::X,
            dst: Buf::XHalf,
            n: rows * widths[0],
            to: operands,
        });
    }
    for l in 0..layers {
        let (fan_in, fan_out) = (widths[l], widths[l + 1]);
        // Z^T (out x rows) = W^T (out x in) . H^T (in x rows).
        ops.push(Op::Gemm(Gemm {
            trans_a: false,
            trans_b: false,
            m: fan_out,
            n: rows,
            k: fan_in,
            a: weight(l, operands),
            lda: fan_out,
            b: input(l, operands),
            ldb: fan_in,
            c: Buf::Z(l),
            ldc: fan_out,
            operands,
            accumulate: false,
        }));
        let bias = Buf::Param(2 * l + 1);
        ops.push(if l + 1 < layers {
            Op::BiasAct {
                z: Buf::Z(l),
                bias,
                h: Buf::H(l),
                elem: operands,
                rows,
                cols: fan_out,
                layer: l,
            }
        } else {
            Op::Bias {
                z: Buf::Z(l),
                bias,
                rows,
                cols: fan_out,
            }
        });
    }
    let last = layers - 1;
    ops.push(Op::Mse {
        pred: Buf::Z(last),
        y: Buf::Y,
        n: rows * widths[layers],
        dz: Buf::D(last),
    });
    for l in (0..layers).rev() {
        let (fan_in, fan_out) = (widths[l], widths[l + 1]);
        let dz = if half {
            ops.push(Op::Cast {
                src: Buf::D(l),
                dst: Buf::DHalf(l),
                n: rows * fan_out,
                to: operands,
            });
            Buf::DHalf(l)
        } else {
            Buf::D(l)
        };
        // dW^T (out x in) = dZ^T (out x rows) . H (rows x in).
        ops.push(Op::Gemm(Gemm {
            trans_a: false,
            trans_b: true,
            m: fan_out,
            n: fan_in,
            k: rows,
            a: dz,
            lda: fan_out,
            b: input(l, operands),
            ldb: fan_in,
            c: Buf::Grad(2 * l),
            ldc: fan_out,
            operands,
            accumulate: false,
        }));
        // db = dZ^T (out x rows) . 1.
        ops.push(Op::Gemv(Gemv {
            m: fan_out,
            n: rows,
            a: Buf::D(l),
            lda: fan_out,
            x: Buf::Ones,
            y: Buf::Grad(2 * l + 1),
        }));
        if l == 0 {
            break;
        }
        // dH^T (in x rows) = W (in x out) . dZ^T (out x rows), then through the activation.
        ops.push(Op::Gemm(Gemm {
            trans_a: true,
            trans_b: false,
            m: fan_in,
            n: rows,
            k: fan_out,
            a: weight(l, operands),
            lda: fan_out,
            b: dz,
            ldb: fan_out,
            c: Buf::D(l - 1),
            ldc: fan_in,
            operands,
            accumulate: false,
        }));
        ops.push(Op::ActBack {
            d: Buf::D(l - 1),
            z: Buf::Z(l - 1),
            n: rows * fan_in,
            layer: l - 1,
        });
    }
    let sizes = param_sizes(widths);
    for (p, n) in sizes.iter().enumerate() {
        ops.push(Op::SumSq {
            g: Buf::Grad(p),
            n: *n,
            slot: p,
        });
    }
    ops.push(Op::Control { count: sizes.len() });
    for (p, n) in sizes.iter().enumerate() {
        ops.push(Op::Adam {
            param: p,
            n: *n,
            half: (half && p % 2 == 0).then_some(operands),
        });
    }
    ops
}

/// The weights' half copies from the f32 masters, before the first step (the update keeps
/// them current after it).
pub fn refresh_half(widths: &[usize], operands: Elem) -> Vec<Op> {
    if operands == Elem::F32 {
        return Vec::new();
    }
    param_sizes(widths)
        .iter()
        .enumerate()
        .filter(|(p, _)| p % 2 == 0)
        .map(|(p, n)| Op::Cast {
            src: Buf::Param(p),
            dst: Buf::ParamHalf(p),
            n: *n,
            to: operands,
        })
        .collect()
}

/// cuBLAS's numbering (from its stable C ABI: `cublasOperation_t`, `cudaDataType`,
/// `cublasComputeType_t`, `cublasGemmAlgo_t`).
pub mod abi {
    pub const CUBLAS_OP_N: i32 = 0;
    pub const CUBLAS_OP_T: i32 = 1;
    pub const CUDA_R_32F: i32 = 0;
    pub const CUDA_R_16F: i32 = 2;
    pub const CUDA_R_16BF: i32 = 14;
    pub const CUBLAS_COMPUTE_32F: i32 = 68;
    pub const CUBLAS_GEMM_DEFAULT: i32 = -1;
}

/// The arguments of one `cublasGemmEx` call (besides the handle, pointers and scalars).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmEx {
    pub transa: i32,
    pub transb: i32,
    pub m: i32,
    pub n: i32,
    pub k: i32,
    pub a_type: i32,
    pub lda: i32,
    pub b_type: i32,
    pub ldb: i32,
    pub c_type: i32,
    pub ldc: i32,
    pub compute: i32,
    pub algo: i32,
    /// beta: 0 overwrites C, 1 adds to it (alpha is 1).
    pub beta: f32,
}

impl GemmEx {
    /// The call for `g`: f32 accumulation (`CUBLAS_COMPUTE_32F`) and an f32 result whatever
    /// the operands; bf16 and f16 operands run on tensor cores. `None` when a dimension does not
    /// fit cuBLAS's `int`.
    pub fn of(g: &Gemm) -> Option<GemmEx> {
        use abi::*;
        let int = |v: usize| i32::try_from(v).ok();
        let op = |t: bool| if t { CUBLAS_OP_T } else { CUBLAS_OP_N };
        let ty = match g.operands {
            Elem::F32 => CUDA_R_32F,
            Elem::Bf16 => CUDA_R_16BF,
            Elem::F16 => CUDA_R_16F,
        };
        Some(GemmEx {
            transa: op(g.trans_a),
            transb: op(g.trans_b),
            m: int(g.m)?,
            n: int(g.n)?,
            k: int(g.k)?,
            a_type: ty,
            lda: int(g.lda)?,
            b_type: ty,
            ldb: int(g.ldb)?,
            c_type: CUDA_R_32F,
            ldc: int(g.ldc)?,
            compute: CUBLAS_COMPUTE_32F,
            algo: CUBLAS_GEMM_DEFAULT,
            beta: if g.accumulate { 1.0 } else { 0.0 },
        })
    }
}
