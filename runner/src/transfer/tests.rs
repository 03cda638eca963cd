//! Tests of the `transfer` stage on the CPU: parameters as a manifest gives them, the metrics a
//! run records, and the per-mode samples.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

use super::measure::{check_round_trip, parse_cache_size, pattern};
use super::*;
use crate::params::ParamError;

fn params(toml_text: &str) -> TransferParams {
    toml::from_str(toml_text).expect("valid transfer table")
}

fn param_error(toml_text: &str) -> ParamError {
    params(toml_text).check().expect_err("check must fail")
}

#[test]
fn defaults_cover_both_memory_kinds_and_allocations() {
    let p = params("");
    p.check().unwrap();
    let plan = p.plan().unwrap();
    assert_eq!(plan.sizes.first(), Some(&4096));
    assert_eq!(plan.sizes.last(), Some(&(256 << 20)));
    let names: Vec<String> = plan.modes.iter().map(Mode::name).collect();
    assert_eq!(
        names,
        [
            "h2d_pageable_per_copy",
            "h2d_pageable_reuse",
            "h2d_pinned_per_copy",
            "h2d_pinned_reuse"
        ]
    );
    assert_eq!((p.iterations, p.warmup, p.device), (20, 3, TransferDevice::Cpu));
    assert_eq!(TransferParams::default().plan().unwrap().sizes, plan.sizes);
}

#[test]
fn modes_take_one_value_or_a_list() {
    let p = params(
        r#"
        sizes = ["4KiB", 65536, "16x16xf32"]
        direction = "both"
        host_memory = "pinned"
        allocation = ["reuse"]
        "#,
    );
    let plan = p.plan().unwrap();
    assert_eq!(plan.sizes, [4096, 65536, 1024]);
    let names: Vec<String> = plan.modes.iter().map(Mode::name).collect();
    assert_eq!(names, ["h2d_pinned_reuse", "d2h_pinned_reuse"]);
}

#[test]
fn unknown_keys_and_values_are_rejected_when_parsing() {
    let err = toml::from_str::<TransferParams>("sizez = [\"4KiB\"]").unwrap_err();
    assert!(err.to_string().contains("unknown field `sizez`"), "{err}");
    let err = toml::from_str::<TransferParams>("host_memory = \"locked\"").unwrap_err();
    assert!(err.to_string().contains("unknown variant `locked`"), "{err}");
    let err = toml::from_str::<TransferParams>("direction = [\"h2d\", \"sideways\"]").unwrap_err();
    assert!(err.to_string().contains("expected one of"), "{err}");
    let err = toml::from_str::<TransferParams>("allocation = 3").unwrap_err();
    assert!(err.to_string().contains("a string or a list of strings"), "{err}");
}

#[test]
fn bad_sizes_name_the_field_and_the_accepted_forms() {
    for bad in ["12 parsecs", "0B", "x60", "256x0xf32"] {
        let err = param_error(&format!("sizes = [\"4KiB\", \"{bad}\"]"));
        assert_eq!(err.field, "sizes", "{bad}");
        assert!(err.message.contains(bad), "{bad}: {}", err.message);
        let hint = err.hint.expect("hint");
        assert!(hint.contains("4KiB") && hint.contains("256x60x105xf32"), "{hint}");
    }
    assert_eq!(param_error("sizes = [0]").field, "sizes");
    assert_eq!(param_error("sizes = []").field, "sizes");
    let err = param_error("sizes = [\"1KiB\", 1024]");
    assert!(err.message.contains("again"), "{}", err.message);
}

#[test]
fn other_parameter_errors_name_their_field() {
    let table = [
        ("iterations = 0", "iterations"),
        ("host_memory = []", "host_memory"),
        ("allocation = [\"reuse\", \"reuse\"]", "allocation"),
        ("direction = [\"both\", \"d2h\"]", "direction"),
    ];
    for (text, field) in table {
        let err = param_error(text);
        assert_eq!(err.field, field, "{text}: {err}");
        assert!(err.hint.is_some(), "{text}");
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_without_the_feature_says_how_to_build_it() {
    let p = params("device = \"cuda\"");
    let err = p.check().unwrap_err();
    assert_eq!(err.field, "device");
    assert!(err.hint.unwrap().contains("scripts/build-cuda.sh"));
    let run = run_transfer(&p, &mut Recorder::new(), &AtomicBool::new(false));
    assert!(matches!(run, Err(TransferError::Params(_))));
}

#[test]
fn a_run_records_every_metric_for_every_size_and_mode() {
    let p = params(
        r#"
        sizes = ["4KiB", "64KiB"]
        direction = "both"
        host_memory = ["pageable", "pinned"]
        allocation = ["per_copy", "reuse"]
        iterations = 3
        warmup = 1
        "#,
    );
    let mut rec = Recorder::new();
    run_transfer(&p, &mut rec, &AtomicBool::new(false)).unwrap();
    let metrics = rec.metrics();
    let plan = p.plan().unwrap();
    assert_eq!(plan.modes.len(), 8);
    // Per size: 3 metrics per mode, `pinned_locked` and `roundtrip_ok`; once: the two
    // directions' references and their size.
    assert_eq!(metrics.len(), 2 * (8 * 3 + 2) + 3);
    for size in [4096i64, 65536] {
        let ok = metrics
            .iter()
            .find(|m| m.name == "roundtrip_ok" && m.step == Some(size));
        assert_eq!(ok.map(|m| (m.value, m.unit.as_str())), Some((1.0, "count")), "{size}");
    }
    let keys: HashSet<(String, Option<i64>)> = metrics.iter().map(|m| (m.name.clone(), m.step)).collect();
    assert_eq!(keys.len(), metrics.len(), "no metric recorded twice");
    let single = |name: &str| {
        let m = metrics
            .iter()
            .find(|m| m.name == name && m.step.is_none())
            .unwrap_or_else(|| panic!("{name}"));
        (m.value, m.unit.clone())
    };
    // The reference is 256 MiB whatever the sizes, in the modes' own units and clock.
    assert_eq!(single("reference_bytes"), ((256u64 << 20) as f64, "B".to_owned()));
    let mut refs = Vec::new();
    for direction in ["h2d", "d2h"] {
        let (rate, unit) = single(&format!("reference_{direction}_gbps"));
        assert!(
            rate.is_finite() && rate > 0.0 && unit == "GB/s",
            "{direction}: {rate} {unit}"
        );
        refs.push(rate);
    }
    for size in [4096i64, 65536] {
        for mode in &plan.modes {
            let at = |suffix: &str| {
                let name = format!("{}_{suffix}", mode.name());
                metrics
                    .iter()
                    .find(|m| m.name == name && m.step == Some(size))
                    .unwrap_or_else(|| panic!("{name} at {size}"))
                    .clone()
            };
            let reference = refs[usize::from(mode.direction == CopyDirection::D2h)];
            let pct = at("pct_peak");
            assert_eq!(pct.unit, "%");
            assert!(
                (pct.value - 100.0 * at("gbps").value / reference).abs() <= 1e-9 * pct.value,
                "{}: {} % of {reference}",
                mode.name(),
                pct.value
            );
            for (suffix, unit) in [("seconds", "s"), ("gbps", "GB/s")] {
                let name = format!("{}_{suffix}", mode.name());
                let m = metrics
                    .iter()
                    .find(|m| m.name == name && m.step == Some(size))
                    .unwrap_or_else(|| panic!("{name} at {size}"));
                assert_eq!(m.unit, unit);
                assert!(m.value.is_finite() && m.value > 0.0, "{name} = {}", m.value);
            }
        }
        let locked = metrics
            .iter()
            .find(|m| m.name == "pinned_locked" && m.step == Some(size))
            .unwrap();
        assert!(locked.value == 0.0 || locked.value == 1.0);
    }
    // seconds and GB/s describe the same copies.
    let secs = metrics
        .iter()
        .find(|m| m.name == "h2d_pageable_reuse_seconds" && m.step == Some(65536))
        .unwrap();
    let rate = metrics
        .iter()
        .find(|m| m.name == "h2d_pageable_reuse_gbps" && m.step == Some(65536))
        .unwrap();
    assert!((rate.value - 65536.0 / secs.value / 1e9).abs() < 1e-9 * rate.value.max(1.0));
}

#[test]
fn pageable_only_runs_record_no_lock_status() {
    let p = params("sizes = [\"4KiB\"]\nhost_memory = \"pageable\"\niterations = 1\nwarmup = 0");
    let mut rec = Recorder::new();
    run_transfer(&p, &mut rec, &AtomicBool::new(false)).unwrap();
    assert!(rec.metrics().iter().all(|m| m.name != "pinned_locked"));
    // h2d's reference and its size, then 3 metrics for each of the 2 allocations, and
    // `roundtrip_ok`.
    assert_eq!(rec.metrics().len(), 2 + 2 * 3 + 1);
    assert!(rec.metrics().iter().all(|m| !m.name.starts_with("reference_d2h")));
}

#[test]
fn a_cancelled_run_stops_with_cancelled() {
    let p = params("sizes = [\"4KiB\"]");
    let err = run_transfer(&p, &mut Recorder::new(), &AtomicBool::new(true)).unwrap_err();
    assert!(matches!(err, TransferError::Cancelled), "{err}");
}

#[test]
fn samples_for_reuse_and_per_copy_at_one_mebibyte() {
    let cancel = AtomicBool::new(false);
    for allocation in [Allocation::Reuse, Allocation::PerCopy] {
        let mode = Mode {
            direction: CopyDirection::H2d,
            host_memory: HostMemory::Pageable,
            allocation,
            sync: SyncMode::Blocking,
        };
        let s = cpu_copy_samples(1 << 20, mode, 5, 1, &cancel).unwrap();
        assert_eq!(s.seconds.len(), 5);
        assert!(s.seconds.iter().all(|&t| t > 0.0 && t.is_finite()));
        assert!(s.page_locked);
    }
    let mode = Mode {
        direction: CopyDirection::D2h,
        host_memory: HostMemory::Pinned,
        allocation: Allocation::PerCopy,
        sync: SyncMode::Blocking,
    };
    assert_eq!(cpu_copy_samples(4096, mode, 2, 0, &cancel).unwrap().seconds.len(), 2);
    assert!(cpu_copy_samples(0, mode, 2, 0, &cancel).is_err());
}

#[test]
fn sync_is_an_axis_and_non_blocking_copies_carry_a_suffix() {
    let p = params(
        r#"
        host_memory = "pinned"
        allocation = "reuse"
        sync = ["blocking", "non_blocking"]
        prepare_next = true
        "#,
    );
    let plan = p.plan().unwrap();
    let names: Vec<String> = plan.modes.iter().map(Mode::name).collect();
    assert_eq!(names, ["h2d_pinned_reuse", "h2d_pinned_reuse_non_blocking"]);
    assert!(plan.prepare_next);
    assert!(params("")
        .plan()
        .unwrap()
        .modes
        .iter()
        .all(|m| m.sync == SyncMode::Blocking));
    let err = param_error("sync = [\"blocking\", \"blocking\"]");
    assert!(err.to_string().contains("lists `blocking` twice"), "{err}");
    let err = toml::from_str::<TransferParams>("sync = \"async\"").unwrap_err();
    assert!(err.to_string().contains("unknown variant `async`"), "{err}");
}

#[test]
fn non_blocking_loops_copy_and_prepare_through_the_copy_engine_thread() {
    let p = params(
        r#"
        sizes = ["64KiB"]
        sync = ["blocking", "non_blocking"]
        host_memory = "pinned"
        allocation = ["reuse", "per_copy"]
        direction = "both"
        prepare_next = true
        iterations = 3
        warmup = 0
        "#,
    );
    let mut rec = crate::metrics::Recorder::new();
    run_transfer(&p, &mut rec, &AtomicBool::new(false)).unwrap();
    let names: HashSet<&str> = rec.metrics().iter().map(|m| m.name.as_str()).collect();
    for mode in [
        "h2d_pinned_reuse",
        "h2d_pinned_reuse_non_blocking",
        "d2h_pinned_per_copy_non_blocking",
    ] {
        let secs = rec
            .metrics()
            .iter()
            .find(|m| m.name == format!("{mode}_seconds"))
            .unwrap_or_else(|| panic!("{mode}: {names:?}"));
        assert!(secs.value > 0.0 && secs.value.is_finite(), "{mode}");
        assert_eq!(secs.step, Some(65536));
    }
    // A cancelled run stops the engine thread and returns, rather than hanging.
    let err = run_transfer(&p, &mut rec, &AtomicBool::new(true)).unwrap_err();
    assert!(matches!(err, TransferError::Cancelled), "{err}");
}

#[test]
fn sizes_iterations_and_warmup_stop_at_their_documented_bounds() {
    let at = params("sizes = [\"16GiB\"]\niterations = 100000\nwarmup = 100000");
    let plan = at.plan().expect("the bounds themselves are allowed");
    assert_eq!(plan.sizes, [16u64 << 30]);
    let over_size = params("sizes = [17179869185]").plan().unwrap_err();
    assert_eq!(over_size.field, "sizes");
    assert!(
        over_size.message.contains("above the limit of 16 GiB"),
        "{}",
        over_size.message
    );
    for (field, text) in [("iterations", "iterations = 100001"), ("warmup", "warmup = 100001")] {
        let e = params(text).plan().unwrap_err();
        assert_eq!(e.field, field);
        assert!(e.message.contains("at most 100000"), "{}", e.message);
    }
}

#[test]
fn cache_sizes_read_as_sysfs_writes_them() {
    assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
    assert_eq!(parse_cache_size("2M"), Some(2 << 20));
    assert_eq!(parse_cache_size("512"), Some(512));
    assert_eq!(parse_cache_size("12X"), None);
    assert_eq!(parse_cache_size(""), None);
}

#[test]
fn a_round_trip_that_changes_bytes_is_an_error_naming_the_mode_and_the_first_difference() {
    let mode = params("sizes = [\"4KiB\"]\nhost_memory = \"pinned\"")
        .plan()
        .unwrap()
        .modes[0];
    let sent = pattern(4096).unwrap();
    check_round_trip(&mode, 4096, &sent, &sent).unwrap();
    let mut got = sent.clone();
    got[1000] ^= 0x10;
    got[3000] ^= 0x01;
    let e = check_round_trip(&mode, 4096, &sent, &got).unwrap_err().to_string();
    let name = mode.name();
    assert_eq!(
        e,
        format!(
            "the {name} copy of 4 KiB returned different bytes: 2 of them differ, the first at byte 1000 (sent \
             {:#04x}, got {:#04x})",
            sent[1000], got[1000]
        )
    );
    let short = check_round_trip(&mode, 4096, &sent, &sent[..4000])
        .unwrap_err()
        .to_string();
    assert!(short.contains("96 of them differ, the first at byte 4000"), "{short}");
}

#[test]
fn the_round_trip_pattern_does_not_repeat_at_a_power_of_two() {
    let p = pattern(1 << 20).unwrap();
    for period in [1usize << 4, 1 << 8, 1 << 12, 1 << 16] {
        assert_ne!(p[..period], p[period..2 * period], "period {period}");
    }
    let distinct: HashSet<u8> = p[..4096].iter().copied().collect();
    assert!(distinct.len() > 200, "{} distinct bytes", distinct.len());
}
