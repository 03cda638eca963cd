//! What the CPU and CUDA measurements of the `transfer` stage share (checked plan -> copies
//! -> recorder): host buffers and the round-trip check, the "% of peak" references, and the
//! metrics recorded per mode and size.

use super::error::TransferError;
use crate::kinds::transfer::{Allocation, CopyDirection, HostMemory, Mode, Plan, SyncMode};
use crate::metrics::Recorder;

/// The host's share of a loop iteration with `prepare_next`: one read-modify-write pass over
/// the next batch, the memory traffic of collating it.
pub(crate) fn prepare(buf: &mut [u8]) {
    for b in buf.iter_mut() {
        *b = b.wrapping_mul(3).wrapping_add(1);
    }
    std::hint::black_box(buf);
}

/// The bytes a round trip sends: a sequence that repeats at no power-of-two period, so a copy
/// that drops, repeats or misplaces a block of bytes does not hand the same bytes back.
pub(crate) fn pattern(len: usize) -> Result<Vec<u8>, TransferError> {
    let mut bytes = host_buffer(len)?;
    bytes.extend((0..len as u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ (i >> 3)) as u8));
    Ok(bytes)
}

/// An empty buffer with room for `len` bytes, or the error for host memory this machine
/// cannot give (rather than an abort).
pub(crate) fn host_buffer(len: usize) -> Result<Vec<u8>, TransferError> {
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(|_| TransferError::HostAlloc {
        size: crate::size::format_bytes(len as u64),
    })?;
    Ok(bytes)
}

/// Checks that a round trip through `mode`'s copy at `size` handed back the bytes it sent
/// (`verify_round_trips` runs one per mode and size, outside every clock).
pub(crate) fn check_round_trip(mode: &Mode, size: u64, sent: &[u8], got: &[u8]) -> Result<(), TransferError> {
    let differs = |i: usize| sent.get(i) != got.get(i);
    let n = sent.len().max(got.len());
    let Some(first) = (0..n).find(|&i| differs(i)) else {
        return Ok(());
    };
    let differing = (first..n).filter(|&i| differs(i)).count();
    Err(TransferError::Corrupt {
        mode: mode.name(),
        size: crate::size::format_bytes(size),
        differing,
        first,
        sent: sent.get(first).copied().unwrap_or(0),
        got: got.get(first).copied().unwrap_or(0),
    })
}

/// Round-trips every mode of `plan` at every size through `round_trip(len, mode)` (which
/// returns the bytes that came back from sending [`pattern`]), outside every clock, and
/// records `roundtrip_ok` (count, per size: 1 once every mode returned its bytes). A mode that
/// returns other bytes fails the stage: its timings would be of a broken copy.
pub(crate) fn verify_round_trips(
    plan: &Plan,
    rec: &mut Recorder,
    mut round_trip: impl FnMut(usize, Mode, &[u8]) -> Result<Vec<u8>, TransferError>,
) -> Result<(), TransferError> {
    for &size in &plan.sizes {
        let sent = pattern(len_of(size)?)?;
        for mode in &plan.modes {
            let got = round_trip(sent.len(), *mode, &sent)?;
            check_round_trip(mode, size, &sent, &got)?;
        }
        rec.record_step("roundtrip_ok", step_of(size), 1.0, "count");
    }
    Ok(())
}

/// Decimal gigabytes per second for `bytes` moved in `seconds`.
pub(crate) fn gbps(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / seconds / 1e9
}

/// The "% of peak" reference copies at least this many bytes per direction: large enough to be
/// bandwidth-bound (a copy at the size being judged is latency-bound at small sizes, and its
/// share would be about 100% by construction). NVIDIA's bandwidthTest uses 32 MB copies.
pub(crate) const REFERENCE_BYTES: u64 = 256 << 20;

/// Each direction's reference rate (GB/s): the mode that should be fastest, pinned host memory,
/// a reused buffer, blocking copies, at [`reference_size`], timed on the modes' own clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct References {
    pub h2d: Option<f64>,
    pub d2h: Option<f64>,
}

impl References {
    fn of(&self, direction: CopyDirection) -> Option<f64> {
        match direction {
            CopyDirection::H2d => self.h2d,
            CopyDirection::D2h => self.d2h,
        }
    }

    /// Measures the reference of every direction `plan` copies in with `measure(size, mode)`
    /// (seconds per copy) and records `reference_bytes` and `reference_<direction>_gbps`.
    pub fn measure(
        plan: &Plan,
        rec: &mut Recorder,
        mut measure: impl FnMut(u64, Mode) -> Result<f64, TransferError>,
    ) -> Result<Self, TransferError> {
        let size = reference_size(plan);
        let mut refs = References::default();
        for direction in [CopyDirection::H2d, CopyDirection::D2h] {
            if !plan.modes.iter().any(|m| m.direction == direction) {
                continue;
            }
            let mode = Mode {
                direction,
                host_memory: HostMemory::Pinned,
                allocation: Allocation::Reuse,
                sync: SyncMode::Blocking,
            };
            let rate = gbps(size, measure(size, mode)?);
            rec.record(format!("reference_{}_gbps", direction.as_str()), rate, "GB/s");
            match direction {
                CopyDirection::H2d => refs.h2d = Some(rate),
                CopyDirection::D2h => refs.d2h = Some(rate),
            }
        }
        rec.record("reference_bytes", size as f64, "B");
        Ok(refs)
    }
}

/// [`REFERENCE_BYTES`], or the largest planned size when that is larger.
pub(crate) fn reference_size(plan: &Plan) -> u64 {
    plan.sizes.iter().copied().max().unwrap_or(0).max(REFERENCE_BYTES)
}

/// Records `<mode>_seconds`, `<mode>_gbps` and, against its direction's reference,
/// `<mode>_pct_peak` (%) for one size.
pub(crate) fn record_mode(rec: &mut Recorder, mode: &Mode, size: u64, seconds: f64, refs: &References) {
    let name = mode.name();
    let step = step_of(size);
    let bandwidth = gbps(size, seconds);
    rec.record_step(format!("{name}_seconds"), step, seconds, "s");
    rec.record_step(format!("{name}_gbps"), step, bandwidth, "GB/s");
    if let Some(reference) = refs.of(mode.direction).filter(|r| *r > 0.0) {
        rec.record_step(format!("{name}_pct_peak"), step, 100.0 * bandwidth / reference, "%");
    }
}

/// The note for sizes whose host buffers stay in the CPU's last-level cache between copies
/// (nothing flushes them): their figures are cache bandwidth, not memory bandwidth.
pub(crate) fn cache_warm_note(plan: &Plan, rec: &mut Recorder) {
    let Some(llc) = last_level_cache_bytes() else {
        return;
    };
    let warm: Vec<String> = plan
        .sizes
        .iter()
        .filter(|&&s| s <= llc)
        .map(|&s| crate::size::format_bytes(s))
        .collect();
    if !warm.is_empty() {
        rec.note(format!(
            "cache-warm: {} fit{} in the CPU's {} last-level cache, so {} host buffers stay cached \
             between copies and {} figures are cache, not memory, bandwidth (shares of the \
             {} reference can pass 100%)",
            warm.join(", "),
            if warm.len() == 1 { "s" } else { "" },
            crate::size::format_bytes(llc),
            if warm.len() == 1 { "its" } else { "their" },
            if warm.len() == 1 { "its" } else { "their" },
            crate::size::format_bytes(reference_size(plan)),
        ));
    }
}

/// The largest CPU cache (Linux sysfs), e.g. 32 MiB for `32768K`.
fn last_level_cache_bytes() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path().join("size")).ok())
        .filter_map(|s| parse_cache_size(s.trim()))
        .max()
}

pub(super) fn parse_cache_size(text: &str) -> Option<u64> {
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// Series step for a size; sizes above `i64::MAX` bytes cannot be allocated anyway.
pub(crate) fn step_of(size: u64) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

/// A size as a `usize` length, or the error for a size this address space cannot hold.
pub(crate) fn len_of(size: u64) -> Result<usize, TransferError> {
    usize::try_from(size).map_err(|_| TransferError::TooLarge {
        size: crate::size::format_bytes(size),
    })
}
