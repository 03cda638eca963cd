//! Peak resident memory of this process, per stage.
//!
//! Linux lets a process reset its high-water mark (`echo 5 > /proc/self/clear_refs`), so the
//! peak read after a stage is that stage's own peak, not the process's lifetime peak.

/// Resets the peak-RSS high-water mark; returns false where the kernel does not allow it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", b"5").is_ok()
}

/// Peak RSS since the last reset (or process start), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_follows_a_large_allocation_and_resets() {
        if !reset_peak_rss() {
            return; // not Linux with clear_refs; nothing to check
        }
        let before = peak_rss_bytes().unwrap();
        let mut v = vec![0u8; 64 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        let during = peak_rss_bytes().unwrap();
        assert!(during >= before + (60 << 20), "{before} -> {during}");
        drop(v);
        assert!(reset_peak_rss());
        assert!(peak_rss_bytes().unwrap() < during);
    }
}
