//! Feature math against hand-computed values (tests of compute, rolling and normalize).
//!
//! Expected values are written as the arithmetic done by hand (noted beside each), never by
//! calling the code under test.

use crate::artifact::SymbolBars;
use crate::features::compute::{compute_symbol, Prepared, SymbolFeatures};
use crate::features::normalize::{select_quantile, Moments};
use crate::features::rolling::{rolling_moments, rolling_skew};
use crate::kinds::features::Feature;
use chrono::NaiveDate;
use proptest::prelude::*;

const LN2: f64 = std::f64::consts::LN_2;

/// Bars from closes; open = close, high/low = close -/+ 0, volume 1000, factor 1 unless given.
fn bars(close: &[f64]) -> SymbolBars {
    let n = close.len();
    let day0 = NaiveDate::from_ymd_opt(2020, 1, 1).unwrap();
    let mut b = SymbolBars::new("T");
    b.dates = (0..n).map(|i| day0 + chrono::Duration::days(i as i64)).collect();
    b.open = close.to_vec();
    b.high = close.to_vec();
    b.low = close.to_vec();
    b.close = close.to_vec();
    b.volume = vec![1000.0; n];
    b.amount = vec![0.0; n];
    b.adj_factor = vec![1.0; n];
    b
}

fn column(b: &SymbolBars, feature: Feature) -> Vec<f64> {
    let f: SymbolFeatures = compute_symbol(b, &[feature], false, &mut Prepared::new()).unwrap();
    f.col(0).to_vec()
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if w.is_nan() {
            assert!(g.is_nan(), "row {i}: expected NaN (warm-up), got {g}");
        } else {
            assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "row {i}: got {g}, want {w}");
        }
    }
}

const NAN: f64 = f64::NAN;

#[test]
fn log_returns_over_horizons() {
    // Closes 1, 2, 4, 2, 8: ln(2/1), ln(4/2), ln(2/4), ln(8/2) = ln2, ln2, -ln2, 2ln2.
    let b = bars(&[1.0, 2.0, 4.0, 2.0, 8.0]);
    assert_close(&column(&b, Feature::Ret(1)), &[NAN, LN2, LN2, -LN2, 2.0 * LN2]);
    // ln(4/1), ln(2/2), ln(8/4).
    assert_close(&column(&b, Feature::Ret(2)), &[NAN, NAN, 2.0 * LN2, 0.0, LN2]);
}

#[test]
fn adjustment_removes_splits_from_prices_and_volume() {
    // A 2:1 split on day 2: raw close halves while the factor doubles, and twice as many shares
    // trade. Adjusted close is 10 every day, adjusted volume 100 every day.
    let mut b = bars(&[10.0, 10.0, 5.0, 5.0]);
    b.adj_factor = vec![1.0, 1.0, 2.0, 2.0];
    b.volume = vec![100.0, 100.0, 200.0, 200.0];
    assert_close(&column(&b, Feature::Ret(1)), &[NAN, 0.0, 0.0, 0.0]);
    assert_close(&column(&b, Feature::DlogVolume), &[NAN, 0.0, 0.0, 0.0]);
}

#[test]
fn range_position_and_gap() {
    let mut b = bars(&[10.0, 10.5, 10.0]);
    b.high = vec![12.0, 11.0, 10.0];
    b.low = vec![8.0, 9.0, 10.0];
    b.open = vec![10.0, 20.0, 5.25];
    // (12-8)/10 = 0.4, (11-9)/10.5, (10-10)/10 = 0.
    assert_close(&column(&b, Feature::HlRange), &[0.4, 2.0 / 10.5, 0.0]);
    // (10-8)/(12-8) = 0.5, (10.5-9)/(11-9) = 0.75, no range -> 0.5.
    assert_close(&column(&b, Feature::ClosePos), &[0.5, 0.75, 0.5]);
    // ln(20/10) = ln2, ln(5.25/10.5) = -ln2.
    assert_close(&column(&b, Feature::Gap), &[NAN, LN2, -LN2]);
}

/// Closes whose log returns are exactly `r` (up to exp/ln rounding).
fn from_returns(r: &[f64]) -> Vec<f64> {
    let mut c = vec![100.0];
    for x in r {
        c.push(c.last().unwrap() * x.exp());
    }
    c
}

#[test]
fn rolling_volatility_is_sample_sd_of_returns() {
    let b = bars(&from_returns(&[0.01, -0.02, 0.03, 0.0, 0.01]));
    // Window {0.01, -0.02, 0.03}: sum r^2 = 0.0014, n*mean^2 = 3*(0.02/3)^2 = 0.0004/3,
    // m2 = 0.0038/3, var = m2/2 = 0.0019/3. {-0.02, 0.03, 0}: 0.0013 - 0.0001/3 = 0.0038/3
    // again. {0.03, 0, 0.01}: 0.001 - 0.0016/3 = 0.0014/3, var 0.0007/3.
    let want = [
        NAN,
        NAN,
        NAN,
        (0.0019_f64 / 3.0).sqrt(),
        (0.0019_f64 / 3.0).sqrt(),
        (0.0007_f64 / 3.0).sqrt(),
    ];
    let got = column(&b, Feature::Vol(3));
    for (t, w) in want.iter().enumerate() {
        if w.is_nan() {
            assert!(got[t].is_nan());
        } else {
            // exp/ln round-trips the returns only to ~1e-16.
            assert!((got[t] - w).abs() < 1e-12, "row {t}: {} vs {w}", got[t]);
        }
    }
}

#[test]
fn sma_ratio_and_bollinger() {
    let b = bars(&[1.0, 2.0, 3.0, 4.0, 5.0]);
    // SMA3 = 2, 3, 4: 3/2 - 1, 4/3 - 1, 5/4 - 1.
    assert_close(&column(&b, Feature::SmaRatio(3)), &[NAN, NAN, 0.5, 1.0 / 3.0, 0.25]);
    // Every window is {k-1, k, k+1}: mean k, population sd sqrt(2/3); the close sits one above
    // the mean, so %b = (1 + 2sd) / 4sd = 0.5 + 1 / (4 sd).
    let pctb = 0.5 + 1.0 / (4.0 * (2.0_f64 / 3.0).sqrt());
    assert_close(&column(&b, Feature::BbPctb(3)), &[NAN, NAN, pctb, pctb, pctb]);
    // A flat window has no band: 0.5.
    let flat = bars(&[7.0; 4]);
    assert_close(&column(&flat, Feature::BbPctb(3)), &[NAN, NAN, 0.5, 0.5]);
}

#[test]
fn rsi_uses_wilder_smoothing() {
    // Changes +1, -1, +2, -1, +2.
    let b = bars(&[10.0, 11.0, 10.0, 12.0, 11.0, 13.0]);
    // Seed (t=3): gain (1+0+2)/3 = 1, loss 1/3 -> 100 * 1 / (4/3) = 75.
    // t=4 (-1): gain 2/3 * 1 = 2/3, loss 2/3 * 1/3 + 1/3 = 5/9 -> 100 * (6/9) / (11/9) = 600/11.
    // t=5 (+2): gain 2/3 * 2/3 + 2/3 = 10/9, loss 2/3 * 5/9 = 10/27 -> 100 * 30/40 = 75.
    assert_close(&column(&b, Feature::Rsi(3)), &[NAN, NAN, NAN, 75.0, 600.0 / 11.0, 75.0]);
    let flat = bars(&[5.0; 5]);
    assert_close(&column(&flat, Feature::Rsi(3)), &[NAN, NAN, NAN, 50.0, 50.0]);
}

#[test]
fn macd_after_a_price_step() {
    // Close 1 on day 0, then 2: an EMA with weight a seeded at 1 is 2 - (1-a)^t, so the line
    // is (25/27)^t - (11/13)^t and MACD = line / 2.
    let mut close = vec![1.0];
    close.extend(std::iter::repeat_n(2.0, 40));
    let b = bars(&close);
    let line = |t: usize| (25.0_f64 / 27.0).powi(t as i32) - (11.0_f64 / 13.0).powi(t as i32);
    let macd = column(&b, Feature::Macd);
    let signal = column(&b, Feature::MacdSignal);
    for t in 0..close.len() {
        if t < 25 {
            assert!(macd[t].is_nan(), "row {t} is warm-up");
            continue;
        }
        assert!((macd[t] - line(t) / 2.0).abs() < 1e-12, "macd row {t}");
        // Signal: EMA9 (weight 0.2) of the line, expanded as a weighted sum; line(0) = 0.
        let sig: f64 = (1..=t).map(|i| 0.2 * 0.8_f64.powi((t - i) as i32) * line(i)).sum();
        if t < 33 {
            assert!(signal[t].is_nan(), "row {t} is warm-up");
        } else {
            assert!((signal[t] - sig / 2.0).abs() < 1e-12, "signal row {t}");
        }
    }
}

#[test]
fn volume_z_score_and_log_change() {
    let mut b = bars(&[1.0; 4]);
    b.volume = vec![100.0, 200.0, 300.0, 600.0];
    // {100,200,300}: mean 200, sd 100 -> z = 1. {200,300,600}: deviations -500/3, -200/3,
    // 700/3, squares sum 780000/9, var 130000/3 -> z = (700/3) / sqrt(130000/3).
    let z = (700.0 / 3.0) / (130000.0_f64 / 3.0).sqrt();
    assert_close(&column(&b, Feature::VolZ(3)), &[NAN, NAN, 1.0, z]);
    b.volume = vec![100.0, 200.0, 0.0, 50.0];
    // ln(200/100); a zero-volume day on either side gives 0.
    assert_close(&column(&b, Feature::DlogVolume), &[NAN, LN2, 0.0, 0.0]);
}

#[test]
fn skewness_of_returns() {
    let b = bars(&from_returns(&[0.01, -0.02, 0.03]));
    // Deviations from the mean 0.02/3 are (1, -8, 7)/300; skew is scale-free, so use
    // (1, -8, 7): m2 = 114/3 = 38, m3 = (1 - 512 + 343)/3 = -56, and with n = 3 the
    // correction sqrt(n(n-1))/(n-2) = sqrt(6).
    let want = 6.0_f64.sqrt() * -56.0 / 38.0_f64.powf(1.5);
    let got = column(&b, Feature::Skew(3));
    assert!(got[..3].iter().all(|v| v.is_nan()));
    assert!((got[3] - want).abs() < 1e-9, "{} vs {want}", got[3]);
}

#[test]
fn quantiles_interpolate_linearly() {
    // Sorted 1, 2, 3, 4: positions 0.75, 1.5, 2.25 -> 1.75, 2.5, 3.25; ends are min and max.
    let want = [(0.0, 1.0), (0.25, 1.75), (0.5, 2.5), (0.75, 3.25), (1.0, 4.0)];
    for (q, value) in want {
        assert_eq!(select_quantile(&mut [4.0, 1.0, 3.0, 2.0], q), value, "q = {q}");
    }
    assert_eq!(select_quantile(&mut [5.0, 1.0, 9.0], 0.5), 5.0);
}

#[test]
fn merged_moments_equal_moments_of_the_union() {
    let m = Moments::of(&[1.0, 2.0, 3.0]).merge(Moments::of(&[10.0, 20.0]));
    // Union mean 36/5 = 7.2; squared deviations 38.44 + 27.04 + 17.64 + 7.84 + 163.84 = 254.8.
    assert_eq!(m.count, 5.0);
    assert!((m.mean - 7.2).abs() < 1e-12, "{m:?}");
    assert!((m.m2 - 254.8).abs() < 1e-9, "{m:?}");
    assert_eq!(m.merge(Moments::default()), m);
    assert_eq!(Moments::default().merge(m), m);
}

/// O(n w) reference: the same statistics recomputed from scratch for every window.
fn naive(x: &[f64], w: usize, t: usize) -> (f64, f64, f64) {
    let win = &x[t + 1 - w..=t];
    let n = w as f64;
    let mean = win.iter().sum::<f64>() / n;
    let m2: f64 = win.iter().map(|v| (v - mean).powi(2)).sum();
    let m3: f64 = win.iter().map(|v| (v - mean).powi(3)).sum();
    let (b, c) = (m2 / n, m3 / n);
    let skew = (n * (n - 1.0)).sqrt() / (n - 2.0) * c / b.powf(1.5);
    (mean, m2, skew)
}

proptest! {
    #[test]
    fn running_statistics_match_recomputation(
        x in proptest::collection::vec(-0.1_f64..0.1, 3..300),
        w in 3_usize..40,
    ) {
        prop_assume!(w <= x.len());
        let mut checked = 0;
        rolling_moments(&x, 0, w, |t, mean, m2| {
            let (m, s2, _) = naive(&x, w, t);
            assert!((mean - m).abs() < 1e-12, "mean at {t}");
            assert!((m2 - s2).abs() < 1e-10 * s2.max(1e-6), "m2 at {t}: {m2} vs {s2}");
            checked += 1;
        });
        prop_assert_eq!(checked, x.len() + 1 - w);
        rolling_skew(&x, 0, w, |t, skew| {
            let (_, _, s) = naive(&x, w, t);
            assert!((skew - s).abs() < 1e-6 * s.abs().max(1.0), "skew at {t}: {skew} vs {s}");
        });
    }
}
