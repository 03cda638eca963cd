//! The `transfer` stage (exec -> stage -> transfer): host <-> device copy bandwidth per size
//! and mode. The measuring itself lives in `crate::transfer`.

use super::runnable::{Inputs, Stage, StageCtx, StageError};
use crate::artifact::Artifact;
use crate::transfer::{run_transfer, TransferParams};
use std::sync::Arc;

#[derive(Debug)]
struct TransferStage {
    params: TransferParams,
}

pub(super) fn build(params: &TransferParams) -> Arc<dyn Stage> {
    Arc::new(TransferStage { params: params.clone() })
}

impl Stage for TransferStage {
    fn gpu_monitor(&self) -> Option<f64> {
        // Not where CUDA cannot be used: the stage then fails before any GPU work.
        (self.params.device != crate::transfer::TransferDevice::Cpu && crate::cuda_dl::probe().is_ok())
            .then_some(crate::measure::gpu::DEFAULT_HZ)
    }

    fn run(&self, ctx: &mut StageCtx<'_>, _inputs: &Inputs) -> Result<Artifact, StageError> {
        run_transfer(&self.params, &mut ctx.rec, ctx.cancel)?;
        add_mode_free_names(&mut ctx.rec);
        Ok(Artifact::None)
    }
}

/// When a direction was measured in exactly one mode, also records its copy times under a
/// name without the mode (`h2d_seconds`, per size) and the bandwidth at the largest size
/// (`h2d_gbps_at_max`), so variants that differ only in mode (pageable vs pinned) can be
/// compared on one metric. (No mode-free GB/s series: it would chart every line twice.)
fn add_mode_free_names(rec: &mut crate::metrics::Recorder) {
    let metrics = rec.metrics().to_vec();
    for dir in ["h2d", "d2h"] {
        let modes: std::collections::BTreeSet<&str> = metrics
            .iter()
            .filter_map(|m| m.name.strip_prefix(dir)?.strip_prefix('_')?.strip_suffix("_gbps"))
            .collect();
        let [mode] = modes.into_iter().collect::<Vec<_>>()[..] else {
            continue;
        };
        let seconds = format!("{dir}_{mode}_seconds");
        for m in metrics.iter().filter(|m| m.name == seconds) {
            if let Some(step) = m.step {
                rec.record_step(format!("{dir}_seconds"), step, m.value, "s");
            }
        }
        let gbps = format!("{dir}_{mode}_gbps");
        if let Some(last) = metrics
            .iter()
            .filter(|m| m.name == gbps)
            .max_by_key(|m| m.step.unwrap_or(0))
        {
            rec.record(format!("{dir}_gbps_at_max"), last.value, "GB/s");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Recorder;

    #[test]
    fn single_mode_directions_get_mode_free_names() {
        let mut rec = Recorder::new();
        rec.record_step("h2d_pinned_reuse_gbps", 4096, 1.0, "GB/s");
        rec.record_step("h2d_pinned_reuse_gbps", 1 << 20, 5.0, "GB/s");
        rec.record_step("h2d_pinned_reuse_seconds", 4096, 0.1, "s");
        rec.record_step("d2h_pinned_reuse_gbps", 4096, 1.0, "GB/s");
        rec.record_step("d2h_pageable_reuse_gbps", 4096, 2.0, "GB/s");
        add_mode_free_names(&mut rec);
        let named = |n: &str| rec.metrics().iter().filter(|m| m.name == n).count();
        assert_eq!(named("h2d_gbps"), 0, "no duplicate GB/s series");
        assert_eq!(named("h2d_seconds"), 1);
        let at_max = rec.metrics().iter().find(|m| m.name == "h2d_gbps_at_max").unwrap();
        assert_eq!((at_max.value, at_max.step), (5.0, None));
        assert_eq!(named("d2h_gbps_at_max"), 0, "two modes for d2h: no mode-free name");
    }
}
