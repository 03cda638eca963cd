//! The stage kinds this binary knows, as data (manifest::validate -> **registry** -> each kind's
//! parameters): what each kind consumes and produces, the parameters it accepts, their JSON
//! schema, and the check of a parameter table. `stage::build` makes the runnable stage from the
//! same table where it runs.

use super::command::CommandParams;
use super::normalize::NormalizeParams;
use super::params::{field_names, params_from_table};
use super::train::{TrainParams, ValidateParams};
use super::transfer::TransferParams;
use crate::artifact::ArtifactKind;
use crate::market::{FetchStrategy, LoadParams};
use crate::params::ParamError;
use serde::de::DeserializeOwned;

/// What one stage kind consumes and produces, and how its parameters are read and checked.
pub struct KindSpec {
    pub kind: &'static str,
    /// The artifact this kind needs from upstream, if any.
    pub input: Option<ArtifactKind>,
    pub output: ArtifactKind,
    /// Parameter names accepted in the stage table (besides kind/needs/cache).
    pub fields: fn() -> &'static [&'static str],
    /// JSON Schema of the parameter struct, for `measured schema` (editor completion).
    pub schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    /// Reads the stage table into the kind's parameters and checks them.
    pub check: fn(&toml::Table) -> Result<(), ParamError>,
    /// The checked parameters with their defaults applied, written out: two tables that mean
    /// the same parameters give the same text.
    pub resolved: fn(&toml::Table) -> Option<String>,
    /// A parameter value that only a PostgreSQL stock database supports, as
    /// `(parameter, what it needs)`, so that `check` rejects it on SQLite before any trial runs.
    pub needs_postgres_stock: fn(&toml::Table) -> Option<(&'static str, &'static str)>,
}

/// A stage kind's parameter struct: read from the stage table, then checked.
pub trait KindParams: DeserializeOwned + std::fmt::Debug + schemars::JsonSchema + 'static {
    fn check(&self) -> Result<(), ParamError>;
}

macro_rules! kind_params {
    ($($t:ty),*) => {$(
        impl KindParams for $t {
            fn check(&self) -> Result<(), ParamError> {
                <$t>::check(self)
            }
        }
    )*};
}

kind_params!(
    CommandParams,
    LoadParams,
    NormalizeParams,
    TrainParams,
    ValidateParams,
    TransferParams
);

/// Reads `table` into `P` and checks it: the parameters a stage of that kind is built from.
pub fn checked<P: KindParams>(table: &toml::Table) -> Result<P, ParamError> {
    let params: P = params_from_table(table)?;
    params.check()?;
    Ok(params)
}

fn check<P: KindParams>(table: &toml::Table) -> Result<(), ParamError> {
    checked::<P>(table).map(drop)
}

fn resolved<P: KindParams>(table: &toml::Table) -> Option<String> {
    checked::<P>(table).ok().map(|p| format!("{p:?}"))
}

fn no_stock_need(_: &toml::Table) -> Option<(&'static str, &'static str)> {
    None
}

fn load_needs_postgres_stock(table: &toml::Table) -> Option<(&'static str, &'static str)> {
    let params = checked::<LoadParams>(table).ok()?;
    (params.strategy == FetchStrategy::Copy).then_some((
        "strategy",
        "strategy = \"copy\" streams bars with PostgreSQL's COPY protocol",
    ))
}

/// Every stage kind this binary knows.
pub fn registry() -> &'static [KindSpec] {
    &REGISTRY
}

pub fn find_kind(kind: &str) -> Option<&'static KindSpec> {
    REGISTRY.iter().find(|k| k.kind == kind)
}

macro_rules! kind {
    ($kind:literal, $input:expr, $output:expr, $params:ty) => {
        kind!($kind, $input, $output, $params, no_stock_need)
    };
    ($kind:literal, $input:expr, $output:expr, $params:ty, $stock:expr) => {
        KindSpec {
            kind: $kind,
            input: $input,
            output: $output,
            fields: field_names::<$params>,
            schema: <$params as schemars::JsonSchema>::json_schema,
            check: check::<$params>,
            resolved: resolved::<$params>,
            needs_postgres_stock: $stock,
        }
    };
}

static REGISTRY: [KindSpec; 6] = [
    kind!("command", None, ArtifactKind::None, CommandParams),
    kind!("load", None, ArtifactKind::Bars, LoadParams, load_needs_postgres_stock),
    kind!(
        "normalize",
        Some(ArtifactKind::Bars),
        ArtifactKind::Windows,
        NormalizeParams
    ),
    kind!("train", Some(ArtifactKind::Windows), ArtifactKind::Model, TrainParams),
    kind!(
        "validate",
        Some(ArtifactKind::Model),
        ArtifactKind::None,
        ValidateParams
    ),
    kind!("transfer", None, ArtifactKind::None, TransferParams),
];

/// The memory check of a `train` stage before any trial runs: its model on the input width the
/// upstream `normalize` stage gives (`seq_len` x features). Without a readable `normalize`
/// table the width is unknown and the check waits for `train` itself, which repeats it on the
/// real windows before allocating.
pub(crate) fn check_train_memory(train: &toml::Table, normalize: Option<&toml::Table>) -> Result<(), ParamError> {
    let params: TrainParams = params_from_table(train)?;
    let Some(norm) = normalize.and_then(|t| params_from_table::<NormalizeParams>(t).ok()) else {
        return Ok(());
    };
    let Ok(features) = norm.feature_list() else {
        return Ok(());
    };
    super::memory::check(&params, norm.seq_len, features.len(), 1)?;
    Ok(())
}
