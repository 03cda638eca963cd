//! The plan interpreter: every `Op` of a step on host buffers, with the kernels' arithmetic
//! (`super::super::math`) and cuBLAS's column-major products over rounded operands.

use super::super::math::{self, AdamArgs, Control};
use super::super::plan::{self, Buf, Elem, Op};
use crate::arch::Activation;
use crate::tensor::equivalence::scaled_max_diff;
use dfdx::prelude::*;
use std::collections::HashMap;

/// Host memory for a plan's buffers.
pub(super) enum HostBuf {
    F32(Vec<f32>),
    Half(Vec<u16>, Elem),
    F64(Vec<f64>),
}

impl HostBuf {
    fn f32(&self) -> &[f32] {
        match self {
            HostBuf::F32(v) => v,
            _ => panic!("not an f32 buffer"),
        }
    }

    fn f32_mut(&mut self) -> &mut Vec<f32> {
        match self {
            HostBuf::F32(v) => v,
            _ => panic!("not an f32 buffer"),
        }
    }

    /// Element `i` as the product reads it.
    fn operand(&self, i: usize) -> f32 {
        match self {
            HostBuf::F32(v) => v[i],
            HostBuf::Half(v, e) => math::from_half(v[i], *e),
            HostBuf::F64(_) => panic!("an f64 buffer is not an operand"),
        }
    }
}

/// A step's configuration besides its shape.
#[derive(Clone, Copy)]
pub(super) struct Config {
    pub(super) activation: Activation,
    pub(super) dropout: f32,
    pub(super) seed: u64,
    pub(super) clip: Option<f32>,
    pub(super) scaled: bool,
    pub(super) adam: AdamArgs,
}

/// The plan interpreter: every `Op` on host buffers, with the kernels' math.
pub(super) struct Host {
    bufs: HashMap<Buf, HostBuf>,
    pub(super) control: Control,
    cfg: Config,
}

impl Host {
    pub(super) fn new(params: &[Vec<f32>], widths: &[usize], rows: usize, elem: Elem, cfg: Config) -> Host {
        let mut bufs = HashMap::new();
        let half = |n: usize| HostBuf::Half(vec![0; n], elem);
        for (i, p) in params.iter().enumerate() {
            bufs.insert(Buf::Param(i), HostBuf::F32(p.clone()));
            bufs.insert(Buf::Grad(i), HostBuf::F32(vec![f32::NAN; p.len()]));
            bufs.insert(Buf::Moment1(i), HostBuf::F32(vec![0.0; p.len()]));
            bufs.insert(Buf::Moment2(i), HostBuf::F32(vec![0.0; p.len()]));
            bufs.insert(Buf::ParamHalf(i), half(p.len()));
        }
        for l in 0..widths.len() - 1 {
            let n = rows * widths[l + 1];
            bufs.insert(Buf::Z(l), HostBuf::F32(vec![f32::NAN; n]));
            bufs.insert(Buf::D(l), HostBuf::F32(vec![f32::NAN; n]));
            bufs.insert(Buf::DHalf(l), half(n));
            bufs.insert(
                Buf::H(l),
                if elem == Elem::F32 {
                    HostBuf::F32(vec![f32::NAN; n])
                } else {
                    half(n)
                },
            );
        }
        bufs.insert(Buf::XHalf, half(rows * widths[0]));
        bufs.insert(Buf::Ones, HostBuf::F32(vec![1.0; rows]));
        bufs.insert(Buf::Loss, HostBuf::F32(vec![f32::NAN]));
        bufs.insert(Buf::Partials, HostBuf::F64(vec![f64::NAN; params.len()]));
        let mut host = Host {
            bufs,
            control: Control::start(cfg.scaled),
            cfg,
        };
        for op in plan::refresh_half(widths, elem) {
            host.run(&op);
        }
        host
    }

    pub(super) fn set(&mut self, buf: Buf, v: Vec<f32>) {
        self.bufs.insert(buf, HostBuf::F32(v));
    }

    pub(super) fn get(&self, buf: Buf) -> &[f32] {
        self.bufs[&buf].f32()
    }

    pub(super) fn run(&mut self, op: &Op) {
        let cfg = self.cfg;
        let act = cfg.activation;
        match *op {
            Op::Cast { src, dst, n, to } => {
                let v: Vec<u16> = self.get(src)[..n].iter().map(|x| math::to_half(*x, to)).collect();
                let HostBuf::Half(d, _) = self.bufs.get_mut(&dst).unwrap() else {
                    panic!("a cast into a non-half buffer")
                };
                d[..n].copy_from_slice(&v);
            }
            Op::Gemm(g) => {
                let (a, b) = (&self.bufs[&g.a], &self.bufs[&g.b]);
                let mut out = vec![0f32; g.ldc * g.n];
                for j in 0..g.n {
                    for i in 0..g.m {
                        let mut acc = 0f32;
                        for l in 0..g.k {
                            let av = a.operand(if g.trans_a { l + i * g.lda } else { i + l * g.lda });
                            let bv = b.operand(if g.trans_b { j + l * g.ldb } else { l + j * g.ldb });
                            acc += av * bv;
                        }
                        out[i + j * g.ldc] = acc;
                    }
                }
                let c = self.bufs.get_mut(&g.c).unwrap().f32_mut();
                for j in 0..g.n {
                    for i in 0..g.m {
                        let at = i + j * g.ldc;
                        c[at] = if g.accumulate { c[at] + out[at] } else { out[at] };
                    }
                }
            }
            Op::Gemv(g) => {
                let (a, x) = (self.get(g.a).to_vec(), self.get(g.x).to_vec());
                let y: Vec<f32> = (0..g.m)
                    .map(|i| (0..g.n).map(|j| a[i + j * g.lda] * x[j]).sum())
                    .collect();
                self.bufs.get_mut(&g.y).unwrap().f32_mut()[..g.m].copy_from_slice(&y);
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
                let b = self.get(bias).to_vec();
                let zs = self.bufs.get_mut(&z).unwrap().f32_mut();
                let mut hs = Vec::with_capacity(rows * cols);
                for i in 0..rows * cols {
                    zs[i] += b[i % cols];
                    let d = math::dropout(cfg.seed, self.control.step, layer as u32, i as u64, cfg.dropout);
                    hs.push(math::act(act, zs[i]) * d);
                }
                match (self.bufs.get_mut(&h).unwrap(), elem) {
                    (HostBuf::F32(v), Elem::F32) => v[..hs.len()].copy_from_slice(&hs),
                    (HostBuf::Half(v, e), _) => {
                        let e = *e;
                        v.iter_mut().zip(&hs).for_each(|(d, x)| *d = math::to_half(*x, e));
                    }
                    _ => panic!("an activation into a buffer of another type"),
                }
            }
            Op::Bias { z, bias, rows, cols } => {
                let b = self.get(bias).to_vec();
                let zs = self.bufs.get_mut(&z).unwrap().f32_mut();
                (0..rows * cols).for_each(|i| zs[i] += b[i % cols]);
            }
            Op::Mse { pred, y, n, dz } => {
                let (p, t) = (self.get(pred).to_vec(), self.get(y).to_vec());
                let seed = 2.0 / n as f32 * self.control.loss_scale;
                let mut sum = 0f64;
                let d: Vec<f32> = (0..n)
                    .map(|i| {
                        let d = p[i] - t[i];
                        sum += f64::from(d * d);
                        seed * d
                    })
                    .collect();
                self.bufs.get_mut(&dz).unwrap().f32_mut()[..n].copy_from_slice(&d);
                self.set(Buf::Loss, vec![(sum / n as f64) as f32]);
            }
            Op::ActBack { d, z, n, layer } => {
                let zs = self.get(z).to_vec();
                let step = self.control.step;
                let ds = self.bufs.get_mut(&d).unwrap().f32_mut();
                for i in 0..n {
                    ds[i] *=
                        math::slope(act, zs[i]) * math::dropout(cfg.seed, step, layer as u32, i as u64, cfg.dropout);
                }
            }
            Op::SumSq { g, n, slot } => {
                let s: f64 = self.get(g)[..n].iter().map(|v| f64::from(*v).powi(2)).sum();
                let HostBuf::F64(p) = self.bufs.get_mut(&Buf::Partials).unwrap() else {
                    panic!("partials")
                };
                p[slot] = s;
            }
            Op::Control { count } => {
                let HostBuf::F64(p) = &self.bufs[&Buf::Partials] else {
                    panic!("partials")
                };
                let sumsq: f64 = p[..count].iter().sum();
                self.control.decide(sumsq, cfg.clip.unwrap_or(0.0), cfg.scaled);
            }
            Op::Adam { param, n, half } => {
                if self.control.skip != 0 {
                    return;
                }
                let g = self.get(Buf::Grad(param)).to_vec();
                let mut p = self.get(Buf::Param(param)).to_vec();
                let mut m = self.get(Buf::Moment1(param)).to_vec();
                let mut v = self.get(Buf::Moment2(param)).to_vec();
                for i in 0..n {
                    cfg.adam
                        .update(&mut p[i], &mut m[i], &mut v[i], g[i], self.control.coef, self.control.t);
                }
                if let Some(e) = half {
                    self.bufs.insert(
                        Buf::ParamHalf(param),
                        HostBuf::Half(p.iter().map(|x| math::to_half(*x, e)).collect(), e),
                    );
                }
                self.set(Buf::Param(param), p);
                self.set(Buf::Moment1(param), m);
                self.set(Buf::Moment2(param), v);
            }
        }
    }

    /// One step on `x`, `y`; returns the loss.
    pub(super) fn step(&mut self, widths: &[usize], rows: usize, elem: Elem, x: &[f32], y: &[f32]) -> f32 {
        self.set(Buf::X, x.to_vec());
        self.set(Buf::Y, y.to_vec());
        for op in plan::step(widths, rows, elem) {
            self.run(&op);
        }
        self.get(Buf::Loss)[0]
    }
}

pub(super) fn config(activation: Activation, scaled: bool) -> Config {
    Config {
        activation,
        dropout: 0.0,
        seed: 5,
        clip: None,
        scaled,
        adam: AdamArgs::new(1e-2, 0.0),
    }
}

/// dfdx's loss and gradients for `model` on `x`, `y` (rows of `widths`).
pub(super) fn reference(
    model: &crate::tensor::Model<Cpu>,
    dev: &Cpu,
    widths: &[usize],
    rows: usize,
    x: &[f32],
    y: &[f32],
) -> (f32, Vec<Vec<f32>>) {
    let (loss, grads) = model
        .loss_and_grads(
            dev.tensor_from_vec(x.to_vec(), (rows, widths[0])),
            dev.tensor_from_vec(y.to_vec(), (rows, widths[widths.len() - 1])),
        )
        .unwrap();
    (
        loss.array(),
        model.params.iter().map(|p| grads.get(p).as_vec()).collect(),
    )
}

/// The loss's relative difference and the worst gradient's (scaled as `check_step`'s).
pub(super) fn differences(host: &Host, loss: f32, ref_loss: f32, ref_grads: &[Vec<f32>]) -> (f64, f64) {
    let loss_diff = f64::from((loss - ref_loss).abs()) / f64::from(ref_loss.abs());
    let grad_diff = ref_grads
        .iter()
        .enumerate()
        .map(|(i, g)| scaled_max_diff(g, host.get(Buf::Grad(i))))
        .fold(0.0, f64::max);
    (loss_diff, grad_diff)
}
