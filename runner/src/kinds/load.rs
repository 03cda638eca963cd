//! Parameters of the `load` stage (manifest `[stages.<name>]` keys -> validate -> **kinds** ->
//! `market`'s load): which symbols, which dates and how the rows travel, and what a symbol code
//! may be. `market` reads bars with them; it imports them from here.
//!
//! Only the load-specific keys live here; `kind`, `needs` and `cache` belong to the executor.

use crate::params::ParamError;
use chrono::NaiveDate;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Whether `code` may be a symbol code: 1 to 32 characters from `[A-Za-z0-9._^=-]`.
///
/// None of these characters can end or escape an SQL string literal (no quote, no backslash,
/// no whitespace), which is what makes a validated code safe to embed in a `COPY` statement.
/// `^` and `=` admit index and currency tickers such as `^GSPC` and `EURUSD=X`.
pub fn is_valid_code(code: &str) -> bool {
    (1..=32).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'^' | b'='))
}

/// Which symbols to load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SymbolSelection {
    /// These codes, in this order (`symbols = ["000001.SZ", "AAPL"]`).
    List(Vec<String>),
    /// Every symbol in the database, by code (`symbols = "all"`).
    All,
    /// The first `n` symbols by code (`symbols = { first = 50 }`).
    First(usize),
    /// `n` symbols drawn with `seed`, then ordered by code (`symbols = { random = 50, seed = 7 }`).
    Random { n: usize, seed: u64 },
}

/// How rows travel from the database into the artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FetchStrategy {
    /// One query per worker, rows decoded one by one as they stream in.
    Stream,
    /// Per-symbol queries of at most `fetch_size` rows each (keyset pagination on the date).
    Batched,
    /// `COPY (SELECT ...) TO STDOUT WITH (FORMAT binary)`; Postgres only.
    Copy,
}

impl fmt::Display for FetchStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FetchStrategy::Stream => "stream",
            FetchStrategy::Batched => "batched",
            FetchStrategy::Copy => "copy",
        })
    }
}

/// The `load` stage's parameters. Defaults: `symbols = "all"`, no date bounds,
/// `min_history = 1`, `adjust = true`, `strategy = "batched"`, `fetch_size = 10000`,
/// `connections = 1`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LoadParams {
    /// Which symbols to load: `"all"`, a list of codes, `{ first = N }` or
    /// `{ random = N, seed = S }`.
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub symbols: SymbolSelection,
    /// First day to load (inclusive); a TOML date (`2015-01-01`) or a string.
    #[serde(deserialize_with = "de_opt_date")]
    #[schemars(schema_with = "date_schema")]
    pub start: Option<NaiveDate>,
    /// Last day to load (inclusive).
    #[serde(deserialize_with = "de_opt_date")]
    #[schemars(schema_with = "date_schema")]
    pub end: Option<NaiveDate>,
    /// Symbols with fewer bars than this in the range are dropped (counted, and named in a note).
    #[schemars(range(min = 1))]
    pub min_history: usize,
    /// Keep the stored split-adjustment factors, so `normalize` split-adjusts prices and
    /// volumes with them (prices are adjusted there only); `false` sets every factor to 1, so
    /// features see raw prices and a split is a price gap.
    pub adjust: bool,
    /// How rows travel from the database (`"copy"` needs PostgreSQL).
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub strategy: FetchStrategy,
    /// Rows per query for `batched`.
    #[schemars(range(min = 1, max = 10_000_000))]
    pub fetch_size: usize,
    /// Parallel workers, each on its own pooled connection, each loading a share of the symbols
    /// (capped at the pool's size).
    #[schemars(range(min = 1, max = MAX_CONNECTIONS))]
    pub connections: usize,
}

impl Default for LoadParams {
    fn default() -> Self {
        LoadParams {
            symbols: SymbolSelection::All,
            start: None,
            end: None,
            min_history: 1,
            adjust: true,
            strategy: FetchStrategy::Batched,
            fetch_size: 10_000,
            connections: 1,
        }
    }
}

/// Most parallel load workers; more only queue for pool connections.
pub const MAX_CONNECTIONS: usize = 32;

impl LoadParams {
    /// Checks everything that can be checked without a database.
    pub fn check(&self) -> Result<(), ParamError> {
        match &self.symbols {
            SymbolSelection::List(codes) => {
                if codes.is_empty() {
                    return Err(ParamError::new("symbols", "the list is empty")
                        .with_hint("name at least one code, or use \"all\" or { first = N }"));
                }
                let mut seen = std::collections::HashSet::new();
                for code in codes {
                    if !is_valid_code(code) {
                        return Err(ParamError::new(
                            "symbols",
                            format!("{code:?} is not a symbol code"),
                        )
                        .with_hint("codes are 1-32 characters from letters, digits and `._^=-`, e.g. \"000001.SZ\" or \"^GSPC\""));
                    }
                    if !seen.insert(code) {
                        return Err(ParamError::new("symbols", format!("`{code}` is listed twice")));
                    }
                }
            }
            SymbolSelection::First(0) | SymbolSelection::Random { n: 0, .. } => {
                return Err(ParamError::new("symbols", "must select at least 1 symbol, got 0"));
            }
            _ => {}
        }
        if let (Some(start), Some(end)) = (self.start, self.end) {
            if start > end {
                return Err(ParamError::new("end", format!("ends ({end}) before `start` ({start})")));
            }
        }
        if self.min_history == 0 {
            return Err(ParamError::new("min_history", "must be at least 1, got 0"));
        }
        if !(1..=10_000_000).contains(&self.fetch_size) {
            return Err(ParamError::new(
                "fetch_size",
                format!("must be between 1 and 10000000, got {}", self.fetch_size),
            ));
        }
        if !(1..=MAX_CONNECTIONS).contains(&self.connections) {
            return Err(ParamError::new(
                "connections",
                format!("must be between 1 and {MAX_CONNECTIONS}, got {}", self.connections),
            ));
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for SymbolSelection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SelectionVisitor)
    }
}

struct SelectionVisitor;

impl<'de> Visitor<'de> for SelectionVisitor {
    type Value = SymbolSelection;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of symbol codes, \"all\", { first = N } or { random = N, seed = S }")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if v == "all" {
            Ok(SymbolSelection::All)
        } else {
            Err(E::custom(format!(
                "expected \"all\" or a list of codes, got \"{v}\" (for one symbol write [\"{v}\"])"
            )))
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut codes = Vec::new();
        while let Some(code) = seq.next_element::<String>()? {
            codes.push(code);
        }
        Ok(SymbolSelection::List(codes))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut first, mut random, mut seed) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "first" => first = Some(map.next_value::<usize>()?),
                "random" => random = Some(map.next_value::<usize>()?),
                "seed" => seed = Some(map.next_value::<u64>()?),
                other => {
                    return Err(de::Error::custom(format!(
                        "unknown key `{other}` in symbols (expected `first`, or `random` and `seed`)"
                    )))
                }
            }
        }
        match (first, random, seed) {
            (Some(n), None, None) => Ok(SymbolSelection::First(n)),
            (None, Some(n), Some(seed)) => Ok(SymbolSelection::Random { n, seed }),
            (None, Some(_), None) => Err(de::Error::custom(
                "symbols = { random = N } needs a `seed` so every trial loads the same symbols",
            )),
            _ => Err(de::Error::custom(
                "symbols takes either { first = N } or { random = N, seed = S }",
            )),
        }
    }
}

// The schema follows the custom deserializer: every shape `SelectionVisitor` accepts, and no
// other (a bare string other than "all" is rejected there, so it is here).
impl schemars::JsonSchema for SymbolSelection {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SymbolSelection".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Which symbols to load.",
            "oneOf": [
                { "description": "Every symbol in the database, by code.", "const": "all" },
                {
                    "description": "These codes, in this order (for one symbol: [\"AAPL\"]).",
                    "type": "array",
                    "items": { "type": "string" },
                    "minItems": 1,
                    "uniqueItems": true,
                },
                {
                    "description": "The first N symbols by code.",
                    "type": "object",
                    "properties": { "first": { "type": "integer", "minimum": 1 } },
                    "required": ["first"],
                    "additionalProperties": false,
                },
                {
                    "description": "N symbols drawn with `seed` (so every trial loads the same ones), ordered by code.",
                    "type": "object",
                    "properties": {
                        "random": { "type": "integer", "minimum": 1 },
                        "seed": { "type": "integer", "minimum": 0 },
                    },
                    "required": ["random", "seed"],
                    "additionalProperties": false,
                },
            ],
        })
    }
}

/// Schema of a day written as a TOML date (`2015-01-01`) or a `"YYYY-MM-DD"` string, both of
/// which the date deserializers accept (editors see a TOML date as a string).
pub fn date_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "format": "date",
        "pattern": r"^\d{4}-\d{2}-\d{2}$",
    })
}

/// Accepts a TOML date (`2015-01-01`, which the toml crate hands over as a one-key map) or a
/// `YYYY-MM-DD` string, so manifests may write either.
fn de_opt_date<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NaiveDate>, D::Error> {
    struct DateVisitor;
    impl<'de> Visitor<'de> for DateVisitor {
        type Value = NaiveDate;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a date such as 2015-01-01")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<NaiveDate, E> {
            NaiveDate::parse_from_str(v, "%Y-%m-%d")
                .map_err(|_| E::custom(format!("expected a date such as 2015-01-01, got `{v}`")))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NaiveDate, A::Error> {
            let Some((_, value)) = map.next_entry::<String, String>()? else {
                return Err(de::Error::custom("expected a date such as 2015-01-01"));
            };
            self.visit_str(&value)
        }
    }
    d.deserialize_any(DateVisitor).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LoadParams, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_every_selection_form() {
        assert_eq!(parse("").unwrap(), LoadParams::default());
        let p = parse(
            "symbols = [\"000001.SZ\", \"AAPL\"]\nstart = 2015-01-01\nend = \"2016-06-30\"\n\
             strategy = \"copy\"\nconnections = 4",
        )
        .unwrap();
        assert_eq!(
            p.symbols,
            SymbolSelection::List(vec!["000001.SZ".into(), "AAPL".into()])
        );
        assert_eq!(p.start, NaiveDate::from_ymd_opt(2015, 1, 1));
        assert_eq!(p.end, NaiveDate::from_ymd_opt(2016, 6, 30));
        assert_eq!(p.strategy, FetchStrategy::Copy);
        assert_eq!(parse("symbols = \"all\"").unwrap().symbols, SymbolSelection::All);
        assert_eq!(
            parse("symbols = { first = 5 }").unwrap().symbols,
            SymbolSelection::First(5)
        );
        assert_eq!(
            parse("symbols = { random = 5, seed = 3 }").unwrap().symbols,
            SymbolSelection::Random { n: 5, seed: 3 }
        );
    }

    #[test]
    fn bad_values_are_explained() {
        for (text, want) in [
            ("symbols = \"AAPL\"", "for one symbol write [\"AAPL\"]"),
            ("symbols = { random = 5 }", "needs a `seed`"),
            ("symbols = { last = 5 }", "unknown key `last`"),
            ("strategy = \"fast\"", "unknown variant `fast`"),
            ("start = \"2015/01/01\"", "expected a date"),
            ("fetchsize = 10", "unknown field `fetchsize`"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn check_rejects_impossible_values() {
        let ok = LoadParams::default();
        assert!(ok.check().is_ok());
        let cases = [
            (
                LoadParams {
                    symbols: SymbolSelection::List(vec![]),
                    ..ok.clone()
                },
                "symbols",
            ),
            (
                LoadParams {
                    symbols: SymbolSelection::List(vec!["A".into(), "A".into()]),
                    ..ok.clone()
                },
                "symbols",
            ),
            (
                LoadParams {
                    symbols: SymbolSelection::First(0),
                    ..ok.clone()
                },
                "symbols",
            ),
            (
                LoadParams {
                    start: NaiveDate::from_ymd_opt(2020, 1, 2),
                    end: NaiveDate::from_ymd_opt(2020, 1, 1),
                    ..ok.clone()
                },
                "end",
            ),
            (
                LoadParams {
                    min_history: 0,
                    ..ok.clone()
                },
                "min_history",
            ),
            (
                LoadParams {
                    fetch_size: 0,
                    ..ok.clone()
                },
                "fetch_size",
            ),
            (
                LoadParams {
                    connections: 0,
                    ..ok.clone()
                },
                "connections",
            ),
            (
                LoadParams {
                    connections: 33,
                    ..ok.clone()
                },
                "connections",
            ),
        ];
        for (params, field) in cases {
            assert_eq!(params.check().unwrap_err().field, field, "{params:?}");
        }
    }
}
