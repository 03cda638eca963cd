//! Feature columns of one symbol (Bars -> compute -> normalize statistics -> windows).
//!
//! All math runs in f64 over column-major buffers (one contiguous column per feature), and
//! rows before a feature's warm-up hold NaN. Nothing here looks at a later row than the one it
//! writes, which is what makes the train/validation split free of look-ahead.

use super::error::NormalizeError;
use super::rolling::{rolling_mean, rolling_moments, rolling_skew};
use crate::artifact::SymbolBars;
use crate::kinds::features::{Feature, MACD_FAST, MACD_SIGNAL, MACD_SLOW};
use rayon::prelude::*;
use std::mem::size_of;
use std::sync::Mutex;

/// Split-adjusted series of one symbol, shared by its feature columns.
///
/// Prices are multiplied by the cumulative adjustment factor but not divided by the latest
/// factor: every feature is a ratio or a log difference, so that constant cancels, and leaving
/// it out keeps values from the end of the series (validation data) out of training rows,
/// even in rounding.
pub(crate) struct Prepared {
    pub(crate) close: Vec<f64>,
    pub(crate) open: Vec<f64>,
    pub(crate) high: Vec<f64>,
    pub(crate) low: Vec<f64>,
    /// Volume divided by the adjustment factor: the same holding counted in shares of one
    /// fixed split basis, so a 10:1 split does not look like a tenfold volume surge.
    pub(crate) volume: Vec<f64>,
    /// `ln(close)`; log returns and targets are differences of it.
    pub(crate) log_close: Vec<f64>,
    /// `ret_1`, NaN at row 0.
    pub(crate) ret1: Vec<f64>,
}

/// The feature columns of one symbol: `cols[j * rows + t]` is feature `j` on row `t`, for
/// `j < features`, and the symbol's `ln(close)` follows as one more column.
pub(crate) struct SymbolFeatures {
    pub(crate) rows: usize,
    pub(crate) cols: Vec<f64>,
}

impl SymbolFeatures {
    pub(crate) fn col(&self, j: usize) -> &[f64] {
        &self.cols[j * self.rows..(j + 1) * self.rows]
    }

    /// `ln(close)` of every row (targets are differences of it).
    pub(crate) fn log_close(&self) -> &[f64] {
        &self.cols[self.cols.len() - self.rows..]
    }
}

/// Column buffers of earlier calls, handed to the next one so a call writes into memory the
/// process already has. Without it, a call that runs on fresh pool threads gets its ~200 MB of
/// columns (500 symbols x 2,500 days x 20 features) from allocator arenas that returned the
/// previous call's memory to the OS, and page-faults all of it in again, while the same call on
/// the main thread reuses its heap: the parallel mode paid a cost the sequential one did not.
static RECYCLED: Mutex<Vec<Vec<f64>>> = Mutex::new(Vec::new());

/// The most column memory kept between calls.
const RECYCLE_LIMIT_BYTES: usize = 1 << 30;

/// A buffer of `len` NaNs, reusing a recycled allocation when there is one.
fn column_buffer(len: usize) -> Vec<f64> {
    let recycled = RECYCLED.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let mut buf = recycled.unwrap_or_default();
    buf.clear();
    buf.resize(len, f64::NAN);
    buf
}

/// Keeps the column buffers of `done` for later calls, up to [`RECYCLE_LIMIT_BYTES`].
pub(crate) fn recycle(done: Vec<SymbolFeatures>) {
    let mut pool = RECYCLED.lock().unwrap_or_else(|e| e.into_inner());
    let mut kept: usize = pool.iter().map(|b| b.capacity() * size_of::<f64>()).sum();
    for sym in done {
        let bytes = sym.cols.capacity() * size_of::<f64>();
        if kept + bytes > RECYCLE_LIMIT_BYTES {
            break;
        }
        kept += bytes;
        pool.push(sym.cols);
    }
}

fn bad(bars: &SymbolBars, t: usize, field: &'static str, value: f64) -> NormalizeError {
    NormalizeError::BadBar {
        symbol: bars.symbol.clone(),
        date: bars.dates[t],
        field,
        value,
    }
}

impl Prepared {
    /// Empty series, to be filled by `prepare_into` and reused across symbols.
    pub(crate) fn new() -> Prepared {
        Prepared {
            close: Vec::new(),
            open: Vec::new(),
            high: Vec::new(),
            low: Vec::new(),
            volume: Vec::new(),
            log_close: Vec::new(),
            ret1: Vec::new(),
        }
    }
}

/// Checks one symbol's bars and builds its adjusted series into `p`, replacing what it held.
///
/// `p` is scratch that one worker reuses for symbol after symbol: allocating seven fresh
/// columns per symbol cost every call tens of megabytes of allocation and, whenever the
/// allocator had handed that memory back to the OS, its page faults again.
pub(crate) fn prepare_into(bars: &SymbolBars, p: &mut Prepared) -> Result<(), NormalizeError> {
    let n = bars.len();
    for (column, len) in [
        ("open", bars.open.len()),
        ("high", bars.high.len()),
        ("low", bars.low.len()),
        ("close", bars.close.len()),
        ("volume", bars.volume.len()),
        ("adj_factor", bars.adj_factor.len()),
    ] {
        if len != n {
            return Err(NormalizeError::Ragged {
                symbol: bars.symbol.clone(),
                column,
                got: len,
                expected: n,
            });
        }
    }
    for column in [
        &mut p.close,
        &mut p.open,
        &mut p.high,
        &mut p.low,
        &mut p.volume,
        &mut p.log_close,
        &mut p.ret1,
    ] {
        column.clear();
        column.reserve(n);
    }
    for t in 0..n {
        if t > 0 && bars.dates[t] <= bars.dates[t - 1] {
            return Err(NormalizeError::Unsorted {
                symbol: bars.symbol.clone(),
                previous: bars.dates[t - 1],
                date: bars.dates[t],
            });
        }
        let adj = bars.adj_factor[t];
        let fields = [
            ("adj_factor", adj),
            ("open", bars.open[t]),
            ("high", bars.high[t]),
            ("low", bars.low[t]),
            ("close", bars.close[t]),
        ];
        for (field, value) in fields {
            if !(value.is_finite() && value > 0.0) {
                return Err(bad(bars, t, field, value));
            }
        }
        let volume = bars.volume[t];
        if !(volume.is_finite() && volume >= 0.0) {
            return Err(bad(bars, t, "volume", volume));
        }
        let close = bars.close[t] * adj;
        p.close.push(close);
        p.open.push(bars.open[t] * adj);
        p.high.push(bars.high[t] * adj);
        p.low.push(bars.low[t] * adj);
        p.volume.push(volume / adj);
        p.log_close.push(close.ln());
    }
    if n > 0 {
        p.ret1.push(f64::NAN);
        let lc = &p.log_close;
        p.ret1.extend(lc.windows(2).map(|pair| pair[1] - pair[0]));
    }
    Ok(())
}

/// Computes every column of one symbol, using `scratch` for its adjusted series. With
/// `split_columns`, columns are rayon tasks too, so a handful of long series still spreads
/// over the pool; with many symbols the per-symbol tasks already fill it and splitting
/// further only adds scheduling overhead. Either way each column is computed by the same
/// code from the same inputs, so the bytes are the same.
pub(crate) fn compute_symbol(
    bars: &SymbolBars,
    features: &[Feature],
    split_columns: bool,
    scratch: &mut Prepared,
) -> Result<SymbolFeatures, NormalizeError> {
    prepare_into(bars, scratch)?;
    let p = &*scratch;
    let rows = bars.len();
    let nf = features.len();
    let mut cols = column_buffer(rows * (nf + 1));
    if rows > 0 {
        let (feature_cols, log_close) = cols.split_at_mut(rows * nf);
        log_close.copy_from_slice(&p.log_close);
        if split_columns {
            feature_cols
                .par_chunks_mut(rows)
                .zip(features.par_iter())
                .for_each(|(out, &f)| compute_column(f, p, out));
        } else {
            for (out, &f) in feature_cols.chunks_mut(rows).zip(features) {
                compute_column(f, p, out);
            }
        }
    }
    Ok(SymbolFeatures { rows, cols })
}

/// Fills one feature column; `out` arrives filled with NaN and keeps it on warm-up rows.
pub(crate) fn compute_column(feature: Feature, p: &Prepared, out: &mut [f64]) {
    let n = out.len();
    match feature {
        Feature::Ret(k) => {
            let lc = &p.log_close;
            for ((o, now), then) in out.iter_mut().skip(k).zip(&lc[k.min(n)..]).zip(lc) {
                *o = now - then;
            }
        }
        Feature::HlRange => {
            for (o, ((h, l), c)) in out.iter_mut().zip(p.high.iter().zip(&p.low).zip(&p.close)) {
                *o = (h - l) / c;
            }
        }
        Feature::ClosePos => {
            for (o, ((h, l), c)) in out.iter_mut().zip(p.high.iter().zip(&p.low).zip(&p.close)) {
                let range = h - l;
                *o = if range > 0.0 { (c - l) / range } else { 0.5 };
            }
        }
        Feature::Gap => {
            for (o, (open, prev)) in out.iter_mut().skip(1).zip(p.open[1..].iter().zip(&p.close)) {
                *o = (open / prev).ln();
            }
        }
        Feature::Vol(w) => rolling_moments(&p.ret1, 1, w, |t, _, m2| {
            out[t] = (m2 / (w as f64 - 1.0)).sqrt();
        }),
        Feature::SmaRatio(w) => rolling_mean(&p.close, 0, w, |t, mean| {
            out[t] = p.close[t] / mean - 1.0;
        }),
        Feature::Rsi(w) => rsi(&p.close, w, out),
        Feature::Macd | Feature::MacdSignal => macd(feature, &p.close, out),
        Feature::BbPctb(w) => rolling_moments(&p.close, 0, w, |t, mean, m2| {
            let sd = (m2 / w as f64).sqrt();
            out[t] = if sd > 1e-7 * mean {
                (p.close[t] - (mean - 2.0 * sd)) / (4.0 * sd)
            } else {
                0.5
            };
        }),
        Feature::VolZ(w) => rolling_moments(&p.volume, 0, w, |t, mean, m2| {
            let sd = (m2 / (w as f64 - 1.0)).sqrt();
            out[t] = if sd > 1e-7 * mean {
                (p.volume[t] - mean) / sd
            } else {
                0.0
            };
        }),
        Feature::DlogVolume => {
            for (o, pair) in out.iter_mut().skip(1).zip(p.volume.windows(2)) {
                let (prev, cur) = (pair[0], pair[1]);
                *o = if prev > 0.0 && cur > 0.0 {
                    (cur / prev).ln()
                } else {
                    0.0
                };
            }
        }
        Feature::Skew(w) => rolling_skew(&p.ret1, 1, w, |t, skew| out[t] = skew),
    }
}

/// Wilder's RSI: the first average gain/loss is the plain mean of the first `w` changes,
/// later ones `avg = (1 - 1/w) avg + gain / w`.
fn rsi(close: &[f64], w: usize, out: &mut [f64]) {
    let n = close.len();
    if n <= w {
        return;
    }
    let (mut gain, mut loss) = (0.0, 0.0);
    for t in 1..=w {
        let d = close[t] - close[t - 1];
        gain += d.max(0.0);
        loss += (-d).max(0.0);
    }
    let alpha = 1.0 / w as f64;
    gain *= alpha;
    loss *= alpha;
    out[w] = rsi_value(gain, loss);
    for t in w + 1..n {
        let d = close[t] - close[t - 1];
        gain = (1.0 - alpha) * gain + alpha * d.max(0.0);
        loss = (1.0 - alpha) * loss + alpha * (-d).max(0.0);
        out[t] = rsi_value(gain, loss);
    }
}

fn rsi_value(gain: f64, loss: f64) -> f64 {
    let total = gain + loss;
    if total > 0.0 {
        100.0 * gain / total
    } else {
        50.0
    }
}

/// MACD line `EMA12 - EMA26` or its signal `EMA9(line)`, divided by the close so the value
/// does not scale with the price level. EMAs are seeded with the first value, as pandas'
/// `ewm(span, adjust=False)` is.
fn macd(feature: Feature, close: &[f64], out: &mut [f64]) {
    let Some(&seed) = close.first() else {
        return;
    };
    let alpha = |s: usize| 2.0 / (s as f64 + 1.0);
    let (af, asl, asig) = (alpha(MACD_FAST), alpha(MACD_SLOW), alpha(MACD_SIGNAL));
    let (mut fast, mut slow, mut signal) = (seed, seed, 0.0);
    let start = feature.warmup();
    let want_signal = feature == Feature::MacdSignal;
    for (t, (&c, o)) in close.iter().zip(out.iter_mut()).enumerate() {
        if t > 0 {
            fast = (1.0 - af) * fast + af * c;
            slow = (1.0 - asl) * slow + asl * c;
        }
        let line = fast - slow;
        signal = if t == 0 {
            line
        } else {
            (1.0 - asig) * signal + asig * line
        };
        if t >= start {
            *o = if want_signal { signal } else { line } / c;
        }
    }
}
