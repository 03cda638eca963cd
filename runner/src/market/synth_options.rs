//! What names a synthetic market (CLI `data synth`, manifest `[data]` -> **options** ->
//! generator, dataset versions, identity): its options and code styles, the generator's
//! version, the demo market, and the options in words and as a command line.

use super::stock::MarketError;
use chrono::NaiveDate;
use clap::ValueEnum;

/// Seed of the demo market, which an empty embedded database is filled with.
pub const DEMO_SEED: u64 = 20_240_601;
/// Symbols in the demo market.
pub const DEMO_SYMBOLS: usize = 50;
/// Trading days in the demo market (about three years).
pub const DEMO_DAYS: usize = 750;
/// First calendar day of the demo market.
pub const DEMO_START: (i32, u32, u32) = (2021, 1, 4);

/// The version of the generator: it changes whenever the same options would generate other
/// bars, so a market an older generator wrote is never taken for this one's (a new dataset
/// version is generated beside it).
/// 1: no planted signal; 2: the reversal of [`SIGNAL_COEFFICIENT`](super::SIGNAL_COEFFICIENT).
pub const GENERATOR_VERSION: u32 = 2;

/// Distinct codes each style can give: Chinese board codes and four-letter tickers.
const CHINA_CAPACITY: usize = 7 * 1000;
pub(crate) const US_CAPACITY: usize = 26 * 26 * 26 * 26;

/// How generated symbol codes look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CodeStyle {
    /// Shanghai/Shenzhen codes such as `600519.SH` and `000001.SZ`, in CNY.
    China,
    /// Four-letter tickers such as `QXTR`, in USD.
    Us,
    /// Alternating Chinese codes and US tickers.
    Mixed,
}

/// What [`synth`](super::synth()) generates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthOptions {
    pub symbols: usize,
    /// Trading days in the calendar (weekends and fixed holidays are skipped).
    pub days: usize,
    /// First calendar day; the calendar starts at the first trading day on or after it.
    pub start: NaiveDate,
    pub seed: u64,
    pub style: CodeStyle,
}

impl SynthOptions {
    pub(crate) fn check(&self) -> Result<(), MarketError> {
        let capacity = match self.style {
            CodeStyle::China => CHINA_CAPACITY,
            CodeStyle::Us => US_CAPACITY,
            CodeStyle::Mixed => 2 * CHINA_CAPACITY,
        };
        if self.symbols == 0 || self.symbols > capacity {
            return Err(MarketError::Options(format!(
                "symbols must be between 1 and {capacity} for style {:?}, got {}",
                self.style, self.symbols
            )));
        }
        if self.days == 0 || self.days > 100_000 {
            return Err(MarketError::Options(format!(
                "days must be between 1 and 100000, got {}",
                self.days
            )));
        }
        Ok(())
    }
}

/// The options of the demo market.
pub fn demo_options() -> SynthOptions {
    let (y, m, d) = DEMO_START;
    SynthOptions {
        symbols: DEMO_SYMBOLS,
        days: DEMO_DAYS,
        start: NaiveDate::from_ymd_opt(y, m, d).expect("valid date"),
        seed: DEMO_SEED,
        style: CodeStyle::Mixed,
    }
}

/// A style as `measured data synth --style` spells it.
pub fn style_name(style: CodeStyle) -> String {
    style
        .to_possible_value()
        .map_or_else(|| format!("{style:?}").to_lowercase(), |v| v.get_name().to_owned())
}

/// The style `--style NAME` selects.
pub fn parse_style(name: &str) -> Option<CodeStyle> {
    CodeStyle::from_str(name, true).ok()
}

/// Every style name, for hints.
pub fn style_names() -> Vec<String> {
    CodeStyle::value_variants().iter().map(|s| style_name(*s)).collect()
}

/// `measured data synth` with the same options, as a command line.
pub fn synth_command(opts: &SynthOptions) -> String {
    format!(
        "measured data synth --symbols {} --days {} --start {} --seed {} --style {}",
        opts.symbols,
        opts.days,
        opts.start,
        opts.seed,
        style_name(opts.style)
    )
}

/// A synthetic market in words: `500 symbols x 2500 days from 2015-01-01, seed 42, style mixed`.
pub fn describe_synth(opts: &SynthOptions) -> String {
    format!(
        "{} symbols x {} days from {}, seed {}, style {}",
        opts.symbols,
        opts.days,
        opts.start,
        opts.seed,
        style_name(opts.style)
    )
}
