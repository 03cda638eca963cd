//! Training throughput of `measured::tensor::train` (runtime-width MLP, fused Adam; the CPU step
//! native with `gemm` 0.19, and dfdx's autodiff step for reference) against dfdx's own
//! compile-time `Linear` model with its built-in Adam, on the same synthetic windows.
//!
//! Run: `cargo run --release --example train_bench -- [--reps N] [--threads N] [--config small|large|all]
//! [--device cpu|cuda]` and compare with `bench/torch_mlp.py` (same shapes, batch sizes and data
//! layout). With `--device cuda` (a build with the `cuda` feature) only the `measured` rows run;
//! their seed-1 loss can be compared with the CPU run's as a smoke test. `--only-defaults` runs
//! just the `measured (defaults)` row, the one compared with PyTorch, for alternating rounds and
//! profiles. `--precision f32|bf16|f16` and `--cuda-graph auto|true|false` set those parameters
//! (bf16 and f16 on CUDA train on tensor cores; `scripts/gpu-check.sh` check I compares them);
//! `--config quick` is the quickstart's model ([64, 32], batch 128).

use dfdx::optim::Adam;
use dfdx::prelude::*;
use measured::artifact::{WindowSet, Windows};
use measured::metrics::Recorder;
use measured::stats::median;
use measured::tensor::{train, CpuEngine, CudaGraph, DeviceKind, Precision, TrainParams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

const SEQ_LEN: usize = 60;
const FEATURES: usize = 16;
const INPUT: usize = SEQ_LEN * FEATURES;

/// One synthetic symbol whose overlapping windows all start one row apart, as `normalize`
/// lays them out; targets are noise (throughput does not depend on them).
fn synthetic_windows(n: usize, seed: u64) -> Arc<Windows> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let rows = n + SEQ_LEN - 1;
    let features: Vec<f32> = (0..rows * FEATURES).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let train = WindowSet {
        features,
        starts: (0..n as u32).collect(),
        targets: (0..n).map(|_| rng.gen_range(-0.05..0.05)).collect(),
        symbol_idx: vec![0; n],
        dates: Vec::new(),
        last_return: Vec::new(),
    };
    Arc::new(Windows {
        seq_len: SEQ_LEN,
        n_features: FEATURES,
        horizons: 1,
        feature_names: (0..FEATURES).map(|i| format!("f{i}")).collect(),
        symbols: vec!["SYN".into()],
        train,
        valid: WindowSet::default(),
        content_hash: String::new(),
    })
}

/// Samples/s and the last epoch's training loss of one `train` call.
fn measured_run(windows: &Arc<Windows>, params: &TrainParams, seed: u64) -> (f64, f64) {
    let mut rec = Recorder::new();
    if let Err(e) = train(windows.clone(), params, seed, &mut rec, &AtomicBool::new(false)) {
        eprintln!("train_bench: training failed: {e}");
        std::process::exit(1);
    }
    // What ran, where a self-check chose (CUDA): gpu-check reads these lines.
    let facts = rec.facts();
    let ran: Vec<String> = ["precision", "mlp_engine", "cuda_graph"]
        .iter()
        .filter_map(|f| facts.get(*f).map(|v| format!("{f}={v}")))
        .collect();
    if params.device == DeviceKind::Cuda {
        eprintln!("train_bench: ran {}", ran.join(" "));
    }
    let value = |name: &str| {
        rec.metrics()
            .iter()
            .find(|m| m.name == name && m.step.is_none())
            .map(|m| m.value)
            .expect("metric is recorded")
    };
    (value("samples_per_second"), value("train_loss"))
}

/// The same loop written against dfdx's compile-time modules: shuffled gather into a host
/// buffer, a new input tensor per batch, forward, MSE, backward, Adam, loss read back.
fn dfdx_samples_per_second<M>(windows: &Windows, batch_size: usize, seed: u64) -> f64
where
    M: BuildOnDevice<Cpu, f32>,
    M::Built: Module<
            Tensor<(usize, Const<INPUT>), f32, Cpu, OwnedTape<f32, Cpu>>,
            Output = Tensor<(usize, Const<1>), f32, Cpu, OwnedTape<f32, Cpu>>,
        > + TensorCollection<f32, Cpu>,
{
    let dev = Cpu::seed_from_u64(seed);
    let mut model = dev.build_module::<M, f32>();
    let mut opt = Adam::new(&model, AdamConfig::default());
    let mut grads = model.alloc_grads();
    let set = &windows.train;
    let mut order: Vec<usize> = (0..set.len()).collect();
    rand::seq::SliceRandom::shuffle(&mut order[..], &mut ChaCha8Rng::seed_from_u64(seed));
    let (mut x, mut y) = (Vec::new(), Vec::new());
    let start = Instant::now();
    for idx in order.chunks(batch_size) {
        x.clear();
        y.clear();
        for &i in idx {
            x.extend_from_slice(windows.window(set, i));
            y.push(set.targets[i]);
        }
        let xt = dev.tensor_from_vec(x.clone(), (idx.len(), Const::<INPUT>));
        let yt = dev.tensor_from_vec(y.clone(), (idx.len(), Const::<1>));
        let pred = model.forward(xt.traced(grads));
        let loss = mse_loss(pred, yt);
        let value = loss.array();
        assert!(value.is_finite());
        grads = loss.backward();
        opt.update(&mut model, &grads).expect("adam update");
        model.zero_grads(&mut grads);
    }
    set.len() as f64 / start.elapsed().as_secs_f64()
}

type Quick = (Linear<INPUT, 64>, ReLU, Linear<64, 32>, ReLU, Linear<32, 1>);
type Small = (Linear<INPUT, 256>, ReLU, Linear<256, 128>, ReLU, Linear<128, 1>);
type Large = (
    (Linear<INPUT, 2048>, ReLU),
    (Linear<2048, 1024>, ReLU),
    (Linear<1024, 512>, ReLU),
    Linear<512, 1>,
);

fn main() {
    let mut reps = 5usize;
    let mut threads = 2usize;
    let mut config = String::from("all");
    let mut device = DeviceKind::Cpu;
    let mut only_defaults = false;
    let mut precision = Precision::F32;
    let mut cuda_graph = CudaGraph::Auto;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value after the flag");
        match arg.as_str() {
            "--reps" => reps = value().parse().expect("--reps N"),
            "--threads" => threads = value().parse().expect("--threads N"),
            "--config" => config = value(),
            "--only-defaults" => only_defaults = true,
            "--precision" => {
                precision = match value().as_str() {
                    "f32" => Precision::F32,
                    "bf16" => Precision::Bf16,
                    "f16" => Precision::F16,
                    other => panic!("--precision f32|bf16|f16, got {other}"),
                }
            }
            "--cuda-graph" => {
                cuda_graph = match value().as_str() {
                    "auto" => CudaGraph::Auto,
                    "true" => CudaGraph::On,
                    "false" => CudaGraph::Off,
                    other => panic!("--cuda-graph auto|true|false, got {other}"),
                }
            }
            "--device" => {
                device = match value().as_str() {
                    "cpu" => DeviceKind::Cpu,
                    "cuda" => DeviceKind::Cuda,
                    other => panic!("--device cpu|cuda, got {other}"),
                }
            }
            other => panic!("unknown argument {other}"),
        }
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .expect("configuring the thread pool");

    println!("| config | implementation | median samples/s | runs | train_loss, seed 1 |");
    println!("|---|---|---|---|---|");
    type Runner = fn(&Windows, usize, u64) -> f64;
    let configs: [(&str, Vec<usize>, usize, usize, Runner); 3] = [
        ("quick", vec![64, 32], 128, 100, dfdx_samples_per_second::<Quick>),
        ("small", vec![256, 128], 256, 40, dfdx_samples_per_second::<Small>),
        (
            "large",
            vec![2048, 1024, 512],
            1024,
            16,
            dfdx_samples_per_second::<Large>,
        ),
    ];
    for (name, hidden, batch_size, steps, compile_time) in configs {
        // "all" is the two configurations compared with PyTorch; `quick` is asked for by name.
        if (config == "all" && name == "quick") || (config != "all" && config != name) {
            continue;
        }
        let windows = synthetic_windows(batch_size * steps, 7);
        let label = format!("{name} {INPUT}-{hidden:?}-1 batch {batch_size} {}", precision.as_str());
        let variants = [
            ("measured (defaults)", false, 0, 1, true, CpuEngine::Native),
            (
                "measured (buffer_reuse, prefetch 2)",
                true,
                2,
                1,
                true,
                CpuEngine::Native,
            ),
            (
                "measured (reuse, prefetch 2, loss read per epoch, no phase timing)",
                true,
                2,
                0,
                false,
                CpuEngine::Native,
            ),
            (
                "measured, dfdx autodiff step (defaults)",
                false,
                0,
                1,
                true,
                CpuEngine::Autodiff,
            ),
        ];
        let variants = if only_defaults { &variants[..1] } else { &variants[..] };
        for &(what, buffer_reuse, prefetch, loss_sync_every, phase_timing, cpu_engine) in variants {
            if device == DeviceKind::Cuda && cpu_engine == CpuEngine::Autodiff {
                continue; // CUDA always steps with dfdx's autodiff
            }
            let params = TrainParams {
                cpu_engine,
                device,
                hidden: Some(hidden.clone()),
                batch_size,
                buffer_reuse,
                prefetch,
                loss_sync_every,
                phase_timing,
                precision,
                cuda_graph,
                ..TrainParams::default()
            };
            measured_run(&windows, &params, 0); // warm-up, not counted
            let runs: Vec<(f64, f64)> = (0..reps)
                .map(|r| measured_run(&windows, &params, r as u64 + 1))
                .collect();
            let rates: Vec<f64> = runs.iter().map(|r| r.0).collect();
            println!(
                "| {label} | {what} | {:.0} | {rates:.0?} | {:.6} |",
                median(&rates),
                runs[0].1
            );
        }
        if device == DeviceKind::Cuda || only_defaults {
            continue; // the compile-time comparison below is written for the CPU device
        }
        compile_time(&windows, batch_size, 0);
        let runs: Vec<f64> = (0..reps)
            .map(|r| compile_time(&windows, batch_size, r as u64 + 1))
            .collect();
        println!(
            "| {label} | dfdx compile-time Linear + built-in Adam | {:.0} | {runs:.0?} | |",
            median(&runs)
        );
    }
}
