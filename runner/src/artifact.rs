//! Typed artifacts that flow along the edges of a trial's stage DAG (exec -> stage -> exec).
//!
//! A stage declares which artifact kinds it accepts and which one it produces; manifest
//! validation checks every edge before anything runs.

use crate::arch::Arch;
use chrono::NaiveDate;
use std::sync::Arc;

/// Daily bars of one symbol, columnar and sorted by date (one entry per trading day).
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolBars {
    pub symbol: String,
    pub dates: Vec<NaiveDate>,
    pub open: Vec<f64>,
    pub high: Vec<f64>,
    pub low: Vec<f64>,
    pub close: Vec<f64>,
    pub volume: Vec<f64>,
    pub amount: Vec<f64>,
    /// Cumulative split-adjustment factor, as stored: prices above are raw. The `normalize`
    /// stage computes adjusted price = raw price * adj_factor (and volume / adj_factor); it is
    /// the only place prices are adjusted.
    pub adj_factor: Vec<f64>,
}

impl SymbolBars {
    pub fn new(symbol: impl Into<String>) -> Self {
        Self {
            symbol: symbol.into(),
            dates: Vec::new(),
            open: Vec::new(),
            high: Vec::new(),
            low: Vec::new(),
            close: Vec::new(),
            volume: Vec::new(),
            amount: Vec::new(),
            adj_factor: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.dates.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dates.is_empty()
    }
}

/// The output of the `load` stage: bars of every selected symbol.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Bars {
    pub symbols: Vec<SymbolBars>,
    /// Content hash of what was loaded, so reports can show two variants saw the same data.
    pub content_hash: String,
}

impl Bars {
    pub fn rows(&self) -> usize {
        self.symbols.iter().map(SymbolBars::len).sum()
    }
}

/// One split (train or validation) of windowed, normalized features.
///
/// Rows of one symbol are contiguous in `features` (row-major, `n_features` f32 per row), so a
/// window of `seq_len` days starting at row `r` is the contiguous slice
/// `features[r * n_features .. (r + seq_len) * n_features]`, ready to copy into a batch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WindowSet {
    /// Normalized feature rows, row-major.
    pub features: Vec<f32>,
    /// First row of each window.
    pub starts: Vec<u32>,
    /// Target(s) of each window, `horizons` values per window.
    pub targets: Vec<f32>,
    /// Index into `Windows::symbols` for each window.
    pub symbol_idx: Vec<u32>,
    /// Date of the last day of each window (the day the prediction is made).
    pub dates: Vec<NaiveDate>,
    /// The split-adjusted log return of each window's last day, `ln(c[t] / c[t-1])`, not
    /// normalized (0 on a symbol's first row): the "repeat the last return" baseline in target
    /// units.
    pub last_return: Vec<f32>,
}

impl WindowSet {
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }
}

/// The output of the `normalize` stage.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Windows {
    pub seq_len: usize,
    pub n_features: usize,
    pub horizons: usize,
    pub feature_names: Vec<String>,
    pub symbols: Vec<String>,
    pub train: WindowSet,
    pub valid: WindowSet,
    pub content_hash: String,
}

impl Windows {
    /// Inputs per window once flattened: `seq_len * n_features`.
    pub fn input_len(&self) -> usize {
        self.seq_len * self.n_features
    }

    /// The flattened inputs of window `i` of `set`.
    pub fn window<'a>(&self, set: &'a WindowSet, i: usize) -> &'a [f32] {
        let start = set.starts[i] as usize * self.n_features;
        &set.features[start..start + self.input_len()]
    }
}

/// How targets are standardized for training: the network learns `(target - mean) / sd` and
/// its outputs are mapped back with `mean + sd * output`, so predictions are in target units
/// (log returns). `mean` and `sd` are those of the training targets only.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TargetScale {
    pub mean: f64,
    pub sd: f64,
}

impl TargetScale {
    /// No scaling: outputs are targets.
    pub const IDENTITY: TargetScale = TargetScale { mean: 0.0, sd: 1.0 };

    /// Mean and sample standard deviation of `targets`; an sd that is not a positive number
    /// (fewer than two targets, all equal) becomes 1, so the targets are only centered.
    pub fn of(targets: &[f32]) -> TargetScale {
        let n = targets.len() as f64;
        if targets.is_empty() {
            return TargetScale::IDENTITY;
        }
        let mean = targets.iter().map(|&t| f64::from(t)).sum::<f64>() / n;
        let m2: f64 = targets.iter().map(|&t| (f64::from(t) - mean).powi(2)).sum();
        let sd = (m2 / (n - 1.0)).sqrt();
        TargetScale {
            mean,
            sd: if sd.is_finite() && sd > 0.0 { sd } else { 1.0 },
        }
    }

    /// A target in the network's units.
    pub fn standardize(&self, target: f32) -> f32 {
        ((f64::from(target) - self.mean) / self.sd) as f32
    }

    /// A network output in target units.
    pub fn restore(&self, output: f32) -> f32 {
        (self.mean + self.sd * f64::from(output)) as f32
    }
}

/// A trained model: parameters kept on the host so any stage (or device) can use them.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainedModel {
    /// The model's kind and widths; [`Arch::params`] names and shapes `params`.
    pub arch: Arch,
    /// Every parameter tensor's values (row-major), in [`Arch::params`] order.
    pub params: Vec<Vec<f32>>,
    /// The training targets' standardization; predictions are `target.restore(output)`.
    pub target: TargetScale,
    /// The windows the model was trained on (validation reads `valid` from here).
    pub windows: Arc<Windows>,
}

/// What a stage hands to the stages that need it.
#[derive(Debug, Clone, Default)]
pub enum Artifact {
    /// A stage with no data output (command, transfer, validate).
    #[default]
    None,
    Bars(Arc<Bars>),
    Windows(Arc<Windows>),
    Model(Arc<TrainedModel>),
}

/// The kind of an artifact, used to check DAG edges at validation time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArtifactKind {
    None,
    Bars,
    Windows,
    Model,
}

impl Artifact {
    pub fn kind(&self) -> ArtifactKind {
        match self {
            Artifact::None => ArtifactKind::None,
            Artifact::Bars(_) => ArtifactKind::Bars,
            Artifact::Windows(_) => ArtifactKind::Windows,
            Artifact::Model(_) => ArtifactKind::Model,
        }
    }
}

impl std::fmt::Display for ArtifactKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ArtifactKind::None => "nothing",
            ArtifactKind::Bars => "bars",
            ArtifactKind::Windows => "windows",
            ArtifactKind::Model => "a model",
        })
    }
}
