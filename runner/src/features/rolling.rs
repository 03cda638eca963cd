//! O(n) rolling statistics over one symbol's series (compute -> rolling -> compute).
//!
//! Every helper walks the series once, adding the entering value and removing the leaving
//! one, so a window of 60 costs the same per row as a window of 5.

/// A running sum with Neumaier compensation: adding and later subtracting the same values
/// thousands of times would otherwise leave rounding residue in the sum.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CompSum {
    sum: f64,
    comp: f64,
}

impl CompSum {
    #[inline]
    pub(crate) fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.comp += (self.sum - t) + x;
        } else {
            self.comp += (x - t) + self.sum;
        }
        self.sum = t;
    }

    #[inline]
    pub(crate) fn value(&self) -> f64 {
        self.sum + self.comp
    }
}

/// Calls `emit(t, mean)` for every row `t` whose trailing window of `w` values starting no
/// earlier than `first` is complete.
pub(crate) fn rolling_mean(x: &[f64], first: usize, w: usize, mut emit: impl FnMut(usize, f64)) {
    let mut acc = CompSum::default();
    let inv = 1.0 / w as f64;
    for t in first..x.len() {
        acc.add(x[t]);
        if t >= first + w {
            acc.add(-x[t - w]);
        }
        if t + 1 >= first + w {
            emit(t, acc.value() * inv);
        }
    }
}

/// Calls `emit(t, mean, m2)` (m2 = sum of squared deviations from the mean) for every
/// complete window of `w >= 2` values. The first window is built with Welford's update; after
/// that a value enters as another leaves, and with the count fixed at `w`,
/// `mean' = mean + (new - old) / w` and `m2' = m2 + (new - old)(new - mean' + old - mean)`.
/// Both stay accurate when values are large and their spread small (volumes, prices), unlike
/// a running sum of squares.
pub(crate) fn rolling_moments(x: &[f64], first: usize, w: usize, mut emit: impl FnMut(usize, f64, f64)) {
    let fill_end = (first + w).min(x.len());
    let mut n = 0.0_f64;
    let mut mean = 0.0_f64;
    let mut m2 = 0.0_f64;
    for &new in x.get(first..fill_end).unwrap_or(&[]) {
        n += 1.0;
        let delta = new - mean;
        mean += delta / n;
        m2 += delta * (new - mean);
    }
    if first + w > x.len() {
        return;
    }
    emit(fill_end - 1, mean, m2.max(0.0));
    let inv = 1.0 / w as f64;
    // Pairs (x[t], x[t - w]) for t from first + w on.
    for (i, (&new, &old)) in x[first + w..].iter().zip(&x[first..]).enumerate() {
        let t = first + w + i;
        let step = new - old;
        let next = mean + step * inv;
        m2 += step * (new - next + old - mean);
        mean = next;
        emit(t, mean, m2.max(0.0));
    }
}

/// Calls `emit(t, skew)` with the bias-corrected sample skewness
/// `sqrt(n(n-1)) / (n-2) * m3 / m2^1.5` (m_k the central moments with divisor n) of every
/// complete window of `w >= 3` values.
///
/// The power sums are taken of `x - x[first]`: skewness does not change under a shift, and
/// shifted values keep the cubes small, so the sums lose fewer digits.
pub(crate) fn rolling_skew(x: &[f64], first: usize, w: usize, mut emit: impl FnMut(usize, f64)) {
    if first >= x.len() {
        return;
    }
    let shift = x[first];
    let (mut s1, mut s2, mut s3) = (CompSum::default(), CompSum::default(), CompSum::default());
    let n = w as f64;
    let factor = (n * (n - 1.0)).sqrt() / (n - 2.0);
    for t in first..x.len() {
        let y = x[t] - shift;
        s1.add(y);
        s2.add(y * y);
        s3.add(y * y * y);
        if t >= first + w {
            let y = x[t - w] - shift;
            s1.add(-y);
            s2.add(-(y * y));
            s3.add(-(y * y * y));
        }
        if t + 1 >= first + w {
            let a = s1.value() / n;
            let b = s2.value() / n - a * a;
            let c = s3.value() / n - a * a * a - 3.0 * a * b;
            // A window of (numerically) equal returns has no defined skew; 0 keeps the row.
            let skew = if b <= 1e-14 { 0.0 } else { factor * c / (b * b.sqrt()) };
            emit(t, skew);
        }
    }
}
