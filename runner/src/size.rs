//! Sizes in bytes as manifests write them: the `transfer` stage's copy sizes (manifest `sizes` ->
//! bytes -> one series step per size), a training's `max_memory`, and the size steps a report
//! reads back from series labels.
//!
//! Accepted forms: a plain byte count (`4096`, also as a TOML integer), a count with a unit
//! (`4KiB`, `64 MiB`, `1GB`: binary units are powers of 1024, decimal ones powers of 1000), or a
//! tensor shape with an element type (`256x60x105xf32`), so a manifest can name the exact tensor
//! a training step moves.

use serde::{Deserialize, Serialize};

/// Hint attached to every size error: the accepted forms.
pub(crate) const SIZE_HINT: &str = "write a byte count with a unit (`4096`, `4KiB`, `64MiB`, `1GB`) \
     or a tensor shape ending in an element type (`256x60x105xf32`; types: f16, bf16, f32, f64, \
     u8, i8, u16, i16, u32, i32, u64, i64, bool)";

/// One `sizes` entry as written in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum SizeSpec {
    /// A byte count.
    Bytes(#[schemars(range(min = 1))] u64),
    /// A byte count with a unit (`4KiB`, `64 MiB`, `1GB`; binary units are powers of 1024) or a
    /// tensor shape ending in an element type (`256x60x105xf32`).
    Text(#[schemars(pattern(SIZE_PATTERN))] String),
}

/// What `parse_size` accepts, for editors: `<digits>[ ][unit]` or `<d1>x<d2>...x<dtype>` (units
/// and element types in any case; the exact lists are checked by `check`).
const SIZE_PATTERN: &str =
    r"^\s*[0-9]+\s*(([KkMmGgTt][Ii]?)?[Bb])?\s*$|^\s*[0-9]+(\s*[xX]\s*[0-9]+)*\s*[xX]\s*[A-Za-z][A-Za-z0-9]*\s*$";

impl SizeSpec {
    /// The size in bytes, or a message saying what is wrong.
    pub fn bytes(&self) -> Result<u64, String> {
        match self {
            SizeSpec::Bytes(0) => Err("a copy of 0 bytes measures nothing".to_owned()),
            SizeSpec::Bytes(n) => Ok(*n),
            SizeSpec::Text(s) => parse_size(s),
        }
    }
}

impl std::fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SizeSpec::Bytes(n) => write!(f, "{n}"),
            SizeSpec::Text(s) => write!(f, "{s}"),
        }
    }
}

/// Parses `4KiB`, `64 MiB`, `1GB`, `4096` or `256x60x105xf32` into a byte count (> 0).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let text = s.trim();
    if text.is_empty() {
        return Err("empty size".to_owned());
    }
    let size = if text.contains(['x', 'X']) && !text.starts_with(|c: char| c.is_alphabetic()) {
        parse_shape(text)?
    } else {
        parse_amount(text)?
    };
    if size == 0 {
        return Err(format!("`{s}` is 0 bytes; a copy of 0 bytes measures nothing"));
    }
    Ok(size)
}

/// `<digits>[ ]<unit>`, unit optional (bytes).
fn parse_amount(text: &str) -> Result<u64, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() {
        return Err(format!("`{text}` does not start with a number"));
    }
    let unit = unit.trim_start();
    let scale = unit_scale(unit).ok_or_else(|| {
        if unit.starts_with('.') {
            format!("`{text}`: fractional sizes are not accepted; use a smaller unit")
        } else {
            format!("`{text}`: unknown unit `{unit}`")
        }
    })?;
    let count: u64 = digits.parse().map_err(|_| format!("`{text}`: number too large"))?;
    count
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` does not fit in 64 bits"))
}

fn unit_scale(unit: &str) -> Option<u64> {
    const KI: u64 = 1 << 10;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => KI,
        "mib" => KI.pow(2),
        "gib" => KI.pow(3),
        "tib" => KI.pow(4),
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return None,
    };
    Some(scale)
}

/// `d1xd2x...xdtype`: every dimension a positive integer, the last part an element type.
fn parse_shape(text: &str) -> Result<u64, String> {
    let parts: Vec<&str> = text.split(['x', 'X']).map(str::trim).collect();
    let (dtype, dims) = parts.split_last().expect("split yields at least one part");
    let elem = dtype_bytes(dtype).ok_or_else(|| {
        if dtype.is_empty() || dtype.chars().all(|c| c.is_ascii_digit()) {
            format!("`{text}`: a shape must end in an element type, e.g. `{text}xf32`")
        } else {
            format!("`{text}`: unknown element type `{dtype}`")
        }
    })?;
    if dims.is_empty() {
        return Err(format!("`{text}`: a shape needs at least one dimension"));
    }
    let mut total = elem;
    for dim in dims {
        if dim.is_empty() {
            return Err(format!("`{text}`: empty dimension"));
        }
        let n: u64 = dim
            .parse()
            .map_err(|_| format!("`{text}`: dimension `{dim}` is not a whole number"))?;
        if n == 0 {
            return Err(format!("`{text}`: a dimension of 0 gives 0 bytes"));
        }
        total = total
            .checked_mul(n)
            .ok_or_else(|| format!("`{text}` does not fit in 64 bits"))?;
    }
    Ok(total)
}

fn dtype_bytes(dtype: &str) -> Option<u64> {
    let bytes = match dtype.to_ascii_lowercase().as_str() {
        "u8" | "i8" | "bool" => 1,
        "f16" | "bf16" | "u16" | "i16" => 2,
        "f32" | "u32" | "i32" => 4,
        "f64" | "u64" | "i64" => 8,
        _ => return None,
    };
    Some(bytes)
}

/// Human-readable size for messages: `4 KiB`, `1.5 MiB`, `600 B`.
pub(crate) fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_sizes() {
        let table: &[(&str, u64)] = &[
            ("4096", 4096),
            ("1B", 1),
            ("4KiB", 4096),
            ("4kib", 4096),
            ("64 MiB", 64 << 20),
            ("1MiB", 1 << 20),
            ("2GiB", 2 << 30),
            ("1TiB", 1 << 40),
            ("1kB", 1000),
            ("3MB", 3_000_000),
            ("1GB", 1_000_000_000),
            ("256x60x105xf32", 256 * 60 * 105 * 4),
            ("1024xbf16", 2048),
            ("2x3xf16", 12),
            ("8xf64", 64),
            ("7xu8", 7),
            ("4x4xi32", 64),
            (" 16 x 2 x i64 ", 256),
            ("3X3XBOOL", 9),
        ];
        for (text, want) in table {
            assert_eq!(parse_size(text), Ok(*want), "{text}");
        }
    }

    #[test]
    fn rejected_sizes() {
        let table: &[(&str, &str)] = &[
            ("12 parsecs", "unknown unit `parsecs`"),
            ("0B", "0 bytes"),
            ("0", "0 bytes"),
            ("x60", "does not start with a number"),
            ("256x0xf32", "dimension of 0"),
            ("256x60", "must end in an element type"),
            ("256x60x", "must end in an element type"),
            ("256xx4xf32", "empty dimension"),
            ("256x60xf99", "unknown element type `f99`"),
            ("1.5MiB", "fractional"),
            ("", "empty size"),
            ("MiB", "does not start with a number"),
            ("99999999999999999999", "too large"),
            ("20000000TiB", "64 bits"),
            ("-4KiB", "does not start with a number"),
            ("f32", "does not start with a number"),
        ];
        for (text, want) in table {
            let err = parse_size(text).expect_err(text);
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn integer_spec_and_display() {
        assert_eq!(SizeSpec::Bytes(512).bytes(), Ok(512));
        assert!(SizeSpec::Bytes(0).bytes().is_err());
        assert_eq!(SizeSpec::Text("4KiB".into()).to_string(), "4KiB");
        assert_eq!(format_bytes(4096), "4 KiB");
        assert_eq!(format_bytes(1536 << 10), "1.5 MiB");
        assert_eq!(format_bytes(600), "600 B");
    }
}
