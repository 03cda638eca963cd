//! The `normalize` stage's computation (load: `Bars` -> features -> `Windows` -> train).
//!
//! Three timed phases: feature columns per symbol (`compute`), training-period statistics
//! (`normalize`), and window assembly with the content hash (`windows`). Sequential and
//! parallel runs execute the same per-symbol code and combine results in symbol order, so
//! they produce identical bytes.

mod compute;
mod error;
mod normalize;
mod rolling;
mod synth;
mod windows;

#[cfg(test)]
mod tests;
pub use crate::kinds::features::{Feature, DEFAULT_PRESET, MINIMAL_PRESET, PRESETS};
pub use crate::kinds::normalize::{NormMethod, NormScope, NormalizeParams, DEFAULT_VALID_FRACTION};
pub use error::NormalizeError;
pub use synth::synthetic_bars;
pub use windows::{window_set_hash, windows_hash};

use crate::artifact::{Bars, SymbolBars, Windows};
use crate::metrics::Recorder;
use chrono::NaiveDate;
use compute::SymbolFeatures;
use normalize::Stats;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use windows::{Layout, Piece};

/// Builds normalized train/validation windows from daily bars.
///
/// Records `windows`, `train_windows`, `valid_windows`, `features`, `symbols`, `threads`
/// (count), `bytes` (B), `features_seconds`, `normalize_seconds`, `windows_seconds` (s) and
/// `windows_per_second`, the fact `threads`, and notes naming the symbols that gave no
/// training window. With
/// `parallel = true` the work runs on a rayon pool of `threads` threads built for this call,
/// so a sweep over `threads` measures scaling.
pub fn build_windows(
    bars: &Bars,
    params: &NormalizeParams,
    rec: &mut Recorder,
    cancel: &AtomicBool,
) -> Result<Windows, NormalizeError> {
    params.check()?;
    let features = params.feature_list()?;
    if !params.parallel {
        rec.record("threads", 1.0, "count");
        rec.fact("threads", "1");
        return run(bars, params, &features, rec, cancel);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(params.threads)
        .thread_name(|i| format!("normalize-{i}"))
        .build()
        .map_err(|e| NormalizeError::ThreadPool {
            threads: params.threads,
            message: e.to_string(),
        })?;
    rec.record("threads", pool.current_num_threads() as f64, "count");
    rec.fact("threads", pool.current_num_threads().to_string());
    pool.install(|| run(bars, params, &features, rec, cancel))
}

/// The raw (not normalized) feature columns of one symbol, `out[j][t]` for feature `j` on
/// row `t`, NaN on warm-up rows: for inspecting values and comparing with other tools.
pub fn feature_columns(bars: &SymbolBars, features: &[Feature]) -> Result<Vec<Vec<f64>>, NormalizeError> {
    let computed = compute::compute_symbol(bars, features, false, &mut compute::Prepared::new())?;
    Ok((0..features.len()).map(|j| computed.col(j).to_vec()).collect())
}

/// Maps `f` over `0..n`, in parallel or not, and reports the lowest-indexed error so the
/// outcome does not depend on scheduling.
fn map_indexed<T: Send>(
    parallel: bool,
    n: usize,
    f: impl Fn(usize) -> Result<T, NormalizeError> + Sync + Send,
) -> Result<Vec<T>, NormalizeError> {
    let results: Vec<Result<T, NormalizeError>> = if parallel {
        (0..n).into_par_iter().map(f).collect()
    } else {
        (0..n).map(f).collect()
    };
    results.into_iter().collect()
}

fn check_cancel(cancel: &AtomicBool) -> Result<(), NormalizeError> {
    if cancel.load(Ordering::Relaxed) {
        Err(NormalizeError::Cancelled)
    } else {
        Ok(())
    }
}

/// The feature columns of every symbol, in symbol order. Each worker keeps one scratch set of
/// adjusted series for all the symbols it handles, instead of allocating it per symbol.
fn compute_all(
    bars: &Bars,
    features: &[Feature],
    parallel: bool,
    cancel: &AtomicBool,
) -> Result<Vec<SymbolFeatures>, NormalizeError> {
    let n = bars.symbols.len();
    // Fewer symbols than a few per thread would leave threads idle, so long columns of a
    // few symbols are split across the pool too.
    let split_columns = parallel && n < 4 * rayon::current_num_threads();
    let one = |scratch: &mut compute::Prepared, s: usize| {
        check_cancel(cancel)?;
        compute::compute_symbol(&bars.symbols[s], features, split_columns, scratch)
    };
    let results: Vec<Result<SymbolFeatures, NormalizeError>> = if parallel {
        (0..n).into_par_iter().map_init(compute::Prepared::new, one).collect()
    } else {
        let mut scratch = compute::Prepared::new();
        (0..n).map(|s| one(&mut scratch, s)).collect()
    };
    // The lowest-indexed error, whatever the scheduling.
    results.into_iter().collect()
}

/// The first validation day: `split_date`, or the calendar date `1 - valid_fraction` of the
/// way from the earliest to the latest date in the bars.
fn split_date(bars: &Bars, params: &NormalizeParams) -> Result<NaiveDate, NormalizeError> {
    if let Some(date) = params.split_date {
        return Ok(date);
    }
    let firsts = bars.symbols.iter().filter_map(|s| s.dates.first());
    let lasts = bars.symbols.iter().filter_map(|s| s.dates.last());
    let (Some(&min), Some(&max)) = (firsts.min(), lasts.max()) else {
        return Err(NormalizeError::NoBars);
    };
    Ok(params.split_between(min, max))
}

// Long because: the three phases run in order, each timed between its own statements; splitting
// them would move the timer boundaries and pass a dozen locals between helpers.
fn run(
    bars: &Bars,
    params: &NormalizeParams,
    features: &[Feature],
    rec: &mut Recorder,
    cancel: &AtomicBool,
) -> Result<Windows, NormalizeError> {
    let parallel = params.parallel;
    let nf = features.len();
    let warm = features.iter().map(|f| f.warmup()).max().unwrap_or(0);
    let layout = Layout {
        seq_len: params.seq_len,
        horizon: params.horizon,
        gap: params.gap_rows(),
    };
    let split = split_date(bars, params)?;

    let t0 = Instant::now();
    let computed = compute_all(bars, features, parallel, cancel)?;
    let features_seconds = t0.elapsed().as_secs_f64();

    // Rows of a symbol dated before the split; its statistics rows are those after warm-up.
    let t1 = Instant::now();
    let v0: Vec<usize> = bars
        .symbols
        .iter()
        .map(|s| s.dates.partition_point(|d| *d < split))
        .collect();
    let train_rows: Vec<_> = v0.iter().map(|&v| warm.min(v)..v).collect();
    check_cancel(cancel)?;
    let stats: Vec<Option<Stats>> = match params.scope {
        NormScope::PerSymbol => map_indexed(parallel, computed.len(), |s| {
            check_cancel(cancel)?;
            // Fewer training rows than one window is too little to estimate a spread from.
            let rows = train_rows[s].clone();
            Ok((rows.len() >= params.seq_len.max(2))
                .then(|| normalize::symbol_stats(&computed[s], nf, rows, params.method)))
        })?,
        NormScope::Pooled => {
            let pooled = normalize::pooled_stats(&computed, &train_rows, nf, params.method, parallel);
            vec![Some(pooled); computed.len()]
        }
    };
    let normalize_seconds = t1.elapsed().as_secs_f64();

    let t2 = Instant::now();
    check_cancel(cancel)?;
    let mut train_pieces = Vec::new();
    let mut valid_pieces = Vec::new();
    let mut left_out = LeftOut::default();
    for (s, sym_stats) in stats.iter().enumerate() {
        let name = || bars.symbols[s].symbol.clone();
        let Some(sym_stats) = sym_stats else {
            left_out.unnormalized.push(name());
            continue;
        };
        let n = computed[s].rows;
        let piece = |span| Piece {
            symbol: s,
            span,
            features: &computed[s],
            bars: &bars.symbols[s],
            stats: sym_stats,
        };
        match (layout.train(warm, v0[s]), layout.valid(n, warm, v0[s])) {
            (Some(train), valid) => {
                train_pieces.push(piece(train));
                valid_pieces.extend(valid.map(piece));
            }
            (None, Some(valid)) => {
                left_out.valid_only.push(name());
                valid_pieces.push(piece(valid));
            }
            (None, None) => left_out.no_windows.push(name()),
        }
    }
    if train_pieces.is_empty() {
        // The first symbol among those with the most rows, so the message is stable.
        let (s, &rows) = v0
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .ok_or(NormalizeError::NoBars)?;
        return Err(NormalizeError::NotEnoughHistory {
            symbol: bars.symbols[s].symbol.clone(),
            rows,
            needed: warm + params.seq_len + params.horizon,
            split,
            warmup: warm,
            seq_len: params.seq_len,
            horizon: params.horizon,
        });
    }
    if valid_pieces.is_empty() {
        let after = |s: usize| computed[s].rows - v0[s];
        let s = (0..computed.len())
            .max_by(|&a, &b| after(a).cmp(&after(b)).then(b.cmp(&a)))
            .ok_or(NormalizeError::NoBars)?;
        let symbol = &bars.symbols[s].symbol;
        let detail = if stats[s].is_none() {
            // Its validation rows are plenty; its training rows are too few to normalize by.
            format!(
                "`{symbol}` has the most rows from the split ({split}) on, {}, but only {} training \
                 rows after the {warm}-row feature warm-up, fewer than the {} it needs to estimate \
                 its normalization (scope = \"per-symbol\")",
                after(s),
                v0[s].saturating_sub(warm),
                params.seq_len.max(2)
            )
        } else {
            // The first window end is `gap` rows into validation, or later while the features
            // still warm up; its target is `horizon` rows further.
            let first_end = (v0[s] + layout.gap).max(warm + params.seq_len - 1);
            let needed = first_end + params.horizon + 1 - v0[s];
            format!(
                "`{symbol}` has the most rows from the split ({split}) on, {}, and its first \
                 validation window needs {needed} (gap {} + horizon {} + 1{})",
                after(s),
                layout.gap,
                params.horizon,
                if needed > layout.gap + params.horizon + 1 {
                    format!(
                        ", plus {} while the features warm up",
                        needed - layout.gap - params.horizon - 1
                    )
                } else {
                    String::new()
                }
            )
        };
        return Err(NormalizeError::NoValidationWindows { detail });
    }
    let assemble =
        |pieces: &[Piece<'_>]| windows::assemble(pieces, nf, params.seq_len, params.horizon, params.clip, parallel);
    let (train, valid) = if parallel {
        rayon::join(|| assemble(&train_pieces), || assemble(&valid_pieces))
    } else {
        (assemble(&train_pieces), assemble(&valid_pieces))
    };
    let calendar = market_calendar(bars);
    let spanning = [&train_pieces, &valid_pieces].map(|pieces| spanning_windows(pieces, &calendar, params.horizon));
    let mut has_windows = vec![false; bars.symbols.len()];
    for piece in train_pieces.iter().chain(&valid_pieces) {
        has_windows[piece.symbol] = true;
    }
    let used = has_windows.iter().filter(|&&u| u).count();
    let mut out = Windows {
        seq_len: params.seq_len,
        n_features: nf,
        horizons: 1,
        feature_names: features.iter().map(|f| f.name()).collect(),
        symbols: bars.symbols.iter().map(|s| s.symbol.clone()).collect(),
        train,
        valid,
        content_hash: String::new(),
    };
    out.content_hash = windows::windows_hash_with(&out, parallel);
    let windows_seconds = t2.elapsed().as_secs_f64();
    drop((train_pieces, valid_pieces));
    compute::recycle(computed);

    left_out.note(rec, params, split, warm);
    if spanning.iter().any(|&n| n > 0) {
        rec.note(format!(
            "{} of {} training and {} of {} validation windows have a target spanning more than horizon {} \
             trading days of the loaded calendar (the symbol did not trade in between, e.g. a suspension): \
             they are kept, and their target is the log return over the whole span",
            spanning[0],
            out.train.len(),
            spanning[1],
            out.valid.len(),
            params.horizon
        ));
    }

    let (n_train, n_valid) = (out.train.len(), out.valid.len());
    let total = (n_train + n_valid) as f64;
    rec.record("windows", total, "count");
    rec.record("train_windows", n_train as f64, "count");
    rec.record("valid_windows", n_valid as f64, "count");
    rec.record("features", nf as f64, "count");
    rec.record("symbols", used as f64, "count");
    rec.record("bytes", set_bytes(&out.train) + set_bytes(&out.valid), "B");
    rec.record("features_seconds", features_seconds, "s");
    rec.record("normalize_seconds", normalize_seconds, "s");
    rec.record("windows_seconds", windows_seconds, "s");
    let seconds = features_seconds + normalize_seconds + windows_seconds;
    rec.record("windows_per_second", total / seconds.max(1e-9), "windows/s");
    Ok(out)
}

/// Every date on which at least one loaded symbol has a bar, sorted: the trading calendar as
/// the bars show it.
fn market_calendar(bars: &Bars) -> Vec<NaiveDate> {
    let mut days: Vec<NaiveDate> = bars.symbols.iter().flat_map(|s| s.dates.iter().copied()).collect();
    days.sort_unstable();
    days.dedup();
    days
}

/// Windows whose target row lies more than `horizon` calendar trading days after their last
/// row: the horizon counts the symbol's rows, so a gap in its bars stretches the target.
fn spanning_windows(pieces: &[Piece<'_>], calendar: &[NaiveDate], horizon: usize) -> usize {
    pieces
        .iter()
        .map(|p| {
            let dates = &p.bars.dates;
            let Some(first) = p.span.ends.clone().next() else {
                return 0;
            };
            // Window ends rise through the piece, so the calendar positions of a window's last
            // day and of its target day only move forward: one search each, then steps.
            let mut end = CalendarCursor::at(calendar, dates[first]);
            let mut target = CalendarCursor::at(calendar, dates[first + horizon]);
            p.span
                .ends
                .clone()
                .filter(|&t| target.seek(dates[t + horizon]) - end.seek(dates[t]) > horizon)
                .count()
        })
        .sum()
}

/// A position in the sorted market calendar that moves forward to each later date asked for.
struct CalendarCursor<'a> {
    calendar: &'a [NaiveDate],
    at: usize,
}

impl<'a> CalendarCursor<'a> {
    fn at(calendar: &'a [NaiveDate], date: NaiveDate) -> Self {
        CalendarCursor {
            calendar,
            at: calendar.partition_point(|d| *d < date),
        }
    }

    /// The position of `date`, which is in the calendar and not before the last date sought.
    fn seek(&mut self, date: NaiveDate) -> usize {
        while self.calendar.get(self.at).is_some_and(|d| *d < date) {
            self.at += 1;
        }
        self.at
    }
}

/// Symbols that gave no training window, by why (names in symbol order).
#[derive(Default)]
struct LeftOut {
    /// Per-symbol scope: too few training rows to estimate its normalization; skipped.
    unnormalized: Vec<String>,
    /// Too little history before the split for a training window, and too little after it
    /// for a validation window; skipped.
    no_windows: Vec<String>,
    /// Too little history before the split for a training window; validation windows only.
    valid_only: Vec<String>,
}

impl LeftOut {
    /// One note per reason that applies, naming the symbols.
    fn note(&self, rec: &mut Recorder, params: &NormalizeParams, split: NaiveDate, warm: usize) {
        use crate::metrics::{count, named_list};
        let window = format!(
            "one needs {} rows: {warm} warm-up + seq_len {} + horizon {}",
            warm + params.seq_len + params.horizon,
            params.seq_len,
            params.horizon
        );
        if !self.unnormalized.is_empty() {
            rec.note(format!(
                "skipped {} with too few training rows to normalize by (scope = \"per_symbol\" needs {} rows before the split {split}, after the {warm}-row feature warm-up): {}",
                count(self.unnormalized.len(), "symbol"),
                params.seq_len.max(2),
                named_list(&self.unnormalized)
            ));
        }
        if !self.no_windows.is_empty() {
            rec.note(format!(
                "skipped {} with too little history before the split {split} for one training window ({window}) and too little after it for a validation window: {}",
                count(self.no_windows.len(), "symbol"),
                named_list(&self.no_windows)
            ));
        }
        if !self.valid_only.is_empty() {
            rec.note(format!(
                "{} too little history before the split {split} for one training window ({window}), so {} validation windows only: {}",
                if self.valid_only.len() == 1 {
                    "1 symbol has".to_owned()
                } else {
                    format!("{} symbols have", self.valid_only.len())
                },
                if self.valid_only.len() == 1 { "it adds" } else { "they add" },
                named_list(&self.valid_only)
            ));
        }
    }
}

/// Bytes held by one split's buffers.
fn set_bytes(set: &crate::artifact::WindowSet) -> f64 {
    use std::mem::size_of_val;
    (size_of_val(set.features.as_slice())
        + size_of_val(set.starts.as_slice())
        + size_of_val(set.targets.as_slice())
        + size_of_val(set.symbol_idx.as_slice())
        + size_of_val(set.dates.as_slice())) as f64
}
