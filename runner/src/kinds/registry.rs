//! A stage's checked parameters, as one type (manifest::validate -> **registry** -> each kind's
//! parameter struct): [`StageParams`] holds the typed parameters of whichever kind the stage
//! is. The manifest's validation reads each stage table into it once ([`StageParams::read`]);
//! everything after (plan, exec, stage) uses the typed value and never reads the table again.

use super::command::CommandParams;
use super::kind::StageKind;
use super::load::{FetchStrategy, LoadParams};
use super::normalize::NormalizeParams;
use super::params::params_from_table;
use super::train::{TrainParams, ValidateParams};
use super::transfer::TransferParams;
use crate::params::ParamError;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A stage kind's parameter struct: read from the stage table, then checked, and written out
/// as its canonical text ([`StageParams::canonical`]).
pub trait KindParams: DeserializeOwned + Serialize + std::fmt::Debug + schemars::JsonSchema + 'static {
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

/// Reads `table` into `P` and checks it.
pub fn checked<P: KindParams>(table: &toml::Table) -> Result<P, ParamError> {
    let params: P = params_from_table(table)?;
    params.check()?;
    Ok(params)
}

/// One stage's parameters, read and checked against its kind, defaults applied: what the stage
/// is built from, what `plan` previews and what identifies the stage's work. Serialized as
/// one object whose only key is the kind (`{"load":{...}}`), so two kinds never share a text.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StageParams {
    Command(CommandParams),
    Load(LoadParams),
    Normalize(NormalizeParams),
    Train(TrainParams),
    Validate(ValidateParams),
    Transfer(TransferParams),
}

impl StageParams {
    /// Reads a stage table (without `kind`, `needs` and `cache`) into the parameters of `kind`
    /// and checks them; the error names the key at fault.
    pub fn read(kind: StageKind, table: &toml::Table) -> Result<StageParams, ParamError> {
        Ok(match kind {
            StageKind::Command => StageParams::Command(checked(table)?),
            StageKind::Load => StageParams::Load(checked(table)?),
            StageKind::Normalize => StageParams::Normalize(checked(table)?),
            StageKind::Train => StageParams::Train(checked(table)?),
            StageKind::Validate => StageParams::Validate(checked(table)?),
            StageKind::Transfer => StageParams::Transfer(checked(table)?),
        })
    }

    /// The kind these parameters belong to.
    pub fn kind(&self) -> StageKind {
        match self {
            StageParams::Command(_) => StageKind::Command,
            StageParams::Load(_) => StageKind::Load,
            StageParams::Normalize(_) => StageKind::Normalize,
            StageParams::Train(_) => StageKind::Train,
            StageParams::Validate(_) => StageKind::Validate,
            StageParams::Transfer(_) => StageKind::Transfer,
        }
    }

    /// The parameters written out canonically, as JSON (their `Serialize`): the kind, then
    /// every field of the typed struct, defaults applied, in the struct's declaration order,
    /// floats in their shortest form that reads back to the same value. Two tables that mean
    /// the same parameters (a default written out or left implicit, keys in another order, `1e-3`
    /// or `0.001`) give the same text; any difference in a value gives another. It is what
    /// identifies a stage's work — the stage cache of a run, the validator's check for
    /// identical configs and preflight's grouping of `load` stages all compare this text — and
    /// is never stored.
    pub fn canonical(&self) -> String {
        serde_json::to_string(self)
            .expect("parameters read from TOML always serialize: string keys, and `vars` is TOML already")
    }

    /// A parameter value that only a PostgreSQL stock database supports, as
    /// `(parameter, what it needs)`, so that `check` rejects it on SQLite before any trial runs.
    pub fn needs_postgres_stock(&self) -> Option<(&'static str, &'static str)> {
        match self {
            StageParams::Load(p) => (p.strategy == FetchStrategy::Copy).then_some((
                "strategy",
                "strategy = \"copy\" streams bars with PostgreSQL's COPY protocol",
            )),
            StageParams::Command(_)
            | StageParams::Normalize(_)
            | StageParams::Train(_)
            | StageParams::Validate(_)
            | StageParams::Transfer(_) => None,
        }
    }
}

/// The memory check of a `train` stage before any trial runs: its model on the input width the
/// upstream `normalize` stage gives (`seq_len` x features). Without a readable `normalize`
/// table the width is unknown and the check waits for `train` itself, which repeats it on the
/// real windows before allocating.
pub(crate) fn check_train_memory(train: &TrainParams, normalize: Option<&toml::Table>) -> Result<(), ParamError> {
    let Some(norm) = normalize.and_then(|t| params_from_table::<NormalizeParams>(t).ok()) else {
        return Ok(());
    };
    let Ok(features) = norm.feature_list() else {
        return Ok(());
    };
    super::memory::check(train, norm.seq_len, features.len(), 1)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::train::CpuEngine;

    fn read(kind: StageKind, text: &str) -> StageParams {
        StageParams::read(kind, &toml::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn the_same_parameters_written_differently_are_one_canonical_text() {
        let implicit = read(StageKind::Load, "symbols = { first = 3 }");
        let explicit = read(
            StageKind::Load,
            "strategy = \"batched\"\nsymbols = { first = 3 }\nfetch_size = 10000\nadjust = true",
        );
        assert_eq!(implicit.canonical(), explicit.canonical());
        let other = read(StageKind::Load, "symbols = { first = 3 }\nfetch_size = 9999");
        assert_ne!(implicit.canonical(), other.canonical());
        // Floats: one value, one text, however the manifest wrote it.
        let a = read(StageKind::Train, "lr = 0.001");
        let b = read(StageKind::Train, "lr = 1e-3");
        let c = read(StageKind::Train, "lr = 0.0010000000000000002");
        assert_eq!(a.canonical(), b.canonical());
        assert_ne!(a.canonical(), c.canonical());
        assert_eq!(a.kind(), StageKind::Train);
    }

    #[test]
    fn the_canonical_text_is_the_typed_struct_as_json() {
        let table: toml::Table = toml::from_str("argv = [\"echo\", \"{{ seed }}\"]\ntimeout = 1.5").unwrap();
        let typed: CommandParams = checked(&table).unwrap();
        let params = StageParams::read(StageKind::Command, &table).unwrap();
        let text = params.canonical();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            json,
            serde_json::json!({ "command": serde_json::to_value(&typed).unwrap() })
        );
        assert_eq!(json["command"]["argv"], serde_json::json!(["echo", "{{ seed }}"]));
        assert_eq!(json["command"]["timeout"], serde_json::json!(1.5));
        // No Rust type names: not `CommandParams { .. }`, `Some(..)` or `None`.
        for name in ["CommandParams", "Some(", "None"] {
            assert!(!text.contains(name), "{text}");
        }
    }

    #[test]
    fn every_kind_writes_json_without_type_names() {
        let all = [
            read(
                StageKind::Command,
                "argv = [\"true\"]\nvars = { when = 1979-05-27, x = nan }",
            ),
            read(
                StageKind::Load,
                "symbols = { random = 5, seed = 7 }\nstart = \"2020-01-02\"",
            ),
            read(StageKind::Normalize, "features = [\"close_pos\"]\nclip = 5.0"),
            read(
                StageKind::Train,
                "model = \"gru\"\nhidden = 32\ncuda_graph = false\ntarget = { mse_vs_zero = 0.9 }",
            ),
            read(StageKind::Validate, ""),
            read(StageKind::Transfer, "sizes = [4096, \"1MiB\"]\ndirection = \"both\""),
        ];
        for params in &all {
            let text = params.canonical();
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            let object = json.as_object().unwrap();
            assert_eq!(object.len(), 1, "{text}");
            assert!(object.contains_key(params.kind().as_str()), "{text}");
            for name in ["Params", "Some(", "None", "Selection", "CudaGraph", "NaiveDate"] {
                assert!(!text.contains(name), "{text}");
            }
        }
    }

    #[test]
    fn a_change_in_any_one_parameter_is_another_text() {
        let pairs = [
            (StageKind::Train, "lr = 0.001", "lr = 0.002"),
            (StageKind::Train, "", "cuda_graph = false"),
            (StageKind::Train, "hidden = [64]", "hidden = [64, 64]"),
            (StageKind::Load, "symbols = [\"AAPL\"]", "symbols = [\"MSFT\"]"),
            (
                StageKind::Load,
                "symbols = { first = 5 }",
                "symbols = { random = 5, seed = 0 }",
            ),
            (StageKind::Load, "symbols = \"all\"", "symbols = [\"all\"]"),
            (StageKind::Load, "", "end = \"2024-01-01\""),
            (
                StageKind::Command,
                "argv = [\"echo\", \"a\"]",
                "argv = [\"echo\", \"b\"]",
            ),
            (
                StageKind::Command,
                "argv = [\"echo\"]",
                "argv = [\"echo\"]\nvars = { n = 1 }",
            ),
            (
                StageKind::Command,
                "argv = [\"echo\"]\nvars = { n = 1 }",
                "argv = [\"echo\"]\nvars = { n = 2 }",
            ),
            (
                StageKind::Command,
                "argv = [\"echo\"]\nvars = { n = 1 }",
                "argv = [\"echo\"]\nvars = { n = \"1\" }",
            ),
            (
                StageKind::Command,
                "argv = [\"echo\"]\nvars = { x = nan }",
                "argv = [\"echo\"]\nvars = { x = inf }",
            ),
            (
                StageKind::Command,
                "argv = [\"echo\"]\nvars = { x = inf }",
                "argv = [\"echo\"]\nvars = { x = -inf }",
            ),
            (StageKind::Normalize, "", "method = \"robust\""),
            (StageKind::Transfer, "", "sync = [\"blocking\", \"non_blocking\"]"),
        ];
        for (kind, a, b) in pairs {
            assert_ne!(read(kind, a).canonical(), read(kind, b).canonical(), "{a:?} vs {b:?}");
        }
        // The engine set from code changes the work, so it is part of the text too.
        let mut native = read(StageKind::Train, "");
        let StageParams::Train(train) = &mut native else {
            unreachable!()
        };
        let mut autodiff = train.clone();
        autodiff.cpu_engine = CpuEngine::Autodiff;
        assert_ne!(native.canonical(), StageParams::Train(autodiff).canonical());
    }

    #[test]
    fn only_a_copy_load_needs_postgres() {
        assert!(read(StageKind::Load, "").needs_postgres_stock().is_none());
        let copy = read(StageKind::Load, "strategy = \"copy\"");
        assert_eq!(copy.needs_postgres_stock().map(|(p, _)| p), Some("strategy"));
    }
}
