//! Training and inference throughput of measured's LSTM and GRU (the CPU engine) on the stock
//! trainer's shape: windows of 60 days x 105 features, hidden 128, 2 layers, batch 256. Compare
//! with `bench/torch_rnn.py` (same shapes, data layout and loop); `bench/rnn_bench.sh` runs the
//! two in alternating rounds.
//!
//! Run: `cargo run --release --example rnn_bench -- [--kind lstm|gru] [--mode train|infer]
//! [--reps N] [--threads N] [--batches N] [--precision f32|f16] [--device cpu|cuda]
//! [--rnn-engine auto|cudnn|dfdx] [--tiny]`; the line it prints names the engine that ran
//! (`rnn_engine`). `--tiny`: windows of 8 days x 6 features, hidden 8, batch 16, for the
//! benchmark scripts' smoke mode: it checks that the benchmark runs, its figure means nothing
//! (`--device cuda` needs the `cuda` build; compare with `bench/torch_rnn.py --device cuda`)
//!
//! - train: `tensor::train` for one epoch of `--batches` batches (shuffled gather, forward,
//!   MSE, backpropagation through time, Adam, the loss read back every step), samples/s as the
//!   stage records it.
//! - infer: `tensor::validate` over `--batches` batches of validation windows, windows/s over
//!   its batch loop alone (`batch_loop_seconds`: gather, copy, forward, outputs read back), as
//!   `bench/torch_rnn.py` times its loop after the model is on the device.

use measured::artifact::{WindowSet, Windows};
use measured::metrics::Recorder;
use measured::stats::median;
use measured::tensor::{train, validate, DeviceKind, ModelKind, Precision, RnnEngine, TrainParams, ValidateParams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The stock trainer's shape, and the tiny one of `--tiny`.
#[derive(Clone, Copy)]
struct Shape {
    seq_len: usize,
    features: usize,
    hidden: usize,
    layers: usize,
    batch: usize,
}

const FULL: Shape = Shape {
    seq_len: 60,
    features: 105,
    hidden: 128,
    layers: 2,
    batch: 256,
};

const TINY: Shape = Shape {
    seq_len: 8,
    features: 6,
    hidden: 8,
    layers: 2,
    batch: 16,
};

/// `n_train` and `n_valid` windows one row apart over one synthetic symbol.
fn synthetic_windows(shape: Shape, n_train: usize, n_valid: usize, seed: u64) -> Arc<Windows> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut split = |n: usize| {
        let rows = n + shape.seq_len - 1;
        WindowSet {
            features: (0..rows * shape.features).map(|_| rng.gen_range(-1.0..1.0)).collect(),
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
        seq_len: shape.seq_len,
        n_features: shape.features,
        horizons: 1,
        feature_names: (0..shape.features).map(|i| format!("f{i}")).collect(),
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
    let mut shape = FULL;
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
            "--tiny" => shape = TINY,
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
    let n_train = if mode == "train" {
        shape.batch * batches
    } else {
        shape.batch
    };
    let windows = synthetic_windows(shape, n_train, shape.batch * batches, 7);
    let params = TrainParams {
        model: kind,
        hidden: Some(vec![shape.hidden]),
        layers: Some(shape.layers),
        batch_size: shape.batch,
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
            let whole = |name: &str| whole(&rec, name);
            // Where a step's time goes (device-timeline intervals on CUDA, see
            // docs/gpu-methodology.md), per step, for the run's log.
            let steps = whole("train_steps").unwrap_or(1.0).max(1.0);
            let per_step: Vec<String> = ["prep_seconds", "h2d_seconds", "compute_seconds", "readback_seconds"]
                .iter()
                .filter_map(|n| {
                    whole(n).map(|v| format!("{} {:.3} ms", n.trim_end_matches("_seconds"), 1e3 * v / steps))
                })
                .collect();
            eprintln!("rnn_bench: per step, seed {seed}: {}", per_step.join(", "));
            return whole("samples_per_second").expect("samples_per_second is recorded");
        }
        let mut vrec = Recorder::new();
        validate(
            &model,
            &ValidateParams {
                batch_size: shape.batch,
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
        let seconds = whole(&vrec, "batch_loop_seconds").expect("batch_loop_seconds is recorded");
        windows.valid.len() as f64 / seconds
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

/// A stage's whole-run value of metric `name` (not one of its per-epoch or per-step values).
fn whole(rec: &Recorder, name: &str) -> Option<f64> {
    rec.metrics()
        .iter()
        .find(|m| m.name == name && m.step.is_none())
        .map(|m| m.value)
}
