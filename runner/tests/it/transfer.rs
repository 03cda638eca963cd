//! The `transfer` stage on CPU: runs, records one series per (size, mode), and reuse is not
//! slower than per-copy allocation at >= 1 MiB, judged by the statistics module (no timed
//! assertion).

use crate::common::{bin, fixture, run, scalar, text, write};
use measured::stats::{compare, CompareSettings, Direction, Verdict};
use measured::transfer::{cpu_copy_samples, Allocation, CopyDirection, HostMemory, Mode};
use std::sync::atomic::AtomicBool;

#[test]
fn reuse_is_not_slower_than_per_copy_at_1_mib_and_above() {
    let cancel = AtomicBool::new(false);
    for size in [1u64 << 20, 64 << 20] {
        let mode = |allocation| Mode {
            direction: CopyDirection::H2d,
            host_memory: HostMemory::Pageable,
            allocation,
        };
        let per_copy = cpu_copy_samples(size, mode(Allocation::PerCopy), 15, 3, &cancel).unwrap();
        let reuse = cpu_copy_samples(size, mode(Allocation::Reuse), 15, 3, &cancel).unwrap();
        let c = compare(
            &per_copy.seconds,
            &reuse.seconds,
            Direction::LowerIsBetter,
            &CompareSettings::default(),
        );
        assert_ne!(c.verdict, Verdict::Slower, "size {size}: reuse judged slower: {c:?}");
    }
}

#[test]
fn transfer_stage_records_a_series_per_size_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "t.toml",
        r#"
[experiment]
name = "transfers"
[schedule]
warmup = 0
repetitions = 1
[stages.copy]
kind = "transfer"
sizes = ["4KiB", "1MiB", "16x1024xf32"]
direction = "both"
host_memory = ["pageable", "pinned"]
allocation = ["per_copy", "reuse"]
iterations = 3
warmup = 1
"#,
    );
    let db = dir.path().join("r.sqlite");
    let out = run(bin().arg("--database").arg(&db).args(["run", "--no-report"]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let url = db.to_str().unwrap();
    // 2 directions x 2 host memories x 2 allocations = 8 modes, 3 metrics each, 3 sizes.
    assert_eq!(
        scalar(
            url,
            "SELECT COUNT(*) FROM metrics WHERE name LIKE '%_gbps' AND name <> 'peak_gbps'"
        ),
        8 * 3
    );
    assert_eq!(
        scalar(
            url,
            "SELECT COUNT(DISTINCT step) FROM metrics WHERE name = 'h2d_pinned_reuse_gbps'"
        ),
        3
    );
    assert_eq!(
        scalar(
            url,
            "SELECT COUNT(*) FROM metrics WHERE name = 'd2h_pageable_per_copy_seconds' AND step = 65536"
        ),
        1
    );
    assert_eq!(
        scalar(
            url,
            "SELECT COUNT(*) FROM metrics WHERE name = 'peak_gbps' AND value > 0"
        ),
        3
    );
}

#[test]
fn bad_transfer_size_is_a_located_manifest_error() {
    let out = run(bin().arg("check").arg(fixture("invalid/transfer_bad_size.toml")));
    assert_eq!(out.status.code(), Some(2));
    let t = text(&out);
    assert!(t.contains("transfer_bad_size.toml:7:") && t.contains("sizes"), "{t}");
}
