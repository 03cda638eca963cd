//! What the stock tables hold, told by their dataset versions (data synth / import / a run's
//! data preparation -> versions -> **catalog** -> prepare, identity): finding or making the
//! version of a synthetic market and the symbols it holds; the helpers that name synthetic
//! markets live in `synth_options` and are re-exported here.

use super::synth::{symbol_info, synth, trading_days, SynthReport};
use crate::db::Db;
use crate::market::stock::MarketError;
use crate::market::synth_options::SynthOptions;
use crate::market::versions::{self, Origin, VersionRef};
use chrono::NaiveDate;

pub use crate::market::synth_options::{describe_synth, parse_style, style_name, style_names, synth_command};

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
    let report = synth(db, opts, progress).await?;
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
