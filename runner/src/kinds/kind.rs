//! The stage kinds this binary knows, as a type (manifest::validate -> **kind** -> each kind's
//! parameters): the word a manifest names a kind by, what each kind consumes and produces, the
//! parameters it accepts and their JSON schema. Every answer is an exhaustive `match`, so a new
//! kind does not compile until each question has one.

use super::command::CommandParams;
use super::load::LoadParams;
use super::normalize::NormalizeParams;
use super::params::field_names;
use super::train::{TrainParams, ValidateParams};
use super::transfer::TransferParams;
use crate::artifact::ArtifactKind;
use std::fmt;

/// A stage kind: what `kind = "..."` in a `[stages.<name>]` table names.
///
/// Read from its manifest word with [`StageKind::parse`] (also `FromStr` and serde, through the
/// same parser), written back with [`StageKind::as_str`] (also `Display` and serde).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum StageKind {
    /// Runs a program and records what it prints.
    Command,
    /// Reads daily bars from the stock database.
    Load,
    /// Turns bars into normalized feature windows.
    Normalize,
    /// Trains a model on windows.
    Train,
    /// Scores a trained model on the validation windows.
    Validate,
    /// Times host/device copies.
    Transfer,
}

// A new variant fails this match: add it to `StageKind::ALL` as well.
const _: () = match StageKind::Command {
    StageKind::Command
    | StageKind::Load
    | StageKind::Normalize
    | StageKind::Train
    | StageKind::Validate
    | StageKind::Transfer => {}
};

impl StageKind {
    /// Every kind, in the order `measured schema` and the validator's hints list them.
    pub const ALL: [StageKind; 6] = [
        StageKind::Command,
        StageKind::Load,
        StageKind::Normalize,
        StageKind::Train,
        StageKind::Validate,
        StageKind::Transfer,
    ];

    /// The word a manifest names the kind by (`"load"`).
    pub fn as_str(self) -> &'static str {
        match self {
            StageKind::Command => "command",
            StageKind::Load => "load",
            StageKind::Normalize => "normalize",
            StageKind::Train => "train",
            StageKind::Validate => "validate",
            StageKind::Transfer => "transfer",
        }
    }

    /// The kind a manifest word names, or a stored run's kind text; `None` for a word that
    /// names no kind. The only reading of a kind from text.
    pub fn parse(word: &str) -> Option<StageKind> {
        StageKind::ALL.into_iter().find(|k| k.as_str() == word)
    }

    /// The artifact this kind needs from upstream, if any.
    pub fn input(self) -> Option<ArtifactKind> {
        match self {
            StageKind::Command | StageKind::Load | StageKind::Transfer => None,
            StageKind::Normalize => Some(ArtifactKind::Bars),
            StageKind::Train => Some(ArtifactKind::Windows),
            StageKind::Validate => Some(ArtifactKind::Model),
        }
    }

    /// The artifact this kind produces.
    pub fn output(self) -> ArtifactKind {
        match self {
            StageKind::Command | StageKind::Validate | StageKind::Transfer => ArtifactKind::None,
            StageKind::Load => ArtifactKind::Bars,
            StageKind::Normalize => ArtifactKind::Windows,
            StageKind::Train => ArtifactKind::Model,
        }
    }

    /// Parameter names accepted in the stage table (besides kind/needs/cache), read from the
    /// parameter struct's serde derive.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            StageKind::Command => field_names::<CommandParams>(),
            StageKind::Load => field_names::<LoadParams>(),
            StageKind::Normalize => field_names::<NormalizeParams>(),
            StageKind::Train => field_names::<TrainParams>(),
            StageKind::Validate => field_names::<ValidateParams>(),
            StageKind::Transfer => field_names::<TransferParams>(),
        }
    }

    /// JSON Schema of the kind's parameter struct, for `measured schema` (editor completion).
    pub fn schema(self, generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        use schemars::JsonSchema;
        match self {
            StageKind::Command => CommandParams::json_schema(generator),
            StageKind::Load => LoadParams::json_schema(generator),
            StageKind::Normalize => NormalizeParams::json_schema(generator),
            StageKind::Train => TrainParams::json_schema(generator),
            StageKind::Validate => ValidateParams::json_schema(generator),
            StageKind::Transfer => TransferParams::json_schema(generator),
        }
    }
}

impl fmt::Display for StageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for StageKind {
    type Err = String;

    fn from_str(word: &str) -> Result<Self, String> {
        StageKind::parse(word).ok_or_else(|| format!("unknown stage kind `{word}`"))
    }
}

impl TryFrom<String> for StageKind {
    type Error = String;

    fn try_from(word: String) -> Result<Self, String> {
        word.parse()
    }
}

impl From<StageKind> for &'static str {
    fn from(kind: StageKind) -> &'static str {
        kind.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_word() {
        for (i, kind) in StageKind::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, i, "ALL is in declaration order");
            assert_eq!(StageKind::parse(kind.as_str()), Some(kind));
            assert_eq!(kind.to_string().parse::<StageKind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
            assert_eq!(serde_json::from_str::<StageKind>(&json).unwrap(), kind);
        }
        assert_eq!(StageKind::parse("lod"), None);
        assert_eq!(StageKind::parse("Load"), None);
        assert!(serde_json::from_str::<StageKind>("\"lod\"").is_err());
    }
}
