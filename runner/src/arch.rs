//! What a model is, independent of any device (manifest -> `train` -> `TrainedModel` ->
//! `validate` and model files): its kind, its widths and the names and shapes of its parameter
//! tensors, in the one order every optimizer, clipping pass, engine and file walks them.
//!
//! A leaf module: the artifact that carries a trained model and the tensor code that trains
//! it both read it, and it reads neither.

use serde::{Deserialize, Serialize};

/// Which network the `train` stage fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// A multi-layer perceptron over the flattened window (`seq_len * features` inputs).
    #[default]
    Mlp,
    /// A long short-term memory network over the window's days; the prediction is a linear
    /// head on the last day's hidden state.
    Lstm,
    /// A gated recurrent unit network, shaped like the LSTM.
    Gru,
}

impl ModelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Mlp => "mlp",
            ModelKind::Lstm => "lstm",
            ModelKind::Gru => "gru",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "mlp" => Some(ModelKind::Mlp),
            "lstm" => Some(ModelKind::Lstm),
            "gru" => Some(ModelKind::Gru),
            _ => None,
        }
    }

    /// Gate blocks per recurrent layer (PyTorch's order: LSTM i, f, g, o; GRU r, z, n); 0 for
    /// the MLP.
    pub fn gates(self) -> usize {
        match self {
            ModelKind::Mlp => 0,
            ModelKind::Lstm => 4,
            ModelKind::Gru => 3,
        }
    }

    pub fn is_recurrent(self) -> bool {
        self != ModelKind::Mlp
    }
}

/// Non-linearity between hidden layers of the MLP (the output layer is linear). Recurrent
/// models use their cells' own sigmoid and tanh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
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

/// One parameter tensor: its name in model files and its shape (`[rows, cols]` for a matrix
/// stored row-major, `[len]` for a vector).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: String,
    pub shape: Vec<usize>,
}

impl ParamSpec {
    fn new(name: impl Into<String>, shape: &[usize]) -> Self {
        Self {
            name: name.into(),
            shape: shape.to_vec(),
        }
    }

    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A model's structure: everything needed to rebuild it from its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arch {
    pub kind: ModelKind,
    /// Days per window.
    pub seq_len: usize,
    /// Features per day.
    pub n_features: usize,
    /// MLP: the hidden layers' widths, input side first (empty: a linear model). Recurrent:
    /// one hidden size per layer, all equal.
    pub hidden: Vec<usize>,
    /// Predictions per window (the horizons).
    pub outputs: usize,
    /// The MLP's activation (recorded, unused, for recurrent models).
    pub activation: Activation,
}

impl Arch {
    /// An MLP of `widths` (input first, at least two) over one-day windows of `widths[0]`
    /// features: the shape of a model file from before model kinds existed.
    pub fn mlp(widths: &[usize], activation: Activation) -> Arch {
        Arch {
            kind: ModelKind::Mlp,
            seq_len: 1,
            n_features: widths[0],
            hidden: widths[1..widths.len() - 1].to_vec(),
            outputs: widths[widths.len() - 1],
            activation,
        }
    }

    /// The width of one input row: the flattened window for the MLP, one day for recurrent
    /// models.
    pub fn input_width(&self) -> usize {
        match self.kind {
            ModelKind::Mlp => self.seq_len * self.n_features,
            ModelKind::Lstm | ModelKind::Gru => self.n_features,
        }
    }

    /// The MLP's widths from input to output, e.g. `[960, 256, 128, 1]`.
    pub fn mlp_widths(&self) -> Vec<usize> {
        let mut widths = Vec::with_capacity(self.hidden.len() + 2);
        widths.push(self.input_width());
        widths.extend_from_slice(&self.hidden);
        widths.push(self.outputs);
        widths
    }

    /// Every parameter, in the order models, optimizers, engines and files keep them.
    ///
    /// - MLP: `layers.<i>.weight` (`[in, out]`) and `layers.<i>.bias` (`[out]`) per layer.
    /// - LSTM/GRU, per layer `l`: `rnn.<l>.weight_ih` (`[in, G*H]`), `rnn.<l>.weight_hh`
    ///   (`[H, G*H]`), `rnn.<l>.bias_ih` and `rnn.<l>.bias_hh` (`[G*H]`), with G gate blocks
    ///   in PyTorch's order (PyTorch stores the weights transposed); then `head.weight`
    ///   (`[H, outputs]`) and `head.bias`.
    pub fn params(&self) -> Vec<ParamSpec> {
        match self.kind {
            ModelKind::Mlp => self
                .mlp_widths()
                .windows(2)
                .enumerate()
                .flat_map(|(i, p)| {
                    [
                        ParamSpec::new(format!("layers.{i}.weight"), &[p[0], p[1]]),
                        ParamSpec::new(format!("layers.{i}.bias"), &[p[1]]),
                    ]
                })
                .collect(),
            ModelKind::Lstm | ModelKind::Gru => {
                let g = self.kind.gates();
                let mut specs = Vec::with_capacity(4 * self.hidden.len() + 2);
                let mut input = self.n_features;
                for (l, &h) in self.hidden.iter().enumerate() {
                    specs.push(ParamSpec::new(format!("rnn.{l}.weight_ih"), &[input, g * h]));
                    specs.push(ParamSpec::new(format!("rnn.{l}.weight_hh"), &[h, g * h]));
                    specs.push(ParamSpec::new(format!("rnn.{l}.bias_ih"), &[g * h]));
                    specs.push(ParamSpec::new(format!("rnn.{l}.bias_hh"), &[g * h]));
                    input = h;
                }
                specs.push(ParamSpec::new("head.weight", &[input, self.outputs]));
                specs.push(ParamSpec::new("head.bias", &[self.outputs]));
                specs
            }
        }
    }

    /// Scalars over all parameters.
    pub fn param_count(&self) -> usize {
        self.params().iter().map(ParamSpec::len).sum()
    }

    /// Whether windows of `seq_len` days of `n_features` features fit this model's input.
    pub fn accepts(&self, seq_len: usize, n_features: usize) -> bool {
        match self.kind {
            ModelKind::Mlp => self.seq_len * self.n_features == seq_len * n_features,
            ModelKind::Lstm | ModelKind::Gru => self.n_features == n_features && seq_len > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch(kind: ModelKind, hidden: Vec<usize>) -> Arch {
        Arch {
            kind,
            seq_len: 5,
            n_features: 3,
            hidden,
            outputs: 2,
            activation: Activation::Relu,
        }
    }

    #[test]
    fn parameter_shapes_follow_the_kind() {
        let mlp = arch(ModelKind::Mlp, vec![4]);
        assert_eq!(mlp.mlp_widths(), vec![15, 4, 2]);
        assert_eq!(mlp.param_count(), 15 * 4 + 4 + 4 * 2 + 2);
        let lstm = arch(ModelKind::Lstm, vec![4, 4]);
        let shapes: Vec<_> = lstm.params().into_iter().map(|p| (p.name, p.shape)).collect();
        assert_eq!(shapes[0], ("rnn.0.weight_ih".to_owned(), vec![3, 16]));
        assert_eq!(shapes[4], ("rnn.1.weight_ih".to_owned(), vec![4, 16]));
        assert_eq!(shapes[8], ("head.weight".to_owned(), vec![4, 2]));
        // PyTorch's nn.LSTM(3, 4, 2) has 4*4*(3+4+2) + 4*4*(4+4+2) = 304 parameters.
        assert_eq!(lstm.param_count() - (4 * 2 + 2), 304);
        let gru = arch(ModelKind::Gru, vec![4]);
        assert_eq!(gru.param_count() - (4 * 2 + 2), 3 * 4 * (3 + 4 + 2));
    }

    #[test]
    fn inputs_fit_by_kind() {
        assert!(
            arch(ModelKind::Mlp, vec![]).accepts(3, 5),
            "15 flattened inputs either way"
        );
        assert!(!arch(ModelKind::Mlp, vec![]).accepts(6, 3));
        assert!(arch(ModelKind::Gru, vec![2]).accepts(60, 3), "any number of days");
        assert!(!arch(ModelKind::Gru, vec![2]).accepts(5, 4));
    }
}
