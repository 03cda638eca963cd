//! Parameters of the `train` and `validate` stages (manifest stage table -> serde -> `check()`
//! at validation time -> `tensor::train` / `tensor::validate` at run time).
//!
//! Every knob here changes how the training loop runs, never what it computes: the same seed
//! gives the same losses for every setting of `buffer_reuse`, `prefetch`, `loss_sync_every`,
//! `loss_reads_per_step`, `log_every` and `phase_timing`.

use crate::params::{at_most, ParamError};
use serde::{Deserialize, Serialize};

/// Where tensors live and kernels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    #[default]
    Cpu,
    Cuda,
    /// CUDA when this process can use it (`crate::cuda_dl::probe`), else the CPU; the stage
    /// notes which, and why.
    Auto,
}

impl DeviceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Auto => "auto",
        }
    }

    /// The device a stage runs on: `Auto` becomes `Cuda` or `Cpu`, with a note saying which
    /// and why; the others are themselves, with no note.
    pub fn resolve(self) -> (DeviceKind, Option<String>) {
        if self != DeviceKind::Auto {
            return (self, None);
        }
        match crate::cuda_dl::probe() {
            Ok(runtime) => (
                DeviceKind::Cuda,
                Some(format!("device = \"auto\" ran on CUDA ({})", runtime.describe())),
            ),
            Err(why) => (
                DeviceKind::Cpu,
                Some(format!("device = \"auto\" ran on the CPU: {why}")),
            ),
        }
    }

    /// Whether the stage will run on CUDA (for the GPU monitor, decided before the run): never
    /// where CUDA cannot be used, since a `"cuda"` stage then fails before any GPU work.
    pub fn runs_on_cuda(self) -> bool {
        self != DeviceKind::Cpu && crate::cuda_dl::probe().is_ok()
    }
}

pub use super::cuda_graph::CudaGraph;
pub use super::rnn_engine::RnnEngine;
pub use crate::arch::{Activation, ModelKind};

/// How a recurrent model's initial state is provided for each batch: the state starts at zero
/// either way, so this changes allocation, never results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HiddenState {
    /// A freshly allocated zeroed state for every batch.
    #[default]
    PerBatch,
    /// One preallocated buffer, zeroed in place for every batch.
    Reuse,
}

/// Arithmetic precision of the training step's matrix products. Weights, optimizer state and
/// everything between products stay f32 (mixed precision with f32 master weights).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in f32.
    #[default]
    F32,
    /// bfloat16 products accumulated in f32, on CUDA's tensor cores (the MLP on CUDA only:
    /// the CPU's matrix kernels have no bf16).
    Bf16,
    /// f16 products accumulated in f32, with dynamic loss scaling (the CPU for every model,
    /// CUDA's tensor cores for the MLP).
    F16,
}

impl Precision {
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }
}

/// How the CPU computes a training step. Not a manifest parameter: the native engine is the
/// CPU path; the autodiff one is kept as the reference it is tested and benchmarked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuEngine {
    /// Forward and backward on host buffers with the `gemm` crate (see `tensor::native`).
    #[default]
    Native,
    /// dfdx's tape and `backward()`, as on CUDA.
    Autodiff,
}

/// Parameters of a `train` stage: an MLP, LSTM or GRU on dfdx tensors trained with Adam. Its
/// knobs change speed, never results (same seed, same losses).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TrainParams {
    /// `"cpu"`, `"cuda"` (needs a binary built with the `cuda` feature, see
    /// `scripts/build-cuda.sh`) or `"auto"` (CUDA when it can be used here, else the CPU).
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub device: DeviceKind,
    /// `"mlp"`, `"lstm"` or `"gru"`.
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub model: ModelKind,
    /// MLP: hidden layer widths, input side first (`[]`: a linear model; default
    /// `[256, 128]`); the input width is `seq_len * n_features` and the output width the number
    /// of horizons. LSTM/GRU: the hidden size (default 64), one number or one per layer (all
    /// equal).
    #[serde(deserialize_with = "widths")]
    #[schemars(with = "Option<WidthsSchema>")]
    pub hidden: Option<Vec<usize>>,
    /// LSTM/GRU: stacked recurrent layers (default 1, or the length of a `hidden` list).
    #[schemars(range(min = 1, max = MAX_LAYERS))]
    pub layers: Option<usize>,
    /// Non-linearity between the MLP's hidden layers.
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub activation: Activation,
    /// Dropout probability (MLP: after each hidden activation; LSTM/GRU: between layers, as in
    /// PyTorch); 0 disables it.
    pub dropout: f64,
    /// LSTM/GRU: a fresh zeroed initial state per batch, or one buffer zeroed in place.
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub hidden_state: HiddenState,
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
    /// Precision of the training step's matrix products: `"f32"`; `"f16"` (mixed precision:
    /// f16 products with f32 accumulation and master weights, dynamic loss scaling; on the CPU,
    /// and for the MLP on CUDA); `"bf16"` (bf16 products, f32 accumulation and master weights;
    /// the MLP on CUDA). On CUDA a one-step self-check against the f32 step comes first; where
    /// it fails the stage trains in f32 and notes why.
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub precision: Precision,
    /// On CUDA, replay full training steps of an MLP from a captured CUDA graph: `"auto"` (where
    /// it applies and a self-check against the eager step agrees, else eagerly with a note),
    /// `true` (a failed self-check fails the stage) or `false`.
    #[schemars(with = "super::cuda_graph::CudaGraphSchema")]
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub cuda_graph: CudaGraph,
    /// Time the prep / host-to-device / compute / readback phases of every step, without
    /// synchronizing: the host clock on the CPU, CUDA events on the training stream (read at the
    /// end of the epoch) on CUDA, so it changes neither the step nor when the host waits.
    pub phase_timing: bool,
    /// Before training, compute the first step on the CPU's native engine and with autodiff on
    /// the training device, from the same weights and batch at dropout 0, and record how far
    /// apart they are (`step_loss_rel_diff`, `step_grad_max_rel_diff`); the stage fails when
    /// the loss differs by more than 1e-5 (relative) or a gradient by more than 1e-4 of its
    /// tensor's scale. f32 only.
    pub check_step: bool,
    /// A quality to reach, checked on the validation windows at the end of every epoch
    /// (untimed): records `seconds_to_target` and `epochs_to_target` when an epoch reaches it.
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub target: Option<TrainTarget>,
    /// The most memory training may take (`"64GiB"`), checked against an estimate of the
    /// weights, gradients, optimizer state, activations and batches before anything runs.
    /// Default 16 GiB.
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub max_memory: Option<crate::size::SizeSpec>,
    /// Seconds of untimed warm-up steps, on a throwaway copy of the model, before the first
    /// epoch (at least one step). Default: 0.5 on CUDA, which gives an idle GPU's clocks time to
    /// ramp up so epoch 0 is timed like the others; none beyond the one step on the CPU.
    #[schemars(range(min = 0.0, max = 60.0))]
    pub warmup_seconds: Option<f64>,
    /// LSTM/GRU on CUDA: `"auto"` (cuDNN where a one-step self-check against dfdx agrees,
    /// else dfdx with a stage note saying why), `"cudnn"` (a failed self-check fails the
    /// stage) or `"dfdx"`.
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub rnn_engine: RnnEngine,
    /// The CPU step's implementation (set from code only, so never read from the table, but
    /// written out with the rest: it changes the work).
    #[serde(skip_deserializing)]
    #[schemars(skip)]
    pub cpu_engine: CpuEngine,
}

/// `target = { mse_vs_zero = 0.95 }`: the validation MSE divided by the MSE of predicting zero
/// at which training counts as having reached its target.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainTarget {
    /// Validation MSE / naive-zero MSE to reach: above 0 (1 is no skill at all).
    pub mse_vs_zero: f64,
}

impl Default for TrainParams {
    fn default() -> Self {
        Self {
            device: DeviceKind::Cpu,
            model: ModelKind::Mlp,
            hidden: None,
            layers: None,
            hidden_state: HiddenState::PerBatch,
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
            cuda_graph: CudaGraph::Auto,
            phase_timing: true,
            check_step: false,
            target: None,
            max_memory: None,
            warmup_seconds: None,
            rnn_engine: RnnEngine::Auto,
            cpu_engine: CpuEngine::Native,
        }
    }
}

/// The MLP's hidden widths when `hidden` is not given.
pub const DEFAULT_MLP_HIDDEN: [usize; 2] = [256, 128];

/// A recurrent model's hidden size when `hidden` is not given.
pub const DEFAULT_RNN_HIDDEN: usize = 64;

/// Most stacked recurrent layers.
const MAX_LAYERS: usize = 64;

/// `hidden` in the JSON schema: one width or a list.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum WidthsSchema {
    One(usize),
    Many(Vec<usize>),
}

/// `hidden = 64` or `hidden = [64, 64]`.
fn widths<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<usize>>, D::Error> {
    struct Widths;
    impl<'de> serde::de::Visitor<'de> for Widths {
        type Value = Vec<usize>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a width or a list of widths")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            usize::try_from(v)
                .map(|v| vec![v])
                .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(v), &self))
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
            match u64::try_from(v) {
                Ok(v) => self.visit_u64(v),
                Err(_) => Err(E::invalid_value(serde::de::Unexpected::Signed(v), &self)),
            }
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(w) = seq.next_element::<usize>()? {
                out.push(w);
            }
            Ok(out)
        }
    }
    d.deserialize_any(Widths).map(Some)
}

/// Most epochs one trial trains.
const MAX_EPOCHS: usize = 100_000;

/// Most batches a producer thread may hold ahead; more only costs memory.
const MAX_PREFETCH: usize = 64;

/// The bound when a `train` stage sets no `max_memory`: 16 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 16 << 30;

impl TrainParams {
    /// The hidden widths the model is built with: the MLP's layers, or one hidden size per
    /// recurrent layer.
    pub fn hidden_widths(&self) -> Result<Vec<usize>, ParamError> {
        let widths = match self.model {
            ModelKind::Mlp => {
                if let Some(layers) = self.layers {
                    return Err(ParamError::new(
                        "layers",
                        format!(
                            "`layers = {layers}` is for \"lstm\" and \"gru\"; an MLP has one layer per `hidden` width"
                        ),
                    )
                    .with_hint("write the MLP's widths as a list, e.g. `hidden = [256, 128]`"));
                }
                self.hidden.clone().unwrap_or_else(|| DEFAULT_MLP_HIDDEN.to_vec())
            }
            ModelKind::Lstm | ModelKind::Gru => {
                let kind = if self.model == ModelKind::Lstm {
                    "an LSTM"
                } else {
                    "a GRU"
                };
                let given = self.hidden.clone().unwrap_or_else(|| vec![DEFAULT_RNN_HIDDEN]);
                if let Some(layers) = self.layers {
                    if layers == 0 || layers > MAX_LAYERS {
                        return Err(ParamError::new(
                            "layers",
                            format!("must be between 1 and {MAX_LAYERS}, got {layers}"),
                        ));
                    }
                }
                match given.as_slice() {
                    [] => {
                        return Err(
                            ParamError::new("hidden", format!("{kind} needs a hidden size, got `[]`"))
                                .with_hint("e.g. `hidden = 128` with `layers = 2`"),
                        )
                    }
                    [h] => vec![*h; self.layers.unwrap_or(1)],
                    [first, rest @ ..] => {
                        if let Some(other) = rest.iter().find(|w| *w != first) {
                            return Err(ParamError::new(
                                "hidden",
                                format!("the layers of {kind} share one hidden size, got {first} and {other}"),
                            )
                            .with_hint("e.g. `hidden = 128` with `layers = 2`"));
                        }
                        if let Some(layers) = self.layers.filter(|&l| l != given.len()) {
                            return Err(ParamError::new(
                                "layers",
                                format!(
                                    "`layers = {layers}` disagrees with the {} widths of `hidden`",
                                    given.len()
                                ),
                            )
                            .with_hint("give one hidden size (`hidden = 128`) and the number of layers"));
                        }
                        given
                    }
                }
            }
        };
        if let Some(i) = widths.iter().position(|&w| w == 0) {
            return Err(ParamError::new(
                "hidden",
                format!("layer widths must be at least 1, got 0 at position {i}"),
            ));
        }
        Ok(widths)
    }

    /// The architecture these parameters train on windows of `seq_len` days of `n_features`
    /// features with `outputs` horizons.
    pub fn arch(&self, seq_len: usize, n_features: usize, outputs: usize) -> Result<crate::arch::Arch, ParamError> {
        Ok(crate::arch::Arch {
            kind: self.model,
            seq_len,
            n_features,
            hidden: self.hidden_widths()?,
            outputs,
            activation: self.activation,
        })
    }

    /// The memory bound training is checked against (`tensor::memory`): its `max_memory`, else
    /// [`DEFAULT_MAX_MEMORY`].
    pub fn memory_bound(&self) -> Result<u64, ParamError> {
        match &self.max_memory {
            None => Ok(DEFAULT_MAX_MEMORY),
            Some(spec) => spec.bytes().map_err(|m| {
                ParamError::new("max_memory", m)
                    .with_hint("write a size such as \"64GiB\": the most memory the model may take while it trains")
            }),
        }
    }

    /// Checks every value at manifest-validation time, so a run never starts with a value the
    /// training loop cannot honour.
    pub fn check(&self) -> Result<(), ParamError> {
        self.check_precision()?;
        check_device(self.device)?;
        self.rnn_engine
            .check(self.device == DeviceKind::Cpu, Some(self.model))?;
        self.cuda_graph.check(self.device == DeviceKind::Cpu, self.model)?;
        self.memory_bound()?;
        self.hidden_widths()?;
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
        if let Some(w) = self
            .warmup_seconds
            .filter(|w| !(w.is_finite() && (0.0..=60.0).contains(w)))
        {
            return Err(ParamError::new(
                "warmup_seconds",
                format!("must be a number of seconds from 0 to 60, got {w}"),
            ));
        }
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
        if self.check_step && self.precision != Precision::F32 {
            return Err(ParamError::new(
                "check_step",
                format!(
                    "compares f32 steps, and this stage trains in \"{}\"",
                    self.precision.as_str()
                ),
            )
            .with_hint("run the check in a variant with `precision = \"f32\"`"));
        }
        Ok(())
    }

    /// Which precision runs where. Checked before the device, so a precision a device cannot
    /// run is named as such whether or not this binary has CUDA.
    fn check_precision(&self) -> Result<(), ParamError> {
        const SUPPORTED: &str = "supported: \"f32\" everywhere; \"f16\" on \"cpu\" for every model and on \"cuda\" \
                                 for the MLP; \"bf16\" on \"cuda\" for the MLP";
        let mlp = self.model == ModelKind::Mlp;
        let reason = match (self.precision, self.device) {
            (Precision::F32, _) | (Precision::F16, DeviceKind::Cpu) => return Ok(()),
            (Precision::Bf16 | Precision::F16, DeviceKind::Cuda) if mlp => return Ok(()),
            (Precision::F16, DeviceKind::Auto) if mlp => return Ok(()),
            (Precision::Bf16, DeviceKind::Cpu) => {
                "the CPU engine's matrix kernels (the `gemm` crate) come in f32, f64 and f16, not bf16".to_owned()
            }
            (Precision::Bf16, DeviceKind::Auto) if mlp => {
                "\"auto\" trains on the CPU where no GPU can be used, and the CPU has no bf16 kernels".to_owned()
            }
            (Precision::Bf16 | Precision::F16, _) => format!(
                "on CUDA a recurrent model (here {}) trains in f32: cuDNN's RNN runs f32 in this build, and bf16 \
                 and f16 run the MLP's step",
                self.model.as_str()
            ),
        };
        Err(ParamError::new(
            "precision",
            format!(
                "\"{}\" is not supported on \"{}\" here: {reason}",
                self.precision.as_str(),
                self.device.as_str()
            ),
        )
        .with_hint(SUPPORTED))
    }
}

/// Parameters of a `validate` stage: scores the model on the validation windows (MSE, MAE,
/// direction accuracy, IC) against naive baselines.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ValidateParams {
    /// Windows per inference batch; only memory and speed depend on it.
    #[schemars(range(min = 1))]
    pub batch_size: usize,
    /// `"cpu"`, `"cuda"` (needs a binary built with the `cuda` feature, see
    /// `scripts/build-cuda.sh`) or `"auto"` (CUDA when it can be used here, else the CPU).
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub device: DeviceKind,
    /// On CUDA, each batch is staged in page-locked host memory and copied to the device:
    /// `true` queues the copy and goes on (PyTorch's `.to(device, non_blocking=True)` from
    /// pinned memory), `false` waits for it (`non_blocking=False`). Outputs stay on the device
    /// until the last batch either way. No effect on the CPU.
    pub non_blocking: bool,
    /// Log every k-th batch: its mean prediction read back to the host (on CUDA a wait for the
    /// device, as a logged `.item()` is) and emitted as a debug event; 0 logs nothing.
    pub log_every: usize,
    /// LSTM/GRU on CUDA: `"auto"` (cuDNN where a one-pass self-check against dfdx agrees,
    /// else dfdx with a stage note saying why), `"cudnn"` or `"dfdx"`.
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub rnn_engine: RnnEngine,
}

impl Default for ValidateParams {
    fn default() -> Self {
        Self {
            batch_size: 4096,
            device: DeviceKind::Cpu,
            non_blocking: false,
            log_every: 0,
            rnn_engine: RnnEngine::Auto,
        }
    }
}

impl ValidateParams {
    pub fn check(&self) -> Result<(), ParamError> {
        check_device(self.device)?;
        self.rnn_engine.check(self.device == DeviceKind::Cpu, None)?;
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
