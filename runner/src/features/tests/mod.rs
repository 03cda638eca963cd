//! Acceptance tests of build_windows (Bars -> build_windows -> Windows): determinism across
//! execution modes, no look-ahead, window layout, errors and parameters.

mod math;
mod params;

use super::*;
use crate::artifact::Bars;
use chrono::NaiveDate;

fn market() -> Bars {
    synthetic_bars(8, 600, 7)
}

fn base() -> NormalizeParams {
    NormalizeParams {
        seq_len: 20,
        split_date: Some(date("2015-09-01")),
        ..NormalizeParams::default()
    }
}

fn date(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

fn try_build(bars: &Bars, p: &NormalizeParams) -> Result<(Windows, Recorder), NormalizeError> {
    let mut rec = Recorder::new();
    let w = build_windows(bars, p, &mut rec, &AtomicBool::new(false))?;
    Ok((w, rec))
}

fn build(bars: &Bars, p: &NormalizeParams) -> Windows {
    try_build(bars, p).unwrap().0
}

fn variants() -> Vec<NormalizeParams> {
    let mut out = Vec::new();
    for scope in [NormScope::PerSymbol, NormScope::Pooled] {
        for method in [NormMethod::ZScore, NormMethod::Robust] {
            out.push(NormalizeParams {
                scope,
                method,
                ..base()
            });
        }
    }
    out
}

#[test]
fn sequential_and_parallel_runs_are_bit_identical() {
    let bars = market();
    for p in variants() {
        let seq = build(&bars, &p);
        let par = build(
            &bars,
            &NormalizeParams {
                parallel: true,
                threads: 2,
                ..p.clone()
            },
        );
        assert!(!seq.train.is_empty() && !seq.valid.is_empty());
        assert_eq!(seq.content_hash, par.content_hash, "{:?}/{:?}", p.scope, p.method);
        assert!(seq == par, "{:?}/{:?}", p.scope, p.method);
    }
}

#[test]
fn one_and_two_threads_are_bit_identical() {
    let bars = market();
    for p in variants() {
        let with = |threads| NormalizeParams {
            parallel: true,
            threads,
            ..p.clone()
        };
        let (one, rec) = try_build(&bars, &with(1)).unwrap();
        let two = build(&bars, &with(2));
        assert!(one == two, "{:?}/{:?}", p.scope, p.method);
        let threads = rec.metrics().iter().find(|m| m.name == "threads").unwrap();
        assert_eq!(threads.value, 1.0);
    }
}

/// Multiplies every bar dated on or after `split` (prices, volume and adjustment factor).
/// Column buffers are recycled across calls: a call after one on other data (longer series,
/// other values) must still start from NaN warm-up rows and give the same bytes as before.
#[test]
fn recycled_buffers_do_not_leak_between_calls() {
    let bars = market();
    let other = synthetic_bars(5, 900, 99);
    for p in [
        base(),
        NormalizeParams {
            parallel: true,
            threads: 2,
            ..base()
        },
    ] {
        let first = build(&bars, &p);
        let between = build(&other, &p);
        let again = build(&bars, &p);
        assert_ne!(between.content_hash, first.content_hash);
        assert_eq!(again.content_hash, first.content_hash, "{p:?}");
        assert_eq!(again, first);
    }
    // The stored raw columns agree too, warm-up NaNs included.
    let features = base().feature_list().unwrap();
    let direct = feature_columns(&bars.symbols[0], &features).unwrap();
    build(&other, &base());
    let after = feature_columns(&bars.symbols[0], &features).unwrap();
    assert_eq!(format!("{direct:?}"), format!("{after:?}"));
    assert!(
        direct.iter().any(|col| col[0].is_nan()),
        "the first row is warm-up for some feature"
    );
}

fn perturb_after(bars: &Bars, split: NaiveDate) -> Bars {
    let mut out = bars.clone();
    for s in &mut out.symbols {
        let v0 = s.dates.partition_point(|d| *d < split);
        for t in v0..s.len() {
            let k = 1.0 + 0.05 * ((t % 7) as f64);
            s.open[t] *= k;
            s.high[t] *= k * 1.1;
            s.low[t] *= k * 0.9;
            s.close[t] *= k;
            s.volume[t] *= 3.0;
            s.adj_factor[t] *= 2.0;
        }
    }
    out
}

#[test]
fn validation_prices_do_not_reach_training_tensors() {
    let bars = market();
    let split = base().split_date.unwrap();
    let changed = perturb_after(&bars, split);
    let mut cases = variants();
    // A split from `valid_fraction` depends only on dates, which stay the same.
    cases.push(NormalizeParams {
        split_date: None,
        valid_fraction: Some(0.3),
        ..base()
    });
    for p in cases {
        let a = build(&bars, &p);
        let b = build(&changed, &p);
        assert!(a.train.features == b.train.features, "{p:?}");
        assert!(a.train.targets == b.train.targets, "{p:?}");
        assert_eq!(window_set_hash(&a.train), window_set_hash(&b.train));
        assert!(a.train == b.train);
        // The perturbation is visible where it should be, so the test can fail.
        assert_ne!(window_set_hash(&a.valid), window_set_hash(&b.valid));
        assert_ne!(a.content_hash, b.content_hash);
    }
}

#[test]
fn train_targets_precede_the_split_and_valid_inputs_follow_it() {
    let bars = market();
    for (gap, horizon) in [(None, 1), (Some(0), 5), (Some(3), 2)] {
        let p = NormalizeParams { gap, horizon, ..base() };
        let split = p.split_date.unwrap();
        let w = build(&bars, &p);
        let row_of = |sym: u32, d: NaiveDate| {
            let dates = &bars.symbols[sym as usize].dates;
            (dates, dates.binary_search(&d).unwrap())
        };
        for i in 0..w.train.len() {
            let (dates, t) = row_of(w.train.symbol_idx[i], w.train.dates[i]);
            assert!(dates[t + horizon] < split, "train target after split");
        }
        let mut first_valid = NaiveDate::MAX;
        for i in 0..w.valid.len() {
            let (dates, t) = row_of(w.valid.symbol_idx[i], w.valid.dates[i]);
            let v0 = dates.partition_point(|d| *d < split);
            assert!(t >= v0 + p.gap_rows(), "prediction day inside the gap");
            if gap.is_none() {
                assert!(dates[t + 1 - p.seq_len] >= split, "input row from training");
            }
            first_valid = first_valid.min(w.valid.dates[i]);
        }
        if gap == Some(0) {
            assert_eq!(first_valid, split, "gap 0 predicts from the first validation day");
        }
    }
}

#[test]
fn windows_are_contiguous_rows_with_forward_log_return_targets() {
    let bars = market();
    let p = NormalizeParams { horizon: 3, ..base() };
    let w = build(&bars, &p);
    assert_eq!(w.n_features, DEFAULT_PRESET.len());
    assert_eq!(w.feature_names, DEFAULT_PRESET);
    assert_eq!(w.horizons, 1);
    for set in [&w.train, &w.valid] {
        assert_eq!(set.features.len() % w.n_features, 0);
        assert_eq!(set.targets.len(), set.len());
        for i in 0..set.len() {
            assert_eq!(w.window(set, i).len(), 20 * w.n_features);
            let s = &bars.symbols[set.symbol_idx[i] as usize];
            let t = s.dates.binary_search(&set.dates[i]).unwrap();
            // Adjusted closes; the latest factor cancels in the ratio.
            let c = |k: usize| s.close[k] * s.adj_factor[k];
            let want = (c(t + 3) / c(t)).ln();
            assert!((set.targets[i] as f64 - want).abs() < 1e-6, "target {i}");
            if i > 0 && set.symbol_idx[i] == set.symbol_idx[i - 1] {
                // Consecutive days of one symbol are windows one row apart.
                assert_eq!(set.starts[i], set.starts[i - 1] + 1);
            }
        }
    }
}

#[test]
fn training_rows_are_standardized_per_symbol() {
    let bars = market();
    let w = build(&bars, &base());
    let nf = w.n_features;
    let sym = w.train.symbol_idx[0];
    let rows = w.train.symbol_idx.iter().filter(|&&s| s == sym).count() + w.seq_len - 1;
    for j in 0..nf {
        let col: Vec<f64> = (0..rows).map(|r| w.train.features[r * nf + j] as f64).collect();
        let mean = col.iter().sum::<f64>() / rows as f64;
        let sd = (col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (rows - 1) as f64).sqrt();
        // Statistics also cover the `horizon` last training rows, which hold no window.
        assert!(mean.abs() < 0.05, "{}: mean {mean}", w.feature_names[j]);
        assert!((sd - 1.0).abs() < 0.05, "{}: sd {sd}", w.feature_names[j]);
    }
}

#[test]
fn clip_bounds_normalized_values() {
    let bars = market();
    let w = build(
        &bars,
        &NormalizeParams {
            clip: Some(1.0),
            ..base()
        },
    );
    let all = w.train.features.iter().chain(&w.valid.features);
    assert!(all.clone().all(|v| (-1.0..=1.0).contains(v)));
    assert!(all.filter(|v| v.abs() == 1.0).count() > 100);
}

#[test]
fn records_metrics_with_units() {
    let (w, rec) = try_build(&market(), &base()).unwrap();
    let get = |name: &str| {
        let m = rec.metrics().iter().find(|m| m.name == name).unwrap();
        (m.value, m.unit.clone())
    };
    assert_eq!(get("windows"), ((w.train.len() + w.valid.len()) as f64, "count".into()));
    assert_eq!(get("features"), (20.0, "count".into()));
    assert_eq!(get("symbols"), (8.0, "count".into()));
    assert_eq!(get("bytes").1, "B");
    assert!(get("bytes").0 > (w.train.features.len() * 4) as f64);
    for name in ["features_seconds", "normalize_seconds", "windows_seconds"] {
        let (v, unit) = get(name);
        assert!(v >= 0.0 && unit == "s", "{name}");
    }
    assert!(get("windows_per_second").0 > 0.0);
    assert_eq!(get("windows_per_second").1, "windows/s");
    assert_eq!(w.content_hash, windows_hash(&w));
    assert_eq!(w.content_hash.len(), 64);
}

#[test]
fn too_short_history_names_the_longest_symbol() {
    let mut bars = synthetic_bars(3, 200, 1);
    let mut short = bars.symbols[0].clone();
    short.dates.truncate(50);
    for col in [&mut short.open, &mut short.high, &mut short.low, &mut short.close] {
        col.truncate(50);
    }
    for col in [&mut short.volume, &mut short.amount, &mut short.adj_factor] {
        col.truncate(50);
    }
    bars.symbols[0] = short;
    let p = NormalizeParams {
        seq_len: 150,
        valid_fraction: Some(0.2),
        ..NormalizeParams::default()
    };
    let err = try_build(&bars, &p).unwrap_err().to_string();
    // 200 weekdays from 2014-01-02 span 279 calendar days; 0.8 of that is 223 days, so the
    // split is 2014-08-13, after 159 weekdays. Of the two full symbols the first is named.
    assert!(
        err.contains("the longest, `000002.SZ`, has only 159 rows before the split (2014-08-13)"),
        "{err}"
    );
    assert!(
        err.contains("one window needs 211 (60 warm-up + seq_len 150 + horizon 1)"),
        "{err}"
    );
}

#[test]
fn missing_validation_data_is_an_error() {
    let bars = market();
    let p = NormalizeParams {
        split_date: Some(date("2016-04-01")),
        ..base()
    };
    let err = try_build(&bars, &p).unwrap_err();
    assert!(matches!(err, NormalizeError::NoValidationWindows { .. }), "{err}");
}

#[test]
fn bad_bars_are_reported_with_symbol_and_date() {
    let mut bars = market();
    bars.symbols[2].close[10] = -1.0;
    let err = try_build(&bars, &base()).unwrap_err().to_string();
    assert_eq!(
        err,
        "symbol `000003.SZ` on 2014-01-16: close is -1, expected a positive finite number"
    );
    let mut bars = market();
    bars.symbols[1].dates.swap(3, 4);
    let err = try_build(&bars, &base()).unwrap_err();
    assert!(matches!(err, NormalizeError::Unsorted { .. }), "{err}");
}

#[test]
fn a_raised_cancel_flag_stops_the_run() {
    for parallel in [false, true] {
        let p = NormalizeParams { parallel, ..base() };
        let err = build_windows(&market(), &p, &mut Recorder::new(), &AtomicBool::new(true));
        assert!(matches!(err, Err(NormalizeError::Cancelled)));
    }
}

#[test]
fn missing_validation_windows_name_what_the_longest_symbol_lacks() {
    // `late` lists shortly before the split: most validation rows of all, but too few training
    // rows to normalize by, so it has no windows at all. `early` trains but delists right after
    // the split. The message must blame `late`'s short training history, not its ample data.
    let bars = synthetic_bars(2, 450, 3);
    let split = bars.symbols[0].dates[300];
    let slice = |s: &crate::features::SymbolBars, r: std::ops::Range<usize>| {
        let mut out = s.clone();
        out.dates = s.dates[r.clone()].to_vec();
        for (dst, src) in [
            (&mut out.open, &s.open),
            (&mut out.high, &s.high),
            (&mut out.low, &s.low),
            (&mut out.close, &s.close),
            (&mut out.volume, &s.volume),
            (&mut out.amount, &s.amount),
            (&mut out.adj_factor, &s.adj_factor),
        ] {
            *dst = src[r.clone()].to_vec();
        }
        out
    };
    let mut bars = bars;
    bars.symbols[0] = slice(&bars.symbols[0], 0..305);
    bars.symbols[1] = slice(&bars.symbols[1], 280..450);
    let p = NormalizeParams {
        split_date: Some(split),
        ..base()
    };
    let err = try_build(&bars, &p).unwrap_err();
    assert!(matches!(err, NormalizeError::NoValidationWindows { .. }), "{err}");
    let text = err.to_string();
    let late = &bars.symbols[1].symbol;
    assert!(
        text.contains(&format!("`{late}` has the most rows from the split ({split}) on, 150,")),
        "{text}"
    );
    assert!(text.contains("but only 0 training rows after the"), "{text}");
    assert!(text.contains("fewer than the 20 it needs"), "{text}");
}

/// Rows `keep` of a symbol, every column cut alike.
fn rows_of(s: &SymbolBars, keep: std::ops::Range<usize>) -> SymbolBars {
    let cut = |v: &[f64]| v[keep.clone()].to_vec();
    SymbolBars {
        symbol: s.symbol.clone(),
        dates: s.dates[keep.clone()].to_vec(),
        open: cut(&s.open),
        high: cut(&s.high),
        low: cut(&s.low),
        close: cut(&s.close),
        volume: cut(&s.volume),
        amount: cut(&s.amount),
        adj_factor: cut(&s.adj_factor),
    }
}

#[test]
fn symbols_left_without_training_windows_are_named_in_notes() {
    let full = synthetic_bars(5, 600, 7);
    let split = date("2015-09-01");
    let v0 = full.symbols[0].dates.partition_point(|d| *d < split);
    let names: Vec<String> = full.symbols.iter().map(|s| s.symbol.clone()).collect();
    let mut bars = full.clone();
    // 10 training rows after the 60-row warm-up: too few to normalize per symbol.
    bars.symbols[1] = rows_of(&full.symbols[1], 0..70);
    // Enough to normalize (22 rows), not for a window of 60 + 20 + 5; nothing after the split.
    bars.symbols[2] = rows_of(&full.symbols[2], 0..82);
    // Listed 70 rows before the split: too few to normalize, plenty of validation rows.
    bars.symbols[3] = rows_of(&full.symbols[3], v0 - 70..600);
    let p = NormalizeParams { horizon: 5, ..base() };
    let (_, rec) = try_build(&bars, &p).unwrap();
    let window = "one needs 85 rows: 60 warm-up + seq_len 20 + horizon 5";
    assert_eq!(
        rec.notes(),
        [
            format!(
                "skipped 2 symbols with too few training rows to normalize by (scope = \"per_symbol\" needs 20 rows before the split 2015-09-01, after the 60-row feature warm-up): {}, {}",
                names[1], names[3]
            ),
            format!(
                "skipped 1 symbol with too little history before the split 2015-09-01 for one training window ({window}) and too little after it for a validation window: {}",
                names[2]
            ),
        ]
    );
    // Pooled statistics normalize every symbol: the late listing adds validation windows only.
    let pooled = NormalizeParams {
        scope: NormScope::Pooled,
        ..p.clone()
    };
    let (_, rec) = try_build(&bars, &pooled).unwrap();
    assert_eq!(
        rec.notes(),
        [
            format!(
                "skipped 2 symbols with too little history before the split 2015-09-01 for one training window ({window}) and too little after it for a validation window: {}, {}",
                names[1], names[2]
            ),
            format!(
                "1 symbol has too little history before the split 2015-09-01 for one training window ({window}), so it adds validation windows only: {}",
                names[3]
            ),
        ]
    );
    let (_, rec) = try_build(&full, &p).unwrap();
    assert!(rec.notes().is_empty(), "{:?}", rec.notes());
}

/// Removes `rows` from every column of `s`: days the symbol did not trade.
fn drop_rows(s: &mut SymbolBars, rows: std::ops::Range<usize>) {
    for col in [
        &mut s.open,
        &mut s.high,
        &mut s.low,
        &mut s.close,
        &mut s.volume,
        &mut s.amount,
        &mut s.adj_factor,
    ] {
        col.drain(rows.clone());
    }
    s.dates.drain(rows);
}

/// The spanning count against a direct one: for every window, the calendar positions of its
/// last day and of its target day, each found by search in the union of all symbols' dates.
#[test]
fn spanning_counts_match_a_direct_count_with_gaps_in_many_symbols_and_horizons() {
    let mut bars = market();
    // Gaps of different lengths at different places, in training and validation rows.
    for (s, at, len) in [
        (0, 100, 5),
        (0, 400, 1),
        (1, 250, 3),
        (3, 30, 2),
        (3, 480, 7),
        (5, 560, 2),
    ] {
        drop_rows(&mut bars.symbols[s], at..at + len);
    }
    let mut calendar: Vec<NaiveDate> = bars.symbols.iter().flat_map(|s| s.dates.clone()).collect();
    calendar.sort_unstable();
    calendar.dedup();
    let position = |d: NaiveDate| calendar.binary_search(&d).unwrap();
    for horizon in [1, 3, 10] {
        let p = NormalizeParams { horizon, ..base() };
        let (w, rec) = try_build(&bars, &p).unwrap();
        let direct = |set: &crate::artifact::WindowSet| {
            (0..set.len())
                .filter(|&i| {
                    let dates = &bars.symbols[set.symbol_idx[i] as usize].dates;
                    let t = dates.binary_search(&set.dates[i]).unwrap();
                    position(dates[t + horizon]) - position(dates[t]) > horizon
                })
                .count()
        };
        let (train, valid) = (direct(&w.train), direct(&w.valid));
        assert!(train + valid > 0, "horizon {horizon}: the gaps make spanning windows");
        let note = rec
            .notes()
            .iter()
            .find(|n| n.contains("spanning more than horizon"))
            .cloned()
            .unwrap_or_default();
        assert!(
            note.starts_with(&format!(
                "{train} of {} training and {valid} of {} validation windows",
                w.train.len(),
                w.valid.len()
            )),
            "horizon {horizon}: {note}"
        );
    }
}

#[test]
fn windows_whose_target_spans_a_gap_in_the_bars_are_counted_in_a_note() {
    let mut bars = market();
    // Symbol 0 does not trade for five days: the window ending the day before the gap has a
    // 1-row target that spans six trading days of the other symbols' calendar.
    drop_rows(&mut bars.symbols[0], 100..105);
    let (w, rec) = try_build(&bars, &base()).unwrap();
    let note = rec
        .notes()
        .iter()
        .find(|n| n.contains("spanning more than horizon 1"))
        .expect("a note");
    assert!(
        note.starts_with(&format!(
            "1 of {} training and 0 of {} validation windows",
            w.train.len(),
            w.valid.len()
        )),
        "{note}"
    );
    let (_, clean) = try_build(&market(), &base()).unwrap();
    assert!(
        !clean.notes().iter().any(|n| n.contains("spanning")),
        "{:?}",
        clean.notes()
    );
}
