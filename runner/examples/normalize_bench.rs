//! Benchmark of the `normalize` stage's feature computation (CSV or synthetic bars ->
//! build_windows, timed per execution mode), the Rust half of bench/README-normalize.md.
//!
//! ```text
//! cargo run --release --example normalize_bench -- --synth --write bench/data/synth.csv
//! cargo run --release --example normalize_bench -- --csv bench/data/synth.csv --dump 5 bench/data/rust_features.csv
//! ```

use measured::artifact::{Bars, SymbolBars};
use measured::features::{build_windows, feature_columns, synthetic_bars, NormalizeParams, DEFAULT_PRESET};
use measured::metrics::Recorder;
use std::error::Error;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const HEADER: &str = "symbol,date,open,high,low,close,volume,amount,adj_factor";

struct Args {
    csv: Option<String>,
    synth: bool,
    symbols: usize,
    days: usize,
    seed: u64,
    write: Option<String>,
    dump: Option<(usize, String)>,
    runs: usize,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        csv: None,
        synth: false,
        symbols: 500,
        days: 2500,
        seed: 42,
        write: None,
        dump: None,
        runs: 7,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--csv" => a.csv = Some(value()?),
            "--synth" => a.synth = true,
            "--symbols" => a.symbols = value()?.parse()?,
            "--days" => a.days = value()?.parse()?,
            "--seed" => a.seed = value()?.parse()?,
            "--write" => a.write = Some(value()?),
            "--runs" => a.runs = value()?.parse()?,
            "--dump" => {
                let count = value()?.parse()?;
                a.dump = Some((count, value()?));
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; use --csv PATH | --synth [--symbols N --days N \
                     --seed N] [--write PATH] [--dump N PATH] [--runs N]"
                )
                .into())
            }
        }
    }
    if a.synth == a.csv.is_some() {
        return Err("give exactly one of --csv PATH and --synth".into());
    }
    Ok(a)
}

/// Reads bars grouped by symbol in order of first appearance; rows of a symbol must be in
/// date order (build_windows rejects them otherwise).
fn read_csv(path: &str) -> Result<Bars> {
    let mut lines = BufReader::new(File::open(path)?).lines();
    let header = lines.next().ok_or("empty file")??;
    if header.trim() != HEADER {
        return Err(format!("expected header `{HEADER}`, got `{header}`").into());
    }
    let mut bars = Bars::default();
    let mut index = std::collections::HashMap::new();
    for (i, line) in lines.enumerate() {
        let line = line?;
        let mut fields = line.split(',');
        let mut next = || fields.next().ok_or(format!("line {}: too few fields", i + 2));
        let symbol = next()?;
        let s = *index.entry(symbol.to_owned()).or_insert_with(|| {
            bars.symbols.push(SymbolBars::new(symbol));
            bars.symbols.len() - 1
        });
        let date = next()?.parse()?;
        let sym = &mut bars.symbols[s];
        sym.dates.push(date);
        for column in [
            &mut sym.open,
            &mut sym.high,
            &mut sym.low,
            &mut sym.close,
            &mut sym.volume,
            &mut sym.amount,
            &mut sym.adj_factor,
        ] {
            column.push(next()?.parse()?);
        }
    }
    bars.content_hash = format!("csv:{path}");
    Ok(bars)
}

/// Writes bars with shortest round-trip float formatting, so a reader gets the same values.
fn write_csv(bars: &Bars, path: &str) -> Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, "{HEADER}")?;
    for s in &bars.symbols {
        for t in 0..s.len() {
            writeln!(
                out,
                "{},{},{},{},{},{},{},{},{}",
                s.symbol,
                s.dates[t],
                s.open[t],
                s.high[t],
                s.low[t],
                s.close[t],
                s.volume[t],
                s.amount[t],
                s.adj_factor[t]
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Raw default-preset features of the first `count` symbols, for comparison with pandas.
fn dump_features(bars: &Bars, count: usize, path: &str) -> Result<()> {
    let features = NormalizeParams::default().feature_list()?;
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, "symbol,date,{}", DEFAULT_PRESET.join(","))?;
    for s in bars.symbols.iter().take(count) {
        let cols = feature_columns(s, &features)?;
        for t in 0..s.len() {
            write!(out, "{},{}", s.symbol, s.dates[t])?;
            for col in &cols {
                write!(out, ",{}", col[t])?;
            }
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

struct Timing {
    features: f64,
    normalize: f64,
    windows: f64,
    total: f64,
    hash: String,
}

/// One warm-up run, then `runs` timed runs; medians of each phase and of the whole call.
fn time_mode(bars: &Bars, params: &NormalizeParams, runs: usize) -> Result<Timing> {
    let cancel = AtomicBool::new(false);
    let mut features = Vec::with_capacity(runs);
    let mut normalize = Vec::with_capacity(runs);
    let mut windows_phase = Vec::with_capacity(runs);
    let mut totals = Vec::with_capacity(runs);
    let mut hash = String::new();
    for run in 0..=runs {
        let mut rec = Recorder::new();
        let start = Instant::now();
        let windows = build_windows(bars, params, &mut rec, &cancel)?;
        let total = start.elapsed().as_secs_f64();
        hash = windows.content_hash.clone();
        drop(windows);
        if run == 0 {
            continue;
        }
        let phase = |name: &str| -> Result<f64> {
            Ok(rec
                .metrics()
                .iter()
                .find(|m| m.name == name)
                .ok_or(format!("{name} not recorded"))?
                .value)
        };
        features.push(phase("features_seconds")?);
        normalize.push(phase("normalize_seconds")?);
        windows_phase.push(phase("windows_seconds")?);
        totals.push(total);
    }
    Ok(Timing {
        features: median(features),
        normalize: median(normalize),
        windows: median(windows_phase),
        total: median(totals),
        hash,
    })
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let bars = match &args.csv {
        Some(path) => read_csv(path)?,
        None => synthetic_bars(args.symbols, args.days, args.seed),
    };
    println!(
        "bars: {} symbols, {} rows; {} timed runs per mode (after 1 warm-up)",
        bars.symbols.len(),
        bars.rows(),
        args.runs
    );
    if let Some(path) = &args.write {
        write_csv(&bars, path)?;
        println!("wrote {path}");
    }
    if let Some((count, path)) = &args.dump {
        dump_features(&bars, *count, path)?;
        println!("wrote raw features of {count} symbols to {path}");
    }
    let modes = [
        ("sequential", false, 0),
        ("parallel, 1 thread", true, 1),
        ("parallel, 2 threads", true, 2),
    ];
    println!(
        "{:<22} {:>12} {:>12} {:>12} {:>12}",
        "mode", "features s", "normalize s", "windows s", "total s"
    );
    let mut results = Vec::new();
    for (name, parallel, threads) in modes {
        let params = NormalizeParams {
            parallel,
            threads,
            ..NormalizeParams::default()
        };
        let t = time_mode(&bars, &params, args.runs.max(1))?;
        println!(
            "{name:<22} {:>12.4} {:>12.4} {:>12.4} {:>12.4}",
            t.features, t.normalize, t.windows, t.total
        );
        results.push(t);
    }
    let same = results.iter().all(|t| t.hash == results[0].hash);
    println!("content hash identical across modes: {same} ({})", results[0].hash);
    println!(
        "parallel speedup on 2 threads vs sequential: features {:.2}x, total {:.2}x",
        results[0].features / results[2].features,
        results[0].total / results[2].total
    );
    if !same {
        return Err("execution modes produced different windows".into());
    }
    Ok(())
}
