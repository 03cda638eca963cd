//! `transfer` stage parameters (manifest stage table -> `TransferParams` -> checked `Plan`).

use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, IntoDeserializer};
use serde::{Deserialize, Deserializer, Serialize};

use crate::params::{at_most, ParamError};
use crate::size::{format_bytes, SizeSpec, SIZE_HINT};

/// Parameters of a `transfer` stage: host-device copy bandwidth for every size and every
/// combination of `direction`, `host_memory` and `allocation`.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferParams {
    /// Copy sizes: byte counts, sizes with units or tensor shapes.
    #[serde(default = "default_sizes")]
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub sizes: Vec<SizeSpec>,
    /// `"h2d"`, `"d2h"` or `"both"`, one value or a list.
    #[serde(default = "default_direction")]
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub direction: ModeList<Direction>,
    /// `"pageable"` or `"pinned"` host buffers, one value or a list (default both).
    #[serde(default = "default_host_memory")]
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub host_memory: ModeList<HostMemory>,
    /// `"per_copy"` (allocate the device buffer for every copy) or `"reuse"`, one value or a
    /// list (default both).
    #[serde(default = "default_allocation")]
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub allocation: ModeList<Allocation>,
    /// `"blocking"` (the host waits for each copy, as `.to(device)` does) or `"non_blocking"`
    /// (the copy is issued and the host goes on; as `.to(device, non_blocking=True)`), one value
    /// or a list (default `"blocking"`).
    #[serde(default = "default_sync")]
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub sync: ModeList<SyncMode>,
    /// Each timed iteration also prepares the next batch on the host (one pass over a second
    /// host buffer of the same size) after issuing the copy, as a data loader does; the
    /// recorded time is then the loop's time per batch. Non-blocking copies overlap with it.
    #[serde(default)]
    pub prepare_next: bool,
    /// Recorded samples per (size, mode); each is a batch of copies lasting at least 1 ms.
    #[serde(default = "default_iterations")]
    #[schemars(range(min = 1, max = MAX_ITERATIONS))]
    pub iterations: u32,
    /// Unrecorded batches per (size, mode) before those, at least; the warm-up also lasts at
    /// least 100 ms whatever this says.
    #[serde(default = "default_warmup")]
    #[schemars(range(max = MAX_ITERATIONS))]
    pub warmup: u32,
    /// `"cpu"` (a second host buffer stands in for the device: host memcpy costs), `"cuda"`, or
    /// `"auto"` (CUDA where it can be used here, else the CPU; the stage notes which).
    #[serde(default)]
    #[schemars(skip_serializing_if = "super::params::no_schema_default")]
    pub device: TransferDevice,
}

impl Default for TransferParams {
    fn default() -> Self {
        Self {
            sizes: default_sizes(),
            direction: default_direction(),
            host_memory: default_host_memory(),
            allocation: default_allocation(),
            sync: default_sync(),
            prepare_next: false,
            iterations: default_iterations(),
            warmup: default_warmup(),
            device: TransferDevice::default(),
        }
    }
}

/// 4 KiB to 256 MiB in powers of 4: small copies are latency-bound, large ones show the link.
fn default_sizes() -> Vec<SizeSpec> {
    (0..9).map(|i| SizeSpec::Bytes(4096u64 << (2 * i))).collect()
}
fn default_direction() -> ModeList<Direction> {
    ModeList(vec![Direction::H2d])
}
fn default_host_memory() -> ModeList<HostMemory> {
    ModeList(vec![HostMemory::Pageable, HostMemory::Pinned])
}
fn default_allocation() -> ModeList<Allocation> {
    ModeList(vec![Allocation::PerCopy, Allocation::Reuse])
}
fn default_sync() -> ModeList<SyncMode> {
    ModeList(vec![SyncMode::Blocking])
}
fn default_iterations() -> u32 {
    20
}
fn default_warmup() -> u32 {
    3
}

/// `direction` as written: `both` means h2d then d2h.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    H2d,
    D2h,
    Both,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::H2d => "h2d",
            Direction::D2h => "d2h",
            Direction::Both => "both",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostMemory {
    Pageable,
    Pinned,
}

impl HostMemory {
    pub fn as_str(self) -> &'static str {
        match self {
            HostMemory::Pageable => "pageable",
            HostMemory::Pinned => "pinned",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Allocation {
    PerCopy,
    Reuse,
}

impl Allocation {
    pub fn as_str(self) -> &'static str {
        match self {
            Allocation::PerCopy => "per_copy",
            Allocation::Reuse => "reuse",
        }
    }
}

/// Whether the host waits for each copy (`blocking`) or issues it and waits only before the
/// copied batch is used (`non_blocking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SyncMode {
    Blocking,
    NonBlocking,
}

impl SyncMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SyncMode::Blocking => "blocking",
            SyncMode::NonBlocking => "non_blocking",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransferDevice {
    #[default]
    Cpu,
    Cuda,
    /// CUDA where it can be used here (a `cuda` build, a driver, a device), else the CPU.
    Auto,
}

impl TransferDevice {
    /// The device this run copies on, and for `auto` a note saying which and why.
    pub fn resolve(self) -> (TransferDevice, Option<String>) {
        if self != TransferDevice::Auto {
            return (self, None);
        }
        match crate::cuda_dl::probe() {
            Ok(runtime) => (
                TransferDevice::Cuda,
                Some(format!("device = \"auto\" ran on CUDA ({})", runtime.describe())),
            ),
            Err(why) => (
                TransferDevice::Cpu,
                Some(format!("device = \"auto\" ran on the CPU: {why}")),
            ),
        }
    }
}

/// A parameter given as one value (`"pinned"`) or a list (`["pageable", "pinned"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModeList<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ModeList<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A visitor rather than `#[serde(untagged)]`, so a bad value keeps the enum's
        // "unknown variant `x`, expected one of ..." message.
        struct Visitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> de::Visitor<'de> for Visitor<T> {
            type Value = ModeList<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|one| ModeList(vec![one]))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(ModeList)
            }
        }
        deserializer.deserialize_any(Visitor(PhantomData))
    }
}

// Follows the deserializer above: one value, or a non-empty list of distinct values.
impl<T: schemars::JsonSchema> schemars::JsonSchema for ModeList<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("OneOrMany_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one = generator.subschema_for::<T>();
        schemars::json_schema!({
            "anyOf": [
                one,
                { "type": "array", "items": one, "minItems": 1, "uniqueItems": true },
            ],
        })
    }
}

impl TransferParams {
    /// Checks every parameter; `run_transfer` runs only what passes.
    pub fn check(&self) -> Result<(), ParamError> {
        self.plan().map(|_| ())
    }

    /// The checked sizes (bytes) and modes, in manifest order.
    pub(crate) fn plan(&self) -> Result<Plan, ParamError> {
        if self.sizes.is_empty() {
            return Err(ParamError::new("sizes", "needs at least one size").with_hint(SIZE_HINT));
        }
        let mut sizes = Vec::with_capacity(self.sizes.len());
        for spec in &self.sizes {
            let bytes = spec.bytes().map_err(|message| {
                ParamError::new("sizes", format!("bad size `{spec}`: {message}")).with_hint(SIZE_HINT)
            })?;
            if sizes.contains(&bytes) {
                return Err(ParamError::new(
                    "sizes",
                    format!(
                        "`{spec}` is {} again; each size is one point of the series",
                        format_bytes(bytes)
                    ),
                )
                .with_hint("list each size once"));
            }
            if bytes > MAX_SIZE {
                return Err(ParamError::new(
                    "sizes",
                    format!("`{spec}` is {bytes} bytes, above the limit of 16 GiB per copy"),
                )
                .with_hint("a copy's bandwidth levels off long before 16 GiB; 256MiB or 1GiB is plenty"));
            }
            sizes.push(bytes);
        }
        check_list("direction", &self.direction, Direction::as_str)?;
        check_list("host_memory", &self.host_memory, HostMemory::as_str)?;
        check_list("allocation", &self.allocation, Allocation::as_str)?;
        check_list("sync", &self.sync, SyncMode::as_str)?;
        let mut modes = Vec::new();
        let mut seen = HashSet::new();
        for direction in &self.direction.0 {
            let directions: &[CopyDirection] = match direction {
                Direction::H2d => &[CopyDirection::H2d],
                Direction::D2h => &[CopyDirection::D2h],
                Direction::Both => &[CopyDirection::H2d, CopyDirection::D2h],
            };
            for &direction in directions {
                for &host_memory in &self.host_memory.0 {
                    for (&allocation, &sync) in self
                        .allocation
                        .0
                        .iter()
                        .flat_map(|a| self.sync.0.iter().map(move |s| (a, s)))
                    {
                        let mode = Mode {
                            direction,
                            host_memory,
                            allocation,
                            sync,
                        };
                        if !seen.insert(mode) {
                            // Each list has no repeats, so this is `both` beside `h2d`/`d2h`.
                            return Err(ParamError::new(
                                "direction",
                                format!("`{}` is measured twice", direction.as_str()),
                            )
                            .with_hint("`both` already includes `h2d` and `d2h`"));
                        }
                        modes.push(mode);
                    }
                }
            }
        }
        if self.iterations == 0 {
            return Err(ParamError::new("iterations", "must be at least 1, got 0")
                .with_hint("the median of 5 or more samples is a steadier value"));
        }
        for (field, value) in [("iterations", self.iterations), ("warmup", self.warmup)] {
            at_most(field, value, MAX_ITERATIONS)
                .map_err(|e| e.with_hint("every (size, mode) runs this many copies in every trial"))?;
        }
        if self.device == TransferDevice::Cuda && !cfg!(feature = "cuda") {
            return Err(no_cuda_error());
        }
        Ok(Plan {
            sizes,
            modes,
            iterations: self.iterations,
            warmup: self.warmup,
            prepare_next: self.prepare_next,
        })
    }
}

fn check_list<T: Copy + PartialEq>(
    field: &str,
    list: &ModeList<T>,
    name: fn(T) -> &'static str,
) -> Result<(), ParamError> {
    if list.0.is_empty() {
        return Err(ParamError::new(field, "needs at least one value")
            .with_hint("give one value or a list; leave the key out for the default"));
    }
    for (i, value) in list.0.iter().enumerate() {
        if list.0[..i].contains(value) {
            return Err(
                ParamError::new(field, format!("lists `{}` twice", name(*value))).with_hint("list each value once")
            );
        }
    }
    Ok(())
}

/// The error for `device = "cuda"` in a build without CUDA support.
pub(crate) fn no_cuda_error() -> ParamError {
    ParamError::new("device", "this build of measured has no CUDA support").with_hint(
        "build with `scripts/build-cuda.sh` (works without a GPU), or `cargo build --release \
         --features cuda` where the CUDA toolkit is installed; or use `device = \"cpu\"`",
    )
}

/// Largest size of one copy: 16 GiB (the source, the destination and a pinned copy of it must
/// all fit in memory).
pub(crate) const MAX_SIZE: u64 = 16 << 30;
/// Most samples (or warm-up copies) per (size, mode) in one trial.
pub(crate) const MAX_ITERATIONS: u32 = 100_000;

/// One concrete copy direction (`both` in the manifest expands to the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyDirection {
    H2d,
    D2h,
}

impl CopyDirection {
    pub fn as_str(self) -> &'static str {
        match self {
            CopyDirection::H2d => "h2d",
            CopyDirection::D2h => "d2h",
        }
    }
}

/// One measured combination; its [`Mode::name`] prefixes the metric names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mode {
    pub direction: CopyDirection,
    pub host_memory: HostMemory,
    pub allocation: Allocation,
    pub sync: SyncMode,
}

impl Mode {
    /// `h2d_pinned_reuse`, `d2h_pageable_per_copy`, `h2d_pinned_reuse_non_blocking`, ...
    /// (blocking copies, the default, carry no suffix).
    pub fn name(&self) -> String {
        let sync = match self.sync {
            SyncMode::Blocking => "",
            SyncMode::NonBlocking => "_non_blocking",
        };
        format!(
            "{}_{}_{}{sync}",
            self.direction.as_str(),
            self.host_memory.as_str(),
            self.allocation.as_str()
        )
    }
}

/// The checked parameters: sizes in bytes and the expanded mode list, in manifest order.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub sizes: Vec<u64>,
    pub modes: Vec<Mode>,
    pub iterations: u32,
    pub warmup: u32,
    pub prepare_next: bool,
}
