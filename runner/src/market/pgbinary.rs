//! PostgreSQL binary COPY rows of `daily_bars` (synth -> COPY FROM STDIN with the version
//! first; COPY TO STDOUT -> load): `symbol, trade_date, open, high, low, close, volume, amount,
//! adj_factor`.
//!
//! The binary format skips text parsing of floats on both ends, which is most of the cost of
//! a bulk load or dump of numeric rows.

use super::stock::Bar;
use chrono::NaiveDate;

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
const FIELDS: i16 = 9;
/// Fields of a written tuple: the version, then [`FIELDS`].
const WRITTEN_FIELDS: i16 = FIELDS + 1;

/// PostgreSQL stores dates as days since 2000-01-01, day 730,120 of the common era.
const PG_EPOCH_FROM_CE: i32 = 730_120;

/// Appends the file header (signature, flags, no extension area).
pub(crate) fn write_header(buf: &mut Vec<u8>) {
    buf.extend_from_slice(SIGNATURE);
    buf.extend_from_slice(&0i32.to_be_bytes());
    buf.extend_from_slice(&0i32.to_be_bytes());
}

/// Appends one tuple of `version`, as COPY FROM reads it.
pub(crate) fn write_row(buf: &mut Vec<u8>, version: i64, code: &str, bar: &Bar) {
    write_tuple(buf, Some(version), code, bar);
}

/// One tuple: with a version first (COPY FROM into `daily_bars`), or without (the columns a
/// load's COPY TO sends).
fn write_tuple(buf: &mut Vec<u8>, version: Option<i64>, code: &str, bar: &Bar) {
    match version {
        Some(v) => {
            buf.extend_from_slice(&WRITTEN_FIELDS.to_be_bytes());
            buf.extend_from_slice(&8i32.to_be_bytes());
            buf.extend_from_slice(&v.to_be_bytes());
        }
        None => buf.extend_from_slice(&FIELDS.to_be_bytes()),
    }
    buf.extend_from_slice(&(code.len() as i32).to_be_bytes());
    buf.extend_from_slice(code.as_bytes());
    let days = chrono::Datelike::num_days_from_ce(&bar.date) - PG_EPOCH_FROM_CE;
    buf.extend_from_slice(&4i32.to_be_bytes());
    buf.extend_from_slice(&days.to_be_bytes());
    for v in [
        bar.open,
        bar.high,
        bar.low,
        bar.close,
        bar.volume,
        bar.amount,
        bar.adj_factor,
    ] {
        buf.extend_from_slice(&8i32.to_be_bytes());
        buf.extend_from_slice(&v.to_be_bytes());
    }
}

/// Appends the end-of-data marker.
pub(crate) fn write_trailer(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&(-1i16).to_be_bytes());
}

/// Incremental decoder for a COPY TO STDOUT stream whose chunks may split tuples anywhere.
#[derive(Debug, Default)]
pub(crate) struct CopyDecoder {
    pending: Vec<u8>,
    header_done: bool,
    finished: bool,
}

impl CopyDecoder {
    /// Decodes every complete tuple in `pending + chunk`, handing each to `sink` as
    /// `(symbol bytes, bar)`, and keeps the incomplete tail for the next chunk.
    pub fn feed(&mut self, chunk: &[u8], sink: &mut impl FnMut(&[u8], Bar)) -> Result<(), String> {
        if self.finished {
            return if chunk.is_empty() {
                Ok(())
            } else {
                Err("data after the end-of-data marker".into())
            };
        }
        // Most chunks hold exactly one tuple: decode straight from the chunk when nothing is
        // pending, and copy only the incomplete tail.
        let owned;
        let data: &[u8] = if self.pending.is_empty() {
            chunk
        } else {
            self.pending.extend_from_slice(chunk);
            owned = std::mem::take(&mut self.pending);
            &owned
        };
        let mut pos = 0;
        if !self.header_done {
            if data.len() < 19 {
                self.pending = data.to_vec();
                return Ok(());
            }
            if &data[..11] != SIGNATURE {
                return Err("not a binary COPY stream".into());
            }
            let ext = be_i32(&data[15..19]);
            let end = 19 + usize::try_from(ext).map_err(|_| "bad header extension length")?;
            if data.len() < end {
                self.pending = data.to_vec();
                return Ok(());
            }
            pos = end;
            self.header_done = true;
        }
        while let Some(used) = decode_tuple(&data[pos..], sink)? {
            pos += used;
            if used == 2 {
                self.finished = true;
                break;
            }
        }
        self.pending.extend_from_slice(&data[pos..]);
        Ok(())
    }

    /// Checks that the stream ended with its end-of-data marker.
    pub fn finish(&self) -> Result<(), String> {
        if self.finished && self.pending.is_empty() {
            Ok(())
        } else {
            Err("COPY stream ended early".into())
        }
    }
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Decodes one tuple at the start of `data`; `Ok(None)` when it is incomplete, `Ok(Some(2))`
/// for the end-of-data marker.
fn decode_tuple(data: &[u8], sink: &mut impl FnMut(&[u8], Bar)) -> Result<Option<usize>, String> {
    if data.len() < 2 {
        return Ok(None);
    }
    let fields = i16::from_be_bytes([data[0], data[1]]);
    if fields == -1 {
        return Ok(Some(2));
    }
    if fields != FIELDS {
        return Err(format!("expected {FIELDS} columns, got {fields}"));
    }
    let mut pos = 2;
    let mut field = |want: Option<usize>| -> Result<Option<&[u8]>, String> {
        if data.len() < pos + 4 {
            return Ok(None);
        }
        let len = be_i32(&data[pos..]);
        let len = usize::try_from(len).map_err(|_| "unexpected NULL column".to_owned())?;
        if want.is_some_and(|w| w != len) {
            return Err(format!("unexpected column width {len}"));
        }
        if data.len() < pos + 4 + len {
            return Ok(None);
        }
        let value = &data[pos + 4..pos + 4 + len];
        pos += 4 + len;
        Ok(Some(value))
    };
    let Some(symbol) = field(None)? else {
        return Ok(None);
    };
    let Some(date) = field(Some(4))? else {
        return Ok(None);
    };
    let mut values = [0f64; 7];
    for v in &mut values {
        let Some(raw) = field(Some(8))? else {
            return Ok(None);
        };
        *v = f64::from_be_bytes(raw.try_into().expect("width checked"));
    }
    let days = be_i32(date);
    let date = days
        .checked_add(PG_EPOCH_FROM_CE)
        .and_then(NaiveDate::from_num_days_from_ce_opt)
        .ok_or_else(|| format!("date out of range: {days} days from 2000-01-01"))?;
    let [open, high, low, close, volume, amount, adj_factor] = values;
    sink(
        symbol,
        Bar {
            date,
            open,
            high,
            low,
            close,
            volume,
            amount,
            adj_factor,
        },
    );
    Ok(Some(pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(day: u32, x: f64) -> Bar {
        Bar {
            date: NaiveDate::from_ymd_opt(2021, 3, day).unwrap(),
            open: x,
            high: x + 1.0,
            low: x - 1.0,
            close: x + 0.5,
            volume: 1e6,
            amount: 2.5e7,
            adj_factor: 1.25,
        }
    }

    #[test]
    fn round_trips_in_chunks_of_any_size() {
        let mut buf = Vec::new();
        write_header(&mut buf);
        write_tuple(&mut buf, None, "600519.SH", &bar(1, 10.0));
        write_tuple(&mut buf, None, "AAPL", &bar(2, 20.0));
        write_trailer(&mut buf);
        for size in [1, 3, 7, 50, buf.len()] {
            let mut got = Vec::new();
            let mut dec = CopyDecoder::default();
            for chunk in buf.chunks(size) {
                dec.feed(chunk, &mut |s, b| got.push((s.to_vec(), b))).unwrap();
            }
            dec.finish().unwrap();
            assert_eq!(got.len(), 2, "chunk size {size}");
            assert_eq!(got[0], (b"600519.SH".to_vec(), bar(1, 10.0)));
            assert_eq!(got[1], (b"AAPL".to_vec(), bar(2, 20.0)));
        }
    }

    #[test]
    fn rejects_truncated_and_foreign_streams() {
        let mut buf = Vec::new();
        write_header(&mut buf);
        write_tuple(&mut buf, None, "A", &bar(1, 1.0));
        let mut dec = CopyDecoder::default();
        dec.feed(&buf[..buf.len() - 3], &mut |_, _| {}).unwrap();
        assert!(dec.finish().is_err());
        let mut dec = CopyDecoder::default();
        assert!(dec.feed(b"id,date\n1,2020-01-01\n", &mut |_, _| {}).is_err());
    }

    #[test]
    fn dates_decode_across_the_range_and_a_date_chrono_cannot_hold_is_an_error() {
        for date in [
            "0001-01-01",
            "1999-12-31",
            "2000-01-01",
            "2000-03-01",
            "2024-02-29",
            "9999-12-31",
        ] {
            let b = Bar {
                date: date.parse().unwrap(),
                ..bar(1, 1.0)
            };
            let mut buf = Vec::new();
            write_header(&mut buf);
            write_tuple(&mut buf, None, "A", &b);
            write_trailer(&mut buf);
            let mut got = Vec::new();
            CopyDecoder::default().feed(&buf, &mut |_, b| got.push(b)).unwrap();
            assert_eq!(got, [b], "{date}");
        }
        // PostgreSQL dates reach 5874897 AD, beyond chrono's range: an error, not a panic.
        let mut buf = Vec::new();
        write_header(&mut buf);
        write_tuple(&mut buf, None, "A", &bar(1, 1.0));
        let date_at = buf.len() - 7 * 12 - 4;
        // i32::MAX and i32::MIN are how PostgreSQL sends `infinity` and `-infinity`.
        for days in [2_000_000_000, i32::MAX, i32::MIN, -100_000_000] {
            buf[date_at..date_at + 4].copy_from_slice(&days.to_be_bytes());
            let err = CopyDecoder::default().feed(&buf, &mut |_, _| {}).unwrap_err();
            assert_eq!(err, format!("date out of range: {days} days from 2000-01-01"));
        }
    }
}
