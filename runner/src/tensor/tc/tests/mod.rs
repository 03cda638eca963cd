//! The tensor-core step without a GPU: `mlp_math.h` built for the host and held to the Rust
//! reference and the `half` crate (here); step plans run by a host interpreter (`host.rs`: the
//! kernels' math, cuBLAS's column-major products with rounded operands) against dfdx's autodiff
//! and the CPU engine, and the `cublasGemmEx` calls a bf16 step asks for (`plans.rs`).

mod decide;
mod host;
mod plans;

use super::math::{self, AdamArgs, Control};
use super::plan::Elem;
use crate::arch::Activation;
use crate::tensor::native::random;
use crate::tensor::optim::LossScaler;

/// `mlp_math.h` compiled for the host (`cc`), with an exported wrapper per function.
struct HostMath {
    _dir: tempfile::TempDir,
    lib: libloading::Library,
}

const WRAPPERS: &str = r#"
#include "mlp_math.h"
unsigned short t_bf16(float v) { return mm_to_bf16(v); }
unsigned short t_f16(float v) { return mm_to_f16(v); }
float t_act(int a, float z) { return mm_act(a, z); }
float t_slope(int a, float z) { return mm_slope(a, z); }
float t_dropout(unsigned long long seed, unsigned long long step, unsigned int layer,
                unsigned long long index, float p) { return mm_dropout(seed, step, layer, index, p); }
void t_control(MmControl *c, double sumsq, float max_norm, int scaled) { mm_control(c, sumsq, max_norm, scaled); }
void t_adam(float *p, float *m, float *v, float g, float coef, int t, float lr, float b1, float b2,
            float eps, float wd) { mm_adam(p, m, v, g, coef, t, lr, b1, b2, eps, wd); }
unsigned long t_control_size(void) { return sizeof(MmControl); }
"#;

impl HostMath {
    fn build() -> HostMath {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mlp_math.h"), super::MATH_H).unwrap();
        let src = dir.path().join("wrappers.c");
        std::fs::write(&src, WRAPPERS).unwrap();
        let lib = dir.path().join("libmlpmath.so");
        let out = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-std=c99", "-Wall", "-Werror", "-o"])
            .arg(&lib)
            .arg(&src)
            .arg("-lm")
            .output()
            .expect("a C compiler (cc) to build mlp_math.h for the host");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // SAFETY: the library has no initialisers.
        let lib = unsafe { libloading::Library::new(&lib) }.unwrap();
        HostMath { _dir: dir, lib }
    }

    /// The wrapper `name` as a function of type `F`.
    fn f<F: Copy>(&self, name: &str) -> F {
        // SAFETY: every caller names a wrapper above with its C signature as `F`.
        unsafe { *self.lib.get::<F>(name.as_bytes()).unwrap() }
    }
}

/// Bit patterns to convert: a stride through all 2^32, and the edges of both formats.
fn patterns() -> Vec<u32> {
    let mut bits: Vec<u32> = (0..=u32::MAX).step_by(4099).collect();
    let edges = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        65504.0,
        65519.0,
        65520.0,
        -65520.0,
        1e-8,
        2f32.powi(-24),
        2f32.powi(-25),
        3.0 * 2f32.powi(-26),
        2f32.powi(-14),
        2f32.powi(-15),
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        1.0 + 2f32.powi(-8),
        1.0 + 3.0 * 2f32.powi(-8),
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    bits.extend(edges.iter().map(|f| f.to_bits()));
    // NaNs: quiet, signalling, with payloads high and low, both signs.
    bits.extend([
        0x7fc0_0000,
        0xffc0_0000,
        0x7f80_0001,
        0xff80_0001,
        0x7fa0_0000,
        0x7f80_2000,
        0x7fff_ffff,
    ]);
    // Around every f16 and bf16 rounding tie near 1 and in the f16 subnormals.
    for base in [1.0f32, 2f32.powi(-20), 2f32.powi(-24), 3e4] {
        let b = base.to_bits();
        bits.extend((b.saturating_sub(64)..b + 64).chain([b | 0x1000, b | 0x8000, b | 0x18000]));
    }
    bits
}

#[test]
fn the_kernels_casts_round_as_the_half_crate_does_including_subnormals_inf_and_nan() {
    let c = HostMath::build();
    let bf16: extern "C" fn(f32) -> u16 = c.f("t_bf16");
    let f16: extern "C" fn(f32) -> u16 = c.f("t_f16");
    let mut checked = 0;
    for bits in patterns() {
        let v = f32::from_bits(bits);
        let (want_bf, want_h) = (math::to_half(v, Elem::Bf16), math::to_half(v, Elem::F16));
        assert_eq!(bf16(v), want_bf, "bf16 of {v:e} ({bits:#010x})");
        assert_eq!(f16(v), want_h, "f16 of {v:e} ({bits:#010x})");
        checked += 1;
    }
    assert!(checked > 1_000_000, "{checked} patterns");
    // Spot checks against known encodings: ties to even, overflow, the smallest subnormal, NaN.
    assert_eq!(f16(65519.0), 0x7bff, "65519 rounds down to 65504");
    assert_eq!(f16(65520.0), 0x7c00, "65520 rounds up to infinity");
    assert_eq!(f16(2f32.powi(-24)), 0x0001);
    assert_eq!(f16(2f32.powi(-25)), 0x0000, "a tie rounds to even (zero)");
    assert_eq!(f16(3.0 * 2f32.powi(-26)), 0x0001);
    assert_eq!(bf16(1.0 + 2f32.powi(-8)), 0x3f80, "a tie rounds to even");
    assert_eq!(bf16(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82, "a tie rounds to even (up)");
    assert_eq!(bf16(f32::NAN) & 0x7fc0, 0x7fc0, "NaN stays a quiet NaN");
    assert_eq!(
        f16(f32::from_bits(0x7f80_0001)) & 0x7e00,
        0x7e00,
        "a signalling NaN becomes quiet"
    );
}

#[test]
fn the_kernels_activations_dropout_and_adam_are_the_rust_references() {
    let c = HostMath::build();
    let act: extern "C" fn(i32, f32) -> f32 = c.f("t_act");
    let slope: extern "C" fn(i32, f32) -> f32 = c.f("t_slope");
    for a in [Activation::Relu, Activation::Gelu, Activation::Tanh] {
        for z in random(2000, 1)
            .iter()
            .map(|z| z * 6.0)
            .chain([0.0, -0.0, 1e-30, 40.0, -40.0])
        {
            let code = math::act_code(a);
            let close = |x: f32, y: f32| (x - y).abs() <= 2e-7 * (1.0 + y.abs());
            assert!(close(act(code, z), math::act(a, z)), "{a:?} at {z}");
            assert!(close(slope(code, z), math::slope(a, z)), "{a:?}' at {z}");
        }
    }
    let dropout: extern "C" fn(u64, u64, u32, u64, f32) -> f32 = c.f("t_dropout");
    let mut dropped = 0usize;
    for i in 0..20_000u64 {
        let (seed, step, layer) = (i.wrapping_mul(0x1234_5678_9abc), i / 7, (i % 3) as u32);
        let got = dropout(seed, step, layer, i, 0.25);
        assert_eq!(got, math::dropout(seed, step, layer, i, 0.25));
        assert!(got == 0.0 || got == 1.0 / 0.75, "{got}");
        dropped += usize::from(got == 0.0);
        assert_eq!(dropout(seed, step, layer, i, 0.0), 1.0);
    }
    assert!(
        (4_500..5_500).contains(&dropped),
        "{dropped} of 20000 dropped at p = 0.25"
    );
    // Another step draws another mask.
    let masks = |step| {
        (0..256u64)
            .map(|i| math::dropout(7, step, 0, i, 0.5))
            .collect::<Vec<_>>()
    };
    assert_ne!(masks(1), masks(2));

    type Adam = extern "C" fn(*mut f32, *mut f32, *mut f32, f32, f32, i32, f32, f32, f32, f32, f32);
    let adam: Adam = c.f("t_adam");
    let args = AdamArgs::new(3e-3, 0.01);
    let (mut p, mut m, mut v) = (0.5f32, 0.0f32, 0.0f32);
    let (mut rp, mut rm, mut rv) = (p, m, v);
    for (t, g) in random(50, 2).into_iter().enumerate() {
        let t = t as i32 + 1;
        adam(
            &mut p,
            &mut m,
            &mut v,
            g,
            0.5,
            t,
            args.lr,
            args.beta1,
            args.beta2,
            args.eps,
            args.weight_decay,
        );
        args.update(&mut rp, &mut rm, &mut rv, g, 0.5, t);
        assert_eq!((p, m, v), (rp, rm, rv), "step {t}");
    }
}

/// The control kernel against `LossScaler`, on a scripted run of clean and overflowing steps:
/// the same scale after every step, the same skips, and Adam's count only on clean steps.
#[test]
fn loss_scaling_on_the_device_follows_the_host_scaler_step_for_step() {
    let c = HostMath::build();
    let size: extern "C" fn() -> std::ffi::c_ulong = c.f("t_control_size");
    assert_eq!(
        size() as usize,
        std::mem::size_of::<Control>(),
        "MmControl and Control agree"
    );
    let control: extern "C" fn(*mut Control, f64, f32, i32) = c.f("t_control");
    let (mut device, mut reference, mut host) = (Control::start(true), Control::start(true), LossScaler::new());
    let mut script: Vec<bool> = vec![false; 3];
    script.extend([true, true, false, true]);
    script.extend(std::iter::repeat_n(false, LossScaler::GROWTH_INTERVAL as usize + 5));
    script.push(true);
    for (i, overflow) in script.iter().enumerate() {
        let before = device.loss_scale;
        let sumsq = if *overflow {
            f64::INFINITY
        } else {
            4.0 * f64::from(before).powi(2)
        };
        control(&mut device, sumsq, 0.0, 1);
        reference.decide(sumsq, 0.0, true);
        let mut grad = [if *overflow { f32::INFINITY } else { 2.0 * host.scale() }];
        let applied = host.unscale([&mut grad[..]]);
        assert_eq!(device, reference, "step {i}");
        assert_eq!(device.skip == 0, applied, "step {i}");
        assert_eq!(device.loss_scale, host.scale(), "step {i}");
        assert_eq!(device.skipped, host.skipped(), "step {i}");
        if applied {
            assert_eq!(
                (device.coef, grad[0]),
                (1.0 / before, 2.0),
                "step {i}: unscaled by the same factor"
            );
        }
    }
    assert_eq!(device.skipped, 4);
    assert_eq!(device.step, script.len() as u64);
    assert_eq!(device.t as usize, script.len() - 4, "Adam counts clean steps only");
    assert_eq!(
        device.loss_scale,
        LossScaler::INITIAL / 8.0,
        "halved 4 times, doubled once"
    );

    // Clipping: the norm of the unscaled gradients, PyTorch's formula.
    let mut clip = Control::start(true);
    let scale = f64::from(clip.loss_scale);
    control(&mut clip, (10.0 * scale).powi(2), 1.0, 1);
    assert!(
        (clip.coef - 1.0 / clip.loss_scale * (1.0 / (10.0 + 1e-6))).abs() < 1e-12,
        "{clip:?}"
    );
    // Without scaling nothing is skipped: a non-finite gradient reaches the weights, as on the
    // reference path.
    let mut plain = Control::start(false);
    control(&mut plain, f64::NAN, 0.0, 0);
    assert_eq!((plain.skip, plain.t, plain.loss_scale, plain.skipped), (0, 1, 1.0, 0));
}
