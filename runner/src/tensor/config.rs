//! Parameters of the `train` and `validate` stages (manifest stage table -> serde -> `check()`
//! at validation time -> `tensor::train` / `tensor::validate` at run time).
//!
//! Every knob here changes how the training loop runs, never what it computes: the same seed
//! gives the same losses for every setting of `buffer_reuse`, `prefetch`, `loss_sync_every`,
//! `loss_reads_per_step`, `log_every` and `phase_timing`.

use crate::params::{at_most, ParamError};
use serde::Deserialize;

/// Where tensors live and kernels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    #[default]
    Cpu,
    Cuda,
}

impl DeviceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
        }
    }
}

/// Non-linearity between hidden layers (the output layer is linear).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    #[default]
    Relu,
    /// GELU in its tanh approximation (PyTorch's `nn.GELU(approximate="tanh")`). dfdx 0.13's
    /// exact erf GELU has a wrong derivative (its `x * pdf(x)` term is sqrt(2) too large), which
    /// the finite-difference test catches, so it is not used.
    Gelu,
    Tanh,
}

impl Activation {
    pub fn as_str(self) -> &'static str {
        match self {
            Activation::Relu => "relu",
            Activation::Gelu => "gelu",
            Activation::Tanh => "tanh",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "relu" => Some(Activation::Relu),
            "gelu" => Some(Activation::Gelu),
            "tanh" => Some(Activation::Tanh),
            _ => None,
        }
    }
}

/// Arithmetic precision of the training step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    #[default]
    F32,
    /// Mixed precision (`AMP<f16>` in dfdx); rejected by `check()` in this build, see there.
    F16,
}

/// How the CPU computes a training step. Not a manifest parameter: the native engine is the
/// CPU path; the autodiff one is kept as the reference it is tested and benchmarked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuEngine {
    /// Forward and backward on host buffers with the `gemm` crate (see `tensor::native`).
    #[default]
    Native,
    /// dfdx's tape and `backward()`, as on CUDA.
    Autodiff,
}

/// Parameters of a `train` stage: an MLP on dfdx tensors trained with Adam. Its knobs change
/// speed, never results (same seed, same losses).
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TrainParams {
    /// `"cpu"` or `"cuda"` (the latter needs a binary built with the `cuda` feature).
    pub device: DeviceKind,
    /// Hidden layer widths, input side first; the input width is `seq_len * n_features` and the
    /// output width is the number of horizons. Empty means a linear model.
    pub hidden: Vec<usize>,
    /// Non-linearity between hidden layers.
    pub activation: Activation,
    /// Dropout probability after each hidden activation (0 disables it).
    pub dropout: f64,
    /// Training windows per optimizer step.
    #[schemars(range(min = 1))]
    pub batch_size: usize,
    /// Passes over the training windows.
    #[schemars(range(min = 1, max = MAX_EPOCHS))]
    pub epochs: usize,
    /// Adam learning rate.
    pub lr: f64,
    /// Decoupled (AdamW-style) weight decay; 0 gives plain Adam.
    pub weight_decay: f64,
    /// Clip gradients to this global L2 norm before the optimizer step.
    pub grad_clip: Option<f64>,
    /// Visit training windows in a seeded random order each epoch.
    pub shuffle: bool,
    /// The manifest's seed. `train` receives the effective seed as an argument (this value when
    /// set, else one derived per repetition by the caller), so a default never hides variance.
    pub seed: Option<u64>,
    /// `false`: allocate new device input/target tensors for every batch; `true`: copy each
    /// batch into tensors allocated once.
    pub buffer_reuse: bool,
    /// 0: gather each batch inside the training loop; N: a producer thread prepares up to N
    /// batches ahead over a bounded channel.
    #[schemars(range(max = MAX_PREFETCH))]
    pub prefetch: usize,
    /// Read the loss back to the host every k steps (a device sync on CUDA); 0 reads it only
    /// once per epoch (the epoch mean, which is accumulated on the device either way).
    pub loss_sync_every: usize,
    /// How many times the loss is read back at each read step (2 reproduces the common
    /// "`.item()` twice per batch" pattern).
    #[schemars(range(min = 1))]
    pub loss_reads_per_step: usize,
    /// Emit a `tracing` debug event every this many steps (0: only per epoch).
    pub log_every: usize,
    /// Arithmetic precision of the training step (`"f16"` is rejected by this build).
    pub precision: Precision,
    /// Time the prep / host-to-device / compute / readback phases of every step. On CUDA this
    /// synchronizes the device at each phase boundary, which removes the overlap that
    /// `loss_sync_every` experiments are about: turn it off for those.
    pub phase_timing: bool,
    /// A quality to reach, checked on the validation windows at the end of every epoch
    /// (untimed): records `seconds_to_target` and `epochs_to_target` when an epoch reaches it.
    pub target: Option<TrainTarget>,
    /// The most memory training may take (`"64GiB"`), checked against an estimate of the
    /// weights, gradients, optimizer state, activations and batches before anything runs.
    /// Default 16 GiB.
    pub max_memory: Option<crate::transfer::SizeSpec>,
    /// The CPU step's implementation (set from code only).
    #[serde(skip)]
    pub cpu_engine: CpuEngine,
}

/// `target = { mse_vs_zero = 0.95 }`: the validation MSE divided by the MSE of predicting zero
/// at which training counts as having reached its target.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainTarget {
    /// Validation MSE / naive-zero MSE to reach: above 0 (1 is no skill at all).
    pub mse_vs_zero: f64,
}

impl Default for TrainParams {
    fn default() -> Self {
        Self {
            device: DeviceKind::Cpu,
            hidden: vec![256, 128],
            activation: Activation::Relu,
            dropout: 0.0,
            batch_size: 256,
            epochs: 1,
            lr: 1e-3,
            weight_decay: 0.0,
            grad_clip: None,
            shuffle: true,
            seed: None,
            buffer_reuse: false,
            prefetch: 0,
            loss_sync_every: 1,
            loss_reads_per_step: 1,
            log_every: 0,
            precision: Precision::F32,
            phase_timing: true,
            target: None,
            max_memory: None,
            cpu_engine: CpuEngine::Native,
        }
    }
}

/// Most epochs one trial trains.
const MAX_EPOCHS: usize = 100_000;

/// Most batches a producer thread may hold ahead; more only costs memory.
const MAX_PREFETCH: usize = 64;

impl TrainParams {
    /// Checks every value at manifest-validation time, so a run never starts with a value the
    /// training loop cannot honour.
    pub fn check(&self) -> Result<(), ParamError> {
        check_device(self.device)?;
        super::memory::bound(self)?;
        if let Some(i) = self.hidden.iter().position(|&w| w == 0) {
            return Err(ParamError::new(
                "hidden",
                format!("layer widths must be at least 1, got 0 at position {i}"),
            ));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(ParamError::new(
                "dropout",
                format!("must be in [0, 1), got {}", self.dropout),
            ));
        }
        at_least_one("batch_size", self.batch_size)?;
        at_least_one("epochs", self.epochs)?;
        at_most("epochs", self.epochs, MAX_EPOCHS)
            .map_err(|e| e.with_hint("every trial trains this many epochs; `target` stops counting at a quality"))?;
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(ParamError::new(
                "lr",
                format!("must be a positive number, got {}", self.lr),
            ));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(ParamError::new(
                "weight_decay",
                format!("must be zero or positive, got {}", self.weight_decay),
            ));
        }
        if let Some(clip) = self.grad_clip {
            if !(clip.is_finite() && clip > 0.0) {
                return Err(
                    ParamError::new("grad_clip", format!("must be a positive norm, got {clip}"))
                        .with_hint("leave `grad_clip` out to disable clipping"),
                );
            }
        }
        at_most("prefetch", self.prefetch, MAX_PREFETCH)?;
        at_least_one("loss_reads_per_step", self.loss_reads_per_step)
            .map_err(|e| e.with_hint("to skip per-step reads, set `loss_sync_every = 0` instead"))?;
        if let Some(target) = &self.target {
            if !(target.mse_vs_zero.is_finite() && target.mse_vs_zero > 0.0) {
                return Err(ParamError::new(
                    "target",
                    format!("`mse_vs_zero` must be a positive ratio, got {}", target.mse_vs_zero),
                )
                .with_hint("e.g. `target = { mse_vs_zero = 0.95 }`: 5% below predicting zero"));
            }
        }
        if self.precision == Precision::F16 {
            return Err(ParamError::new(
                "precision",
                format!(
                    "\"f16\" (mixed precision) is not supported on {} by this build: it needs \
                     dfdx's `f16` feature, and on CUDA its dtype conversions compile kernels at \
                     run time",
                    self.device.as_str()
                ),
            )
            .with_hint("use `precision = \"f32\"`"));
        }
        Ok(())
    }
}

/// Parameters of a `validate` stage: scores the model on the validation windows (MSE, MAE,
/// direction accuracy, IC) against naive baselines.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ValidateParams {
    /// Windows per inference batch; only memory and speed depend on it.
    #[schemars(range(min = 1))]
    pub batch_size: usize,
    /// `"cpu"` or `"cuda"` (the latter needs a binary built with the `cuda` feature).
    pub device: DeviceKind,
}

impl Default for ValidateParams {
    fn default() -> Self {
        Self {
            batch_size: 4096,
            device: DeviceKind::Cpu,
        }
    }
}

impl ValidateParams {
    pub fn check(&self) -> Result<(), ParamError> {
        check_device(self.device)?;
        at_least_one("batch_size", self.batch_size)
    }
}

fn at_least_one(field: &str, value: usize) -> Result<(), ParamError> {
    if value == 0 {
        Err(ParamError::new(field, "must be at least 1, got 0"))
    } else {
        Ok(())
    }
}

fn check_device(device: DeviceKind) -> Result<(), ParamError> {
    if device == DeviceKind::Cuda && !cfg!(feature = "cuda") {
        return Err(ParamError::new(
            "device",
            "\"cuda\" needs a binary built with the `cuda` feature; this one was built without it",
        )
        .with_hint(
            "build with `scripts/build-cuda.sh` (or `cargo build --release --features cuda` on a \
             machine with the CUDA toolkit), or use `device = \"cpu\"`",
        ));
    }
    Ok(())
}
