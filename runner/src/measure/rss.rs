//! Peak resident memory of this process, per stage.
//!
//! Built-in stages run in this process, so the kernel's high-water mark (`VmHWM`) would carry
//! the largest trial's peak into every later one. Linux lets a process reset it: writing `5` to
//! `/proc/self/clear_refs` sets `VmHWM` to the current resident size (`VmRSS`); it needs a
//! kernel built with `CONFIG_PROC_PAGE_MONITOR` and write access to the file, which some
//! sandboxes deny. Memory a trial freed is still resident when the allocator keeps it for
//! reuse (glibc keeps freed heap pages), and a reset cannot go below what is resident, so freed
//! memory is first handed back to the kernel (`malloc_trim`). What a stage's peak then holds
//! is its own allocations plus what the process keeps between trials (code, runtime,
//! connections), not any earlier trial's data.

/// How far back a peak-RSS reading reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeakScope {
    /// Since the reset before this stage: the stage's own peak (over what the process holds).
    Stage,
    /// The kernel refused the reset: the process's peak since it started.
    Process,
}

/// The note a stage records when its peak RSS is the process's peak; the report labels the
/// figure by it.
pub const PROCESS_PEAK_NOTE: &str =
    "peak RSS is this process's peak since it started: the kernel did not allow resetting it per stage";

/// Hands freed heap memory back to the kernel, then resets the peak-RSS high-water mark to
/// the resident size; says what the next [`peak_rss_bytes`] reading will cover.
pub fn reset_peak_rss() -> PeakScope {
    release_free_heap();
    if std::fs::write("/proc/self/clear_refs", b"5").is_ok() {
        PeakScope::Stage
    } else {
        PeakScope::Process
    }
}

/// Returns free heap pages to the kernel where the allocator keeps them (glibc).
fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's own arenas; it takes no
    // pointers and leaves every live allocation where it is.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Peak RSS since the last reset (or process start), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|k| k * 1024)
}

/// Current RSS, in bytes.
pub fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|k| k * 1024)
}

fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Touches every page of a `mib` MiB buffer, as a trial's working set would.
    fn touch(mib: usize) -> Vec<u8> {
        let mut v = vec![0u8; mib << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        v
    }

    #[test]
    fn a_small_trial_after_a_large_one_reports_its_own_peak() {
        if reset_peak_rss() == PeakScope::Process {
            // No clear_refs here (not Linux, or denied): the report labels the process peak.
            assert!(peak_rss_bytes().is_none() || std::fs::write("/proc/self/clear_refs", b"5").is_err());
            return;
        }
        // Trial 1: a 256 MiB working set.
        let big = touch(256);
        let big_peak = peak_rss_bytes().unwrap();
        drop(big);
        // Trial 2: 4 MiB, measured after the per-trial reset.
        assert_eq!(reset_peak_rss(), PeakScope::Stage);
        let start = rss_bytes().unwrap();
        let small = touch(4);
        let small_peak = peak_rss_bytes().unwrap();
        drop(small);
        // Other tests run threads of this process at the same time, so allow them slack; a
        // carried-over high-water mark would be at least 256 MiB above where trial 2 started.
        assert!(
            big_peak >= start + (250 << 20),
            "trial 1 peak {big_peak}, trial 2 start {start}"
        );
        assert!(
            small_peak < big_peak - (128 << 20),
            "trial 2 peak {small_peak} carries trial 1's peak {big_peak}"
        );
        assert!(
            small_peak >= start,
            "a peak is never below the resident size at the reset"
        );
    }
}
