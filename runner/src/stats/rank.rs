//! Rank tests and multiple-comparison control (stats internals: p-values behind verdicts).

use super::dist::normal_sf;

/// Average ranks (1-based) of `values` and the sizes of the tie groups.
fn ranks_with_ties(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let mut j = i + 1;
        while j < order.len() && values[order[j]] == values[order[i]] {
            j += 1;
        }
        // Positions i..j (0-based) share the average of ranks i+1..=j.
        let avg = (i + 1 + j) as f64 / 2.0;
        for &idx in &order[i..j] {
            ranks[idx] = avg;
        }
        if j - i > 1 {
            ties.push(j - i);
        }
        i = j;
    }
    (ranks, ties)
}

/// Number of arrangements giving each value of U for samples of sizes `m` and `n`: the
/// coefficients of the Gaussian binomial `prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)`. Every
/// partial product is itself a Gaussian binomial, so all intermediate counts stay non-negative.
fn mann_whitney_counts(m: usize, n: usize) -> Vec<f64> {
    let len = m * n + 1;
    let mut c = vec![0.0; len];
    c[0] = 1.0;
    for i in 1..=m {
        let shift = n + i;
        for k in (shift..len).rev() {
            c[k] -= c[k - shift];
        }
        for k in i..len {
            c[k] += c[k - i];
        }
    }
    c
}

/// Two-sided Mann-Whitney U test of `x` against `y`. Returns `(U1, p)` where `U1` is the
/// statistic of `x`. Follows `scipy.stats.mannwhitneyu(x, y)` with its defaults
/// (`method="auto"`, `use_continuity=True`): exact when there are no ties and at least one side
/// has at most 8 values, normal approximation otherwise. Empty input gives p = 1.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> (f64, f64) {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return (0.0, 1.0);
    }
    let all: Vec<f64> = x.iter().chain(y).copied().collect();
    let (ranks, ties) = ranks_with_ties(&all);
    let r1: f64 = ranks[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let n1n2 = (n1 * n2) as f64;
    let u = u1.max(n1n2 - u1);
    let exact = ties.is_empty() && (n1 <= 8 || n2 <= 8);
    let p = if exact {
        let counts = mann_whitney_counts(n1.min(n2), n1.max(n2));
        let total: f64 = counts.iter().sum();
        // U is an integer without ties; P(U >= u) by symmetry equals P(U <= n1 n2 - u).
        let k = (n1n2 - u).round() as usize;
        2.0 * counts[..=k].iter().sum::<f64>() / total
    } else {
        let n = (n1 + n2) as f64;
        let tie_term: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum();
        let var = n1n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
        if var <= 0.0 {
            // Every value tied: no evidence of any difference.
            1.0
        } else {
            let z = (u - n1n2 / 2.0 - 0.5) / var.sqrt();
            2.0 * normal_sf(z)
        }
    };
    (u1, p.clamp(0.0, 1.0))
}

/// Number of subsets of {1..n} with each possible rank sum: the null distribution of W+.
fn signed_rank_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut c = vec![0.0; max + 1];
    c[0] = 1.0;
    for r in 1..=n {
        for k in (r..=max).rev() {
            c[k] += c[k - r];
        }
    }
    c
}

/// Blocks up to which the signed-rank statistic's exact null distribution is kept once
/// computed and the paired interval uses it; above it, the normal approximation (as the test
/// does).
pub(crate) const EXACT_MAX: usize = 50;

/// The null CDF of W+ for `n` non-zero differences, `P(W+ <= w)` for `w` in `0..=n(n+1)/2`;
/// computed once per `n` (up to [`EXACT_MAX`]) and kept, since sequential
/// looks and simulations ask for the same few `n` again and again.
pub(super) fn signed_rank_cdf(n: usize) -> std::sync::Arc<Vec<f64>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<usize, Arc<Vec<f64>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().ok().and_then(|m| m.get(&n).cloned()) {
        return hit;
    }
    let counts = signed_rank_counts(n);
    let total: f64 = counts.iter().sum();
    let mut running = 0.0;
    let cdf: Arc<Vec<f64>> = Arc::new(
        counts
            .iter()
            .map(|c| {
                running += c;
                running / total
            })
            .collect(),
    );
    if n <= EXACT_MAX {
        if let Ok(mut m) = cache.lock() {
            m.insert(n, cdf.clone());
        }
    }
    cdf
}

/// The null CDF of `W+` for `n` continuous differences, `F(w) = P(W+ <= w)`: exact up to
/// [`EXACT_MAX`], beyond it `Phi((w + 1 - mean) / sd)`, the form whose quantiles the paired
/// interval's tail count uses (`stats::paired`), so that test and interval invert each other.
pub(crate) fn signed_rank_null_cdf(n: usize, w: u64) -> f64 {
    if n <= EXACT_MAX {
        let cdf = signed_rank_cdf(n);
        return cdf[(w as usize).min(cdf.len() - 1)];
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
    normal_sf((mean - w as f64 - 1.0) / sd)
}

/// Two-sided Wilcoxon signed-rank test of the differences `d` against 0. Returns
/// `(W, p)` with `W = min(W+, W-)`. Zero differences are dropped (`zero_method="wilcox"`).
/// Up to 50 non-zero differences the p-value is exact: from the tabled null distribution
/// without ties, and from the distribution of W+ given the tied (average) ranks with ties, as
/// recent scipy does. Beyond 50, the normal approximation with tie correction and no
/// continuity correction (`scipy.stats.wilcoxon`'s `correction=False` default). No non-zero
/// difference at all gives p = 1.
pub fn wilcoxon_signed_rank(d: &[f64]) -> (f64, f64) {
    let had_zeros = d.contains(&0.0);
    let nonzero: Vec<f64> = d.iter().copied().filter(|v| *v != 0.0).collect();
    let n = nonzero.len();
    if n == 0 {
        return (0.0, 1.0);
    }
    let abs: Vec<f64> = nonzero.iter().map(|v| v.abs()).collect();
    let (ranks, ties) = ranks_with_ties(&abs);
    let w_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(v, _)| **v > 0.0)
        .map(|(_, r)| r)
        .sum();
    let total = (n * (n + 1)) as f64 / 2.0;
    let w = w_plus.min(total - w_plus);
    let p = if n <= 50 && ties.is_empty() && !had_zeros {
        2.0 * signed_rank_cdf(n)[w.round() as usize]
    } else if n <= 50 {
        // Ties: the exact distribution of W+ given these (average) ranks, each sign a coin flip.
        tied_signed_rank_p(&ranks, w)
    } else {
        let nf = n as f64;
        let tie_term: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum();
        let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
        if var <= 0.0 {
            1.0
        } else {
            let z = (w - total / 2.0) / var.sqrt();
            2.0 * normal_sf(-z)
        }
    };
    (w, p.clamp(0.0, 1.0))
}

/// The exact two-sided p-value of W = min(W+, W-) given average ranks `ranks` (multiples of
/// one half): each rank's sign is a fair coin under the null. Ranks are doubled to integers,
/// and the null distribution of their signed sum is counted by dynamic programming.
fn tied_signed_rank_p(ranks: &[f64], w: f64) -> f64 {
    let doubled: Vec<usize> = ranks.iter().map(|r| (r * 2.0).round() as usize).collect();
    let total: usize = doubled.iter().sum();
    let mut counts = vec![0.0f64; total + 1];
    counts[0] = 1.0;
    for &r in &doubled {
        for k in (r..=total).rev() {
            counts[k] += counts[k - r];
        }
    }
    let all: f64 = counts.iter().sum();
    let at_most = (w * 2.0).round() as usize;
    (2.0 * counts[..=at_most.min(total)].iter().sum::<f64>() / all).min(1.0)
}

/// The smallest two-sided p-value an exact rank test can produce with `n` repetitions per side
/// (Mann-Whitney, equal sizes) or `n` blocks (signed-rank). Below it, no data can be significant.
pub fn min_attainable_p(n: usize, paired: bool) -> f64 {
    if paired {
        2.0 / 2f64.powi(n as i32)
    } else {
        // 2 / C(2n, n)
        let mut c: f64 = 1.0;
        for i in 0..n {
            c = c * (2 * n - i) as f64 / (i + 1) as f64;
            if c.is_infinite() {
                return 0.0;
            }
        }
        2.0 / c
    }
}

/// Benjamini-Hochberg adjusted p-values, in input order. Non-finite inputs are treated as 1 so
/// that a degenerate comparison never makes the others look more significant.
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let clean: Vec<f64> = p_values
        .iter()
        .map(|p| if p.is_finite() { p.clamp(0.0, 1.0) } else { 1.0 })
        .collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| clean[a].total_cmp(&clean[b]));
    let mut adjusted = vec![0.0; m];
    let mut running = 1.0f64;
    for (rank0, &idx) in order.iter().enumerate().rev() {
        let scaled = clean[idx] * m as f64 / (rank0 + 1) as f64;
        running = running.min(scaled);
        // max with the raw value only undoes float rounding of p * m / m.
        adjusted[idx] = running.min(1.0).max(clean[idx]);
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_average_ties() {
        let (r, t) = ranks_with_ties(&[10.0, 20.0, 10.0, 30.0]);
        assert_eq!(r, vec![1.5, 3.0, 1.5, 4.0]);
        assert_eq!(t, vec![2]);
    }

    #[test]
    fn exact_counts_sum_to_binomial() {
        let c = mann_whitney_counts(3, 4);
        assert_eq!(c.iter().sum::<f64>(), 35.0);
        assert_eq!(c, vec![1., 1., 2., 3., 4., 4., 5., 4., 4., 3., 2., 1., 1.]);
        assert_eq!(signed_rank_counts(4).iter().sum::<f64>(), 16.0);
    }

    #[test]
    fn bh_known_example() {
        let adj = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005]);
        let expected = [0.02, 0.04, 0.04, 0.02];
        for (a, e) in adj.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(benjamini_hochberg(&[f64::NAN, 0.5]), vec![1.0, 1.0]);
        assert!(benjamini_hochberg(&[]).is_empty());
    }

    /// With ties, the exact p-value is the share of sign patterns whose W is as extreme,
    /// counted here by brute force over all 2^n of them.
    #[test]
    fn tied_signed_rank_p_counts_every_sign_pattern() {
        let d = [0.3, 0.3, -0.1, 0.2, 0.2, 0.2, 0.5, -0.3, 0.4];
        let (w, p) = wilcoxon_signed_rank(&d);
        let abs: Vec<f64> = d.iter().map(|v: &f64| v.abs()).collect();
        let (ranks, ties) = ranks_with_ties(&abs);
        assert!(!ties.is_empty());
        let total: f64 = ranks.iter().sum();
        let n = d.len();
        let extreme = (0..1u32 << n)
            .filter(|mask| {
                let plus: f64 = (0..n).filter(|i| mask & (1 << i) != 0).map(|i| ranks[i]).sum();
                plus.min(total - plus) <= w + 1e-9
            })
            .count();
        assert!(
            (p - extreme as f64 / f64::from(1u32 << n)).abs() < 1e-12,
            "{p} vs {extreme}"
        );
        // All of one sign, tied or not: the smallest p the test can give, 2 / 2^n.
        let same = [0.1, 0.1, 0.1, 0.2, 0.2, 0.3, 0.4, 0.4];
        assert!((wilcoxon_signed_rank(&same).1 - 2.0 / 256.0).abs() < 1e-15);
    }

    #[test]
    fn min_p_values() {
        assert!((min_attainable_p(7, true) - 2.0 / 128.0).abs() < 1e-15);
        assert!((min_attainable_p(3, false) - 0.1).abs() < 1e-15);
    }
}
