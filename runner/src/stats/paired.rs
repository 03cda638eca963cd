//! The estimate and interval of a blocked design (stats internals: per-block log ratios ->
//! Hodges-Lehmann estimate and the interval that inverts the signed-rank test).
//!
//! Why these and not a bootstrap of the mean: inside a block the configs run in a shuffled
//! order, so under any drift the block's log ratio is the true effect plus a difference of
//! noise whose sign is a coin flip. Its distribution is symmetric about the effect, however
//! the machine drifts, steps or jitters. The signed-rank test, its Hodges-Lehmann estimate
//! (the median of the Walsh averages `(d_i + d_j) / 2`, `i <= j`) and the interval of Walsh
//! averages between the order statistics the test's null distribution names (Tukey's
//! construction) are exact for every symmetric distribution: coverage is at least nominal at
//! any number of blocks, with no normality and no resampling. A drift step that lands inside
//! a block gives that block one large ratio; the mean follows it, the Walsh median does not.
//!
//! **Test and interval from one count.** The signed-rank statistic `W+` is the number of
//! positive Walsh averages, so the test is read off the same averages as the interval: the
//! two-sided p-value is `2 min(F(m - A), F(m - B))`, `A` and `B` the averages above and below
//! zero, `m` their number and `F` the null CDF of `W+` for continuous data (exact to 50 blocks,
//! the normal approximation beyond). Zero lies outside the `1 - e` interval exactly when
//! `p <= e`: the test and the interval invert each other, with ties and zeros too, which count
//! on neither side (a conservative choice).
//!
//! **Printed values** ([`bounded`]). A stage that prints coarse figures (whole milliseconds of
//! a 10 ms stage) makes most log ratios exactly 0: their distribution is no longer symmetric
//! about the effect, and no test on the rounded values alone is valid. Each printed value is
//! then read as an interval `v ± q/2` (`q` the resolution, `stats::resolution`), which bounds
//! each block's true log ratio between a lower and an upper value. The interval's lower end is
//! taken from the lower bounds and its upper end from the upper bounds, and the test likewise:
//! the order statistics of Walsh averages only grow with each value, so the bounded interval
//! holds the interval of the unrounded values, and its coverage is at least nominal whatever
//! the printing hid. With continuous values the bounds coincide and nothing changes.

use super::dist::normal_isf;
use super::rank::{signed_rank_cdf, signed_rank_null_cdf, EXACT_MAX};

/// Number of Walsh averages of `n` values.
fn walsh_count(n: usize) -> u64 {
    (n as u64) * (n as u64 + 1) / 2
}

/// Walsh averages of `sorted` (ascending) at most `v`, computed as the k-th search does.
fn count_at_most(sorted: &[f64], v: f64) -> u64 {
    let n = sorted.len();
    // `end`: one past the largest j with (x_i + x_j) / 2 <= v; it only moves down as i grows.
    let mut end = n;
    let mut count = 0u64;
    for i in 0..n {
        while end > i && (sorted[i] + sorted[end - 1]) / 2.0 > v {
            end -= 1;
        }
        if end <= i {
            break;
        }
        count += (end - i) as u64;
    }
    count
}

/// Walsh averages of `sorted` (ascending) strictly below `v`.
fn count_below(sorted: &[f64], v: f64) -> u64 {
    let n = sorted.len();
    let mut end = n;
    let mut count = 0u64;
    for i in 0..n {
        while end > i && (sorted[i] + sorted[end - 1]) / 2.0 >= v {
            end -= 1;
        }
        if end <= i {
            break;
        }
        count += (end - i) as u64;
    }
    count
}

/// The largest Walsh average at most `v` (NaN when there is none).
fn largest_at_most(sorted: &[f64], v: f64) -> f64 {
    let n = sorted.len();
    let mut end = n;
    let mut best = f64::NAN;
    for i in 0..n {
        while end > i && (sorted[i] + sorted[end - 1]) / 2.0 > v {
            end -= 1;
        }
        if end <= i {
            break;
        }
        let w = (sorted[i] + sorted[end - 1]) / 2.0;
        if best.is_nan() || w > best {
            best = w;
        }
    }
    best
}

/// Up to this many Walsh averages are listed and selected from; beyond, they are searched
/// for without being listed (400 blocks list 80,200).
const LISTED_MAX: u64 = 1 << 17;

/// The Walsh averages of some values, ready for order statistics: listed once when there are
/// few enough, else searched for on the sorted values, so memory stays linear at any number
/// of blocks.
pub(crate) struct WalshAverages {
    sorted: Vec<f64>,
    listed: Option<Vec<f64>>,
}

impl WalshAverages {
    pub(crate) fn of(d: &[f64]) -> WalshAverages {
        let sorted = sorted_copy(d);
        let listed = (walsh_count(sorted.len()) <= LISTED_MAX).then(|| {
            let mut all = Vec::with_capacity(walsh_count(sorted.len()) as usize);
            for (i, a) in sorted.iter().enumerate() {
                all.extend(sorted[i..].iter().map(|b| (a + b) / 2.0));
            }
            all
        });
        WalshAverages { sorted, listed }
    }

    fn count(&self) -> u64 {
        walsh_count(self.sorted.len())
    }

    /// The `k`-th smallest average (1-based), `k` in `1..=count`. Listed: selection. Searched:
    /// bisection on the value with a linear count per step, then the largest average at or
    /// below the bracket's top.
    fn kth(&mut self, k: u64) -> f64 {
        if let Some(all) = self.listed.as_mut() {
            let (_, kth, _) = all.select_nth_unstable_by(k as usize - 1, f64::total_cmp);
            return *kth;
        }
        kth_searched(&self.sorted, k)
    }

    /// Averages strictly above zero.
    fn above_zero(&self) -> u64 {
        self.count() - count_at_most(&self.sorted, 0.0)
    }

    /// Averages strictly below zero.
    fn below_zero(&self) -> u64 {
        count_below(&self.sorted, 0.0)
    }

    /// The median of the averages: the Hodges-Lehmann estimate. NaN for no values.
    pub(crate) fn median(&mut self) -> f64 {
        let m = self.count();
        match m {
            0 => f64::NAN,
            _ if m % 2 == 1 => self.kth(m.div_ceil(2)),
            _ => (self.kth(m / 2) + self.kth(m / 2 + 1)) / 2.0,
        }
    }

    /// The `1 - error` interval: the averages `k` in from each end, `k` from [`tail_count`];
    /// `None` when there are too few values for that level (fewer than 6 at 95%).
    pub(crate) fn interval(&mut self, error: f64) -> Option<(f64, f64)> {
        let k = tail_count(self.sorted.len(), error);
        if k == 0 {
            return None;
        }
        let m = self.count();
        Some((self.kth(k), self.kth(m + 1 - k)))
    }
}

/// The `k`-th smallest Walsh average of `sorted` without listing them.
fn kth_searched(sorted: &[f64], k: u64) -> f64 {
    let n = sorted.len();
    let (mut lo, mut hi) = (sorted[0] - (sorted[n - 1] - sorted[0]).abs() - 1.0, sorted[n - 1]);
    // count(lo) < k <= count(hi) throughout; 200 halvings reach adjacent floats for any
    // realistic spread of log ratios.
    for _ in 0..200 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if count_at_most(sorted, mid) >= k {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    largest_at_most(sorted, hi)
}

fn sorted_copy(d: &[f64]) -> Vec<f64> {
    let mut v = d.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// The Hodges-Lehmann estimate of the centre of `d`: the median of its Walsh averages. NaN
/// for no values.
pub fn hodges_lehmann(d: &[f64]) -> f64 {
    WalshAverages::of(d).median()
}

/// How many Walsh averages each tail of the interval leaves out at two-sided error `error`:
/// the largest `k` with `F(k - 1) <= error / 2`, `F` the null CDF of `W+`
/// ([`signed_rank_null_cdf`]). Zero means no bounded interval reaches that level with `n`
/// values.
pub(crate) fn tail_count(n: usize, error: f64) -> u64 {
    if n == 0 || error.is_nan() || error <= 0.0 {
        return 0;
    }
    let half = error / 2.0;
    if n <= EXACT_MAX {
        // The count of w with F(w) <= half is that k.
        let cdf = signed_rank_cdf(n);
        return cdf.iter().take_while(|&&p| p <= half * (1.0 + 1e-12)).count() as u64;
    }
    // F(w) = Phi((w + 1 - mean) / sd) beyond the exact range, so F(k - 1) <= half exactly when
    // k <= mean - z sd.
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
    let k = (mean - normal_isf(half) * sd).floor();
    if k < 1.0 {
        0
    } else {
        k as u64
    }
}

/// The paired analysis of per-block log ratios known to lie between `lower` and `upper` (equal
/// for values measured to the last digit): the Hodges-Lehmann estimate of `estimate_from`, the
/// `1 - error` interval from the bounds, and the two-sided signed-rank p-value that inverts it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bounded {
    pub estimate: f64,
    pub interval: Option<(f64, f64)>,
    pub p: f64,
}

/// See [`Bounded`] and the module docs. The slices have one value per block, in any order.
pub(crate) fn bounded(estimate_from: &[f64], lower: &[f64], upper: &[f64], error: f64) -> Bounded {
    let n = lower.len();
    let mut lo = WalshAverages::of(lower);
    let mut hi = WalshAverages::of(upper);
    let m = walsh_count(n);
    // P(W+ >= A) = F(m - A) by the null's symmetry; one side for each direction.
    let up = signed_rank_null_cdf(n, m - lo.above_zero());
    let down = signed_rank_null_cdf(n, m - hi.below_zero());
    let k = tail_count(n, error);
    let interval = (k > 0).then(|| (lo.kth(k), hi.kth(m + 1 - k)));
    Bounded {
        estimate: WalshAverages::of(estimate_from).median(),
        interval,
        p: (2.0 * up.min(down)).min(1.0),
    }
}

/// The `1 - error` interval of the centre of `d` (the Hodges-Lehmann estimate's): the Walsh
/// averages between the order statistics the signed-rank test's null distribution names.
/// `None` when `d` is too short for that level (fewer than 6 values at 95%).
pub fn walsh_interval(d: &[f64], error: f64) -> Option<(f64, f64)> {
    WalshAverages::of(d).interval(error)
}

/// Fewest values for which a bounded interval at two-sided error `error` exists.
pub fn min_values_for_interval(error: f64) -> usize {
    (1..=EXACT_MAX).find(|&n| tail_count(n, error) > 0).unwrap_or(EXACT_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_walsh(d: &[f64]) -> Vec<f64> {
        let mut w = Vec::new();
        for i in 0..d.len() {
            for j in i..d.len() {
                w.push((d[i] + d[j]) / 2.0);
            }
        }
        w.sort_by(f64::total_cmp);
        w
    }

    #[test]
    fn kth_walsh_average_is_the_listed_one() {
        let d = [0.3, -0.1, 0.05, 0.2, -0.4, 0.1, 0.1, 0.0];
        let listed = all_walsh(&d);
        let mut walsh = WalshAverages::of(&d);
        for (i, w) in listed.iter().enumerate() {
            assert_eq!(walsh.kth(i as u64 + 1), *w, "k = {}", i + 1);
            assert_eq!(kth_searched(&walsh.sorted, i as u64 + 1), *w, "k = {}", i + 1);
        }
    }

    /// The search used above the listing limit finds the same averages as the listing.
    #[test]
    fn searched_and_listed_walsh_averages_agree() {
        let d: Vec<f64> = (0..600).map(|i| (((i * 7919) % 1000) as f64 - 480.0) / 1e4).collect();
        let sorted = sorted_copy(&d);
        assert!(walsh_count(600) > LISTED_MAX);
        assert!(WalshAverages::of(&d).listed.is_none());
        let mut listed = Vec::new();
        for i in 0..600 {
            for j in i..600 {
                listed.push((sorted[i] + sorted[j]) / 2.0);
            }
        }
        listed.sort_by(f64::total_cmp);
        for k in [1u64, 2, 4_000, 90_150, 180_299, 180_300] {
            assert_eq!(kth_searched(&sorted, k), listed[k as usize - 1], "k = {k}");
        }
    }

    #[test]
    fn hodges_lehmann_is_the_median_of_walsh_averages() {
        let d = [1.0, 2.0, 9.0];
        // Walsh averages: 1, 1.5, 5, 2, 5.5, 9 -> median of 6 values: (2 + 5) / 2.
        assert_eq!(hodges_lehmann(&d), 3.5);
        assert_eq!(hodges_lehmann(&[4.0]), 4.0);
        assert!(hodges_lehmann(&[]).is_nan());
        // One wild block moves the mean, barely the estimate.
        let calm = [0.01, -0.01, 0.0, 0.02, -0.02, 0.005, -0.005, 0.01];
        let mut wild = calm;
        wild[3] = 0.3;
        assert!((hodges_lehmann(&wild) - hodges_lehmann(&calm)).abs() < 0.01);
    }

    /// The tail counts are those of the signed-rank tables: at n = 8 the 95% interval drops
    /// the 4 smallest and 4 largest of 36 Walsh averages (P(W+ <= 3) = 5/256 <= 0.025 <
    /// P(W+ <= 4) = 7/256); at n = 20, 53 (tables: critical value 52 for W <= 52).
    #[test]
    fn tail_counts_follow_the_null_distribution() {
        assert_eq!(tail_count(8, 0.05), 4);
        assert_eq!(tail_count(20, 0.05), 53);
        assert_eq!(tail_count(5, 0.05), 0);
        assert_eq!(tail_count(6, 0.05), 1);
        assert_eq!(min_values_for_interval(0.05), 6);
        // Normal approximation beyond the exact range: close to the exact count at its edge.
        let exact = tail_count(EXACT_MAX, 0.05) as f64;
        let n = EXACT_MAX as f64;
        let approx = (n * (n + 1.0) / 4.0 - 1.959_964 * (n * (n + 1.0) * (2.0 * n + 1.0) / 24.0).sqrt()).floor();
        assert!((exact - approx).abs() <= 2.0, "{exact} vs {approx}");
    }

    /// The test and the interval invert each other: zero is outside the `1 - e` interval exactly
    /// when `p <= e`, at every level, with ties and zeros among the values too.
    #[test]
    fn the_p_value_is_the_level_at_which_the_interval_leaves_zero() {
        let sets: [&[f64]; 4] = [
            &[0.3, -0.1, 0.05, 0.2, 0.4, 0.1, 0.15, 0.25],
            &[0.0, 0.0, -0.05, 0.0, 0.1, 0.1, 0.2, 0.0, 0.1, 0.3],
            &[0.02, 0.03, 0.01, 0.04, 0.05, 0.02, 0.03, 0.06, 0.01, 0.02, 0.03, 0.04],
            &[-0.2, -0.1, -0.3, 0.05, -0.15, -0.25, -0.1, -0.05, -0.2],
        ];
        for d in sets {
            let p = bounded(d, d, d, 0.05).p;
            for e in [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5] {
                let (lo, hi) = match bounded(d, d, d, e).interval {
                    Some(i) => i,
                    None => continue,
                };
                let excludes = lo > 0.0 || hi < 0.0;
                assert_eq!(excludes, p <= e * (1.0 + 1e-12), "{d:?} at {e}: [{lo}, {hi}], p = {p}");
            }
        }
    }

    /// Without ties the p-value is the signed-rank test's own: scipy 1.17's
    /// `wilcoxon([0.3, -0.12, 0.05, 0.2, -0.4, 0.1, 0.15, 0.01, 0.33, 0.27])` gives W = 14,
    /// p = 0.193359375 (exact). Where two values tie in size with opposite signs, their Walsh
    /// average is exactly zero and counts on neither side: more conservative than scipy's
    /// average ranks.
    #[test]
    fn without_ties_the_p_value_is_the_signed_rank_tests() {
        let d = [0.3, -0.12, 0.05, 0.2, -0.4, 0.1, 0.15, 0.01, 0.33, 0.27];
        let ours = bounded(&d, &d, &d, 0.05).p;
        assert!((ours - 0.193_359_375).abs() < 1e-12, "{ours}");
        assert!((super::super::rank::wilcoxon_signed_rank(&d).1 - ours).abs() < 1e-12);
        let tied = [0.3, -0.1, 0.05, 0.2, -0.4, 0.1, 0.15, 0.01, 0.33, 0.27];
        assert!(bounded(&tied, &tied, &tied, 0.05).p >= super::super::rank::wilcoxon_signed_rank(&tied).1);
    }

    /// Bounds widen each end by what the rounding could hide, never narrow it.
    #[test]
    fn bounds_widen_the_interval() {
        let d = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.105];
        let plain = bounded(&d, &d, &d, 0.05);
        // The 4th smallest and largest of 36 averages: 0 at the top, as if the values were exact.
        assert_eq!(plain.interval, Some((-0.0525, 0.0)));
        let lower: Vec<f64> = d.iter().map(|v| v - 0.1).collect();
        let upper: Vec<f64> = d.iter().map(|v| v + 0.1).collect();
        let b = bounded(&d, &lower, &upper, 0.05);
        let (lo, hi) = b.interval.unwrap();
        assert!(lo <= -0.1 && hi >= 0.1, "{lo} {hi}");
        assert!(b.p > 0.05 && b.estimate == 0.0);
    }

    #[test]
    fn interval_is_walsh_averages_k_in_from_each_end() {
        let d = [0.3, -0.1, 0.05, 0.2, -0.4, 0.1, 0.15, 0.0];
        let listed = all_walsh(&d);
        let (lo, hi) = walsh_interval(&d, 0.05).unwrap();
        assert_eq!((lo, hi), (listed[3], listed[listed.len() - 4]));
        assert!(lo <= hodges_lehmann(&d) && hodges_lehmann(&d) <= hi);
        assert_eq!(walsh_interval(&d[..5], 0.05), None);
    }
}
