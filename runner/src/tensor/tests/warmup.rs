//! The untimed warm-up step: a slow first step is kept out of the epochs, and the warm-up changes nothing.

use super::*;

/// The native engine, except that the first step any instance takes in the process sleeps:
/// what a one-time cost (a CUDA module load, say) looks like to the training loop.
struct SlowFirstStep(engine::NativeCpuEngine);

static SLOW_ENGINE_STEPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
const FIRST_STEP_SLEEP: std::time::Duration = std::time::Duration::from_millis(800);

impl engine::StepEngine<Cpu> for SlowFirstStep {
    fn new(dev: &Cpu, model: &Model<Cpu>, params: &TrainParams, seed: u64) -> Result<Self, TrainError> {
        Ok(Self(engine::NativeCpuEngine::new(dev, model, params, seed)?))
    }
    fn upload(&mut self, dev: &Cpu, batch: &batches::HostBatch, reuse: bool) -> Result<(), TrainError> {
        self.0.upload(dev, batch, reuse)
    }
    fn step(&mut self, dev: &Cpu, model: &mut Model<Cpu>) -> Result<Tensor<(), f32, Cpu>, TrainError> {
        if SLOW_ENGINE_STEPS.fetch_add(1, Ordering::SeqCst) == 0 {
            std::thread::sleep(FIRST_STEP_SLEEP);
        }
        self.0.step(dev, model)
    }
    fn predict(&mut self, dev: &Cpu, model: &Model<Cpu>, batch: &batches::HostBatch) -> Result<Vec<f32>, TrainError> {
        self.0.predict(dev, model, batch)
    }
    fn record(&self, rec: &mut Recorder) {
        self.0.record(rec)
    }
}

/// The first step's one-time cost is paid by the untimed warm-up step and recorded as
/// `first_step_seconds`; no epoch's clock contains it, and the training computes what it
/// computes without the slow engine.
#[test]
fn a_slow_first_step_lands_in_first_step_seconds_not_in_epoch_seconds() {
    let windows = learnable_windows(96, 16, 6);
    let params = TrainParams {
        hidden: Some(vec![8]),
        batch_size: 32,
        epochs: 2,
        ..TrainParams::default()
    };
    let dev = Cpu::seed_from_u64(3);
    let mut slow = Recorder::new();
    let cancel = AtomicBool::new(false);
    train_loop::run::<Cpu, SlowFirstStep>(&dev, &windows, &params, 3, &mut slow, &cancel).unwrap();
    // The warm-up step plus 3 steps in each of 2 epochs, the warm-up first.
    assert_eq!(SLOW_ENGINE_STEPS.load(Ordering::SeqCst), 1 + 2 * 3);
    let first = slow.single("first_step_seconds").unwrap();
    assert!(first >= FIRST_STEP_SLEEP.as_secs_f64(), "first_step_seconds {first}");
    let epochs = series(&slow, "epoch_seconds");
    assert_eq!(epochs.len(), 2);
    // Each epoch is three steps of an 8-unit MLP on 32 windows: milliseconds, far from the sleep.
    assert!(
        epochs.iter().all(|&s| s < FIRST_STEP_SLEEP.as_secs_f64()),
        "epoch_seconds {epochs:?} hold the first step's {first} s"
    );
    let (_, plain) = run_train(&windows, &params, 3);
    assert_eq!(series(&slow, "train_loss"), series(&plain, "train_loss"));
    assert!(plain.single("first_step_seconds").is_some_and(|s| s > 0.0));
}

/// The warm-up step leaves the model it was given as it was, on both engines, dropout on.
#[test]
fn the_warm_up_step_changes_neither_the_weights_nor_the_training() {
    let windows = learnable_windows(64, 16, 8);
    for engine in [CpuEngine::Native, CpuEngine::Autodiff] {
        let params = TrainParams {
            hidden: Some(vec![8]),
            batch_size: 16,
            dropout: 0.3,
            cpu_engine: engine,
            ..TrainParams::default()
        };
        let dev = Cpu::seed_from_u64(5);
        let arch = params.arch(windows.seq_len, windows.n_features, 1).unwrap();
        let model = Model::new(&dev, &arch, params.dropout, 5).unwrap();
        let before: Vec<Vec<f32>> = model.params.iter().map(|p| p.as_vec()).collect();
        // Several steps (at least 20 ms of them), as a GPU's warm-up takes.
        let warm = match engine {
            CpuEngine::Native => {
                train_loop::warm_up::<Cpu, engine::NativeCpuEngine>(&dev, &windows, &model, &params, 5, 0.02)
            }
            CpuEngine::Autodiff => {
                train_loop::warm_up::<Cpu, engine::AutodiffEngine<Cpu>>(&dev, &windows, &model, &params, 5, 0.02)
            }
        }
        .unwrap();
        assert!(warm.first_step > 0.0 && warm.steps > 1, "{warm:?}");
        let after: Vec<Vec<f32>> = model.params.iter().map(|p| p.as_vec()).collect();
        assert_eq!(before, after, "{engine:?}: the warm-up wrote into the model");
        // The device's generator (dropout masks on the autodiff engine) was not drawn from:
        // training after a warm-up matches training on a fresh device with the same seed.
        let fresh = Cpu::seed_from_u64(5);
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        let cancel = AtomicBool::new(false);
        match engine {
            CpuEngine::Native => {
                train_loop::run::<Cpu, engine::NativeCpuEngine>(&dev, &windows, &params, 5, &mut a, &cancel).unwrap();
                train_loop::run::<Cpu, engine::NativeCpuEngine>(&fresh, &windows, &params, 5, &mut b, &cancel).unwrap();
            }
            CpuEngine::Autodiff => {
                train_loop::run::<Cpu, engine::AutodiffEngine<Cpu>>(&dev, &windows, &params, 5, &mut a, &cancel)
                    .unwrap();
                train_loop::run::<Cpu, engine::AutodiffEngine<Cpu>>(&fresh, &windows, &params, 5, &mut b, &cancel)
                    .unwrap();
            }
        }
        assert_eq!(series(&a, "train_loss"), series(&b, "train_loss"), "{engine:?}");
    }
}

/// The batch the warm-up step and `check_step` compute on is the training's own first batch,
/// inline or prefetched, shuffled or not, whole or shorter than `batch_size`.
#[test]
fn first_batch_is_the_training_sources_first_batch() {
    use crate::tensor::batches::{first_batch, BatchSource};
    let windows = learnable_windows(50, 10, 2);
    let scale = crate::artifact::TargetScale::of(&windows.train.targets);
    for (shuffle, batch_size, prefetch) in [(true, 16, 0), (false, 16, 0), (true, 64, 0), (true, 16, 2)] {
        let built = first_batch(&windows, scale, 7, shuffle, batch_size);
        let mut source = BatchSource::new(windows.clone(), scale, 7, shuffle, batch_size, 1, prefetch).unwrap();
        let from_source = source.next_batch(0).unwrap();
        let what = format!("shuffle {shuffle}, batch {batch_size}, prefetch {prefetch}");
        assert_eq!(built.rows, from_source.rows, "{what}");
        assert_eq!(built.rows, batch_size.min(50), "{what}");
        assert_eq!(built.x, from_source.x, "{what}");
        assert_eq!(built.y, from_source.y, "{what}");
    }
}
