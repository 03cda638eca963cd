//! The distributions the statistics need: normal and Student's t tails and their inverses
//! (stats internals). Student's t and the normal quantile come from `statrs`; the normal tail
//! is `libm`'s `erfc` (musl's, accurate to an ulp or two), because `statrs`'s `erfc` is off by
//! about 1e-10 relative, which p-values far in the tail would show. `stats/tests.rs` checks
//! the results that use them against scipy.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

fn standard_normal() -> Normal {
    Normal::standard()
}

/// Upper tail of the standard normal: P(Z > z).
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * libm::erfc(z / std::f64::consts::SQRT_2)
}

/// Inverse of the normal upper tail: the `z` with P(Z > z) = p. Computed as -Phi^-1(p), so a
/// small `p` loses no digits to `1 - p`.
pub(crate) fn normal_isf(p: f64) -> f64 {
    -standard_normal().inverse_cdf(p)
}

/// Student's t with `df` degrees of freedom; `None` for a `df` that is not positive.
fn student_t(df: f64) -> Option<StudentsT> {
    StudentsT::new(0.0, 1.0, df).ok()
}

/// Quantile of Student's t: the `t` with P(T <= t) = p (NaN for `df` <= 0).
pub(crate) fn student_t_quantile(p: f64, df: f64) -> f64 {
    student_t(df).map_or(f64::NAN, |d| d.inverse_cdf(p))
}

/// Upper tail of Student's t: P(T > t) (NaN for `df` <= 0).
pub(crate) fn student_t_sf(t: f64, df: f64) -> f64 {
    student_t(df).map_or(f64::NAN, |d| d.sf(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn normal_tail_matches_tables() {
        // Reference values of 1 - Phi(z) (Abramowitz & Stegun, 26.2).
        assert!(close(normal_sf(0.0), 0.5, 1e-14));
        assert!(close(normal_sf(1.0), 0.158_655_253_931_457_05, 1e-12));
        assert!(close(normal_sf(1.959_963_984_540_054), 0.025, 1e-11));
        assert!(close(normal_sf(3.0), 1.349_898_031_630_094_5e-3, 1e-11));
        assert!(close(normal_sf(6.0), 9.865_876_450_376_98e-10, 1e-10));
        assert!(close(normal_sf(-1.0), 0.841_344_746_068_542_9, 1e-12));
        for p in [0.5, 0.025, 1e-3, 1e-9] {
            assert!(close(normal_sf(normal_isf(p)), p, 1e-9), "{p}");
        }
        assert!(close(normal_isf(0.025), 1.959_963_984_540_054, 1e-11));
    }

    #[test]
    fn student_t_matches_tables() {
        // Two-sided 95% critical values of t.
        assert!(close(student_t_quantile(0.975, 1.0), 12.706_204_736_174_7, 1e-9));
        assert!(close(student_t_quantile(0.975, 10.0), 2.228_138_851_986_27, 1e-9));
        assert!(close(student_t_quantile(0.99, 5.0), 3.364_929_998_907_36, 1e-9));
        assert!(close(student_t_sf(2.0, 3.0), 0.069_662_984_279_421_5, 1e-9));
    }
}
