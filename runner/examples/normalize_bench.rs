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
use measured::stats::median;
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
    roofline: bool,
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
        roofline: false,
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
            "--roofline" => a.roofline = true,
            "--dump" => {
                let count = value()?.parse()?;
                a.dump = Some((count, value()?));
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; use --csv PATH | --synth [--symbols N --days N \
                     --seed N] [--write PATH] [--dump N PATH] [--runs N] [--roofline]"
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

/// One timed `build_windows` call: its phases and the whole call, seconds.
#[derive(Clone, Copy, Default)]
struct Sample {
    features: f64,
    normalize: f64,
    windows: f64,
    total: f64,
    /// Bytes of the windows the call returned.
    out_bytes: f64,
}

fn run_once(bars: &Bars, params: &NormalizeParams) -> Result<(Sample, String)> {
    let cancel = AtomicBool::new(false);
    let mut rec = Recorder::new();
    let start = Instant::now();
    let windows = build_windows(bars, params, &mut rec, &cancel)?;
    let total = start.elapsed().as_secs_f64();
    let hash = windows.content_hash.clone();
    drop(windows);
    let phase = |name: &str| -> Result<f64> {
        Ok(rec
            .metrics()
            .iter()
            .find(|m| m.name == name)
            .ok_or(format!("{name} not recorded"))?
            .value)
    };
    let sample = Sample {
        features: phase("features_seconds")?,
        normalize: phase("normalize_seconds")?,
        windows: phase("windows_seconds")?,
        total,
        out_bytes: phase("bytes")?,
    };
    Ok((sample, hash))
}

/// The machine's own 2-thread ceiling for this very work: the features phase of two
/// independent sequential calls running at the same time on two threads, each on its own
/// data, nothing shared. If two cores were fully independent, each call would take as long as
/// one alone, and the ceiling would be 2x; whatever the two cores share (an SMT core, caches,
/// memory, a host that takes time away) shows as the ceiling falling short of 2x. Returns the
/// slower of the two calls' features seconds.
fn concurrent_copies(copies: &[Bars; 2], params: &NormalizeParams) -> Result<f64> {
    let barrier = std::sync::Barrier::new(2);
    let seconds = std::thread::scope(|scope| {
        let handles: Vec<_> = copies
            .iter()
            .map(|bars| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    run_once(bars, params)
                        .map(|(sample, _)| sample.features)
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a benchmark thread"))
            .collect::<std::result::Result<Vec<f64>, String>>()
    })?;
    Ok(seconds.into_iter().fold(0.0, f64::max))
}

/// The machine's single-thread streaming rates, best of `rounds`: STREAM's triad
/// (`a = b + s * c` over three arrays far larger than the caches, 24 bytes moved per element
/// as STREAM counts them), a large `memcpy`, and SHA-256 over a large buffer. GB/s.
struct Roofline {
    triad: f64,
    copy: f64,
    sha256: f64,
}

fn roofline(rounds: usize) -> Roofline {
    use sha2::{Digest, Sha256};
    const N: usize = 32 << 20; // 256 MiB per f64 array
    let b = vec![1.5f64; N];
    let c = vec![2.5f64; N];
    let mut a = vec![0f64; N];
    let (mut triad, mut copy, mut sha) = (0f64, 0f64, 0f64);
    let bytes: Vec<u8> = (0..N * 2).map(|i| i as u8).collect(); // 64 MiB
    let mut dst = vec![0u8; bytes.len()];
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        for ((x, y), z) in a.iter_mut().zip(&b).zip(&c) {
            *x = y + 3.0 * z;
        }
        std::hint::black_box(&mut a);
        triad = triad.max(24.0 * N as f64 / t.elapsed().as_secs_f64() / 1e9);
        let t = Instant::now();
        dst.copy_from_slice(&bytes);
        std::hint::black_box(&mut dst);
        copy = copy.max(2.0 * bytes.len() as f64 / t.elapsed().as_secs_f64() / 1e9);
        let t = Instant::now();
        std::hint::black_box(Sha256::digest(&bytes));
        sha = sha.max(bytes.len() as f64 / t.elapsed().as_secs_f64() / 1e9);
    }
    Roofline {
        triad,
        copy,
        sha256: sha,
    }
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
    // Rounds interleave the modes (and the two concurrent copies of the ceiling), so all of them see
    // the same background load; round 0 is a warm-up.
    let runs = args.runs.max(1);
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); modes.len()];
    let mut hashes: Vec<String> = vec![String::new(); modes.len()];
    let sequential = NormalizeParams {
        parallel: false,
        ..NormalizeParams::default()
    };
    let copies = [bars.clone(), bars.clone()];
    let mut concurrent = Vec::new();
    for round in 0..=runs {
        for (m, (_, parallel, threads)) in modes.iter().enumerate() {
            let params = NormalizeParams {
                parallel: *parallel,
                threads: *threads,
                ..NormalizeParams::default()
            };
            let (sample, hash) = run_once(&bars, &params)?;
            hashes[m] = hash;
            if round > 0 {
                samples[m].push(sample);
            }
        }
        let seconds = concurrent_copies(&copies, &sequential)?;
        if round > 0 {
            concurrent.push(seconds);
        }
    }
    println!(
        "{:<22} {:>12} {:>12} {:>12} {:>12}",
        "mode (median)", "features s", "normalize s", "windows s", "total s"
    );
    // Each mode's median of every phase, once.
    let medians: Vec<Sample> = samples
        .iter()
        .map(|runs| {
            let med = |f: fn(&Sample) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
            Sample {
                features: med(|s| s.features),
                normalize: med(|s| s.normalize),
                windows: med(|s| s.windows),
                total: med(|s| s.total),
                out_bytes: med(|s| s.out_bytes),
            }
        })
        .collect();
    for ((name, _, _), m) in modes.iter().zip(&medians) {
        println!(
            "{name:<22} {:>12.4} {:>12.4} {:>12.4} {:>12.4}",
            m.features, m.normalize, m.windows, m.total
        );
    }
    let same = hashes.iter().all(|h| *h == hashes[0]);
    println!("content hash identical across modes: {same} ({})", hashes[0]);
    let ratios = |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(x, y)| x / y).collect() };
    let pick = |m: usize, f: fn(&Sample) -> f64| -> Vec<f64> { samples[m].iter().map(f).collect() };
    let features = ratios(&pick(0, |s| s.features), &pick(2, |s| s.features));
    let features_pool = ratios(&pick(1, |s| s.features), &pick(2, |s| s.features));
    let total = ratios(&pick(0, |s| s.total), &pick(2, |s| s.total));
    // Two copies' work in the time of the slower one, against one copy alone (same round).
    let machine: Vec<f64> = pick(0, |s| s.features)
        .iter()
        .zip(&concurrent)
        .map(|(alone, both)| 2.0 * alone / both)
        .collect();
    let show = |v: &[f64]| v.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(" ");
    println!(
        "2 threads vs sequential, per round: features {}; total {}",
        show(&features),
        show(&total)
    );
    println!(
        "median of the per-round ratios: features {:.2}x (vs the 1-thread pool {:.2}x), total {:.2}x",
        median(&features),
        median(&features_pool),
        median(&total)
    );
    println!(
        "ceiling (two independent sequential feature computations at once vs one alone): \
         {:.2}x median, per round {}; the parallel features reach {:.0}% of it",
        median(&machine),
        show(&machine),
        100.0 * median(&features) / median(&machine)
    );
    // One line per mode for scripts.
    for ((name, _, _), m) in modes.iter().zip(&medians) {
        println!(
            "measured\tmode={}\tfeatures_seconds={:.6}\ttotal_seconds={:.6}",
            name.replace(", ", "-").replace(' ', "-"),
            m.features,
            m.total
        );
    }
    if args.roofline {
        let r = roofline(3);
        // What the stage cannot avoid moving: every bar's date and the six columns it reads
        // (amount is not used), and every byte of the windows it returns.
        let input = bars.rows() as f64 * (4.0 + 6.0 * 8.0);
        let output = medians[0].out_bytes;
        let moved = input + output;
        let seq = medians[0].total;
        let bound = moved / (r.triad * 1e9);
        println!(
            "roofline: triad {:.1} GB/s, memcpy {:.1} GB/s, SHA-256 {:.2} GB/s (1 thread, best of 3); \
             the stage reads {:.0} MB of bars and writes {:.0} MB of windows: {:.4} s at the triad \
             rate, against {:.4} s on 1 thread ({:.1}% of the roofline); hashing the windows alone \
             takes {:.4} s at the SHA-256 rate",
            r.triad,
            r.copy,
            r.sha256,
            input / 1e6,
            output / 1e6,
            bound,
            seq,
            100.0 * bound / seq,
            output / (r.sha256 * 1e9)
        );
        println!(
            "roofline\ttriad_gbs={:.2}\tmemcpy_gbs={:.2}\tsha256_gbs={:.3}\tbytes={moved:.0}\t\
             bound_seconds={bound:.6}\tsequential_seconds={seq:.6}\tfraction={:.4}",
            r.triad,
            r.copy,
            r.sha256,
            bound / seq
        );
    }
    if !same {
        return Err("execution modes produced different windows".into());
    }
    Ok(())
}
