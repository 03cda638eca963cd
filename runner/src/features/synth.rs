//! A seeded synthetic market (synth -> `Bars` -> build_windows), for tests and benchmarks.
//!
//! Prices follow a geometric random walk with per-symbol volatility, volumes are
//! autocorrelated, some symbols list late, and a few split 2:1 so adjustment factors matter.

use crate::artifact::{Bars, SymbolBars};
use chrono::{Datelike, NaiveDate, Weekday};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Standard normal draw (Box-Muller); enough for test data, and no extra dependency.
fn normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
    let u2: f64 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Weekdays from 2014-01-02 on: `n` trading days.
fn trading_days(n: usize) -> Vec<NaiveDate> {
    let mut day = NaiveDate::from_ymd_opt(2014, 1, 2).expect("valid date");
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        if !matches!(day.weekday(), Weekday::Sat | Weekday::Sun) {
            out.push(day);
        }
        day = day.succ_opt().expect("date in range");
    }
    out
}

/// `symbols` symbols over `days` trading days; the same seed gives the same bars.
pub fn synthetic_bars(symbols: usize, days: usize, seed: u64) -> Bars {
    let mut rng = StdRng::seed_from_u64(seed);
    let calendar = trading_days(days);
    let mut out = Vec::with_capacity(symbols);
    for i in 0..symbols {
        // One symbol in ten lists somewhere in the first half of the calendar.
        let listed = if i % 10 == 9 { rng.gen_range(0..days / 2 + 1) } else { 0 };
        let n = days - listed;
        let mut b = SymbolBars::new(format!("{:06}.SZ", i + 1));
        b.dates = calendar[listed..].to_vec();
        for v in [
            &mut b.open,
            &mut b.high,
            &mut b.low,
            &mut b.close,
            &mut b.volume,
            &mut b.amount,
            &mut b.adj_factor,
        ] {
            v.reserve_exact(n);
        }
        let sigma = rng.gen_range(0.01..0.03);
        let drift = rng.gen_range(-0.0002..0.0004);
        let base_volume = 10f64.powf(rng.gen_range(5.0..7.0));
        let mut close = rng.gen_range(5.0..80.0);
        let mut adj = 1.0;
        let mut log_volume_dev = 0.0;
        for _ in 0..n {
            let prev = close;
            // A 2:1 split about once per 1,000 days: raw prices halve, the factor doubles.
            let split = rng.gen::<f64>() < 0.001;
            let (prev_raw, div) = if split {
                adj *= 2.0;
                (prev / 2.0, 2.0)
            } else {
                (prev, 1.0)
            };
            let open = prev_raw * (0.3 * sigma * normal(&mut rng)).exp();
            close = prev_raw * (drift + sigma * normal(&mut rng)).exp();
            let top = open.max(close) * (0.5 * sigma * normal(&mut rng).abs()).exp();
            let bottom = open.min(close) * (-0.5 * sigma * normal(&mut rng).abs()).exp();
            log_volume_dev = 0.8 * log_volume_dev + 0.3 * normal(&mut rng);
            let volume = (base_volume * div * log_volume_dev.exp()).round();
            b.open.push(open);
            b.high.push(top);
            b.low.push(bottom);
            b.close.push(close);
            b.volume.push(volume);
            b.amount.push(volume * close);
            b.adj_factor.push(adj);
        }
        out.push(b);
    }
    Bars {
        symbols: out,
        content_hash: format!("synthetic:{symbols}x{days}:seed{seed}"),
    }
}
