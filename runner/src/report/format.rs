//! Number formatting for reports (typed report model -> the Markdown view's strings, and the
//! figures in the sentences `assemble` writes into the model, such as stability warnings).
//!
//! Templates never format numbers: every figure a reader of `report.md` sees is produced here,
//! so the Markdown and its snapshots agree digit for digit; `report.json` keeps the raw values.

/// `v` with `sig` significant digits, without exponent notation for everyday magnitudes.
pub(crate) fn sig(v: f64, sig: usize) -> String {
    if !v.is_finite() {
        return "—".to_owned();
    }
    if v == 0.0 {
        return "0".to_owned();
    }
    let magnitude = v.abs().log10().floor() as i32;
    if !(-4..=9).contains(&magnitude) {
        return format!("{:.*e}", sig.saturating_sub(1), v);
    }
    let decimals = (sig as i32 - 1 - magnitude).max(0) as usize;
    format!("{v:.decimals$}")
}

/// A measured value with its unit, scaled to a readable prefix for seconds and bytes.
pub(crate) fn value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "—".to_owned();
    }
    match unit {
        "s" => seconds(v),
        "B" => bytes(v),
        // Dimensionless quantities: the metric name already says what they are.
        "" | "count" | "loss" | "score" | "ratio" => sig(v, 4),
        _ => format!("{} {unit}", sig(v, 4)),
    }
}

pub(crate) fn seconds(v: f64) -> String {
    let a = v.abs();
    if a >= 1.0 || a == 0.0 {
        format!("{} s", sig(v, 4))
    } else if a >= 1e-3 {
        format!("{} ms", sig(v * 1e3, 4))
    } else if a >= 1e-6 {
        format!("{} µs", sig(v * 1e6, 4))
    } else {
        format!("{} ns", sig(v * 1e9, 4))
    }
}

const BINARY_UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];

/// `v` bytes in the largest binary unit it reaches (up to TiB): the scaled value and the unit.
fn binary_scaled(v: f64) -> (f64, &'static str) {
    let mut x = v;
    let mut i = 0;
    while x.abs() >= 1024.0 && i + 1 < BINARY_UNITS.len() {
        x /= 1024.0;
        i += 1;
    }
    (x, BINARY_UNITS[i])
}

pub(crate) fn bytes(v: f64) -> String {
    match binary_scaled(v) {
        (_, "B") => format!("{v:.0} B"),
        (x, unit) => format!("{} {unit}", sig(x, 3)),
    }
}

/// A size in bytes for axis ticks and row labels: `4 KiB`, `256 MiB`, `6.15 MiB`. Unlike
/// [`bytes`], whole multiples carry no decimals, because copy sizes are usually powers of two.
pub(crate) fn size(v: f64) -> String {
    let (x, unit) = binary_scaled(v);
    if x.fract() == 0.0 {
        format!("{x:.0} {unit}")
    } else {
        format!("{} {unit}", sig(x, 3))
    }
}

/// `10000` -> `10,000`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A plain number without trailing zeros: `2`, `0.5`.
pub(crate) fn trimmed(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Whole seconds as `6m 30s` / `1h 02m` / `45s`.
pub(crate) fn duration(secs: i64) -> String {
    let s = secs.max(0);
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec:02}s"),
        (h, m, _) => format!("{h}h {m:02}m"),
    }
}

/// A speedup factor: `1.31x`.
pub(crate) fn factor(v: f64) -> String {
    if !v.is_finite() {
        return "—".to_owned();
    }
    // The decimals follow the magnitude the value rounds to: 9.9996 reads 10.0x, not 10.00x.
    if v >= 99.95 {
        format!("{v:.0}x")
    } else if v >= 9.995 {
        format!("{v:.1}x")
    } else {
        format!("{v:.2}x")
    }
}

/// An interval of factors: `1.25x–1.38x`; `∞` for an open upper end.
pub(crate) fn factor_interval(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => {
            let hi = if hi.is_infinite() { "∞".to_owned() } else { factor(hi) };
            format!("{}–{hi}", factor(lo))
        }
        None => "—".to_owned(),
    }
}

/// An interval of measured values: `12.1 ms–12.9 ms`.
pub(crate) fn value_interval(ci: Option<(f64, f64)>, unit: &str) -> String {
    match ci {
        Some((lo, hi)) => format!("{}–{}", value(lo, unit), value(hi, unit)),
        None => "—".to_owned(),
    }
}

/// A p-value: two significant digits, floored at `<0.0001` because smaller values only reflect
/// the approximation's tail.
pub(crate) fn p_value(p: f64) -> String {
    if !p.is_finite() {
        "—".to_owned()
    } else if p < 1e-4 {
        "<0.0001".to_owned()
    } else if p >= 0.1 {
        format!("{p:.2}")
    } else {
        sig(p, 2)
    }
}

/// `p=0.0002` or `p<0.0001`, for sentences.
pub(crate) fn p_clause(p: f64) -> String {
    let s = p_value(p);
    if s.starts_with('<') {
        format!("p{s}")
    } else {
        format!("p={s}")
    }
}

/// A signed percentage: `+1.2%`.
pub(crate) fn percent(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "—".to_owned();
    }
    let pct = fraction * 100.0;
    let body = if pct.abs() >= 10.0 {
        format!("{pct:+.1}")
    } else {
        format!("{pct:+.2}")
    };
    format!("{body}%")
}

/// A level change (a ratio of levels) as a signed percentage: `+31.2%`, `-4.0%`.
pub(crate) fn level_change(ratio: f64) -> String {
    percent(ratio - 1.0)
}

/// An unsigned percentage with one decimal: `12.6%`.
pub(crate) fn percent_abs(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "—".to_owned();
    }
    format!("{:.1}%", fraction * 100.0)
}

/// Makes arbitrary text safe inside a Markdown table cell.
pub(crate) fn cell(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let escaped = one_line.replace('|', "\\|");
    if escaped.chars().count() > 200 {
        let cut: String = escaped.chars().take(199).collect();
        format!("{cut}…")
    } else {
        escaped
    }
}

/// `n thing` or `n things`.
/// `1 trial`, `3 trials`: a count with its noun.
pub(crate) fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_values_with_units() {
        assert_eq!(value(1.23456, "s"), "1.235 s");
        assert_eq!(value(0.012345, "s"), "12.35 ms");
        assert_eq!(value(0.0000456, "s"), "45.60 µs");
        assert_eq!(value(3.5 * 1024.0 * 1024.0, "B"), "3.50 MiB");
        assert_eq!(value(512.0, "B"), "512 B");
        assert_eq!(value(1234.6, "samples/s"), "1235 samples/s");
        assert_eq!(value(f64::NAN, "s"), "—");
    }

    #[test]
    fn formats_factors_p_values_and_percentages() {
        assert_eq!(factor(1.3149), "1.31x");
        assert_eq!(factor(23.46), "23.5x");
        assert_eq!(factor_interval(Some((1.25, f64::INFINITY))), "1.25x–∞");
        assert_eq!(p_value(0.000_21), "0.00021");
        assert_eq!(p_value(0.000_01), "<0.0001");
        assert_eq!(p_value(0.345), "0.34");
        assert_eq!(p_clause(0.0002), "p=0.00020");
        assert_eq!(percent(0.0123), "+1.23%");
        assert_eq!(percent(-0.25), "-25.0%");
        assert_eq!(cell("a | b\nc"), "a \\| b c");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(trimmed(2.0), "2");
        assert_eq!(duration(390), "6m 30s");
        assert_eq!(duration(3720), "1h 02m");
        assert_eq!(value(0.43219, "loss"), "0.4322");
        assert_eq!(size(4096.0), "4 KiB");
        assert_eq!(size(268_435_456.0), "256 MiB");
        assert_eq!(size(6_451_200.0), "6.15 MiB");
        assert_eq!(size(1000.0), "1000 B");
        assert_eq!(bytes(1000.0), "1000 B");
        assert_eq!(bytes(1536.0), "1.50 KiB");
        assert_eq!(bytes(210_763_776.0), "201 MiB");
    }
}
