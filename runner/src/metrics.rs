//! Metric samples recorded by stages (stage -> exec -> reporters/store).
//!
//! A stage records metrics under stage-local names (`epoch_seconds`); reports and `[compare]`
//! refer to them as `<stage>.<metric>` (`train.epoch_seconds`).

use serde::{Deserialize, Serialize};

/// One measured value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    /// `s`, `B`, `count`, a rate ending in `/s`, `score` (higher is better) or `loss` (lower is better).
    pub unit: String,
    /// Position in a series (epoch, step, size index), `None` for a single value.
    pub step: Option<i64>,
}

/// Collects the metrics one stage run records.
#[derive(Debug, Default, Clone)]
pub struct Recorder {
    metrics: Vec<Metric>,
}

impl Recorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a single value.
    pub fn record(&mut self, name: impl Into<String>, value: f64, unit: &str) {
        self.metrics.push(Metric {
            name: name.into(),
            value,
            unit: unit.to_owned(),
            step: None,
        });
    }

    /// Records one point of a series (per epoch, per size, ...).
    pub fn record_step(&mut self, name: impl Into<String>, step: i64, value: f64, unit: &str) {
        self.metrics.push(Metric {
            name: name.into(),
            value,
            unit: unit.to_owned(),
            step: Some(step),
        });
    }

    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    pub fn into_metrics(self) -> Vec<Metric> {
        self.metrics
    }
}
