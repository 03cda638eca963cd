//! Load benchmark (bench/load_bench.sh -> this -> market::synth / market::load): times the
//! synthetic market's write and every load strategy, and prints one line per measurement.
//!
//! Usage: `cargo run --release --example load_bench -- --pg URL --sqlite FILE [--symbols 500]
//! [--days 2500] [--runs 5]`

use clap::Parser;
use measured::db::Db;
use measured::kinds::{FetchStrategy, LoadParams};
use measured::market::{self, CodeStyle, SynthOptions};
use measured::metrics::Recorder;
use measured::stats::median;
use std::time::Instant;

#[derive(Debug, Parser)]
struct Args {
    /// Postgres URL of a throwaway database (its stock tables are replaced).
    #[arg(long)]
    pg: Option<String>,
    /// SQLite file to fill with the same market.
    #[arg(long)]
    sqlite: Option<String>,
    #[arg(long, default_value_t = 500)]
    symbols: usize,
    #[arg(long, default_value_t = 2500)]
    days: usize,
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Timed runs per strategy, after one untimed warm-up.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Load the market already stored instead of writing it first (rounds alternating with
    /// other tools write it once).
    #[arg(long)]
    reuse: bool,
    /// Time only this strategy (default: every strategy the backend has).
    #[arg(long)]
    only: Option<String>,
    /// Time only this connection count (default: 1 and 2).
    #[arg(long)]
    connections: Option<usize>,
}

async fn bench(db: &Db, name: &str, args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let opts = SynthOptions {
        symbols: args.symbols,
        days: args.days,
        start: chrono::NaiveDate::from_ymd_opt(2015, 1, 1).expect("valid date"),
        seed: args.seed,
        style: CodeStyle::China,
    };
    if !args.reuse {
        let started = Instant::now();
        // The market's version, generated when this database does not hold it yet.
        let (version, report) = market::catalog::ensure_synth(db, &opts, &indicatif::ProgressBar::hidden()).await?;
        match report {
            Some(report) => println!(
                "synth\t{name}\trows={}\tseconds={:.2}",
                report.rows,
                started.elapsed().as_secs_f64()
            ),
            None => println!("synth\t{name}\treused={version}"),
        }
    }
    let mut strategies = vec![FetchStrategy::Stream, FetchStrategy::Batched];
    if matches!(db, Db::Postgres(_)) {
        strategies.push(FetchStrategy::Copy);
    }
    strategies.retain(|s| args.only.as_ref().is_none_or(|only| *only == s.to_string()));
    if strategies.is_empty() {
        return Err(format!(
            "--only {}: not a strategy {name} has (stream, batched{})",
            args.only.as_deref().unwrap_or_default(),
            if matches!(db, Db::Postgres(_)) { ", copy" } else { "" }
        )
        .into());
    }
    let mut hashes = Vec::new();
    for strategy in strategies {
        for connections in args.connections.map_or(vec![1, 2], |c| vec![c]) {
            let params = LoadParams {
                strategy,
                connections,
                ..LoadParams::default()
            };
            let mut rates = Vec::new();
            let mut seconds = Vec::new();
            for run in 0..=args.runs {
                let mut rec = Recorder::new();
                let bars = market::load(db, &params, &mut rec).await?;
                if run == 0 {
                    hashes.push(bars.content_hash.clone());
                    continue;
                }
                for m in rec.metrics() {
                    match m.name.as_str() {
                        "rows_per_second" => rates.push(m.value),
                        "seconds" => seconds.push(m.value),
                        _ => {}
                    }
                }
            }
            println!(
                "load\t{name}\t{strategy}\tconnections={connections}\trows_per_second={:.0}\tseconds={:.3}\truns={}",
                median(&rates),
                median(&seconds),
                args.runs
            );
        }
    }
    let same = hashes.windows(2).all(|w| w[0] == w[1]);
    println!("hash\t{name}\t{}\tidentical_across_strategies={same}", hashes[0]);
    if !same {
        return Err(format!("{name}: the strategies loaded different bars: {hashes:?}").into());
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        if let Some(url) = &args.pg {
            let db = Db::connect(url).await?;
            bench(&db, "postgres", &args).await?;
            db.close().await;
        }
        if let Some(path) = &args.sqlite {
            let db = Db::connect(path).await?;
            bench(&db, "sqlite", &args).await?;
            db.close().await;
        }
        Ok(())
    })
}
