//! Synthetic market generator (CLI `data synth`, quickstart -> write -> stock tables).
//!
//! Returns follow a one-factor-per-sector model whose factors and idiosyncratic parts have
//! GARCH(1,1) volatility with Student-t innovations plus rare jumps, so the data has the fat
//! tails and volatility clustering that real daily bars have. Every symbol draws from its own
//! ChaCha stream of the seed, so the output depends on the seed alone.
//!
//! One signal is planted, so a model has something known to learn: each day's log return
//! carries [`SIGNAL_COEFFICIENT`] times the symbol's own previous-day log return (a short-term
//! reversal), so `E[r(t+1) | r(t)] = drift + SIGNAL_COEFFICIENT * r(t)`. The best predictor
//! uses it; docs/data.md states the validation MSE it reaches relative to predicting zero.

use crate::db::Db;
use crate::market::stock::{Bar, MarketError, SymbolInfo, SymbolRows};
use crate::market::synth_options::{style_name, CodeStyle, SynthOptions, GENERATOR_VERSION, US_CAPACITY};
use crate::market::write::{write_synth, SynthPlan};
use chrono::{Datelike, NaiveDate, Weekday};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal, StudentT};
use std::time::Instant;

/// The planted signal: today's log return includes this times yesterday's log return of the
/// same symbol (its whole return, factors and jumps included).
pub const SIGNAL_COEFFICIENT: f64 = -0.4;

const SECTORS: usize = 10;
const SECTOR_NAMES: [&str; SECTORS] = [
    "Financials",
    "Technology",
    "Health Care",
    "Industrials",
    "Consumer Staples",
    "Consumer Discretionary",
    "Energy",
    "Materials",
    "Utilities",
    "Real Estate",
];
/// 600, 601, 603, 688 on Shanghai; 000, 002, 300 on Shenzhen: 1,000 codes each.
const CHINA_BOARDS: [(&str, &str); 7] = [
    ("600", "SH"),
    ("000", "SZ"),
    ("601", "SH"),
    ("002", "SZ"),
    ("300", "SZ"),
    ("603", "SH"),
    ("688", "SH"),
];
/// What [`synth`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthReport {
    /// The dataset version the market was written as.
    pub version: crate::market::versions::VersionRef,
    pub symbols: usize,
    pub rows: u64,
    pub first_date: NaiveDate,
    pub last_date: NaiveDate,
    pub seed: u64,
    pub seconds: f64,
}

impl std::fmt::Display for SynthReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "synthetic market {}: {} symbols, {} daily bars from {} to {} (seed {}) written in {:.1} s",
            self.version, self.symbols, self.rows, self.first_date, self.last_date, self.seed, self.seconds
        )
    }
}

/// Generates a reproducible synthetic market and writes it to `db` as a new version of its
/// dataset ([`crate::market::versions::synth_dataset`]); nothing stored before is touched. Callers that
/// want an existing version reused look it up first ([`super::catalog::ensure_synth`]).
pub async fn synth(
    db: &Db,
    opts: &SynthOptions,
    progress: &indicatif::ProgressBar,
) -> Result<SynthReport, MarketError> {
    opts.check()?;
    let started = Instant::now();
    let calendar = trading_days(opts.start, opts.days);
    let symbols: Vec<SymbolInfo> = (0..opts.symbols).map(|i| symbol_info(opts, i, &calendar)).collect();
    progress.set_length(opts.symbols as u64);
    let (tx, rx) = tokio::sync::mpsc::channel::<SymbolRows>(4);
    // Generation runs on a blocking thread while the writer streams the previous symbols.
    // Symbols go out in code order, the order of the bars' primary key, so the table's B-tree
    // grows at its right edge instead of splitting pages all over it; each symbol draws from
    // its own stream, so the order changes nothing in the data.
    let gen_opts = opts.clone();
    let gen_symbols = symbols.clone();
    let mut order: Vec<usize> = (0..symbols.len()).collect();
    order.sort_by(|&a, &b| symbols[a].code.cmp(&symbols[b].code));
    let generator = tokio::task::spawn_blocking(move || {
        let market = Market::new(&gen_opts, calendar.len());
        for i in order {
            let rows = market.symbol_rows(&gen_opts, i, &gen_symbols[i], &calendar);
            if tx.blocking_send(rows).is_err() {
                break; // the writer failed; its error is reported below
            }
        }
    });
    let plan = SynthPlan {
        symbols: &symbols,
        rows: rx,
        progress,
    };
    let new = crate::market::versions::NewVersion {
        dataset: crate::market::versions::synth_dataset(opts),
        origin: crate::market::versions::Origin::synth(opts),
        parent: None,
    };
    let written = write_synth(db, plan, &new).await;
    generator
        .await
        .map_err(|e| MarketError::Options(format!("generator failed: {e}")))?;
    let (version, rows) = written?;
    let calendar = trading_days(opts.start, opts.days);
    Ok(SynthReport {
        version,
        symbols: opts.symbols,
        rows,
        first_date: calendar[0],
        last_date: *calendar.last().expect("days >= 1"),
        seed: opts.seed,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The market `opts` describes, generated in memory: the bars `synth` writes, in code order
/// (the order `load` returns `symbols = "all"` in), prices raw and adjustment factors as
/// stored, exactly as a load with the defaults returns them.
pub fn synth_bars(opts: &SynthOptions) -> Result<crate::artifact::Bars, MarketError> {
    opts.check()?;
    let calendar = trading_days(opts.start, opts.days);
    let market = Market::new(opts, calendar.len());
    let symbols: Vec<SymbolInfo> = (0..opts.symbols).map(|i| symbol_info(opts, i, &calendar)).collect();
    let mut order: Vec<usize> = (0..symbols.len()).collect();
    order.sort_by(|&a, &b| symbols[a].code.cmp(&symbols[b].code));
    let mut out = crate::artifact::Bars {
        symbols: Vec::with_capacity(symbols.len()),
        content_hash: format!(
            "synth:v{GENERATOR_VERSION}:{}x{}:{}:seed{}:{}",
            opts.symbols,
            opts.days,
            opts.start,
            opts.seed,
            style_name(opts.style)
        ),
    };
    for i in order {
        let rows = market.symbol_rows(opts, i, &symbols[i], &calendar);
        let mut b = crate::artifact::SymbolBars::new(rows.code);
        for bar in rows.bars {
            b.dates.push(bar.date);
            b.open.push(bar.open);
            b.high.push(bar.high);
            b.low.push(bar.low);
            b.close.push(bar.close);
            b.volume.push(bar.volume);
            b.amount.push(bar.amount);
            b.adj_factor.push(bar.adj_factor);
        }
        if !b.is_empty() {
            out.symbols.push(b);
        }
    }
    Ok(out)
}

/// Whether markets are closed on `day`: weekends and a few fixed holidays every year.
fn is_holiday(day: NaiveDate) -> bool {
    matches!(day.weekday(), Weekday::Sat | Weekday::Sun)
        || matches!(
            (day.month(), day.day()),
            (1, 1) | (5, 1) | (10, 1) | (10, 2) | (10, 3) | (12, 25)
        )
}

/// The first `days` trading days on or after `start`.
pub(crate) fn trading_days(start: NaiveDate, days: usize) -> Vec<NaiveDate> {
    start.iter_days().filter(|d| !is_holiday(*d)).take(days).collect()
}

fn symbol_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// Code, exchange and currency of symbol `i`; codes are unique bijections of `i`.
pub(super) fn symbol_info(opts: &SynthOptions, i: usize, calendar: &[NaiveDate]) -> SymbolInfo {
    let china = match opts.style {
        CodeStyle::China => Some(i),
        CodeStyle::Us => None,
        CodeStyle::Mixed => i.is_multiple_of(2).then_some(i / 2),
    };
    let (code, exchange, currency) = match china {
        Some(k) => {
            let (board, exchange) = CHINA_BOARDS[k % 7];
            // 37 is coprime to 1000, so this permutes the 1,000 numbers of a board.
            let number = ((k / 7) * 37 + 1) % 1000;
            let code = format!("{board}{number:03}.{exchange}");
            (code, if exchange == "SH" { "SSE" } else { "SZSE" }, "CNY")
        }
        None => {
            let k = if opts.style == CodeStyle::Mixed { i / 2 } else { i };
            // 7919 is coprime to 26^4, so tickers are distinct and look scattered.
            let mut n = (k * 7919 + 4711) % US_CAPACITY;
            let mut letters = [b'A'; 4];
            for l in letters.iter_mut().rev() {
                *l = b'A' + (n % 26) as u8;
                n /= 26;
            }
            let code = String::from_utf8(letters.to_vec()).expect("ASCII");
            (code, if k % 2 == 0 { "NYSE" } else { "NASDAQ" }, "USD")
        }
    };
    let life = Lifetime::draw(opts.seed, i, calendar.len());
    SymbolInfo {
        name: format!("Synthetic {code}"),
        code,
        exchange: exchange.to_owned(),
        currency: currency.to_owned(),
        listed: Some(calendar[life.first]),
        delisted: (life.end < calendar.len()).then(|| calendar[life.end]),
        sector: Some(SECTOR_NAMES[sector_of(opts.seed, i)].to_owned()),
    }
}

fn sector_of(seed: u64, i: usize) -> usize {
    symbol_rng(seed ^ 0x5EC7, i as u64).gen_range(0..SECTORS)
}

/// Trading-day indices a symbol exists for: `first..end`.
struct Lifetime {
    first: usize,
    end: usize,
}

impl Lifetime {
    fn draw(seed: u64, i: usize, days: usize) -> Self {
        let mut rng = symbol_rng(seed ^ 0x11FE, i as u64);
        // About 10% list late (within the first 70% of the calendar), 3% delist.
        let first = if days > 10 && rng.gen_bool(0.10) {
            rng.gen_range(1..days * 7 / 10)
        } else {
            0
        };
        let end = if days > 10 && rng.gen_bool(0.03) {
            rng.gen_range((days * 7 / 10).max(first + 1)..days)
        } else {
            days
        };
        Lifetime { first, end }
    }
}

/// A GARCH(1,1) variance process: `var' = omega + alpha * shock^2 + beta * var`.
#[derive(Debug, Clone, Copy)]
struct Garch {
    omega: f64,
    alpha: f64,
    beta: f64,
    var: f64,
}

impl Garch {
    fn with_daily_vol(vol: f64, alpha: f64, beta: f64) -> Self {
        let var = vol * vol;
        Garch {
            omega: var * (1.0 - alpha - beta),
            alpha,
            beta,
            var,
        }
    }

    /// Draws today's shock and moves the variance on.
    fn step(&mut self, rng: &mut ChaCha8Rng, t: &StudentT<f64>) -> f64 {
        // Student-t with 5 degrees of freedom has variance 5/3; rescale to unit variance.
        let shock = self.var.sqrt() * t.sample(rng) * (3.0f64 / 5.0).sqrt();
        self.var = self.omega + self.alpha * shock * shock + self.beta * self.var;
        shock
    }
}

/// Market and sector factor returns shared by all symbols.
struct Market {
    market: Vec<f64>,
    sectors: Vec<Vec<f64>>,
}

impl Market {
    fn new(opts: &SynthOptions, days: usize) -> Self {
        let t = StudentT::new(5.0).expect("valid dof");
        let mut rng = symbol_rng(opts.seed, 0);
        let mut garch = Garch::with_daily_vol(0.010, 0.09, 0.89);
        let market = (0..days).map(|_| garch.step(&mut rng, &t)).collect();
        let sectors = (0..SECTORS)
            .map(|s| {
                let mut rng = symbol_rng(opts.seed ^ 0x5EC7_0000, s as u64);
                let mut garch = Garch::with_daily_vol(0.007, 0.07, 0.90);
                (0..days).map(|_| garch.step(&mut rng, &t)).collect()
            })
            .collect();
        Market { market, sectors }
    }

    /// The bars of symbol `i` over its lifetime, minus suspended days.
    fn symbol_rows(&self, opts: &SynthOptions, i: usize, info: &SymbolInfo, calendar: &[NaiveDate]) -> SymbolRows {
        let life = Lifetime::draw(opts.seed, i, calendar.len());
        let sector = &self.sectors[sector_of(opts.seed, i)];
        // Stream 0 is the market factor; symbols use streams 1.. so they never overlap.
        let mut rng = symbol_rng(opts.seed, i as u64 + 1);
        let t = StudentT::new(5.0).expect("valid dof");
        let normal = Normal::new(0.0, 1.0).expect("valid normal");
        let beta = rng.gen_range(0.6..1.4);
        let loading = rng.gen_range(0.5..1.2);
        let mut garch = Garch::with_daily_vol(rng.gen_range(0.010..0.025), 0.08, 0.90);
        let drift = rng.gen_range(-0.0002..0.0006);
        let mut close: f64 = rng.gen_range(3.0f64.ln()..300.0f64.ln()).exp();
        let base_volume = (rng.gen_range(11.0f64..16.0)).exp();
        let mut adj_factor = 1.0;
        let mut shares_per_old_share = 1.0;
        let mut suspended_until = 0usize;
        let mut previous_return = 0.0;
        let mut bars = Vec::with_capacity(life.end - life.first);
        for day in life.first..life.end {
            let idio = garch.step(&mut rng, &t);
            let jump = if rng.gen_bool(0.004) {
                normal.sample(&mut rng) * 0.06
            } else {
                0.0
            };
            let signal = SIGNAL_COEFFICIENT * previous_return;
            let r = (drift + beta * self.market[day] + loading * sector[day] + idio + jump + signal).clamp(-0.5, 0.5);
            previous_return = r;
            // Splits: rare at random, likelier once the price is high; raw prices drop by the
            // ratio and adj_factor rises by it, so adjusted prices stay continuous.
            let split_p = if close > 200.0 { 0.01 } else { 0.0003 };
            if day > life.first && rng.gen_bool(split_p) {
                let ratio = [2.0, 2.0, 3.0, 1.5][rng.gen_range(0..4)];
                close /= ratio;
                adj_factor *= ratio;
                shares_per_old_share *= ratio;
            }
            let prev = close;
            close = (prev * r.exp()).max(0.05);
            if day < suspended_until {
                continue;
            }
            if day > life.first && rng.gen_bool(0.001) {
                suspended_until = day + rng.gen_range(1..=10);
                continue;
            }
            let day_vol = garch.var.sqrt();
            let open = prev * (0.3 * r + 0.002 * normal.sample(&mut rng)).exp();
            let high = open.max(close) * (normal.sample(&mut rng).abs() * 0.4 * day_vol).exp();
            let low = open.min(close) * (-normal.sample(&mut rng).abs() * 0.4 * day_vol).exp();
            let noise = (0.25 * normal.sample(&mut rng)).exp();
            let volume = (base_volume * shares_per_old_share * noise * (1.0 + 30.0 * r.abs()))
                .round()
                .max(100.0);
            let (open, high, low, close_c) = (cents(open), cents(high), cents(low), cents(close));
            bars.push(Bar {
                date: calendar[day],
                open,
                high,
                low,
                close: close_c,
                volume,
                amount: (volume * (open + high + low + close_c) / 4.0).round(),
                adj_factor,
            });
        }
        SymbolRows {
            code: info.code.clone(),
            bars,
        }
    }
}

/// Rounds a price to cents (monotone, so low <= open, close <= high still holds), never to 0.
fn cents(p: f64) -> f64 {
    ((p * 100.0).round() / 100.0).max(0.01)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_skips_weekends_and_holidays() {
        let days = trading_days(NaiveDate::from_ymd_opt(2020, 12, 24).unwrap(), 4);
        let want: Vec<NaiveDate> = [(2020, 12, 24), (2020, 12, 28), (2020, 12, 29), (2020, 12, 30)]
            .iter()
            .map(|&(y, m, d)| NaiveDate::from_ymd_opt(y, m, d).unwrap())
            .collect();
        assert_eq!(days, want);
        let october = trading_days(NaiveDate::from_ymd_opt(2021, 9, 30).unwrap(), 2);
        assert_eq!(october[1], NaiveDate::from_ymd_opt(2021, 10, 4).unwrap());
    }

    #[test]
    fn codes_are_unique_and_well_formed() {
        for style in [CodeStyle::China, CodeStyle::Us, CodeStyle::Mixed] {
            let opts = SynthOptions {
                symbols: 3000,
                days: 20,
                start: NaiveDate::from_ymd_opt(2020, 1, 1).unwrap(),
                seed: 1,
                style,
            };
            let cal = trading_days(opts.start, opts.days);
            let codes: std::collections::HashSet<String> =
                (0..opts.symbols).map(|i| symbol_info(&opts, i, &cal).code).collect();
            assert_eq!(codes.len(), opts.symbols, "{style:?}");
            assert!(codes.iter().all(|c| crate::market::stock::is_valid_code(c)));
        }
    }

    #[test]
    fn bars_are_consistent_and_splits_keep_adjusted_prices_continuous() {
        let opts = SynthOptions {
            symbols: 40,
            days: 1500,
            start: NaiveDate::from_ymd_opt(2015, 1, 1).unwrap(),
            seed: 9,
            style: CodeStyle::China,
        };
        let cal = trading_days(opts.start, opts.days);
        let market = Market::new(&opts, cal.len());
        let mut splits = 0;
        for i in 0..opts.symbols {
            let info = symbol_info(&opts, i, &cal);
            let rows = market.symbol_rows(&opts, i, &info, &cal);
            for w in rows.bars.windows(2) {
                assert!(w[0].date < w[1].date);
                if w[1].adj_factor != w[0].adj_factor {
                    splits += 1;
                    let ratio = w[1].adj_factor / w[0].adj_factor;
                    assert!([1.5, 2.0, 3.0].contains(&ratio), "ratio {ratio}");
                    let adjusted_move = w[1].close / w[0].close * ratio;
                    assert!(adjusted_move > 0.3 && adjusted_move < 3.0);
                }
            }
            for b in &rows.bars {
                assert!(b.low <= b.open.min(b.close) && b.high >= b.open.max(b.close));
                assert!(b.low > 0.0 && b.volume > 0.0);
            }
        }
        assert!(splits > 0, "some symbol should split in 1,500 days x 40 symbols");
    }
}
