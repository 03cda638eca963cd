//! Turning a stage's parameter table into its typed parameter struct (manifest::validate ->
//! `StageParams::read` -> **params**), with the failing key named so the validator can point at
//! it in the manifest.

use crate::params::ParamError;
use serde::de::{self, DeserializeOwned, Visitor};
use std::sync::{Mutex, OnceLock};

/// Deserializes `table` into `P`, naming the top-level key a type error is in.
pub(crate) fn params_from_table<P: DeserializeOwned>(table: &toml::Table) -> Result<P, ParamError> {
    // Round-trip through text: toml's deserializer reports a byte span into that text, which
    // maps back to the key that holds the bad value.
    let text = toml::to_string(table).map_err(|e| ParamError::unlocated(e.to_string()))?;
    toml::from_str::<P>(&text).map_err(|e| {
        let message = e.message().trim().to_owned();
        let field = e
            .span()
            .and_then(|span| key_at(&text, span.start))
            .or_else(|| unknown_field_name(&message));
        let hint = expected_fields(&message)
            .and_then(|expected| {
                unknown_field_name(&message).and_then(|name| {
                    crate::hint::did_you_mean(&name, expected.iter().map(String::as_str))
                        .or_else(|| Some(format!("known parameters: {}", expected.join(", "))))
                })
            })
            .or_else(|| crate::hint::serde_hint(&message));
        ParamError {
            field: field.unwrap_or_default(),
            message,
            hint,
        }
    })
}

/// The top-level key whose entry contains byte `offset` of `text`.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let doc = toml_edit::Document::parse(text.to_owned()).ok()?;
    let mut best: Option<(usize, String)> = None;
    for (key, item) in doc.as_table().iter() {
        let k = doc.as_table().key(key)?.span()?;
        let end = item.span().map(|s| s.end).unwrap_or(k.end);
        if k.start <= offset && offset <= end.max(k.end) {
            best = Some((k.start, key.to_owned()));
        }
    }
    best.map(|(_, k)| k)
}

fn unknown_field_name(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest[..rest.find('`')?].to_owned())
}

fn expected_fields(message: &str) -> Option<Vec<String>> {
    let (_, list) = message.split_once("expected one of ")?;
    Some(
        list.split(", ")
            .map(|s| s.trim_matches(|c| c == '`' || c == '.').to_owned())
            .collect(),
    )
}

/// A `#[schemars(skip_serializing_if = ...)]` that is always true: the field's default stays
/// out of the schema. Schemars writes a field's default only when its type is `Serialize`, and
/// the parameter types are `Serialize` for their canonical text, not to document defaults.
pub(crate) fn no_schema_default<T>(_: &T) -> bool {
    true
}

/// The field names a `#[derive(Deserialize)]` struct accepts, read from serde itself so the
/// list can never drift from the struct.
pub(crate) fn field_names<P: DeserializeOwned + 'static>() -> &'static [&'static str] {
    type Fields = &'static [&'static str];
    static CACHE: OnceLock<Mutex<Vec<(std::any::TypeId, Fields)>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let id = std::any::TypeId::of::<P>();
    let mut guard = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, f)) = guard.iter().find(|(t, _)| *t == id) {
        return f;
    }
    let mut probe = FieldProbe(None);
    let _ = P::deserialize(&mut probe);
    let fields = probe.0.unwrap_or(&[]);
    guard.push((id, fields));
    fields
}

struct FieldProbe(Option<&'static [&'static str]>);

#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("probe")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> de::Deserializer<'de> for &mut FieldProbe {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        self.0 = Some(fields);
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct P {
        batch_size: usize,
        #[serde(default)]
        lr: f64,
    }

    #[test]
    fn reads_field_names_from_serde() {
        assert_eq!(field_names::<P>(), &["batch_size", "lr"]);
    }

    #[test]
    fn names_the_key_with_a_bad_type() {
        let t: toml::Table = toml::from_str("batch_size = \"big\"\nlr = 0.1").unwrap();
        let e = params_from_table::<P>(&t).unwrap_err();
        assert_eq!(e.field, "batch_size");
        assert!(e.message.contains("invalid type"), "{}", e.message);
    }

    #[test]
    fn suggests_a_close_field() {
        let t: toml::Table = toml::from_str("batch_sise = 3").unwrap();
        let e = params_from_table::<P>(&t).unwrap_err();
        assert_eq!(e.field, "batch_sise");
        assert_eq!(e.hint.as_deref(), Some("did you mean `batch_size`?"));
    }
}
