//! The manifest's JSON Schema (`measured schema`), for editors: completion, hover docs and
//! shape errors while a manifest is written.
//!
//! It is generated from the same types the manifest is read into (`raw`, and each stage kind's
//! parameter struct through `StageKind::schema`), so it cannot drift from what `measured check`
//! accepts. The schema only describes shapes; `check` remains the authority on meaning (a
//! `needs` naming an undefined stage, an override of a parameter its stage lacks, and so on).
//!
//! Stage tables are the one place where the Rust side is dynamic (a `toml::Table` whose
//! parameters depend on `kind`): each kind becomes a definition holding its parameters plus the
//! DAG keys, and a stage is `oneOf` those definitions, told apart by a `kind` constant.

use schemars::generate::SchemaSettings;
use schemars::{json_schema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

use super::raw::RawManifest;
use crate::kinds::StageKind;

/// Stage, variant and axis names: what `validate` accepts as an identifier.
const NAME_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}$";

/// The manifest schema as a JSON value (draft 7, which editors support most widely).
pub fn manifest_schema() -> Value {
    let generator = SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<RawManifest>().to_value();
    tidy(&mut schema);
    schema
}

/// The schema as `measured schema` prints it (and as `docs/measured.schema.json` holds it).
pub fn manifest_schema_text() -> String {
    // Serializing a `Value` cannot fail.
    let mut text = serde_json::to_string_pretty(&manifest_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// Where definitions live in the generated schema, as a `$ref` prefix (`#/definitions/`).
fn ref_prefix(generator: &SchemaGenerator) -> String {
    let path = generator.settings().definitions_path.as_ref();
    format!("#{}/", path.trim_start_matches('#').trim_end_matches('/'))
}

/// Adds `schema` to the definitions under `name` and returns a reference to it.
fn define(generator: &mut SchemaGenerator, name: &str, schema: Value) -> Value {
    let reference = format!("{}{name}", ref_prefix(generator));
    generator.definitions_mut().insert(name.to_owned(), schema);
    json!({ "$ref": reference })
}

/// `[stages.<name>]`: each stage's keys depend on its `kind`.
pub(super) fn stages(generator: &mut SchemaGenerator) -> Schema {
    let kinds: Vec<&str> = StageKind::ALL.map(StageKind::as_str).to_vec();
    let alternatives: Vec<Value> = StageKind::ALL
        .into_iter()
        .map(|kind| {
            let def = stage_kind(generator, kind);
            define(generator, &definition_name(kind.as_str()), def)
        })
        .collect();
    let stage = json!({
        "description": "A stage: `kind` picks the parameters it takes; `needs` and `cache` place it in the DAG.",
        "type": "object",
        "required": ["kind"],
        "properties": { "kind": { "description": "The stage kind.", "enum": kinds } },
        "oneOf": alternatives,
    });
    let stage = define(generator, "Stage", stage);
    json_schema!({
        "type": "object",
        "minProperties": 1,
        "propertyNames": { "pattern": NAME_PATTERN },
        "additionalProperties": stage,
    })
}

/// `command` -> `CommandStage`.
fn definition_name(kind: &str) -> String {
    let mut chars = kind.chars();
    let first = chars.next().map(|c| c.to_ascii_uppercase()).into_iter();
    first.chain(chars).chain("Stage".chars()).collect()
}

/// One stage kind: its parameter struct's schema with `kind`, `needs` and `cache` added.
fn stage_kind(generator: &mut SchemaGenerator, kind: StageKind) -> Value {
    let params = kind.schema(generator).to_value();
    let mut def = params.as_object().cloned().unwrap_or_default();
    let params_doc = def
        .remove("description")
        .and_then(|d| d.as_str().map(str::to_owned))
        .unwrap_or_default();
    let takes = kind.input().map_or_else(|| "nothing".to_owned(), |i| i.to_string());
    def.insert(
        "description".into(),
        format!(
            "{params_doc} Takes {takes}; produces {}. {} {}",
            kind.output(),
            crate::kinds::catalog::describe(kind),
            crate::kinds::facts::describe_facts(kind)
        )
        .trim()
        .into(),
    );
    def.insert("type".into(), "object".into());
    let mut properties = Map::new();
    properties.insert(
        "kind".into(),
        json!({ "description": format!("The stage kind: `{kind}`."), "const": kind.as_str() }),
    );
    properties.insert(
        "needs".into(),
        json!({
            "description": "Stages that must run first; their output flows into this one.",
            "type": "array",
            "items": { "type": "string", "pattern": NAME_PATTERN },
            "uniqueItems": true,
        }),
    );
    properties.insert(
        "cache".into(),
        json!({
            "description": "Run once per run and reuse the output in every trial (not timed per trial).",
            "type": "boolean",
            "default": false,
        }),
    );
    if let Some(Value::Object(own)) = def.remove("properties") {
        properties.extend(own);
    }
    def.insert("properties".into(), Value::Object(properties));
    let mut required = vec![Value::from("kind")];
    if let Some(Value::Array(own)) = def.remove("required") {
        required.extend(own);
    }
    def.insert("required".into(), Value::Array(required));
    // `additionalProperties: false` comes from the parameter struct's `deny_unknown_fields`,
    // so a kind that accepted unknown keys would stay open here as well.
    Value::Object(def)
}

/// The key of a dotted override: `"stages.<stage>.<parameter>[.<key>...]"`.
const OVERRIDE_KEY: &str = r"^stages\.[A-Za-z0-9_-]+\.";

/// The nested form of overrides: `stages.work.vars.n = 2` written without quotes is TOML for
/// `stages = { work = { vars = { n = 2 } } }`, which `validate` flattens back into paths.
fn nested_overrides(description: &str) -> Value {
    json!({
        "description": description,
        "type": "object",
        "propertyNames": { "pattern": NAME_PATTERN },
        "additionalProperties": { "type": "object" },
    })
}

/// `[variants.<name>]`: dotted overrides of stage parameters, plus the reserved `git` and
/// `build` keys.
pub(super) fn variants(generator: &mut SchemaGenerator) -> Schema {
    let variant = json!({
        "description": "A variant: overrides of stage parameters as `\"stages.<stage>.<parameter>\" = value` (an empty table changes nothing, as a baseline does).",
        "type": "object",
        "properties": {
            "git": {
                "description": "The git revision (commit, branch or tag) this variant runs, built in its own worktree; \":worktree\" runs the uncommitted changes of the current checkout.",
                "type": "string",
                "minLength": 1,
                "examples": ["main", ":worktree"],
            },
            "build": {
                "description": "A shell command run once per revision, in its checkout, before any trial (e.g. \"cargo build --release\").",
                "type": "string",
                "minLength": 1,
            },
            "change": {
                "description": "What the variant changes, in words; a claim about the variant is judged only when its `change` reads the same.",
                "type": "string",
                "minLength": 1,
            },
            "stages": nested_overrides("Overrides written as nested tables (`stages.<stage>.<parameter> = value` without quotes)."),
        },
        "patternProperties": {
            OVERRIDE_KEY: { "description": "The new value of a stage parameter; any TOML value of the parameter's type." },
        },
        "propertyNames": {
            "anyOf": [{ "pattern": r"^stages\." }, { "enum": ["git", "build", "change", "stages"] }],
        },
        "additionalProperties": false,
    });
    let variant = define(generator, "Variant", variant);
    json_schema!({
        "type": "object",
        "minProperties": 1,
        "propertyNames": { "pattern": NAME_PATTERN },
        "additionalProperties": variant,
    })
}

/// The values of one sweep axis.
fn axis_values() -> Value {
    json!({
        "description": "The values the parameter takes, one config per value (each listed once).",
        "type": "array",
        "minItems": 1,
    })
}

/// `[sweep]`: dotted parameter paths to arrays of values.
pub(super) fn sweep(_: &mut SchemaGenerator) -> Schema {
    sweep_axes("Sweep axes: `\"stages.<stage>.<parameter>\" = [values]`.", 1)
}

/// A table of sweep axes (`[sweep]`, or `sweep.` overrides in `[smoke]`).
fn sweep_axes(description: &str, min: u32) -> Schema {
    json_schema!({
        "description": description,
        "type": "object",
        "minProperties": min,
        "properties": {
            "stages": {
                "description": "Axes written as nested tables (`stages.<stage>.<parameter> = [values]` without quotes).",
                "type": "object",
                "propertyNames": { "pattern": NAME_PATTERN },
                "additionalProperties": { "type": "object", "additionalProperties": axis_values() },
            },
        },
        "patternProperties": {
            OVERRIDE_KEY: axis_values(),
            r"^stages\.[A-Za-z0-9_-]+$": { "type": "object", "additionalProperties": axis_values() },
        },
        "additionalProperties": false,
    })
}

/// `[smoke]`: what `--smoke` changes.
pub(super) fn smoke(_: &mut SchemaGenerator) -> Schema {
    let warmup = json!({
        "description": "Warm-up trials per config in a smoke run (default 0).",
        "type": "integer",
        "minimum": 0,
    });
    let repetitions = json!({
        "description": "Measured trials per config in a smoke run (default: at most 2).",
        "type": "integer",
        "minimum": 1,
    });
    let axes = sweep_axes("Smaller values for sweep axes already in `[sweep]`.", 0).to_value();
    json_schema!({
        "type": "object",
        "properties": {
            "schedule.warmup": warmup,
            "schedule.repetitions": repetitions,
            "schedule": {
                "type": "object",
                "properties": { "warmup": warmup, "repetitions": repetitions },
                "additionalProperties": false,
            },
            "sweep": axes,
            "change": {
                "description": "What the variant changes, in words; a claim about the variant is judged only when its `change` reads the same.",
                "type": "string",
                "minLength": 1,
            },
            "stages": nested_overrides("Overrides written as nested tables (`stages.<stage>.<parameter> = value` without quotes)."),
        },
        "patternProperties": {
            OVERRIDE_KEY: { "description": "The value of a stage parameter in a smoke run." },
            r"^sweep\.stages\.[A-Za-z0-9_-]+\.": axis_values(),
            r"^data\.(synth|import|require)(\.|$)": { "description": "A smaller `[data]` for smoke runs (its keys as in `[data]`)." },
        },
        "additionalProperties": false,
    })
}

/// Removes `null` from the schema: TOML has no null, so an `Option` field is simply a key that
/// may be left out, and offering `null` would only mislead an editor's completion. Also unwraps
/// the line breaks of doc comments, which editors would show as they are.
fn tidy(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(text)) = map.get_mut("description") {
                *text = unwrap_lines(text);
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [one] = types.as_slice() {
                    let one = one.clone();
                    map.insert("type".into(), one);
                }
            }
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.retain(|x| !x.is_null());
            }
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            for key in ["anyOf", "oneOf"] {
                let Some(Value::Array(alts)) = map.get_mut(key) else {
                    continue;
                };
                alts.retain(|a| a.get("type").and_then(Value::as_str) != Some("null"));
                // `Option<T>` of a referenced type is `anyOf: [T, null]`: keep plain `T`.
                if let [Value::Object(only)] = alts.as_slice() {
                    let only = only.clone();
                    map.remove(key);
                    for (k, x) in only {
                        map.entry(k).or_insert(x);
                    }
                }
            }
            map.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Joins the lines of each paragraph (paragraphs stay apart).
fn unwrap_lines(text: &str) -> String {
    text.split("\n\n")
        .map(|p| p.lines().map(str::trim).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage_def(schema: &Value, kind: &str) -> Value {
        schema["definitions"][definition_name(kind)].clone()
    }

    #[test]
    fn every_stage_kind_has_a_definition_with_the_dag_keys() {
        let schema = manifest_schema();
        let alternatives = schema["definitions"]["Stage"]["oneOf"].as_array().unwrap().len();
        assert_eq!(alternatives, StageKind::ALL.len());
        for kind in StageKind::ALL {
            let def = stage_def(&schema, kind.as_str());
            assert_eq!(def["properties"]["kind"]["const"], kind.as_str(), "{def}");
            for key in ["needs", "cache"] {
                assert!(def["properties"][key].is_object(), "{kind}: {key}");
            }
            // Every parameter the Rust side accepts is described, and nothing else.
            let mut described: Vec<&str> = def["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .filter(|k| !["kind", "needs", "cache"].contains(k))
                .collect();
            let mut accepted = kind.fields().to_vec();
            described.sort_unstable();
            accepted.sort_unstable();
            assert_eq!(described, accepted, "{kind}");
            assert_eq!(def["additionalProperties"], false, "{kind}");
        }
        assert_eq!(stage_def(&schema, "command")["required"], json!(["kind", "argv"]));
    }

    #[test]
    fn no_null_survives_and_docs_become_descriptions() {
        let text = manifest_schema_text();
        assert!(!text.contains("\"null\""), "{text}");
        let schema = manifest_schema();
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
        assert!(schema["description"].as_str().unwrap().contains("measured check"));
        let repetitions = &schema["definitions"]["Schedule"]["properties"]["repetitions"];
        assert!(repetitions["description"].as_str().unwrap().contains("Measured trials"));
        let seq_len = &stage_def(&schema, "normalize")["properties"]["seq_len"];
        assert_eq!(seq_len["description"], "Days per window.");
    }

    #[test]
    fn only_experiment_and_stages_are_required() {
        let schema = manifest_schema();
        assert_eq!(schema["required"], json!(["experiment", "stages"]));
        assert_eq!(unwrap_lines("a\nb\n\nc"), "a b\n\nc");
    }

    fn accepts(text: &str) -> bool {
        let doc: toml::Value = toml::from_str(text).unwrap();
        jsonschema::is_valid(&manifest_schema(), &serde_json::to_value(doc).unwrap())
    }

    const BASE: &str = "[experiment]\nname = \"x\"\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\n";

    #[test]
    fn variants_take_overrides_and_the_reserved_git_and_build_keys() {
        assert!(accepts(&format!(
            "{BASE}[variants.a]\ngit = \":worktree\"\nbuild = \"make\"\n\"stages.work.timeout\" = 5.0\n"
        )));
        assert!(accepts(&format!(
            "{BASE}[variants.a]\n[variants.b]\nstages.work.timeout = 5.0\n"
        )));
        assert!(!accepts(&format!("{BASE}[variants.a]\ngti = \"main\"\n")));
        assert!(!accepts(&format!("{BASE}[variants.a]\ngit = 3\n")));
        assert!(!accepts(&format!("{BASE}[variants.a]\n\"schedule.seed\" = 3\n")));
    }

    #[test]
    fn a_stage_takes_the_keys_of_its_kind() {
        let stage = |body: &str| accepts(&format!("{BASE}[stages.s]\n{body}\n"));
        assert!(stage(
            "kind = \"load\"\nsymbols = { random = 5, seed = 1 }\nstart = \"2015-01-01\""
        ));
        assert!(stage("kind = \"load\"\nsymbols = [\"AAPL\"]"));
        assert!(!stage("kind = \"load\"\nsymbols = \"AAPL\""));
        assert!(!stage("kind = \"load\"\nsymbols = { random = 5 }"));
        assert!(!stage("kind = \"command\"\nargv = [\"x\"]\nsymbols = \"all\""));
        assert!(stage(
            "kind = \"transfer\"\nsizes = [4096, \"64KiB\", \"256x60x105xf32\"]\ndirection = \"both\""
        ));
        assert!(stage("kind = \"transfer\"\nhost_memory = [\"pageable\", \"pinned\"]"));
        assert!(!stage("kind = \"transfer\"\nsizes = [\"64 kilobytes\"]"));
        assert!(!stage("kind = \"transfer\"\ndirection = \"sideways\""));
        assert!(stage(
            "kind = \"train\"\nneeds = [\"work\"]\ncache = true\nactivation = \"gelu\""
        ));
        assert!(!stage("kind = \"train\"\nbatch_size = 0"));
    }

    #[test]
    fn definition_names_are_capitalized_kinds() {
        assert_eq!(definition_name("transfer"), "TransferStage");
    }
}
