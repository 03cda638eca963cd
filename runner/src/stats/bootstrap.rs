//! Seeded percentile bootstrap (stats internals: used by comparisons and report CI columns).

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Empirical quantile of an ascending slice with linear interpolation between order
/// statistics (the "type 7" definition also used by numpy's default).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            let frac = pos - lo as f64;
            sorted[lo] + (sorted[hi] - sorted[lo]) * frac
        }
    }
}

/// Source of resampling indices. Two indices per 64-bit draw with Lemire's multiply-shift
/// reduction: the bias is at most n / 2^32, far below bootstrap noise, and it keeps the hot
/// loop cheap enough that 10,000 resamples stay fast in unoptimized builds.
///
/// The generator's output is read in blocks of 32-bit words, in the order `next_u64` would
/// hand them out (low half first), so the indices are those of one `next_u64` per two draws.
struct IndexSource {
    rng: ChaCha8Rng,
    words: Box<[u32; WORDS]>,
    next: usize,
}

/// Words read from the generator at once.
const WORDS: usize = 1024;

impl IndexSource {
    fn new(seed: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            words: Box::new([0; WORDS]),
            next: WORDS,
        }
    }

    #[inline]
    fn index(&mut self, n: usize) -> usize {
        if self.next == WORDS {
            let mut bytes = [0u8; WORDS * 4];
            self.rng.fill_bytes(&mut bytes);
            for (w, b) in self.words.iter_mut().zip(bytes.chunks_exact(4)) {
                *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            self.next = 0;
        }
        let x = self.words[self.next];
        self.next += 1;
        ((u64::from(x) * n as u64) >> 32) as usize
    }
}

/// Median of a with-replacement resample of `sorted` (ascending), without materialising it:
/// count how often each position is drawn, then walk the cumulative counts to the middle rank.
fn resampled_median(src: &mut IndexSource, sorted: &[f64], counts: &mut [u32]) -> f64 {
    let n = sorted.len();
    counts.fill(0);
    for _ in 0..n {
        counts[src.index(n)] += 1;
    }
    median_from_counts(sorted, counts)
}

/// Median of the multiset holding `counts[i]` copies of `sorted[i]`.
fn median_from_counts(sorted: &[f64], counts: &[u32]) -> f64 {
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    if total == 0 {
        return f64::NAN;
    }
    // 0-based ranks of the middle order statistics.
    let (r_lo, r_hi) = if total % 2 == 1 {
        (total / 2, total / 2)
    } else {
        (total / 2 - 1, total / 2)
    };
    let (mut lo, mut cum) = (None, 0usize);
    for (value, &count) in sorted.iter().zip(counts) {
        cum += count as usize;
        if lo.is_none() && cum > r_lo {
            lo = Some(*value);
        }
        if cum > r_hi {
            return (lo.unwrap_or(*value) + value) / 2.0;
        }
    }
    f64::NAN
}

fn sorted_copy(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Percentile interval of `stats` at the given confidence, ignoring non-finite replicates.
/// Returns `None` when more than 1% of the replicates are non-finite: the interval would then
/// describe a conditioned distribution rather than the statistic.
pub(crate) fn percentile_interval(mut stats: Vec<f64>, confidence: f64) -> Option<(f64, f64)> {
    let total = stats.len();
    stats.retain(|v| v.is_finite());
    if total == 0 || (total - stats.len()) * 100 > total {
        return None;
    }
    let tail = (1.0 - confidence) / 2.0;
    Some((
        quantile_selected(&mut stats, tail),
        quantile_selected(&mut stats, 1.0 - tail),
    ))
}

/// [`quantile_sorted`] of `values` without sorting them: the two order statistics it
/// interpolates between are found by selection, in linear time (the same values a sort gives,
/// so the same result). Reorders `values`.
fn quantile_selected(values: &mut [f64], q: f64) -> f64 {
    let n = values.len();
    if n < 2 {
        return quantile_sorted(values, q);
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let frac = pos - lo as f64;
    let (_, &mut below, above) = values.select_nth_unstable_by(lo, f64::total_cmp);
    if pos.ceil() as usize == lo {
        return below;
    }
    // Everything after position `lo` is at least `below`: its least is the next order statistic.
    let next = above.iter().copied().min_by(f64::total_cmp).unwrap_or(below);
    below + (next - below) * frac
}

/// Bootstrap replicates of `median(candidate) / median(baseline)`, resampling each side
/// independently.
pub(crate) fn ratio_of_medians_replicates(
    baseline: &[f64],
    candidate: &[f64],
    resamples: usize,
    seed: u64,
) -> Vec<f64> {
    let mut src = IndexSource::new(seed);
    let (a, b) = (sorted_copy(baseline), sorted_copy(candidate));
    let (mut ca, mut cb) = (vec![0u32; a.len()], vec![0u32; b.len()]);
    (0..resamples)
        .map(|_| {
            let ma = resampled_median(&mut src, &a, &mut ca);
            let mb = resampled_median(&mut src, &b, &mut cb);
            mb / ma
        })
        .collect()
}

/// Bootstrap replicates of `stat` over the medians of several independent samples: each round
/// resamples every sample with replacement (the trials of each config on their own) and hands
/// `stat` the resampled medians in input order. Used by the scaling fits, which see every
/// config only through its median.
pub(crate) fn medians_replicates(
    samples: &[&[f64]],
    resamples: usize,
    seed: u64,
    mut stat: impl FnMut(&[f64]) -> f64,
) -> Vec<f64> {
    let mut src = IndexSource::new(seed);
    let sorted: Vec<Vec<f64>> = samples.iter().map(|s| sorted_copy(s)).collect();
    let mut counts: Vec<Vec<u32>> = sorted.iter().map(|s| vec![0u32; s.len()]).collect();
    let mut medians = vec![f64::NAN; sorted.len()];
    (0..resamples)
        .map(|_| {
            for ((m, s), c) in medians.iter_mut().zip(&sorted).zip(&mut counts) {
                *m = resampled_median(&mut src, s, c);
            }
            stat(&medians)
        })
        .collect()
}

/// 95% percentile-bootstrap interval of the median of `values`; `None` for fewer than 2 values.
/// Used by reports for the CI bands of sweep curves.
///
/// The interval depends only on the values (as a multiset), `resamples` and `seed`, so it is
/// computed once per process for each: a report asks for a config's interval in its results,
/// its sweep table and two charts (4 bootstraps of 10,000 resamples each, 3 of them repeats).
pub fn bootstrap_median_ci(values: &[f64], resamples: usize, seed: u64) -> Option<(f64, f64)> {
    if values.len() < 2 {
        return None;
    }
    let sorted = sorted_copy(values);
    let key = MemoKey {
        bits: sorted.iter().map(|v| v.to_bits()).collect(),
        resamples,
        seed,
    };
    if let Some(hit) = memo().lock().ok().and_then(|m| m.intervals.get(&key).copied()) {
        return hit;
    }
    let ci = median_ci_of_sorted(&sorted, resamples, seed);
    if let Ok(mut m) = memo().lock() {
        if m.values + key.bits.len() > MEMO_VALUES {
            m.intervals.clear();
            m.values = 0;
        }
        m.values += key.bits.len();
        m.intervals.insert(key, ci);
    }
    ci
}

/// [`bootstrap_median_ci`] of `sorted` (ascending), computed.
fn median_ci_of_sorted(sorted: &[f64], resamples: usize, seed: u64) -> Option<(f64, f64)> {
    let mut src = IndexSource::new(seed);
    let mut counts = vec![0u32; sorted.len()];
    let reps = (0..resamples)
        .map(|_| resampled_median(&mut src, sorted, &mut counts))
        .collect();
    percentile_interval(reps, 0.95)
}

/// Values the memo of [`bootstrap_median_ci`] holds in its keys (8 MiB); past this, it
/// starts again.
const MEMO_VALUES: usize = 1 << 20;

#[derive(Default)]
struct Memo {
    intervals: std::collections::HashMap<MemoKey, Option<(f64, f64)>>,
    /// Values held in the keys of `intervals`.
    values: usize,
}

#[derive(PartialEq, Eq, Hash)]
struct MemoKey {
    /// The sorted values' bits (so `-0.0` and `0.0`, and NaNs, stay distinct).
    bits: Vec<u64>,
    resamples: usize,
    seed: u64,
}

fn memo() -> &'static std::sync::Mutex<Memo> {
    static MEMO: std::sync::OnceLock<std::sync::Mutex<Memo>> = std::sync::OnceLock::new();
    MEMO.get_or_init(Default::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_interval_is_the_one_computed_first() {
        let values: Vec<f64> = (0..50).map(|i| f64::from(i * 7 % 13)).collect();
        let mut reversed = values.clone();
        reversed.reverse();
        let first = bootstrap_median_ci(&values, 2_000, 9);
        assert!(first.is_some());
        assert_eq!(
            bootstrap_median_ci(&reversed, 2_000, 9),
            first,
            "same multiset, same interval"
        );
        // Another seed or resample count is another interval, not a memo hit.
        let other_seed = bootstrap_median_ci(&values, 2_000, 10);
        assert_eq!(other_seed, median_ci_of_sorted(&sorted_copy(&values), 2_000, 10));
    }

    #[test]
    fn quantiles_interpolate_linearly() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&v, 0.0), 1.0);
        assert_eq!(quantile_sorted(&v, 1.0), 4.0);
        assert_eq!(quantile_sorted(&v, 0.5), 2.5);
        assert!((quantile_sorted(&v, 0.25) - 1.75).abs() < 1e-12);
    }

    #[test]
    fn selected_quantiles_equal_sorted_ones() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for n in [2usize, 3, 7, 100, 1001] {
            // Many ties, as medians of small resamples have.
            let v: Vec<f64> = (0..n).map(|_| f64::from((rng.next_u32() % 13) as u8) * 0.5).collect();
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            for q in [0.0, 0.025, 0.25, 0.5, 0.975, 1.0] {
                let mut scratch = v.clone();
                assert_eq!(
                    quantile_selected(&mut scratch, q).to_bits(),
                    quantile_sorted(&sorted, q).to_bits(),
                    "n {n} q {q}"
                );
            }
        }
    }

    #[test]
    fn interval_refuses_mostly_infinite_replicates() {
        let mut reps = vec![1.0; 95];
        reps.extend([f64::INFINITY; 5]);
        assert_eq!(percentile_interval(reps, 0.95), None);
        let fine = (0..1000).map(f64::from).collect();
        let (lo, hi) = percentile_interval(fine, 0.95).unwrap();
        assert!((lo - 24.975).abs() < 1e-9 && (hi - 974.025).abs() < 1e-9);
    }

    /// The block reader hands out the indices that one `next_u64` per two draws (low half
    /// first) gives, so every interval stays what it was.
    #[test]
    fn indices_follow_the_generators_u64_stream() {
        for seed in [0u64, 1, 42] {
            let mut src = IndexSource::new(seed);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut spare: Option<u32> = None;
            for i in 0..5000usize {
                let n = [2usize, 5, 17, 1000][i % 4];
                let x = match spare.take() {
                    Some(x) => x,
                    None => {
                        let w = rng.next_u64();
                        spare = Some((w >> 32) as u32);
                        w as u32
                    }
                };
                assert_eq!(src.index(n), ((u64::from(x) * n as u64) >> 32) as usize, "draw {i}");
            }
        }
    }

    #[test]
    fn same_seed_same_replicates() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(
            ratio_of_medians_replicates(&a, &b, 200, 9),
            ratio_of_medians_replicates(&a, &b, 200, 9)
        );
        let ci = bootstrap_median_ci(&a, 2000, 1).unwrap();
        assert!(ci.0 >= 1.0 && ci.1 <= 5.0 && ci.0 <= 3.0 && ci.1 >= 3.0, "{ci:?}");
        // The counting median agrees with the median of the expanded multiset.
        let sorted = [1.0, 2.0, 3.5, 7.0];
        for counts in [[1, 0, 0, 1], [0, 2, 1, 0], [3, 0, 0, 1], [0, 0, 0, 2], [1, 1, 1, 1]] {
            let expanded: Vec<f64> = sorted
                .iter()
                .zip(counts)
                .flat_map(|(v, c)| std::iter::repeat_n(*v, c as usize))
                .collect();
            assert_eq!(median_from_counts(&sorted, &counts), crate::stats::median(&expanded));
        }
    }
}
