//! The registry of stage kinds (manifest::validate -> **registry** -> each kind): maps a
//! manifest's `kind` to what it consumes and produces, its parameters and its constructor.

use super::params::field_names;
use super::runnable::Stage;
use super::{command, load, model, normalize, transfer, CommandParams};
use crate::artifact::ArtifactKind;
use crate::params::ParamError;
use std::sync::Arc;

/// How to build one stage kind, and what it consumes and produces.
pub struct KindSpec {
    pub kind: &'static str,
    /// The artifact this kind needs from upstream, if any.
    pub input: Option<ArtifactKind>,
    pub output: ArtifactKind,
    /// Parameter names accepted in the stage table (besides kind/needs/cache).
    pub fields: fn() -> &'static [&'static str],
    /// JSON Schema of the parameter struct, for `measured schema` (editor completion).
    pub schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    pub build: fn(&toml::Table) -> Result<Arc<dyn Stage>, ParamError>,
}

/// Every stage kind this binary knows.
pub fn registry() -> &'static [KindSpec] {
    &REGISTRY
}

pub fn find_kind(kind: &str) -> Option<&'static KindSpec> {
    REGISTRY.iter().find(|k| k.kind == kind)
}

static REGISTRY: [KindSpec; 6] = [
    KindSpec {
        kind: "command",
        input: None,
        output: ArtifactKind::None,
        fields: field_names::<CommandParams>,
        schema: <CommandParams as schemars::JsonSchema>::json_schema,
        build: command::build,
    },
    KindSpec {
        kind: "load",
        input: None,
        output: ArtifactKind::Bars,
        fields: field_names::<crate::market::LoadParams>,
        schema: <crate::market::LoadParams as schemars::JsonSchema>::json_schema,
        build: load::build_load,
    },
    KindSpec {
        kind: "normalize",
        input: Some(ArtifactKind::Bars),
        output: ArtifactKind::Windows,
        fields: field_names::<crate::features::NormalizeParams>,
        schema: <crate::features::NormalizeParams as schemars::JsonSchema>::json_schema,
        build: normalize::build_normalize,
    },
    KindSpec {
        kind: "train",
        input: Some(ArtifactKind::Windows),
        output: ArtifactKind::Model,
        fields: field_names::<crate::tensor::TrainParams>,
        schema: <crate::tensor::TrainParams as schemars::JsonSchema>::json_schema,
        build: model::build_train,
    },
    KindSpec {
        kind: "validate",
        input: Some(ArtifactKind::Model),
        output: ArtifactKind::None,
        fields: field_names::<crate::tensor::ValidateParams>,
        schema: <crate::tensor::ValidateParams as schemars::JsonSchema>::json_schema,
        build: model::build_validate,
    },
    KindSpec {
        kind: "transfer",
        input: None,
        output: ArtifactKind::None,
        fields: field_names::<crate::transfer::TransferParams>,
        schema: <crate::transfer::TransferParams as schemars::JsonSchema>::json_schema,
        build: transfer::build,
    },
];
