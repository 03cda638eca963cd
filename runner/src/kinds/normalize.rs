//! Parameters of the `normalize` stage (manifest stage table -> `NormalizeParams` -> build_windows).
//!
//! Every field has a serde default, so `[stages.features] kind = "normalize"` alone is a valid
//! stage; `check` rejects values that would only fail at run time.

use super::features::{self as spec, Feature};
use crate::params::{at_most, ParamError};
use chrono::NaiveDate;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// How features are scaled with statistics from the training period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub enum NormMethod {
    /// `(x - mean) / sd`.
    #[default]
    #[serde(rename = "zscore")]
    ZScore,
    /// `(x - median) / (IQR / 1.349)`: about the z-score for normal data, but not moved by
    /// the fat tails returns have.
    #[serde(rename = "robust")]
    Robust,
}

/// Whose training rows the statistics come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub enum NormScope {
    /// Each symbol is scaled by its own training-period statistics.
    #[default]
    #[serde(rename = "per_symbol")]
    PerSymbol,
    /// One set of statistics over the training rows of every symbol.
    #[serde(rename = "pooled")]
    Pooled,
}

/// Parameters of a `normalize` stage: per-symbol features scaled with statistics of the
/// training period only, cut into windows with a forward-return target.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NormalizeParams {
    /// Days per window.
    #[serde(default = "default_seq_len")]
    #[schemars(range(min = 1, max = MAX_SEQ_LEN))]
    pub seq_len: usize,
    /// Feature columns by name; mutually exclusive with `preset`.
    #[serde(default)]
    pub features: Option<Vec<String>>,
    /// A named feature list (`default` or `minimal`); `default` when neither is set.
    #[serde(default)]
    pub preset: Option<String>,
    /// Target: forward log return over this many days.
    #[serde(default = "default_horizon")]
    #[schemars(range(min = 1, max = MAX_HORIZON))]
    pub horizon: usize,
    /// First day of the validation period (a TOML date or `"YYYY-MM-DD"`); mutually exclusive
    /// with `valid_fraction`.
    #[serde(default, deserialize_with = "date_opt")]
    #[schemars(schema_with = "crate::kinds::date_schema")]
    pub split_date: Option<NaiveDate>,
    /// Share of the calendar range (earliest to latest date) that is validation; 0.2 when
    /// neither this nor `split_date` is set.
    #[serde(default)]
    pub valid_fraction: Option<f64>,
    /// Rows at the start of the validation period used only as window inputs, never as a
    /// prediction day; `seq_len` when unset, so no validation window touches training rows.
    #[serde(default)]
    pub gap: Option<usize>,
    /// How features are scaled.
    #[serde(default)]
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub method: NormMethod,
    /// Whose training rows the scaling statistics come from.
    #[serde(default)]
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub scope: NormScope,
    /// Clamp normalized values to `[-clip, clip]`; no clamping when unset.
    #[serde(default)]
    pub clip: Option<f64>,
    /// Compute with rayon (per symbol and per feature column) instead of plain loops.
    #[serde(default)]
    pub parallel: bool,
    /// Threads of the pool built for this run when `parallel = true`; 0 means every core.
    #[serde(default)]
    #[schemars(range(max = MAX_THREADS))]
    pub threads: usize,
}

fn default_seq_len() -> usize {
    60
}

fn default_horizon() -> usize {
    1
}

/// Validation share when the manifest sets neither `split_date` nor `valid_fraction`.
pub const DEFAULT_VALID_FRACTION: f64 = 0.2;

const MAX_SEQ_LEN: usize = 5000;
const MAX_HORIZON: usize = 250;
const MAX_THREADS: usize = 1024;

impl Default for NormalizeParams {
    fn default() -> Self {
        Self {
            seq_len: default_seq_len(),
            features: None,
            preset: None,
            horizon: default_horizon(),
            split_date: None,
            valid_fraction: None,
            gap: None,
            method: NormMethod::default(),
            scope: NormScope::default(),
            clip: None,
            parallel: false,
            threads: 0,
        }
    }
}

impl NormalizeParams {
    /// Rejects parameters that cannot work, naming the field and how to fix it.
    pub fn check(&self) -> Result<(), ParamError> {
        if self.seq_len == 0 || self.seq_len > MAX_SEQ_LEN {
            return Err(ParamError::new(
                "seq_len",
                format!("must be in 1..={MAX_SEQ_LEN}, got {}", self.seq_len),
            ));
        }
        if self.horizon == 0 || self.horizon > MAX_HORIZON {
            return Err(ParamError::new(
                "horizon",
                format!("must be in 1..={MAX_HORIZON}, got {}", self.horizon),
            ));
        }
        if self.split_date.is_some() && self.valid_fraction.is_some() {
            return Err(
                ParamError::new("valid_fraction", "`split_date` and `valid_fraction` are both set")
                    .with_hint("keep one: a fixed date, or a share of the date range"),
            );
        }
        if let Some(f) = self.valid_fraction {
            if !(f > 0.0 && f < 1.0) {
                return Err(
                    ParamError::new("valid_fraction", format!("must be strictly between 0 and 1, got {f}"))
                        .with_hint("0.2 keeps the last fifth of the date range for validation"),
                );
            }
        }
        if let Some(gap) = self.gap {
            at_most("gap", gap, MAX_SEQ_LEN)?;
        }
        if let Some(clip) = self.clip {
            if !(clip.is_finite() && clip > 0.0) {
                return Err(ParamError::new(
                    "clip",
                    format!("must be a positive number, got {clip}"),
                ));
            }
        }
        at_most("threads", self.threads, MAX_THREADS).map_err(|e| e.with_hint("0 uses every core"))?;
        self.feature_list().map(|_| ())
    }

    /// The feature columns, in output order.
    pub fn feature_list(&self) -> Result<Vec<Feature>, ParamError> {
        spec::resolve(self.features.as_deref(), self.preset.as_deref())
    }

    /// `gap` with its default applied.
    pub fn gap_rows(&self) -> usize {
        self.gap.unwrap_or(self.seq_len)
    }

    /// The first validation day of bars dated `first` to `last`: `split_date`, or the calendar
    /// date `1 - valid_fraction` of the way from the first to the last.
    pub fn split_between(&self, first: NaiveDate, last: NaiveDate) -> NaiveDate {
        if let Some(date) = self.split_date {
            return date;
        }
        let fraction = self.valid_fraction.unwrap_or(DEFAULT_VALID_FRACTION);
        let span = (last - first).num_days() as f64;
        first + chrono::Duration::days((span * (1.0 - fraction)).round() as i64)
    }

    /// The feature warm-up rows: the longest of its features' (0 when they do not parse, which
    /// the check reports).
    pub fn warmup_rows(&self) -> usize {
        self.feature_list()
            .map(|f| f.iter().map(|x| x.warmup()).max().unwrap_or(0))
            .unwrap_or(0)
    }
}

/// Accepts a TOML date (`2022-01-01`) as well as a string (`"2022-01-01"`, or from JSON).
fn date_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NaiveDate>, D::Error> {
    d.deserialize_any(DateVisitor).map(Some)
}

struct DateVisitor;

impl DateVisitor {
    fn parse<E: de::Error>(text: &str) -> Result<NaiveDate, E> {
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map_err(|_| E::custom(format!("expected a date like 2022-01-01, got `{text}`")))
    }
}

impl<'de> Visitor<'de> for DateVisitor {
    type Value = NaiveDate;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a date like 2022-01-01")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<NaiveDate, E> {
        Self::parse(v)
    }

    // The toml crate hands its date values to `deserialize_any` as a one-entry map whose
    // value is the date's text.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NaiveDate, A::Error> {
        let Some((_, text)) = map.next_entry::<String, String>()? else {
            return Err(de::Error::custom("expected a date like 2022-01-01"));
        };
        Self::parse(&text)
    }
}
