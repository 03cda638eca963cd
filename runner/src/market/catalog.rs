//! What the stock tables hold, told by their dataset versions (data synth / import / a run's
//! data preparation -> versions -> **catalog** -> prepare, identity): the helpers that name
//! synthetic markets and find or make the version of one.

use super::synth::{symbol_info, trading_days};
use super::versions::{self, Origin, VersionRef};
use super::{CodeStyle, MarketError, SynthOptions, SynthReport};
use crate::db::Db;
use chrono::NaiveDate;
use clap::ValueEnum;

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

/// The version of the synthetic market `opts` describes, as this build's generator makes it:
/// the stored one, or a new version generated now (with its report). Nothing stored before is
/// touched; a market an older generator wrote stays as the version it is.
pub async fn ensure_synth(
    db: &Db,
    opts: &SynthOptions,
    progress: &indicatif::ProgressBar,
) -> Result<(VersionRef, Option<SynthReport>), MarketError> {
    opts.check()?;
    if let Some(v) = versions::by_key(db, &Origin::synth(opts).key()).await? {
        return Ok((v.to_ref(), None));
    }
    let report = super::synth(db, opts, progress).await?;
    Ok((report.version.clone(), Some(report)))
}

/// One row of `symbols` as far as telling synthetic markets apart goes.
pub type SymbolFacts = (String, Option<NaiveDate>, Option<NaiveDate>, Option<String>);

/// The symbols `opts` generates, sorted by code: their codes, listing dates and sectors follow
/// from every option (the seed included).
pub fn expected_symbols(opts: &SynthOptions) -> Vec<SymbolFacts> {
    let calendar = trading_days(opts.start, opts.days);
    if calendar.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<SymbolFacts> = (0..opts.symbols)
        .map(|i| {
            let s = symbol_info(opts, i, &calendar);
            (s.code, s.listed, s.delisted, s.sector)
        })
        .collect();
    out.sort();
    out
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
