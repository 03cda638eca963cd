//! Training and inference throughput of measured's LSTM and GRU (the CPU engine) on the stock
//! trainer's shape: windows of 60 days x 105 features, hidden 128, 2 layers, batch 256. Compare
//! with `bench/torch_rnn.py` (same shapes, data layout and loop); `bench/rnn_bench.sh` runs the
//! two in alternating rounds.
//!
//! Run: `cargo run --release --example rnn_bench -- [--kind lstm|gru] [--mode train|infer]
//! [--reps N] [--threads N] [--batches N] [--precision f32|f16] [--device cpu|cuda]
//! [--rnn-engine auto|cudnn|dfdx]`; the line it prints names the engine that ran (`rnn_engine`)
//! (`--device cuda` needs the `cuda` build; compare with `bench/torch_rnn.py --device cuda`)
//!
//! - train: `tensor::train` for one epoch of `--batches` batches (shuffled gather, forward,
//!   MSE, backpropagation through time, Adam, the loss read back every step), samples/s as the
//!   stage records it.
//! - infer: `tensor::validate` over `--batches` batches of validation windows (forward only,
//!   then the quality metrics, which take under 1% of the time), windows/s.

use measured::artifact::{WindowSet, Windows};
use measured::metrics::Recorder;
use measured::stats::median;
use measured::tensor::{train, validate, DeviceKind, ModelKind, Precision, RnnEngine, TrainParams, ValidateParams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

const SEQ_LEN: usize = 60;
const FEATURES: usize = 105;
const HIDDEN: usize = 128;
const LAYERS: usize = 2;
const BATCH: usize = 256;

/// `n_train` and `n_valid` windows one row apart over one synthetic symbol.
fn synthetic_windows(n_train: usize, n_valid: usize, seed: u64) -> Arc<Windows> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut split = |n: usize| {
        let rows = n + SEQ_LEN - 1;
        WindowSet {
            features: (0..rows * FEATURES).map(|_| rng.gen_range(-1.0..1.0)).collect(),
            starts: (0..n as u32).collect(),
            targets: (0..n).map(|_| rng.gen_range(-0.05..0.05)).collect(),
            symbol_idx: vec![0; n],
            dates: Vec::new(),
            last_return: Vec::new(),
        }
    };
    let train = split(n_train);
    let valid = split(n_valid);
    Arc::new(Windows {
        seq_len: SEQ_LEN,
        n_features: FEATURES,
        horizons: 1,
        feature_names: (0..FEATURES).map(|i| format!("f{i}")).collect(),
        symbols: vec!["SYN".into()],
        train,
        valid,
        content_hash: String::new(),
    })
}

fn main() {
    let (mut kind, mut mode, mut reps, mut threads, mut batches) = (ModelKind::Lstm, "train".to_owned(), 5, 2, 8);
    let mut precision = Precision::F32;
    let mut device = DeviceKind::Cpu;
    let mut rnn_engine = RnnEngine::Auto;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("a value after {arg}"));
        match arg.as_str() {
            "--kind" => kind = ModelKind::parse(&value()).expect("--kind lstm|gru"),
            "--mode" => mode = value(),
            "--reps" => reps = value().parse().expect("--reps N"),
            "--threads" => threads = value().parse().expect("--threads N"),
            "--batches" => batches = value().parse().expect("--batches N"),
            "--precision" => {
                precision = match value().as_str() {
                    "f32" => Precision::F32,
                    "f16" => Precision::F16,
                    other => panic!("--precision f32|f16, got {other}"),
                }
            }
            "--device" => {
                device = match value().as_str() {
                    "cpu" => DeviceKind::Cpu,
                    "cuda" => DeviceKind::Cuda,
                    other => panic!("--device cpu|cuda, got {other}"),
                }
            }
            "--rnn-engine" => {
                rnn_engine = match value().as_str() {
                    "auto" => RnnEngine::Auto,
                    "cudnn" => RnnEngine::Cudnn,
                    "dfdx" => RnnEngine::Dfdx,
                    other => panic!("--rnn-engine auto|cudnn|dfdx, got {other}"),
                }
            }
            other => panic!("unknown argument {other}"),
        }
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .expect("configuring the thread pool");
    // Inference times a model trained for one step: its speed does not depend on the weights.
    let n_train = if mode == "train" { BATCH * batches } else { BATCH };
    let windows = synthetic_windows(n_train, BATCH * batches, 7);
    let params = TrainParams {
        model: kind,
        hidden: Some(vec![HIDDEN]),
        layers: Some(LAYERS),
        batch_size: BATCH,
        precision,
        device,
        rnn_engine: if device == DeviceKind::Cpu {
            RnnEngine::Auto
        } else {
            rnn_engine
        },
        max_memory: Some(measured::transfer::SizeSpec::Text("64GiB".into())),
        ..TrainParams::default()
    };
    if let Err(e) = params.check() {
        eprintln!("rnn_bench: {e}");
        std::process::exit(2);
    }
    // The engine the stages ran on (the fact `rnn_engine`; the CPU's native engine records none).
    let engine = std::sync::Mutex::new(String::from("native"));
    let run = |seed: u64| -> f64 {
        let mut rec = Recorder::new();
        let model = train(windows.clone(), &params, seed, &mut rec, &AtomicBool::new(false)).unwrap_or_else(|e| {
            eprintln!("rnn_bench: training failed: {e}");
            std::process::exit(1);
        });
        if let Some(e) = rec.facts().get("rnn_engine") {
            *engine.lock().unwrap() = e.clone();
        }
        if mode == "train" {
            return rec
                .metrics()
                .iter()
                .find(|m| m.name == "samples_per_second" && m.step.is_none())
                .map(|m| m.value)
                .expect("samples_per_second is recorded");
        }
        let start = Instant::now();
        let mut vrec = Recorder::new();
        validate(
            &model,
            &ValidateParams {
                batch_size: BATCH,
                device,
                rnn_engine: params.rnn_engine,
                ..ValidateParams::default()
            },
            &mut vrec,
        )
        .expect("validation succeeds");
        if let Some(e) = vrec.facts().get("rnn_engine") {
            *engine.lock().unwrap() = e.clone();
        }
        windows.valid.len() as f64 / start.elapsed().as_secs_f64()
    };
    run(0); // warm-up, not counted
    let rates: Vec<f64> = (1..=reps as u64).map(run).collect();
    println!(
        "measured {} {} {mode}: median {:.1} samples/s, runs {rates:.1?}, engine {}",
        kind.as_str(),
        precision.as_str(),
        median(&rates),
        engine.lock().unwrap()
    );
}
