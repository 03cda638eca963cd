//! The "GPU telemetry" section (the `gpu_*` summaries a monitored stage recorded, see
//! `measure::gpu` -> one row per config and stage): utilization, memory, SM clock, power,
//! temperature, and how many trials were throttled (some sample's SM clock below 75% of the
//! GPU's maximum, nvbench's rule), whose timings are then suspect.

use super::samples::metric_samples;
use crate::report::model::{ConfigData, GpuRow, RunData};
use crate::stats::median;

/// The stages of `config` that recorded GPU telemetry, in order of first appearance.
fn monitored_stages(config: &ConfigData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in config.trials.iter().flat_map(|t| &t.stages) {
        if s.metrics.iter().any(|m| m.name == "gpu_samples") && !out.contains(&s.name) {
            out.push(s.name.clone());
        }
    }
    out
}

/// One row per config and monitored stage, in config order.
pub(crate) fn gpu_rows(run: &RunData) -> Vec<GpuRow> {
    let mut rows = Vec::new();
    for c in &run.configs {
        for stage in monitored_stages(c) {
            let values = |name: &str| metric_samples(c, &format!("{stage}.{name}")).values;
            let finite = |v: f64| v.is_finite().then_some(v);
            let med = |name: &str| finite(median(&values(name)));
            let max = |name: &str| values(name).into_iter().reduce(f64::max);
            let min = |name: &str| values(name).into_iter().reduce(f64::min);
            rows.push(GpuRow {
                config: c.name.clone(),
                n: values("gpu_samples").len(),
                samples: med("gpu_samples"),
                util_mean: med("gpu_util_mean"),
                util_max: max("gpu_util_max"),
                mem_peak: max("gpu_mem_peak"),
                sm_clock_min: min("gpu_sm_clock_min"),
                sm_clock_max: max("gpu_sm_clock_max"),
                power_mean: med("gpu_power_mean"),
                temp_max: max("gpu_temp_max"),
                throttled: values("gpu_throttled").iter().filter(|v| **v > 0.0).count(),
                stage,
            });
        }
    }
    rows
}
