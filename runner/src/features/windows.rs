//! Window layout, assembly and content hash (normalize statistics -> windows -> `Windows`).
//!
//! Each symbol contributes one contiguous block of rows per split; a window is a start row in
//! that block. Blocks are placed at offsets computed up front, so symbols can be written in
//! parallel into disjoint slices and the result does not depend on which thread wrote what.

use super::compute::SymbolFeatures;
use super::normalize::{write_rows, Stats};
use crate::artifact::{SymbolBars, WindowSet, Windows};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::ops::Range;

/// The rows one symbol stores for a split and the rows its windows end on (their prediction
/// days); `rows.start` is the first input row of the first window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) rows: Range<usize>,
    pub(crate) ends: Range<usize>,
}

/// Where a symbol's windows may end, given its row count `n`, first complete feature row
/// `warm` and first validation row `v0`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub(crate) seq_len: usize,
    pub(crate) horizon: usize,
    pub(crate) gap: usize,
}

impl Layout {
    /// Training windows end on `t` with `t + horizon < v0`: the target, too, lies before the
    /// split.
    pub(crate) fn train(&self, warm: usize, v0: usize) -> Option<Span> {
        let first = warm + self.seq_len - 1;
        let last = v0.checked_sub(self.horizon + 1)?;
        (first <= last).then(|| Span {
            rows: warm..last + 1,
            ends: first..last + 1,
        })
    }

    /// Validation windows end `gap` or more rows into the validation period and need their
    /// target inside the data.
    pub(crate) fn valid(&self, n: usize, warm: usize, v0: usize) -> Option<Span> {
        let first = (v0 + self.gap).max(warm + self.seq_len - 1);
        let last = n.checked_sub(self.horizon + 1)?;
        (first <= last).then(|| Span {
            rows: first + 1 - self.seq_len..last + 1,
            ends: first..last + 1,
        })
    }
}

/// One symbol's contribution to a split.
pub(crate) struct Piece<'a> {
    pub(crate) symbol: usize,
    pub(crate) span: Span,
    pub(crate) features: &'a SymbolFeatures,
    pub(crate) bars: &'a SymbolBars,
    pub(crate) stats: &'a Stats,
}

/// The disjoint output slices one piece fills.
struct Slot<'a> {
    features: &'a mut [f32],
    starts: &'a mut [u32],
    targets: &'a mut [f32],
    symbol_idx: &'a mut [u32],
    dates: &'a mut [chrono::NaiveDate],
    last_return: &'a mut [f32],
}

/// A zeroed buffer of `len` f32. Large zeroed allocations come straight from the kernel as
/// untouched pages; asking for transparent huge pages before anything writes them turns
/// ~25,000 page faults per 100 MB into ~50, and those faults were a large part of the
/// assembly time (they also serialize between threads writing their own slices).
fn zeroed_f32(len: usize) -> Vec<f32> {
    let v = vec![0.0f32; len];
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let end = start + std::mem::size_of_val(v.as_slice());
        let (lo, hi) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if hi > lo {
            // SAFETY: [lo, hi) lies inside `v`'s allocation, which this function owns;
            // MADV_HUGEPAGE is only a hint about how to back the pages and never changes
            // their contents, so a failure (e.g. THP disabled) is harmless and ignored.
            unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
        }
    }
    v
}

/// Builds one split from its pieces, in piece order.
pub(crate) fn assemble(
    pieces: &[Piece<'_>],
    n_features: usize,
    seq_len: usize,
    horizon: usize,
    clip: Option<f64>,
    parallel: bool,
) -> WindowSet {
    let total_rows: usize = pieces.iter().map(|p| p.span.rows.len()).sum();
    let total_windows: usize = pieces.iter().map(|p| p.span.ends.len()).sum();
    let mut set = WindowSet {
        features: zeroed_f32(total_rows * n_features),
        starts: vec![0; total_windows],
        targets: vec![0.0; total_windows],
        symbol_idx: vec![0; total_windows],
        dates: vec![chrono::NaiveDate::MIN; total_windows],
        last_return: vec![0.0; total_windows],
    };
    let mut slots = Vec::with_capacity(pieces.len());
    let mut row_offsets = Vec::with_capacity(pieces.len());
    {
        let (mut f, mut s, mut t, mut i, mut d, mut r) = (
            set.features.as_mut_slice(),
            set.starts.as_mut_slice(),
            set.targets.as_mut_slice(),
            set.symbol_idx.as_mut_slice(),
            set.dates.as_mut_slice(),
            set.last_return.as_mut_slice(),
        );
        let mut row = 0usize;
        for p in pieces {
            let (rows, wins) = (p.span.rows.len(), p.span.ends.len());
            let (f0, f1) = std::mem::take(&mut f).split_at_mut(rows * n_features);
            let (s0, s1) = std::mem::take(&mut s).split_at_mut(wins);
            let (t0, t1) = std::mem::take(&mut t).split_at_mut(wins);
            let (i0, i1) = std::mem::take(&mut i).split_at_mut(wins);
            let (d0, d1) = std::mem::take(&mut d).split_at_mut(wins);
            let (r0, r1) = std::mem::take(&mut r).split_at_mut(wins);
            slots.push(Slot {
                features: f0,
                starts: s0,
                targets: t0,
                symbol_idx: i0,
                dates: d0,
                last_return: r0,
            });
            row_offsets.push(row);
            row += rows;
            (f, s, t, i, d, r) = (f1, s1, t1, i1, d1, r1);
        }
    }
    let fill = |(p, (slot, row_offset)): (&Piece<'_>, (Slot<'_>, usize))| {
        write_rows(p.features, p.stats, p.span.rows.clone(), clip, slot.features);
        let lc = p.features.log_close();
        for (k, t) in p.span.ends.clone().enumerate() {
            let first_row = t + 1 - seq_len - p.span.rows.start;
            slot.starts[k] = u32::try_from(row_offset + first_row).expect("row index fits u32");
            slot.targets[k] = (lc[t + horizon] - lc[t]) as f32;
            slot.symbol_idx[k] = p.symbol as u32;
            slot.dates[k] = p.bars.dates[t];
            slot.last_return[k] = if t > 0 { (lc[t] - lc[t - 1]) as f32 } else { 0.0 };
        }
    };
    let work = slots.into_iter().zip(row_offsets);
    if parallel {
        let work: Vec<_> = work.collect();
        pieces.par_iter().zip(work).for_each(fill);
    } else {
        pieces.iter().zip(work).for_each(fill);
    }
    set
}

/// Feeds f32/u32 data to the hasher in little-endian chunks (the same bytes on any machine).
fn hash_words<T: Copy>(hasher: &mut Sha256, values: &[T], to_bytes: impl Fn(T) -> [u8; 4]) {
    let mut buf = [0u8; 4096];
    for chunk in values.chunks(buf.len() / 4) {
        for (dst, &v) in buf.chunks_exact_mut(4).zip(chunk) {
            dst.copy_from_slice(&to_bytes(v));
        }
        hasher.update(&buf[..chunk.len() * 4]);
    }
}

/// Feature values per independently hashed chunk (4 MiB): fixed, so the digest does not
/// depend on how many threads hashed the chunks.
const HASH_CHUNK: usize = 1 << 20;

/// Digest of one split: lengths, then the digest of every feature chunk, then window starts,
/// targets, symbols, dates and last returns. Chunk digests are computed in parallel when asked.
fn set_digest(set: &WindowSet, parallel: bool) -> [u8; 32] {
    let chunk_digest = |chunk: &[f32]| -> [u8; 32] {
        let mut h = Sha256::new();
        hash_words(&mut h, chunk, f32::to_le_bytes);
        h.finalize().into()
    };
    let chunks: Vec<[u8; 32]> = if parallel {
        set.features.par_chunks(HASH_CHUNK).map(chunk_digest).collect()
    } else {
        set.features.chunks(HASH_CHUNK).map(chunk_digest).collect()
    };
    let mut hasher = Sha256::new();
    for (name, len) in [
        ("features", set.features.len()),
        ("windows", set.starts.len()),
        ("targets", set.targets.len()),
    ] {
        hasher.update(name.as_bytes());
        hasher.update((len as u64).to_le_bytes());
    }
    for digest in &chunks {
        hasher.update(digest);
    }
    hash_words(&mut hasher, &set.starts, u32::to_le_bytes);
    hash_words(&mut hasher, &set.targets, f32::to_le_bytes);
    hash_words(&mut hasher, &set.symbol_idx, u32::to_le_bytes);
    let days: Vec<i32> = set.dates.iter().map(chrono::Datelike::num_days_from_ce).collect();
    hash_words(&mut hasher, &days, i32::to_le_bytes);
    hash_words(&mut hasher, &set.last_return, f32::to_le_bytes);
    hasher.finalize().into()
}

/// SHA-256 (hex) of one split: rows, window starts, targets, symbols, dates and last returns.
pub fn window_set_hash(set: &WindowSet) -> String {
    hex(&set_digest(set, false))
}

/// SHA-256 (hex) of everything in `windows` except the hash itself: the shape, names and both
/// splits. Equal hashes mean two variants trained and validated on the same bytes.
pub fn windows_hash(windows: &Windows) -> String {
    windows_hash_with(windows, false)
}

/// `windows_hash`, with the splits' feature chunks hashed on the current rayon pool when
/// `parallel`; the result is the same either way.
pub(crate) fn windows_hash_with(windows: &Windows, parallel: bool) -> String {
    let mut hasher = Sha256::new();
    for n in [windows.seq_len, windows.n_features, windows.horizons] {
        hasher.update((n as u64).to_le_bytes());
    }
    for name in windows.feature_names.iter().chain(&windows.symbols) {
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
    }
    hasher.update(set_digest(&windows.train, parallel));
    hasher.update(set_digest(&windows.valid, parallel));
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
