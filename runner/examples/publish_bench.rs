//! Publish benchmark (bench/publish_bench.sh -> this): stores a synthetic history of many runs
//! (`measured::publish::fixture`) in a SQLite file, then times `measured publish` on it: the
//! first publish, a re-publish with nothing new, and a re-publish after one more run.
//!
//! Usage: `cargo run --release --example publish_bench -- --bin target/release/measured
//! --dir /tmp/pb [--runs 10000] [--experiments 10] [--rounds 3]`

use clap::Parser;
use measured::db::Db;
use measured::publish::fixture::{store_history, FixtureSpec};
use measured::stats::median;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

#[derive(Debug, Parser)]
struct Args {
    /// The measured binary to time.
    #[arg(long)]
    bin: PathBuf,
    /// Scratch folder: the database and the site go here (replaced).
    #[arg(long)]
    dir: PathBuf,
    #[arg(long, default_value_t = 10_000)]
    runs: usize,
    /// The runs are spread over this many experiments.
    #[arg(long, default_value_t = 10)]
    experiments: usize,
    /// Timed rounds of each kind of publish.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

fn publish(args: &Args, db: &str, out: &std::path::Path) -> Result<f64, Box<dyn std::error::Error>> {
    let t = Instant::now();
    let o = Command::new(&args.bin)
        .args(["--database", db, "--quiet", "publish", "--out"])
        .arg(out)
        .output()?;
    let secs = t.elapsed().as_secs_f64();
    if !o.status.success() {
        return Err(format!("publish failed: {}", String::from_utf8_lossy(&o.stderr)).into());
    }
    Ok(secs)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(bench(Args::parse()))
}

async fn bench(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let _ = std::fs::remove_dir_all(&args.dir);
    std::fs::create_dir_all(&args.dir)?;
    let file = args.dir.join("runs.sqlite");
    let url = format!("sqlite://{}", file.display());
    let per = args.runs.div_ceil(args.experiments.max(1));
    let t = Instant::now();
    {
        let db = Db::connect(&url).await?;
        for e in 0..args.experiments {
            let mut spec = FixtureSpec::with_step(&format!("bench-{e:02}"), per);
            spec.seed = e as u64;
            // The fixture's 8 repetitions: fewer can never reach alpha 0.01, which the stored
            // manifest's validation refuses (5 did, since that check exists).
            store_history(&db, &spec, &args.dir).await?;
        }
        db.close().await;
    }
    println!(
        "stored {} runs of {} experiments in {:.1} s",
        per * args.experiments,
        args.experiments,
        t.elapsed().as_secs_f64()
    );
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut one_more = Vec::new();
    for round in 0..args.rounds {
        let out = args.dir.join(format!("site-{round}"));
        cold.push(publish(&args, &url, &out)?);
        warm.push(publish(&args, &url, &out)?);
        {
            let db = Db::connect(&url).await?;
            let mut spec = FixtureSpec::with_step(&format!("extra-{round}"), 1);
            spec.step_at = None;
            store_history(&db, &spec, &args.dir).await?;
            db.close().await;
        }
        one_more.push(publish(&args, &url, &out)?);
        println!(
            "round {round}: first publish {:.2} s, nothing new {:.2} s, one new run {:.2} s (load {})",
            cold[round],
            warm[round],
            one_more[round],
            load()
        );
    }
    println!(
        "median over {} rounds: first publish {:.2} s, nothing new {:.2} s, one new run {:.2} s",
        args.rounds,
        median(&cold),
        median(&warm),
        median(&one_more)
    );
    Ok(())
}
