//! The metrics each built-in stage kind records, declared once: the validator checks the metric
//! names of `[compare]` against it (with a did-you-mean), the report describes the primary
//! metric from it, and `measured schema` lists it in each stage kind's description.
//!
//! A `command` stage records what its program prints, so its names are open. Every stage also
//! has `seconds`, its wall time, unless its kind records a `seconds` of its own.
//!
//! The catalog is the stages' contract: a test runs every built-in kind and fails when one
//! records a name or unit the catalog does not declare.

use super::kind::StageKind;
use super::transfer::{Allocation, CopyDirection, HostMemory, Mode, SyncMode};

/// One metric a built-in stage kind records.
#[derive(Debug)]
pub struct MetricDecl {
    /// The name, or a pattern: `{mode}` stands for a transfer mode (`h2d_pinned_reuse`,
    /// `d2h_pageable_per_copy_non_blocking`, ...), `{dir}` for `h2d` or `d2h`.
    pub name: &'static str,
    /// `s`, `B`, `count`, `ratio`, `loss`, `score`, or a rate ending in `/s`.
    pub unit: &'static str,
    /// What it measures, as a phrase (`mean seconds per training epoch`).
    pub about: &'static str,
    pub shape: Shape,
}

impl MetricDecl {
    /// Whether only a stage running on CUDA records it: its description ends with `(CUDA)`.
    pub fn cuda_only(&self) -> bool {
        self.about.ends_with("(CUDA)")
    }
}

/// Whether a metric is one value per trial, a series, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Single,
    /// One value, and also a series over what is named (`epoch`).
    AlsoPer(&'static str),
    /// Only a series over what is named (`size`): one trial's value is its mean.
    Per(&'static str),
}

const fn m(name: &'static str, unit: &'static str, about: &'static str) -> MetricDecl {
    MetricDecl {
        name,
        unit,
        about,
        shape: Shape::Single,
    }
}

const fn also_per(per: &'static str, name: &'static str, unit: &'static str, about: &'static str) -> MetricDecl {
    MetricDecl {
        name,
        unit,
        about,
        shape: Shape::AlsoPer(per),
    }
}

const fn per(per: &'static str, name: &'static str, unit: &'static str, about: &'static str) -> MetricDecl {
    MetricDecl {
        name,
        unit,
        about,
        shape: Shape::Per(per),
    }
}

impl MetricDecl {
    /// The phrase for a report, where one trial gives one value.
    pub fn about_one_value(&self) -> String {
        match self.shape {
            Shape::Per(per) => format!("{}, the mean over the {per}s of a trial", self.about),
            _ => self.about.to_owned(),
        }
    }

    /// The phrase for the catalog, with its series.
    fn about_with_shape(&self) -> String {
        match self.shape {
            Shape::Single => self.about.to_owned(),
            Shape::AlsoPer(per) => format!("{}, also per {per}", self.about),
            Shape::Per(per) => format!("{}, per {per}", self.about),
        }
    }
}

/// `<stage>.seconds` of a stage kind that records no `seconds` of its own.
pub const STAGE_SECONDS: MetricDecl = m("seconds", "s", "the stage's wall time in one trial");

const LOAD: &[MetricDecl] = &[
    m("seconds", "s", "seconds spent reading the bars from the stock database"),
    m("rows", "count", "bars read"),
    m("rows_per_second", "rows/s", "bars read per second"),
    m("symbols", "count", "symbols with bars"),
    m(
        "symbols_dropped",
        "count",
        "symbols asked for with fewer than `min_history` bars in the range",
    ),
    m("bytes", "B", "bytes of the bars held in memory"),
    m("wire_bytes", "B", "bytes received from the database (COPY only)"),
];

const NORMALIZE: &[MetricDecl] = &[
    m("features_seconds", "s", "seconds computing the features"),
    m("normalize_seconds", "s", "seconds normalizing the features"),
    m("windows_seconds", "s", "seconds building the windows"),
    m("windows_per_second", "windows/s", "windows built per second"),
    m("windows", "count", "windows built (training and validation)"),
    m("train_windows", "count", "training windows"),
    m("valid_windows", "count", "validation windows"),
    m("features", "count", "features per day"),
    m("symbols", "count", "symbols that produced windows"),
    m("bytes", "B", "bytes of the windows held in memory"),
    m("threads", "count", "worker threads used"),
];

const TRAIN: &[MetricDecl] = &[
    also_per("epoch", "epoch_seconds", "s", "mean seconds per training epoch"),
    m(
        "first_step_seconds",
        "s",
        "seconds of the untimed warm-up step before the first epoch",
    ),
    m(
        "warmup_steps",
        "count",
        "untimed warm-up steps before the first epoch (one, or as many as warmup_seconds takes)",
    ),
    m(
        "train_steps",
        "count",
        "optimizer steps over all epochs, the warm-up step not included",
    ),
    m(
        "batch_prep_host_seconds",
        "s",
        "host clock around getting each batch and handing it to the device (gather or prefetch \
         wait, staging, allocation, queuing the copy), summed over the training",
    ),
    m(
        "samples_per_second",
        "samples/s",
        "training samples per second over all epochs",
    ),
    also_per("epoch", "train_loss", "loss", "training MSE after the last epoch"),
    also_per("epoch", "mean_batch_loss", "loss", "mean batch loss of the last epoch"),
    per(
        "epoch",
        "valid_mse_vs_zero",
        "ratio",
        "validation MSE over the MSE of predicting zero",
    ),
    m(
        "seconds_to_target",
        "s",
        "seconds until the validation MSE reached the target",
    ),
    m(
        "epochs_to_target",
        "count",
        "epochs until the validation MSE reached the target",
    ),
    m(
        "prep_seconds",
        "s",
        "seconds preparing batches on the host (phase_timing)",
    ),
    m(
        "h2d_seconds",
        "s",
        "seconds copying batches to the device (phase_timing)",
    ),
    m(
        "compute_seconds",
        "s",
        "seconds of forward, backward and update (phase_timing)",
    ),
    m("readback_seconds", "s", "seconds reading the loss back (phase_timing)"),
    m(
        "loss_reads",
        "count",
        "loss reads back to the host: loss_reads_per_step every loss_sync_every steps, and each epoch's mean",
    ),
    m(
        "readback_seconds_per_read",
        "s",
        "readback_seconds per loss read: what one read of the loss (an `.item()`) costs (phase_timing)",
    ),
    m(
        "readback_host_seconds_per_read",
        "s",
        "host clock around the steps' loss reads, per read: on CUDA the wait for the step's \
         queued work that an `.item()` stalls on, shared over the step's reads",
    ),
    also_per(
        "epoch",
        "alloc_seconds",
        "s",
        "host time of the calls that allocated batch buffers, apart from the copies into them \
         (a new pair per batch, or once with buffer_reuse; on CUDA, dfdx's cache or the \
         stream-ordered pool)",
    ),
    also_per("epoch", "allocations", "count", "batch buffers allocated"),
    m(
        "sync_calls",
        "count",
        "driver calls that made the host wait for the device during the training steps: \
         synchronizations and blocking copies (CUDA)",
    ),
    m("sync_calls_per_step", "count", "sync_calls per optimizer step (CUDA)"),
    m(
        "query_calls",
        "count",
        "stream and event queries during the training steps, which never wait (CUDA)",
    ),
    m(
        "device_mem_peak_bytes",
        "B",
        "most device memory allocated from the memory pool at once, dfdx's tensor cache included (CUDA)",
    ),
    m(
        "cuda_graph_captures",
        "count",
        "CUDA graphs of the training step captured during training: one, unless the weights moved \
         (an MLP on CUDA with cuda_graph on)",
    ),
    m(
        "step_loss_rel_diff",
        "ratio",
        "one step's loss, CPU engine against the training device, relative difference (check_step)",
    ),
    m(
        "step_grad_max_rel_diff",
        "ratio",
        "one step's gradients, CPU engine against the training device, largest difference over \
         its tensor's scale (check_step)",
    ),
];

const VALIDATE: &[MetricDecl] = &[
    m("mse", "loss", "validation mean squared error of the model"),
    m("mae", "loss", "validation mean absolute error of the model"),
    m("mse_vs_zero", "ratio", "model MSE over the MSE of predicting zero"),
    m(
        "mse_vs_mean",
        "ratio",
        "model MSE over the MSE of predicting the training mean",
    ),
    m(
        "direction_accuracy",
        "score",
        "share of validation windows whose sign the model got right",
    ),
    m("ic", "score", "Spearman rank correlation of predictions and targets"),
    m("ic_per_date", "score", "mean cross-sectional rank correlation per date"),
    m("ic_t", "score", "t-statistic of the per-date rank correlation"),
    m(
        "batch_loop_seconds",
        "s",
        "the validation batch loop alone, host clock: gathering, copies, forward passes and \
         reading the outputs back, without device setup, weight upload, self-check or scoring",
    ),
    m(
        "logged_batches",
        "count",
        "batches whose mean prediction was read back and logged (log_every)",
    ),
    m("ic_dates", "count", "dates the per-date rank correlation averages"),
    m("valid_windows", "count", "validation windows scored"),
    m("naive_zero_mse", "loss", "MSE of predicting zero"),
    m("naive_zero_mae", "loss", "MAE of predicting zero"),
    m("naive_mean_mse", "loss", "MSE of predicting the training mean"),
    m("naive_last_mse", "loss", "MSE of predicting the last return"),
    m(
        "naive_last_direction_accuracy",
        "score",
        "direction accuracy of predicting the last return",
    ),
    m(
        "naive_last_ic",
        "score",
        "rank correlation of the last return with the target",
    ),
];

const TRANSFER: &[MetricDecl] = &[
    per("size", "{mode}_seconds", "s", "median seconds per copy in this mode"),
    per("size", "{mode}_gbps", "GB/s", "bandwidth in this mode"),
    per(
        "size",
        "{mode}_event_seconds",
        "s",
        "CUDA, pinned reused modes from 16 MiB: median seconds per copy between CUDA events",
    ),
    per(
        "size",
        "{dir}_seconds",
        "s",
        "median seconds per copy in the direction's only mode",
    ),
    m(
        "{dir}_gbps_at_max",
        "GB/s",
        "bandwidth of the direction's only mode at the largest size",
    ),
    per(
        "size",
        "{mode}_pct_peak",
        "%",
        "bandwidth in this mode as a share of its direction's reference",
    ),
    m(
        "reference_{dir}_gbps",
        "GB/s",
        "the direction's reference: pinned, reused, blocking copies of 256 MiB or more",
    ),
    m("reference_bytes", "B", "size of the reference copies"),
    m(
        "link_theoretical_gbps",
        "GB/s",
        "the PCIe link's theoretical rate per direction, from NVML (CUDA)",
    ),
    per(
        "size",
        "peak_gbps",
        "GB/s",
        "same-size reference copy (runs stored before the 256 MiB reference)",
    ),
    per(
        "size",
        "pinned_locked",
        "count",
        "1 when every pinned buffer was page-locked",
    ),
    per(
        "size",
        "roundtrip_ok",
        "count",
        "1 once every mode's copy handed back the bytes sent through it (checked outside the clock)",
    ),
    m("d2d_gbps", "GB/s", "device-to-device bandwidth (CUDA)"),
];

/// GPU telemetry, sampled through NVML while a stage runs on CUDA (`measure::gpu`): recorded by
/// every stage kind that can run there.
const GPU_TELEMETRY: &[MetricDecl] = &[
    m(
        "gpu_samples",
        "count",
        "GPU telemetry samples taken while the stage ran (CUDA)",
    ),
    m("gpu_util_mean", "%", "mean GPU utilization while the stage ran (CUDA)"),
    m("gpu_util_max", "%", "highest GPU utilization a sample saw (CUDA)"),
    m("gpu_mem_peak", "B", "most GPU memory in use in a sample (CUDA)"),
    m("gpu_sm_clock_min", "MHz", "lowest SM clock a sample saw (CUDA)"),
    m("gpu_sm_clock_max", "MHz", "the GPU's highest SM clock (CUDA)"),
    m("gpu_power_mean", "W", "mean board power (CUDA)"),
    m("gpu_temp_max", "C", "highest GPU temperature a sample saw (CUDA)"),
    m(
        "gpu_throttled_share",
        "ratio",
        "share of samples below 75% of the highest SM clock (CUDA)",
    ),
    m("gpu_throttled", "count", "1 when a sample was throttled (CUDA)"),
];

/// The metrics of a stage kind: `None` for `command` (its program names them).
pub fn declared(kind: StageKind) -> Option<&'static [MetricDecl]> {
    match kind {
        StageKind::Command => None,
        StageKind::Load => Some(LOAD),
        StageKind::Normalize => Some(NORMALIZE),
        StageKind::Train => Some(TRAIN),
        StageKind::Validate => Some(VALIDATE),
        StageKind::Transfer => Some(TRANSFER),
    }
}

/// Whether a stage of `kind` can run on CUDA, and so records the GPU telemetry.
fn records_gpu_telemetry(kind: StageKind) -> bool {
    match kind {
        StageKind::Train | StageKind::Validate | StageKind::Transfer => true,
        StageKind::Command | StageKind::Load | StageKind::Normalize => false,
    }
}

/// Every concrete metric name of a stage kind with its declaration, patterns expanded, `seconds`
/// included; `None` when the kind's names are open.
pub fn names(kind: StageKind) -> Option<Vec<(String, &'static MetricDecl)>> {
    let decls = declared(kind)?;
    let mut out: Vec<(String, &'static MetricDecl)> = Vec::new();
    for d in decls {
        if d.name.contains("{mode}") {
            out.extend(
                mode_names()
                    .into_iter()
                    .map(|mode| (d.name.replace("{mode}", &mode), d)),
            );
        } else if d.name.contains("{dir}") {
            out.extend(["h2d", "d2h"].map(|dir| (d.name.replace("{dir}", dir), d)));
        } else {
            out.push((d.name.to_owned(), d));
        }
    }
    if records_gpu_telemetry(kind) {
        out.extend(GPU_TELEMETRY.iter().map(|d| (d.name.to_owned(), d)));
    }
    if !out.iter().any(|(n, _)| n == "seconds") {
        out.push(("seconds".to_owned(), &STAGE_SECONDS));
    }
    Some(out)
}

/// The declaration of `name` in a stage of `kind`; `None` when the kind's names are open or it
/// records no such metric.
pub fn find_in(kind: StageKind, name: &str) -> Option<&'static MetricDecl> {
    names(kind)?.into_iter().find(|(n, _)| n == name).map(|(_, d)| d)
}

/// [`find_in`] for a kind written as text, as a stored run keeps it (read with
/// [`StageKind::parse`]); `None` also for text that names no kind.
pub fn find(kind: &str, name: &str) -> Option<&'static MetricDecl> {
    find_in(StageKind::parse(kind)?, name)
}

/// Every transfer mode name, in a fixed order.
fn mode_names() -> Vec<String> {
    let mut out = Vec::new();
    for direction in [CopyDirection::H2d, CopyDirection::D2h] {
        for host_memory in [HostMemory::Pageable, HostMemory::Pinned] {
            for allocation in [Allocation::PerCopy, Allocation::Reuse] {
                for sync in [SyncMode::Blocking, SyncMode::NonBlocking] {
                    let mode = Mode {
                        direction,
                        host_memory,
                        allocation,
                        sync,
                    };
                    out.push(mode.name());
                }
            }
        }
    }
    out
}

/// The catalog of a kind as one sentence for `measured schema`: `Records: `mse` (loss):
/// validation mean squared error of the model; ...`.
pub fn describe(kind: StageKind) -> String {
    match declared(kind) {
        None => "Records the metrics its program prints as JSON lines, and `seconds`, its wall time.".to_owned(),
        Some(decls) => {
            let mut parts: Vec<String> = decls
                .iter()
                .map(|d| format!("`{}` ({}): {}", d.name, d.unit, d.about_with_shape()))
                .collect();
            if !decls.iter().any(|d| d.name == "seconds") {
                parts.push(format!("`seconds` (s): {}", STAGE_SECONDS.about));
            }
            format!("Records {}.", parts.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_expand_to_every_transfer_mode_and_direction() {
        let names: Vec<String> = names(StageKind::Transfer)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        for n in [
            "h2d_pinned_reuse_seconds",
            "d2h_pageable_per_copy_non_blocking_gbps",
            "h2d_seconds",
            "d2h_gbps_at_max",
            "h2d_pinned_reuse_non_blocking_pct_peak",
            "reference_d2h_gbps",
            "seconds",
        ] {
            assert!(names.contains(&n.to_owned()), "{n} missing from {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains('{')));
        // 16 modes, 2 directions' references, the old same-size peak, the device copy, the link.
        assert_eq!(
            names.iter().filter(|n| n.ends_with("_gbps")).count(),
            16 + 2 + 1 + 1 + 1
        );
    }

    #[test]
    fn a_kind_with_its_own_seconds_keeps_its_meaning() {
        assert_eq!(find("load", "seconds").unwrap().about, LOAD[0].about);
        assert_eq!(find("train", "seconds").unwrap().about, STAGE_SECONDS.about);
        assert!(find("train", "epoch_secnds").is_none());
        assert!(names(StageKind::Command).is_none());
        assert!(find("lod", "seconds").is_none());
    }

    #[test]
    fn no_name_is_declared_twice_in_a_kind() {
        for kind in StageKind::ALL.into_iter().filter(|&k| k != StageKind::Command) {
            let names: Vec<String> = names(kind).unwrap().into_iter().map(|(n, _)| n).collect();
            let unique: std::collections::BTreeSet<&String> = names.iter().collect();
            assert_eq!(unique.len(), names.len(), "{kind}: {names:?}");
        }
    }
}
