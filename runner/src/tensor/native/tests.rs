//! The native engine's numerics: the vectorized activations against libm.

/// Within a few ulp of the standard library over the whole useful range, including the
/// tails where a sigmoid saturates and the small arguments where tanh(x) ~ x.
#[test]
fn sigmoid_and_tanh_match_the_standard_library() {
    let xs: Vec<f32> = (-200_000..=200_000)
        .map(|i| i as f32 * 1e-4)
        .chain([-100.0, -88.0, -30.0, 1e-6, -1e-6, 0.0, 30.0, 88.0, 100.0])
        .collect();
    let mut sig = xs.clone();
    super::sigmoid_in_place(&mut sig);
    let mut th = xs.clone();
    super::tanh_in_place(&mut th);
    let (mut worst_sig, mut worst_tanh) = (0.0f64, 0.0f64);
    for ((&x, &s), &t) in xs.iter().zip(&sig).zip(&th) {
        let want_s = 1.0 / (1.0 + (-f64::from(x)).exp());
        let want_t = f64::from(x).tanh();
        worst_sig = worst_sig.max((f64::from(s) - want_s).abs() / want_s.max(1e-30));
        worst_tanh = worst_tanh.max((f64::from(t) - want_t).abs() / want_t.abs().max(1e-30));
    }
    assert!(worst_sig < 1e-6, "sigmoid: worst relative error {worst_sig:e}");
    assert!(worst_tanh < 1e-6, "tanh: worst relative error {worst_tanh:e}");
}
