//! Command-line arguments of `measured data synth` and `measured data import` (**cli** ->
//! options -> market).

use crate::market::{CodeStyle, ImportOptions, Layout, SynthOptions};
use chrono::NaiveDate;
use std::path::PathBuf;

/// Generate a reproducible synthetic market into the stock database.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
#[command(
    after_help = "Example:\n  measured data synth --symbols 500 --days 2500 --seed 7 --style china\n\n\
    Running it again replaces the previous synthetic market; imported symbols are kept. The market\n\
    is recorded with its options, so a manifest declaring the same one ([data] synth) uses it as it is."
)]
pub struct SynthArgs {
    /// Number of symbols to generate.
    #[arg(long, default_value_t = 500)]
    pub symbols: usize,
    /// Length of the market's calendar in trading days (weekends and fixed holidays are
    /// skipped). Symbols list late and delist, so most have fewer bars than this.
    #[arg(long, default_value_t = 2500)]
    pub days: usize,
    /// First calendar day (YYYY-MM-DD).
    #[arg(long, default_value = "2015-01-01")]
    pub start: NaiveDate,
    /// Random seed: the same seed always produces the same market.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// How symbol codes look.
    #[arg(long, value_enum, default_value_t = CodeStyle::Mixed)]
    pub style: CodeStyle,
}

impl From<SynthArgs> for SynthOptions {
    fn from(a: SynthArgs) -> Self {
        SynthOptions {
            symbols: a.symbols,
            days: a.days,
            start: a.start,
            seed: a.seed,
            style: a.style,
        }
    }
}

/// Import daily bars from CSV files (optionally gzip-compressed) into the stock database.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
#[command(after_help = "Examples:\n  \
    measured data import AAPL.csv MSFT.csv.gz            # Yahoo layout, symbol from the file name\n  \
    measured data import daily.csv --layout tushare      # ts_code,trade_date,open,...\n  \
    measured data import prices.csv                      # long format, a Symbol or Ticker column\n  \
    measured data import prices.csv --columns date=Day,open=O,high=H,low=L,close=C,volume=V,symbol=Ticker\n  \
    measured data import prices.csv --dry-run            # what would be imported, nothing written\n\n\
    Columns are found by their usual names (Date/trade_date/datetime/timestamp/day, Open, High, Low,\n\
    Close, Volume/vol, Adj Close, amount, Symbol/Ticker/code/ts_code); a file without a symbol\n\
    column is one symbol. Every row is checked (prices positive, open and close within [low, high],\n\
    volume not negative) before anything is written. Each import makes a new dataset version and\n\
    never changes a stored one: the same files again find their version; --into DATASET makes a\n\
    new version of that dataset holding its bars and the files'.")]
pub struct ImportArgs {
    /// CSV files to import (`.gz` files are decompressed).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Input layout (default: detected from each file's header).
    #[arg(long, value_enum)]
    pub layout: Option<Layout>,
    /// Symbol code for files without a symbol column (default: the file name without extension);
    /// it also replaces a symbol column found by its name, but not one named in --columns.
    #[arg(long, value_name = "CODE")]
    pub symbol: Option<String>,
    /// Explicit column mapping FIELD=COLUMN,... with fields date, open, high, low, close,
    /// volume, amount, adj_close, adj_factor, symbol.
    #[arg(long, value_name = "MAPPING")]
    pub columns: Option<String>,
    /// Skip bad rows (and report them) instead of importing nothing.
    #[arg(long)]
    pub skip_bad: bool,
    /// chrono format of the date column, e.g. %d.%m.%Y (default: detected).
    #[arg(long, value_name = "FORMAT")]
    pub date_format: Option<String>,
    /// Read and check every file and print what would be imported; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The dataset the new version belongs to (default: the first file's name without
    /// extension).
    #[arg(long, value_name = "DATASET", conflicts_with = "into")]
    pub name: Option<String>,
    /// Make a new version of DATASET holding its newest version's bars and the files'; a bar
    /// both have with other values stops the import (see --replace).
    #[arg(long, value_name = "DATASET")]
    pub into: Option<String>,
    /// With --into: the files' bars replace the dataset's on the dates both have (in the new
    /// version; the stored versions stay as they are).
    #[arg(long, requires = "into")]
    pub replace: bool,
}

impl From<ImportArgs> for ImportOptions {
    fn from(a: ImportArgs) -> Self {
        ImportOptions {
            files: a.files,
            layout: a.layout,
            symbol: a.symbol,
            columns: a.columns,
            skip_bad: a.skip_bad,
            date_format: a.date_format,
            dry_run: a.dry_run,
            dataset: a.name,
            into: a.into,
            replace: a.replace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    enum Cli {
        Synth(SynthArgs),
        Import(ImportArgs),
    }

    #[test]
    fn parses_into_options() {
        let Cli::Synth(a) = Cli::try_parse_from(["x", "synth", "--symbols", "3", "--style", "us"]).unwrap() else {
            panic!("expected synth")
        };
        let o = SynthOptions::from(a);
        assert_eq!((o.symbols, o.days, o.seed, o.style), (3, 2500, 42, CodeStyle::Us));
        let Cli::Import(a) = Cli::try_parse_from([
            "x",
            "import",
            "a.csv",
            "b.csv.gz",
            "--layout",
            "tushare",
            "--skip-bad",
            "--dry-run",
        ])
        .unwrap() else {
            panic!("expected import")
        };
        let o = ImportOptions::from(a);
        assert_eq!(o.files.len(), 2);
        assert_eq!(o.layout, Some(Layout::Tushare));
        assert!(o.skip_bad && o.dry_run);
        assert!(Cli::try_parse_from(["x", "import"]).is_err(), "files are required");
    }
}
