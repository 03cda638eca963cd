//! The Rust reference of `mlp_math.h`'s functions: what the host interpreter of a step plan
//! computes with, and what the tests hold the C source (built for the host) to.

use crate::arch::Activation;

/// `MmControl` in `mlp_math.h`, field for field (`#[repr(C)]`: the host build of the header
/// and the device read and write it through the same layout).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Control {
    pub loss_scale: f32,
    pub good: u32,
    pub skipped: u64,
    pub t: i32,
    pub coef: f32,
    pub skip: i32,
    pub step: u64,
}

impl Control {
    /// The state before the first step: the loss scale starts at 2^16 under f16 scaling, else 1.
    pub fn start(scaled: bool) -> Self {
        Self {
            loss_scale: if scaled {
                crate::tensor::optim::LossScaler::INITIAL
            } else {
                1.0
            },
            ..Self::default()
        }
    }

    /// `mm_control`: the update's decision from the sum of squares of every scaled gradient.
    pub fn decide(&mut self, sumsq: f64, max_norm: f32, scaled: bool) {
        const MIN: f32 = 1.0 / 16_777_216.0;
        const MAX: f32 = 18_446_744_073_709_551_616.0;
        self.step += 1;
        if scaled && !sumsq.is_finite() {
            self.skip = 1;
            self.coef = 0.0;
            self.skipped += 1;
            self.good = 0;
            self.loss_scale = (self.loss_scale * 0.5).max(MIN);
            return;
        }
        let inverse = 1.0 / self.loss_scale;
        let mut clip = 1.0f32;
        if max_norm > 0.0 {
            let norm = (sumsq.sqrt() / f64::from(self.loss_scale)) as f32;
            clip = (max_norm / (norm + 1.0e-6)).min(1.0);
        }
        self.skip = 0;
        self.coef = inverse * clip;
        self.t += 1;
        if scaled {
            self.good += 1;
            if self.good == crate::tensor::optim::LossScaler::GROWTH_INTERVAL {
                self.good = 0;
                self.loss_scale = (self.loss_scale * 2.0).min(MAX);
            }
        }
    }
}

/// The kernels' activation numbering.
pub fn act_code(a: Activation) -> i32 {
    match a {
        Activation::Relu => 0,
        Activation::Gelu => 1,
        Activation::Tanh => 2,
    }
}

pub fn act(a: Activation, z: f32) -> f32 {
    crate::tensor::native::activate(a, z)
}

pub fn slope(a: Activation, z: f32) -> f32 {
    crate::tensor::native::activation_slope(a, z, None)
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `mm_dropout`: the multiplier of element `index` of hidden layer `layer` at step `step`.
pub fn dropout(seed: u64, step: u64, layer: u32, index: u64, p: f32) -> f32 {
    if p <= 0.0 {
        return 1.0;
    }
    let h = mix(seed ^ mix(step.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(u64::from(layer))));
    let h = mix(h.wrapping_add(index));
    let u = (h >> 40) as f32 * (1.0 / 16_777_216.0);
    if u < p {
        0.0
    } else {
        1.0 / (1.0 - p)
    }
}

/// Adam's hyperparameters as the kernel takes them (f32).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamArgs {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub weight_decay: f32,
}

impl AdamArgs {
    /// PyTorch's defaults, as `optim::AdamW`.
    pub fn new(lr: f64, weight_decay: f64) -> Self {
        Self {
            lr: lr as f32,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: weight_decay as f32,
        }
    }

    /// `mm_adam` on one element.
    pub fn update(&self, p: &mut f32, m: &mut f32, v: &mut f32, g: f32, coef: f32, t: i32) {
        let g = g * coef;
        let tf = t as f32;
        let mm = *m * self.beta1 + g * (1.0 - self.beta1);
        let vv = *v * self.beta2 + g * g * (1.0 - self.beta2);
        let m_hat = mm * 1.0 / (1.0 - self.beta1.powf(tf));
        let v_hat = vv * 1.0 / (1.0 - self.beta2.powf(tf));
        let mut step = self.lr * m_hat / (v_hat.sqrt() + self.eps);
        if self.weight_decay > 0.0 {
            step += (self.weight_decay * self.lr) * *p;
        }
        *m = mm;
        *v = vv;
        *p -= step;
    }
}

/// `mm_to_bf16` / `mm_to_f16`: the `half` crate's conversions (round to nearest even).
pub fn to_half(value: f32, to: super::plan::Elem) -> u16 {
    match to {
        super::plan::Elem::Bf16 => half::bf16::from_f32(value).to_bits(),
        super::plan::Elem::F16 => half::f16::from_f32(value).to_bits(),
        super::plan::Elem::F32 => unreachable!("an f32 operand is never converted"),
    }
}

pub fn from_half(bits: u16, from: super::plan::Elem) -> f32 {
    match from {
        super::plan::Elem::Bf16 => half::bf16::from_bits(bits).to_f32(),
        super::plan::Elem::F16 => half::f16::from_bits(bits).to_f32(),
        super::plan::Elem::F32 => unreachable!("an f32 operand is stored as f32"),
    }
}
