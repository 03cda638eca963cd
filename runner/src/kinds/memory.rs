//! What training a model holds in memory, estimated before it runs: by `measured check` and
//! `plan` from the manifest (the input width from the upstream `normalize` stage), and again by
//! `train` from the real windows before it allocates anything. A model too large for the bound
//! is an error that says how much it would take and how to raise the bound, never an abort
//! for want of memory.
//!
//! The estimate counts f32 values: the weights, their gradients and Adam's two moments (four
//! copies of every parameter), each layer's activations for one batch three times (the output,
//! the value the backward pass keeps, and its gradient), and the input batches (the one being
//! trained on plus `prefetch` prepared ahead), and in bf16 or f16 the weights' two-byte copies
//! the products read. It leaves out the windows themselves, which are
//! the `normalize` stage's, and the framework's own overhead, so it is a floor, not a ceiling.

use super::train::TrainParams;
use crate::params::ParamError;

const F32: f64 = 4.0;
const F16: f64 = 2.0;

/// The estimate, in bytes (f64, so no size of any manifest can overflow it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryEstimate {
    /// Trainable values: weights and biases of every layer.
    pub parameters: f64,
    /// Weights, gradients and the optimizer's two moments.
    pub parameter_bytes: f64,
    /// Activations of one batch, kept for the backward pass, with their gradients.
    pub activation_bytes: f64,
    /// Input batches: the current one and those prepared ahead.
    pub batch_bytes: f64,
}

impl MemoryEstimate {
    pub fn total(&self) -> f64 {
        self.parameter_bytes + self.activation_bytes + self.batch_bytes
    }
}

/// The estimate for the model of `params` on windows of `seq_len` days of `n_features`
/// features with `outputs` targets. A recurrent model keeps, per layer and per day of the
/// batch, its gates, states and their gradients: about `3 G H + 6 H` values (G gate blocks).
pub fn estimate(params: &TrainParams, seq_len: usize, n_features: usize, outputs: usize) -> MemoryEstimate {
    let hidden: Vec<f64> = params
        .hidden_widths()
        .unwrap_or_default()
        .into_iter()
        .map(|w| w as f64)
        .collect();
    let input = seq_len as f64 * n_features as f64;
    let outputs = outputs.max(1) as f64;
    let batch = params.batch_size as f64;
    let (parameters, activations) = if params.model.is_recurrent() {
        let g = params.model.gates() as f64;
        let mut width_in = n_features as f64;
        let mut parameters = 0.0;
        let mut per_day = width_in;
        for &h in &hidden {
            parameters += g * h * (width_in + h + 2.0);
            per_day += 3.0 * g * h + 6.0 * h;
            width_in = h;
        }
        (
            parameters + width_in * outputs + outputs,
            per_day * seq_len as f64 * batch,
        )
    } else {
        let widths: Vec<f64> = std::iter::once(input)
            .chain(hidden.iter().copied())
            .chain(std::iter::once(outputs))
            .collect();
        let parameters: f64 = widths.windows(2).map(|w| w[0] * w[1] + w[1]).sum();
        (parameters, 3.0 * batch * widths[1..].iter().sum::<f64>())
    };
    MemoryEstimate {
        parameters,
        parameter_bytes: 4.0 * parameters * F32
            + if params.precision != super::train::Precision::F32 {
                // The weights' half copies (bf16 and f16 alike are two bytes).
                parameters * F16
            } else {
                0.0
            },
        activation_bytes: activations * F32,
        batch_bytes: (1.0 + params.prefetch as f64) * batch * (input + outputs) * F32,
    }
}

/// An error when training `params` on windows of `seq_len` days of `n_features` features would
/// take more than its bound.
pub fn check(params: &TrainParams, seq_len: usize, n_features: usize, outputs: usize) -> Result<(), ParamError> {
    let limit = params.memory_bound()?;
    let e = estimate(params, seq_len, n_features, outputs);
    let input = seq_len.saturating_mul(n_features);
    if e.total() <= limit as f64 {
        return Ok(());
    }
    // The error sits on what takes most of it: the layers, or the batch.
    let field = if e.parameter_bytes >= e.activation_bytes + e.batch_bytes {
        "hidden"
    } else {
        "batch_size"
    };
    Err(ParamError::new(
        field,
        format!(
            "training this model takes at least {}, above the limit of {}: {} parameters ({} for weights, \
             gradients and optimizer state), {} of activations for a batch of {}, {} of input batches \
             (input width {input})",
            bytes(e.total()),
            bytes(limit as f64),
            count(e.parameters),
            bytes(e.parameter_bytes),
            bytes(e.activation_bytes),
            params.batch_size,
            bytes(e.batch_bytes),
        ),
    )
    .with_hint(format!(
        "make the layers or `batch_size` smaller, or raise the limit with `max_memory = \"{}\"` in this \
         stage if the machine has the memory",
        bytes_up(e.total())
    )))
}

/// `12.5 GiB`, `3.0 TiB`, ...
fn bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else if v >= 1e6 {
        format!("{v:.3e} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// A whole number of GiB at or above `b`, as `max_memory` takes it.
fn bytes_up(b: f64) -> String {
    let gib = (b / (1u64 << 30) as f64).ceil().max(1.0);
    if gib < 1e15 {
        format!("{gib:.0}GiB")
    } else {
        format!("{gib:.0}GiB (more than any machine has)")
    }
}

/// `1,234,567` or `1.2e+15` for a count too long to read.
fn count(n: f64) -> String {
    if n >= 1e15 {
        return format!("{n:.2e}");
    }
    let digits = format!("{n:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(hidden: Vec<usize>, batch_size: usize) -> TrainParams {
        TrainParams {
            hidden: Some(hidden),
            batch_size,
            ..TrainParams::default()
        }
    }

    #[test]
    fn counts_every_weight_and_bias() {
        // 10 -> 4 -> 1: 10*4 + 4 + 4*1 + 1 = 49.
        let e = estimate(&params(vec![4], 2), 1, 10, 1);
        assert_eq!(e.parameters, 49.0);
        assert_eq!(e.parameter_bytes, 49.0 * 16.0);
        assert_eq!(e.activation_bytes, 3.0 * 2.0 * 5.0 * 4.0);
        assert_eq!(e.batch_bytes, 2.0 * 11.0 * 4.0);
        // Half precisions add the weights' two-byte copies the products read.
        for precision in [
            super::super::train::Precision::F16,
            super::super::train::Precision::Bf16,
        ] {
            let half = TrainParams {
                precision,
                ..params(vec![4], 2)
            };
            assert_eq!(estimate(&half, 1, 10, 1).parameter_bytes, 49.0 * 18.0);
        }
    }

    #[test]
    fn a_hundred_million_wide_layer_is_refused_with_the_size_and_the_way_to_raise_it() {
        let p = params(vec![100_000_000], 256);
        let e = check(&p, 1, 1200, 1).unwrap_err();
        assert_eq!(e.field, "hidden", "the weights take most of it");
        assert!(e.message.contains("above the limit of 16.0 GiB"), "{}", e.message);
        assert!(e.message.contains("120,200,000,001 parameters"), "{}", e.message);
        let hint = e.hint.unwrap();
        assert!(hint.contains("max_memory = \""), "{hint}");
    }

    #[test]
    fn the_bound_is_inclusive_and_can_be_raised() {
        let p = params(vec![256, 128], 256);
        let need = estimate(&p, 1, 1200, 1).total() as u64;
        let at = |limit: u64| TrainParams {
            max_memory: Some(crate::size::SizeSpec::Bytes(limit)),
            ..p.clone()
        };
        assert!(check(&at(need + 1), 1, 1200, 1).is_ok());
        assert!(check(&at(need - 1), 1, 1200, 1).is_err());
        assert!(
            check(&p, 1, 1200, 1).is_ok(),
            "the default fits the quickstart-sized model"
        );
    }

    #[test]
    fn a_huge_batch_is_blamed_on_the_batch() {
        let e = check(&params(vec![64], 10_000_000), 1, 400, 1).unwrap_err();
        assert_eq!(e.field, "batch_size");
        assert!(
            e.message.contains("of activations for a batch of 10000000"),
            "{}",
            e.message
        );
    }

    #[test]
    fn sizes_no_machine_has_do_not_overflow() {
        let p = params(vec![usize::MAX, usize::MAX], usize::MAX);
        let e = check(&p, 1, usize::MAX, usize::MAX).unwrap_err();
        assert!(e.message.contains("PiB"), "{}", e.message);
    }
}
