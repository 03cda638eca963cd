//! The `transfer` stage on CPU: runs, records one series per (size, mode), and `reuse` really
//! reuses its buffer: it allocates once where `per_copy` allocates on every copy. That is
//! counted (large allocations on the test's own thread), not timed: which of two timings
//! wins is a benchmark's question (bench/, docs/benchmarks.md), never a test's.

use crate::common::{bin, fixture, run, scalar, text, write};
use measured::transfer::{cpu_copy_samples, Allocation, CopyDirection, HostMemory, Mode, SyncMode};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::AtomicBool;

/// The system allocator, counting allocations of at least [`BIG`] bytes per thread.
struct CountingAlloc;

const BIG: usize = 1 << 20;

thread_local! {
    static BIG_ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to `System`; the counter is a const-initialized
// thread-local `Cell`, which neither allocates nor unwinds.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= BIG {
            let _ = BIG_ALLOCS.try_with(|c| c.set(c.get() + 1));
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn count(layout: Layout) {
    if layout.size() >= BIG {
        let _ = BIG_ALLOCS.try_with(|c| c.set(c.get() + 1));
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Large allocations made on this thread while `f` runs.
fn big_allocations<T>(f: impl FnOnce() -> T) -> (u64, T) {
    let before = BIG_ALLOCS.with(Cell::get);
    let out = f();
    (BIG_ALLOCS.with(Cell::get) - before, out)
}

#[test]
fn reuse_allocates_its_buffers_once_and_per_copy_allocates_every_copy() {
    let cancel = AtomicBool::new(false);
    let (iterations, warmup) = (15u32, 3u32);
    for size in [1u64 << 20, 64 << 20] {
        let mode = |allocation| Mode {
            direction: CopyDirection::H2d,
            host_memory: HostMemory::Pageable,
            allocation,
            sync: SyncMode::Blocking,
        };
        let (reuse_allocs, reuse) =
            big_allocations(|| cpu_copy_samples(size, mode(Allocation::Reuse), iterations, warmup, &cancel).unwrap());
        let (per_copy_allocs, per_copy) =
            big_allocations(|| cpu_copy_samples(size, mode(Allocation::PerCopy), iterations, warmup, &cancel).unwrap());
        // Sampling may stop before `iterations` once its time budget is spent (a busy
        // machine), never before it has a few samples.
        for samples in [&reuse.seconds, &per_copy.seconds] {
            assert!(
                (3..=iterations as usize).contains(&samples.len()),
                "size {size}: {} samples",
                samples.len()
            );
        }
        assert_eq!(
            reuse_allocs, 2,
            "size {size}: reuse allocates source and destination once"
        );
        // The source once, then at least one destination per copy: the sizing copy, one
        // batch per warm-up, one batch per sample (a batch holds one copy or more).
        let copies_at_least = 1 + u64::from(warmup) + per_copy.seconds.len() as u64;
        assert!(
            per_copy_allocs > copies_at_least,
            "size {size}: per_copy made {per_copy_allocs} large allocations for at least {copies_at_least} copies"
        );
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
            "SELECT COUNT(*) FROM metrics WHERE name LIKE '%_gbps' AND name NOT LIKE 'reference_%'"
        ),
        8 * 3
    );
    // And each one's share of its direction's reference.
    assert_eq!(
        scalar(
            url,
            "SELECT COUNT(*) FROM metrics WHERE name LIKE '%_pct_peak' AND unit = '%' AND value > 0"
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
            "SELECT COUNT(*) FROM metrics WHERE name IN ('reference_h2d_gbps', 'reference_d2h_gbps') \
             AND step IS NULL AND value > 0"
        ),
        2
    );
}

#[test]
fn bad_transfer_size_is_a_located_manifest_error() {
    let out = run(bin().arg("check").arg(fixture("invalid/transfer_bad_size.toml")));
    assert_eq!(out.status.code(), Some(2));
    let t = text(&out);
    assert!(t.contains("transfer_bad_size.toml:7:") && t.contains("sizes"), "{t}");
}
