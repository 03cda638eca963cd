//! Raw manifest structs, exactly as written in TOML (file -> raw -> validate).
//!
//! Only types are checked here; unknown keys are collected (all of them, not only the first) by
//! `validate` through `serde_ignored`, and meaning is checked there too.
//!
//! The doc comments below are also the descriptions of `measured schema` (see `schema`), which
//! editors show beside each key: they are written for manifest authors.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

/// An experiment manifest for measured: a DAG of stages, the variants (and sweep points) to run
/// them in, and how to compare the results. `measured check FILE` validates it with located
/// errors; docs/manifest.md has the full reference.
// Unknown keys are errors (collected by `validate`), so the schema rejects them too.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, title = "measured experiment manifest")]
pub(crate) struct RawManifest {
    pub experiment: RawExperiment,
    #[serde(default)]
    pub schedule: RawSchedule,
    /// Stages by name (letters, digits, `_` and `-`; they appear in metric names such as
    /// `<stage>.seconds`). `kind` picks the stage's parameters.
    // Required in the schema: `validate` rejects a manifest without stages.
    #[serde(default)]
    #[schemars(!default, required, schema_with = "super::schema::stages")]
    pub stages: IndexMap<String, toml::Table>,
    /// Variants by name, each a set of overrides of stage parameters; without `[variants]` the
    /// experiment has one config, `baseline`.
    // `default` tells the schema these keys may be left out (it cannot see the `Option` through
    // `schema_with`).
    #[schemars(default, schema_with = "super::schema::variants")]
    pub variants: Option<IndexMap<String, toml::Table>>,
    /// Sweep axes: `"stages.<stage>.<parameter>" = [values]`. Every variant runs at every point
    /// of the cartesian product of the axes.
    #[schemars(default, schema_with = "super::schema::sweep")]
    pub sweep: Option<IndexMap<String, toml::Value>>,
    pub compare: Option<RawCompare>,
    /// Overrides applied by `--smoke` for a quick run: stage parameters (`"stages.<stage>.<parameter>"`),
    /// `"schedule.warmup"`, `"schedule.repetitions"` and `"sweep.<axis>"`. Checked even without
    /// `--smoke`.
    #[schemars(default, schema_with = "super::schema::smoke")]
    pub smoke: Option<toml::Table>,
    /// The stock data the experiment needs: a synthetic market, CSV files to import, or a
    /// requirement only. Read as a table so that `[smoke]` can override its keys before it is
    /// checked (see `manifest::data`).
    #[schemars(with = "Option<DataSchema>")]
    pub data: Option<toml::Table>,
}

/// What the schema says of `[data]` (the checks themselves are in `manifest::data`).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields, rename = "Data")]
#[allow(dead_code)]
struct DataSchema {
    /// A synthetic market, with the options of `measured data synth`: `symbols`, `days`,
    /// `start`, `seed`, `style`.
    synth: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    /// CSV files to import: `{ path, sha256, layout, symbol, columns, date_format, skip_bad }`;
    /// `path` is relative to the manifest's folder.
    import: Option<Vec<std::collections::BTreeMap<String, serde_json::Value>>>,
    /// What the data must hold: `{ min_symbols, min_days, codes }`.
    require: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    /// Stored dataset versions to read instead of preparing data, as `measured run --data`
    /// names them: `["prices@1"]` (`dataset@number`, a dataset's newest version, or an id).
    versions: Option<Vec<String>>,
}

/// What the experiment is.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "Experiment")]
pub(crate) struct RawExperiment {
    /// 1-64 letters, digits, `_` or `-`; used in result paths.
    #[schemars(pattern(r"^[A-Za-z0-9_-]{1,64}$"))]
    pub name: String,
    /// One sentence shown at the top of the report.
    #[serde(default)]
    pub description: String,
}

/// How many trials run, and in which order.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "Schedule")]
pub(crate) struct RawSchedule {
    /// Warm-up trials per config, run first and not counted.
    #[serde(default = "default_warmup")]
    pub warmup: u32,
    /// Measured trials per config: a number (at least 1; 8 blocks or more for a verdict at
    /// alpha 0.01), or `{ min = 8, max = 400 }` to add blocks until every comparison and claim
    /// is decided (sequential, with the error spent over the looks; needs `order =
    /// "interleaved"`).
    #[serde(default = "default_repetitions")]
    pub repetitions: RawRepetitions,
    /// With `repetitions = { min, max }`: the most time the measured blocks may take, as
    /// `"15m"`, `"90s"` or `"1h 30m"`; no new block starts once the next would pass it.
    // Read as any value, so that a number gets the duration it meant in its hint.
    #[schemars(with = "Option<String>")]
    pub max_time: Option<toml::Value>,
    #[serde(default)]
    pub order: Order,
    /// Seed of the trial order and the stage seeds; drawn at random and stored with the run
    /// when absent.
    pub seed: Option<u64>,
    /// Run every trial even when the first trial of every config failed the same way.
    #[serde(default)]
    pub keep_going: bool,
}

fn default_warmup() -> u32 {
    1
}

fn default_repetitions() -> RawRepetitions {
    RawRepetitions::Fixed(8)
}

/// `repetitions = 8` or `repetitions = { min = 8, max = 400 }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[schemars(untagged, deny_unknown_fields, rename = "Repetitions")]
pub(crate) enum RawRepetitions {
    /// That many measured trials per config.
    Fixed(#[schemars(range(min = 1))] u32),
    /// Blocks are added from `min` until decided, up to `max`.
    Sequential {
        #[schemars(range(min = 1))]
        min: u32,
        #[schemars(range(min = 1))]
        max: u32,
    },
}

impl RawRepetitions {
    /// The most measured trials per config the run may take.
    pub fn most(self) -> u32 {
        match self {
            RawRepetitions::Fixed(n) => n,
            RawRepetitions::Sequential { max, .. } => max,
        }
    }
}

// A hand-written visitor rather than `#[serde(untagged)]`, whose only error is "data did not
// match any variant": this one says what is wrong with a number or a table.
impl<'de> Deserialize<'de> for RawRepetitions {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawRepetitions;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a whole number of repetitions, or a table `{ min = 8, max = 400 }`")
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RawRepetitions, E> {
                u32::try_from(v).map(RawRepetitions::Fixed).map_err(|_| {
                    E::custom(format!(
                        "`repetitions` = {v} is not a whole number from 0 to {}",
                        u32::MAX
                    ))
                })
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RawRepetitions, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(-1))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RawRepetitions, A::Error> {
                use serde::de::Error;
                let (mut min, mut max) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    let slot = match key.as_str() {
                        "min" => &mut min,
                        "max" => &mut max,
                        other => {
                            return Err(A::Error::custom(format!(
                                "unknown key `{other}` in `repetitions`: expected `min` and `max`"
                            )))
                        }
                    };
                    let v: i64 = map.next_value()?;
                    *slot = Some(u32::try_from(v).map_err(|_| {
                        A::Error::custom(format!(
                            "`repetitions.{key}` = {v} is not a whole number from 0 to {}",
                            u32::MAX
                        ))
                    })?);
                }
                match (min, max) {
                    (Some(min), Some(max)) => Ok(RawRepetitions::Sequential { min, max }),
                    _ => Err(A::Error::custom("`repetitions` as a table needs both `min` and `max`")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for RawSchedule {
    fn default() -> Self {
        Self {
            warmup: default_warmup(),
            repetitions: default_repetitions(),
            max_time: None,
            order: Order::default(),
            seed: None,
            keep_going: false,
        }
    }
}

/// How trials of different configs are ordered in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Each block holds one repetition of every config, shuffled: configs alternate in time, so
    /// drift (thermal, background load) hits all of them alike.
    #[default]
    Interleaved,
    /// All repetitions of one config, then the next: simpler, but exposed to drift.
    Sequential,
}

/// How configs are compared: the baseline, the primary metric, the statistics, and the guards
/// and claims checked against the measurement.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "Compare")]
pub(crate) struct RawCompare {
    /// The variant every other one is compared against (default: the first variant).
    pub baseline: Option<String>,
    /// `<stage>.<metric>`, `<stage>.seconds` (the stage's wall time) or `trial.seconds`
    /// (default).
    pub primary: Option<String>,
    /// Whether lower or higher values of the primary metric are better; inferred from the
    /// metric's unit when absent.
    #[schemars(extend("enum" = ["lower", "higher"]))]
    pub direction: Option<String>,
    /// Significance level, above 0 and below 0.5 (default 0.01; Benjamini-Hochberg adjusted
    /// across comparisons).
    pub alpha: Option<f64>,
    /// Noise band such as `"2%"` (default): changes inside it count as no change.
    pub band: Option<String>,
    /// Bootstrap resamples per confidence interval (default and minimum 10000).
    #[schemars(range(min = 10000))]
    pub resamples: Option<usize>,
    /// Metrics that must not move, e.g. `{ metric = "validate.mse", within = "0.5%" }`.
    #[serde(default)]
    pub guards: Vec<RawGuard>,
    /// Claims checked against the measurement, e.g.
    /// `{ metric = "train.seconds", variant = "reuse", speedup = "1.2x..1.5x", quote = "...",
    /// source = { document = "...", section = "..." }, change = "..." }`.
    #[serde(default)]
    pub claims: Vec<RawClaim>,
    /// The configs may be identical on purpose: an A/A run that measures the noise floor.
    #[serde(default)]
    pub allow_identical: bool,
    /// With a sweep: `"neighbours"` adds a table comparing each sweep point with the one
    /// before it (64 -> 256 -> 1024), ratio and CI, per variant; `"first"` (default) compares
    /// only as the baseline rules say.
    #[schemars(extend("enum" = ["first", "neighbours"]))]
    pub sweep: Option<String>,
    /// Whether the trained model's quality is under test: `"under_test"` (default), where a model
    /// whose validation MSE is no better than predicting zero is a failed guard, or
    /// `"not_under_test"`, where the report still shows its quality but judges nothing by it.
    #[schemars(extend("enum" = ["under_test", "not_under_test"]))]
    pub quality: Option<String>,
}

/// A correctness guard: an equivalence test that the metric stays within a tolerance.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "Guard")]
pub(crate) struct RawGuard {
    // Optional here so that a missing key is reported with the manifest's other mistakes
    // rather than stopping the parse (validate requires them, and so does the schema).
    /// `<stage>.<metric>` that must not change.
    #[schemars(required)]
    pub metric: Option<String>,
    /// Tolerance: relative (`"0.5%"`) or absolute (`"0.001"`).
    #[schemars(required)]
    pub within: Option<String>,
}

/// A claim from a report or a pull request, checked against the measured speedup. It names
/// where it comes from (`quote` and `source`, checked against `sources/<document>.md` next to
/// the manifest) and what it is about (`change`, `source_metric`, `requires`): a claim about
/// another change or another measurement than the experiment's is reported as "not this
/// experiment's claim", never judged.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(
    deny_unknown_fields,
    rename = "Claim",
    extend("oneOf" = [{ "required": ["speedup"] }, { "required": ["value"] }])
)]
pub(crate) struct RawClaim {
    /// `<stage>.<metric>` the claim is about.
    #[schemars(required)]
    pub metric: Option<String>,
    /// The variant claimed to be faster than the baseline.
    #[schemars(required)]
    pub variant: Option<String>,
    /// The claimed speedup: `"3x..4x"`, `"3-4x"`, `"1.5x"`, `"~2x"`, or improvements such as
    /// `"20%"`, `">= 20%"`, `"5%..15%"` (or a `value` instead).
    pub speedup: Option<String>,
    /// Instead of a speedup, the claimed value of the variant's metric: `"2ms..10ms"`,
    /// `"~0.5-2ms"`, `"60%..90%"`, `">= 60%"` (times in ns, us, ms or s for a metric in
    /// seconds; percentages for one in %), judged on the interval of its median.
    pub value: Option<String>,
    /// The claim word for word, as its source states it: it must occur, byte for byte, in a
    /// `> ` line under the source's section in `sources/<document>.md`.
    #[schemars(required)]
    pub quote: Option<String>,
    /// Where the claim is made: `{ document = "stock-trainer", section = "Performance Expectations" }`.
    #[schemars(required)]
    pub source: Option<RawSource>,
    /// The change the claim is about, in words. The claimed variant's `change` must read the
    /// same for the claim to be judged; otherwise it is not this experiment's claim.
    #[schemars(required)]
    pub change: Option<String>,
    /// What the source measured, when it is not what `metric` measures (e.g. "validation
    /// time"): the claim is then not this experiment's claim.
    pub source_metric: Option<String>,
    /// Why this experiment cannot test the claim: reported as "not testable here: <reason>",
    /// never judged.
    pub untestable: Option<String>,
    /// What the claim was made under; a run that does not meet it reports "not reproduced
    /// here" instead of judging the claim.
    pub requires: Option<RawRequires>,
    /// Where this experiment deliberately measures differently from the source, in words:
    /// printed beside the verdict.
    pub differs: Option<String>,
    /// For a value claim: the hardware its figure was stated for. Judged only there; elsewhere
    /// the measurement is context, scaled to the claim's link where `link_gbps` is given.
    pub made_on: Option<RawMadeOn>,
}

/// `made_on = { hardware = "a V100 on a PCIe 3.0 x16 link", gpu = "V100", link_gbps = 15.75,
/// link_metric = "copy.link_theoretical_gbps" }`
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "MadeOn")]
pub(crate) struct RawMadeOn {
    /// The hardware in words, as the source states it.
    #[schemars(required)]
    pub hardware: Option<String>,
    /// A part of the GPU's name that identifies it (`"V100"`); leave it out where the source
    /// names no GPU: no machine is then that hardware.
    pub gpu: Option<String>,
    /// The claim's link rate, GB/s per direction; with `link_metric`, a time is scaled to it.
    pub link_gbps: Option<f64>,
    /// The metric in GB/s that gives this run's rate of the same link.
    pub link_metric: Option<String>,
}

/// Where a claim is made: a document in `sources/` next to the manifest and a section of it.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "ClaimSource")]
pub(crate) struct RawSource {
    /// The file `sources/<document>.md` next to the manifest (letters, digits, `_`, `-`).
    #[schemars(required, pattern(r"^[A-Za-z0-9_-]{1,64}$"))]
    pub document: Option<String>,
    /// A `## ` heading of that file: the source's own heading the claim sits under.
    #[schemars(required)]
    pub section: Option<String>,
}

/// `requires = { device = "cuda", min_cores = 30, params = { "stages.load.symbols" = { first = 500 } } }`
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "ClaimConditions")]
pub(crate) struct RawRequires {
    /// `"cuda"`: made on a GPU; `"cpu"`: made on a CPU.
    #[schemars(regex(pattern = "^(cpu|cuda)$"))]
    pub device: Option<String>,
    /// Made on a machine with at least this many cores.
    pub min_cores: Option<u32>,
    /// `"stages.<stage>.<param>"` -> the value the measured config must have.
    #[serde(default)]
    #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
    pub params: IndexMap<String, toml::Value>,
    /// A condition on the workload: `metric` below `below`, medians of the baseline's trials
    /// (`{ metric = "train.batch_prep_host_seconds", below = "train.compute_seconds" }`).
    pub holds: Option<RawHolds>,
}

/// `holds = { metric = "<stage>.<metric>", below = "<stage>.<metric>" }`
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "MetricBelow")]
pub(crate) struct RawHolds {
    /// The metric that must be smaller (a sum with ` + ` allowed).
    pub metric: String,
    /// The metric it must be smaller than.
    pub below: String,
}
