//! Feature names and presets (manifest `features`/`preset` -> `NormalizeParams::check` -> compute).
//!
//! A feature name is either fixed (`gap`, `macd`) or a family with its window in the name
//! (`ret_5`, `vol_20`), so a manifest can ask for `vol_120` without a code change.

use crate::params::ParamError;

/// One feature column, with its look-back window where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// Log return over `k` days: `ln(c[t] / c[t-k])`.
    Ret(usize),
    /// `(high - low) / close`.
    HlRange,
    /// `(close - low) / (high - low)`, 0.5 on a day with no range.
    ClosePos,
    /// Overnight gap: `ln(open[t] / close[t-1])`.
    Gap,
    /// Sample standard deviation of `ret_1` over `w` days.
    Vol(usize),
    /// `close / SMA_w(close) - 1`.
    SmaRatio(usize),
    /// Wilder's RSI over `w` days, in 0..=100.
    Rsi(usize),
    /// `(EMA12 - EMA26) / close`.
    Macd,
    /// `EMA9(EMA12 - EMA26) / close`.
    MacdSignal,
    /// Bollinger %b over `w` days with bands at 2 population standard deviations.
    BbPctb(usize),
    /// `(volume - mean_w) / sd_w` of split-adjusted volume.
    VolZ(usize),
    /// `ln(volume[t] / volume[t-1])`, 0 when either day has no volume.
    DlogVolume,
    /// Bias-corrected sample skewness of `ret_1` over `w` days.
    Skew(usize),
}

/// MACD's fixed spans (the classic 12/26/9).
pub(crate) const MACD_FAST: usize = 12;
pub(crate) const MACD_SLOW: usize = 26;
pub(crate) const MACD_SIGNAL: usize = 9;

/// Longest window a family accepts: longer ones would leave almost no rows after warm-up.
const MAX_WINDOW: usize = 1000;

/// Family prefixes (longest first so `sma_ratio_` is tried before shorter ones) and the
/// smallest window that makes the statistic defined.
const FAMILIES: &[(&str, usize)] = &[
    ("sma_ratio_", 1),
    ("bb_pctb_", 2),
    ("vol_z_", 2),
    ("skew_", 3),
    ("ret_", 1),
    ("vol_", 2),
    ("rsi_", 1),
];

/// The `default` preset: every family at its conventional windows.
pub const DEFAULT_PRESET: &[&str] = &[
    "ret_1",
    "ret_5",
    "ret_10",
    "ret_20",
    "hl_range",
    "close_pos",
    "gap",
    "vol_5",
    "vol_20",
    "vol_60",
    "sma_ratio_5",
    "sma_ratio_20",
    "sma_ratio_60",
    "rsi_14",
    "macd",
    "macd_signal",
    "bb_pctb_20",
    "vol_z_20",
    "dlog_volume",
    "skew_20",
];

/// The `minimal` preset: cheap features with a short warm-up.
pub const MINIMAL_PRESET: &[&str] = &["ret_1", "ret_5", "hl_range", "gap", "vol_20", "dlog_volume"];

/// The `wide` preset: 105 columns, the width of the stock trainer's windows (60 days x 105
/// features): every family at many windows up to 120 days.
pub const WIDE_PRESET: &[&str] = &[
    "ret_1",
    "ret_2",
    "ret_3",
    "ret_4",
    "ret_5",
    "ret_6",
    "ret_7",
    "ret_8",
    "ret_9",
    "ret_10",
    "ret_11",
    "ret_12",
    "ret_13",
    "ret_14",
    "ret_15",
    "ret_16",
    "ret_17",
    "ret_18",
    "ret_19",
    "ret_20",
    "ret_21",
    "ret_22",
    "ret_23",
    "ret_24",
    "ret_25",
    "ret_26",
    "ret_27",
    "ret_28",
    "ret_29",
    "ret_30",
    "ret_31",
    "ret_32",
    "ret_33",
    "ret_34",
    "ret_35",
    "ret_36",
    "ret_37",
    "ret_38",
    "ret_39",
    "ret_40",
    "vol_3",
    "vol_5",
    "vol_10",
    "vol_15",
    "vol_20",
    "vol_30",
    "vol_40",
    "vol_60",
    "vol_80",
    "vol_100",
    "vol_120",
    "sma_ratio_3",
    "sma_ratio_5",
    "sma_ratio_10",
    "sma_ratio_15",
    "sma_ratio_20",
    "sma_ratio_30",
    "sma_ratio_40",
    "sma_ratio_50",
    "sma_ratio_60",
    "sma_ratio_70",
    "sma_ratio_80",
    "sma_ratio_90",
    "sma_ratio_100",
    "sma_ratio_120",
    "rsi_3",
    "rsi_5",
    "rsi_7",
    "rsi_9",
    "rsi_14",
    "rsi_21",
    "rsi_28",
    "bb_pctb_5",
    "bb_pctb_10",
    "bb_pctb_15",
    "bb_pctb_20",
    "bb_pctb_30",
    "bb_pctb_40",
    "bb_pctb_60",
    "vol_z_5",
    "vol_z_10",
    "vol_z_15",
    "vol_z_20",
    "vol_z_30",
    "vol_z_40",
    "vol_z_60",
    "vol_z_80",
    "vol_z_100",
    "vol_z_120",
    "skew_5",
    "skew_10",
    "skew_15",
    "skew_20",
    "skew_30",
    "skew_40",
    "skew_60",
    "skew_80",
    "skew_100",
    "skew_120",
    "hl_range",
    "close_pos",
    "gap",
    "macd",
    "macd_signal",
    "dlog_volume",
];

/// Names of the presets `preset = "..."` accepts.
pub const PRESETS: &[&str] = &["default", "minimal", "wide"];

pub(crate) fn preset_names(name: &str) -> Option<&'static [&'static str]> {
    match name {
        "default" => Some(DEFAULT_PRESET),
        "minimal" => Some(MINIMAL_PRESET),
        "wide" => Some(WIDE_PRESET),
        _ => None,
    }
}

impl Feature {
    /// Parses a feature name such as `ret_5` or `macd_signal`.
    pub fn parse(name: &str) -> Result<Feature, ParamError> {
        let fixed = match name {
            "hl_range" => Some(Feature::HlRange),
            "close_pos" => Some(Feature::ClosePos),
            "gap" => Some(Feature::Gap),
            "macd" => Some(Feature::Macd),
            "macd_signal" => Some(Feature::MacdSignal),
            "dlog_volume" => Some(Feature::DlogVolume),
            _ => None,
        };
        if let Some(feature) = fixed {
            return Ok(feature);
        }
        for &(prefix, min) in FAMILIES {
            let Some(digits) = name.strip_prefix(prefix) else {
                continue;
            };
            // `vol_z_20` also starts with `vol_`; only a pure number after the prefix counts.
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let window: usize = digits.parse().unwrap_or(usize::MAX);
            if window < min || window > MAX_WINDOW {
                return Err(ParamError::new(
                    "features",
                    format!("`{name}`: the window must be in {min}..={MAX_WINDOW}, got {digits}"),
                ));
            }
            return Ok(match prefix {
                "ret_" => Feature::Ret(window),
                "vol_" => Feature::Vol(window),
                "sma_ratio_" => Feature::SmaRatio(window),
                "rsi_" => Feature::Rsi(window),
                "bb_pctb_" => Feature::BbPctb(window),
                "vol_z_" => Feature::VolZ(window),
                _ => Feature::Skew(window),
            });
        }
        Err(unknown(name))
    }

    /// The canonical name (what `parse` accepts and reports show).
    pub fn name(&self) -> String {
        match *self {
            Feature::Ret(k) => format!("ret_{k}"),
            Feature::HlRange => "hl_range".into(),
            Feature::ClosePos => "close_pos".into(),
            Feature::Gap => "gap".into(),
            Feature::Vol(w) => format!("vol_{w}"),
            Feature::SmaRatio(w) => format!("sma_ratio_{w}"),
            Feature::Rsi(w) => format!("rsi_{w}"),
            Feature::Macd => "macd".into(),
            Feature::MacdSignal => "macd_signal".into(),
            Feature::BbPctb(w) => format!("bb_pctb_{w}"),
            Feature::VolZ(w) => format!("vol_z_{w}"),
            Feature::DlogVolume => "dlog_volume".into(),
            Feature::Skew(w) => format!("skew_{w}"),
        }
    }

    /// Index of the first row (0-based, within one symbol) where the feature is defined.
    pub fn warmup(&self) -> usize {
        match *self {
            Feature::Ret(k) => k,
            Feature::HlRange | Feature::ClosePos => 0,
            Feature::Gap | Feature::DlogVolume => 1,
            // Built on ret_1, which starts at row 1, so `w` returns end at row `w`.
            Feature::Vol(w) | Feature::Skew(w) => w,
            Feature::SmaRatio(w) | Feature::BbPctb(w) | Feature::VolZ(w) => w - 1,
            // The first average is the mean of the first `w` price changes (rows 1..=w).
            Feature::Rsi(w) => w,
            // EMAs are seeded with the first close; skip the rows where the seed dominates.
            Feature::Macd => MACD_SLOW - 1,
            Feature::MacdSignal => MACD_SLOW + MACD_SIGNAL - 2,
        }
    }
}

/// Resolves the manifest's `features` list or `preset` into feature columns.
pub fn resolve(features: Option<&[String]>, preset: Option<&str>) -> Result<Vec<Feature>, ParamError> {
    let names: Vec<&str> = match (features, preset) {
        (Some(_), Some(_)) => {
            return Err(ParamError::new("preset", "`features` and `preset` are both set")
                .with_hint("keep one: `features` lists the columns, `preset` names a list"))
        }
        (Some(list), None) => list.iter().map(String::as_str).collect(),
        (None, preset) => {
            let preset = preset.unwrap_or("default");
            match preset_names(preset) {
                Some(list) => list.to_vec(),
                None => {
                    let err = ParamError::new("preset", format!("unknown preset `{preset}`"));
                    return Err(match closest(preset, PRESETS) {
                        Some(near) => err.with_hint(format!("did you mean `{near}`?")),
                        None => err.with_hint(format!("presets: {}", PRESETS.join(", "))),
                    });
                }
            }
        }
    };
    if names.is_empty() {
        return Err(ParamError::new("features", "the list is empty")
            .with_hint("name at least one feature, or use `preset = \"default\"`"));
    }
    let mut out: Vec<Feature> = Vec::with_capacity(names.len());
    for name in names {
        let feature = Feature::parse(name)?;
        if out.contains(&feature) {
            return Err(ParamError::new("features", format!("`{name}` is listed twice")));
        }
        out.push(feature);
    }
    Ok(out)
}

fn unknown(name: &str) -> ParamError {
    let err = ParamError::new("features", format!("unknown feature `{name}`"));
    // The default preset spells every family at a conventional window.
    match closest(name, DEFAULT_PRESET) {
        Some(near) => err.with_hint(format!("did you mean `{near}`?")),
        None => err.with_hint(
            "features are hl_range, close_pos, gap, macd, macd_signal, dlog_volume, and \
             ret_N, vol_N, sma_ratio_N, rsi_N, bb_pctb_N, vol_z_N, skew_N for a window N",
        ),
    }
}

/// The most similar candidate, if any is similar enough to be a plausible typo.
fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(name, c), *c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}
