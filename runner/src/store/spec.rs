//! What a stored run is about, in a versioned form stored with it (validate -> **runspec** ->
//! store; store -> **runspec** -> rundata -> report).
//!
//! `report`, `compare` and `history` read a run through its [`StoredSpec`] only: they never rebuild
//! stages or re-validate the stored manifest with the binary at hand, so a run made by an
//! older or newer version, or by the CUDA build, stays readable after any rename. Runs stored
//! before specs existed are recovered best effort ([`StoredSpec::recover`]), with notes that say
//! what could not be read.

use crate::manifest::{Experiment, Order};
use crate::record::TrialRecord;
use crate::stats::{Claim, Direction, Tolerance};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

pub use crate::stats::{ClaimSpec, CompareSpec, GuardSpec};

/// The spec format this binary writes. A reader accepts every version up to it; fields added
/// later carry `#[serde(default)]` so that older specs still read. Version 2 added sequential
/// plans; runs stored before it were analysed unpaired unless they spanned several hosts
/// (`PAIRED_SINCE`).
pub const RUN_SPEC_VERSION: u32 = 2;

/// The first spec version whose reports analysed every interleaved run in its blocks. A spec
/// recovered from an old run's manifest has version 0.
pub const PAIRED_SINCE: u32 = 2;

/// Everything the reports need about a run, fixed when it started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSpec {
    pub version: u32,
    pub experiment: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub smoke: bool,
    pub schedule: ScheduleSpec,
    /// Stages in manifest order.
    pub stages: Vec<StageSpec>,
    pub variants: Vec<String>,
    /// Variants x sweep points, variant-major, with every stage's resolved parameters.
    pub configs: Vec<ConfigSpec>,
    /// Baseline, primary metric and its direction, thresholds, parsed guards and claims.
    pub compare: CompareSpec,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScheduleSpec {
    pub warmup: u32,
    /// The fixed count, or a sequential plan's `max`.
    pub repetitions: u32,
    pub order: Order,
    pub seed: Option<u64>,
    /// `repetitions = { min, max }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<crate::stats::SequentialPlan>,
    /// `max_time`, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSpec {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub needs: Vec<String>,
    #[serde(default)]
    pub cache: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigSpec {
    pub name: String,
    pub variant: String,
    /// Axis path -> value, rendered as TOML.
    #[serde(default)]
    pub sweep: Vec<(String, String)>,
    /// Stage name -> the parameters it ran with (as JSON; informational: nothing rebuilds
    /// a stage from them).
    #[serde(default)]
    pub params: IndexMap<String, serde_json::Value>,
    /// The git revision the variant runs (`git = "main"`), as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

/// A stored spec that this binary cannot read.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error(
        "run {run} was stored by a newer measured (run spec version {found}; this binary reads up to \
         {RUN_SPEC_VERSION}); hint: read it with that version or a newer one"
    )]
    Newer { run: String, found: u32 },
    #[error("run {run}: its stored spec is not readable: {message}")]
    Malformed { run: String, message: String },
}

impl StoredSpec {
    /// The spec of a validated experiment, for a run with `seed`.
    pub fn of(exp: &Experiment, seed: u64) -> StoredSpec {
        let c = &exp.compare;
        StoredSpec {
            version: RUN_SPEC_VERSION,
            experiment: exp.name.clone(),
            description: exp.description.clone(),
            smoke: exp.smoke,
            schedule: ScheduleSpec {
                warmup: exp.schedule.warmup,
                repetitions: exp.schedule.repetitions,
                order: exp.schedule.order,
                seed: exp.schedule.seed,
                sequential: exp.schedule.sequential,
                max_time_seconds: exp.schedule.max_time.map(|d| d.as_secs_f64()),
            },
            stages: exp
                .stages
                .iter()
                .map(|s| StageSpec {
                    name: s.name.clone(),
                    kind: s.kind.as_str().to_owned(),
                    needs: s.needs.iter().map(|&j| exp.stages[j].name.clone()).collect(),
                    cache: s.cache,
                })
                .collect(),
            variants: exp.variants.clone(),
            configs: exp
                .configs
                .iter()
                .map(|cfg| ConfigSpec {
                    name: cfg.name.clone(),
                    variant: cfg.variant.clone(),
                    sweep: cfg.sweep_point.clone(),
                    params: exp
                        .stages
                        .iter()
                        .zip(&cfg.stages)
                        .map(|(s, r)| {
                            let json = serde_json::to_value(&r.table).unwrap_or(serde_json::Value::Null);
                            (s.name.clone(), json)
                        })
                        .collect(),
                    revision: cfg.revision.as_ref().map(|r| r.rev.clone()),
                })
                .collect(),
            compare: CompareSpec {
                baseline: c.baseline.clone(),
                primary: c.primary.clone(),
                direction: c.higher_is_better.map(|h| {
                    if h {
                        Direction::HigherIsBetter
                    } else {
                        Direction::LowerIsBetter
                    }
                }),
                alpha: c.alpha,
                band: c.band,
                resamples: c.resamples,
                seed,
                sweep_neighbours: c.sweep_neighbours,
                // Validation parsed every guard and claim; they are stored parsed, so a later
                // version never has to read their text again.
                guards: c
                    .guards
                    .iter()
                    .filter_map(|g| {
                        Tolerance::parse(&g.within).ok().map(|tolerance| GuardSpec {
                            metric: g.metric.clone(),
                            tolerance,
                        })
                    })
                    .collect(),
                claims: c
                    .claims
                    .iter()
                    .filter_map(|cl| {
                        cl.value
                            .or_else(|| Claim::parse(&cl.speedup).ok())
                            .map(|claim| ClaimSpec {
                                metric: cl.metric.clone(),
                                variant: cl.variant.clone(),
                                claim,
                                text: cl.speedup.clone(),
                                source: Some(format!("{}, section \"{}\"", cl.document, cl.section)),
                                requires: cl.requires.clone(),
                                quote: Some(cl.quote.clone()),
                                change: Some(cl.change.clone()),
                                variant_change: cl.variant_change.clone(),
                                source_metric: cl.source_metric.clone(),
                                untestable: cl.untestable.clone(),
                                differs: cl.differs.clone(),
                                made_on: cl.made_on.clone(),
                            })
                    })
                    .collect(),
                quality_under_test: c.quality_under_test,
            },
        }
    }

    pub fn to_json(&self) -> String {
        // Every field is a plain string, number or list: serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a stored spec; a spec from a newer format is an error, not a guess.
    pub fn from_json(run: &str, text: &str) -> Result<StoredSpec, SpecError> {
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let malformed = |e: serde_json::Error| SpecError::Malformed {
            run: run.to_owned(),
            message: e.to_string(),
        };
        let v: Version = serde_json::from_str(text).map_err(malformed)?;
        if v.version > RUN_SPEC_VERSION {
            return Err(SpecError::Newer {
                run: run.to_owned(),
                found: v.version,
            });
        }
        serde_json::from_str(text).map_err(malformed)
    }

    /// The spec of a run stored before specs existed: its manifest validated again when this
    /// binary still accepts it, otherwise read leniently from the TOML and the stored trials.
    /// The notes say which of the two, and what could not be read.
    pub fn recover(
        run: &str,
        manifest_path: &str,
        manifest_text: &str,
        smoke: bool,
        seed: u64,
        trials: &[TrialRecord],
    ) -> (StoredSpec, Vec<String>) {
        let path = std::path::Path::new(manifest_path);
        if let Ok(exp) = crate::manifest::parse_str(path, manifest_text, smoke) {
            let note = format!(
                "Run {run} was stored before runs carried their own spec; its configs and comparison \
                 settings were read from its stored manifest."
            );
            let spec = StoredSpec {
                version: 0,
                ..StoredSpec::of(&exp, seed)
            };
            return (spec, vec![note]);
        }
        lenient(run, manifest_text, smoke, seed, trials)
    }
}

fn string<'a>(t: Option<&'a toml::Table>, k: &str) -> Option<&'a str> {
    t.and_then(|t| t.get(k)).and_then(toml::Value::as_str)
}

// Long because: it recovers each part of a spec in turn, with a note for each part that cannot be
// read.
/// Best effort for a stored manifest this binary rejects: configs from the trials, settings
/// from the TOML, and a note for each guard or claim that cannot be read (never dropped
/// silently).
fn lenient(run: &str, text: &str, smoke: bool, seed: u64, trials: &[TrialRecord]) -> (StoredSpec, Vec<String>) {
    let doc: toml::Table = toml::from_str(text).unwrap_or_default();
    let table = |k: &str| doc.get(k).and_then(toml::Value::as_table);
    let mut notes = vec![format!(
        "Run {run} was stored before runs carried their own spec, and this version of measured no \
         longer accepts its manifest; configs were read from its trials and settings from the \
         manifest text, best effort."
    )];
    let mut configs: Vec<ConfigSpec> = Vec::new();
    for t in trials {
        if !configs.iter().any(|c| c.name == t.config) {
            configs.push(ConfigSpec {
                name: t.config.clone(),
                variant: t.variant.clone(),
                sweep: t.sweep.clone(),
                params: IndexMap::new(),
                revision: None,
            });
        }
    }
    let mut variants: Vec<String> = Vec::new();
    for c in &configs {
        if !variants.contains(&c.variant) {
            variants.push(c.variant.clone());
        }
    }
    let stages = table("stages")
        .map(|s| {
            s.iter()
                .map(|(name, v)| StageSpec {
                    name: name.clone(),
                    kind: string(v.as_table(), "kind").unwrap_or_default().to_owned(),
                    needs: v
                        .get("needs")
                        .and_then(toml::Value::as_array)
                        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
                        .unwrap_or_default(),
                    cache: v.get("cache").and_then(toml::Value::as_bool).unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default();
    let compare = table("compare");
    let number = |k: &str, default: f64| {
        compare
            .and_then(|t| t.get(k))
            .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
            .unwrap_or(default)
    };
    let entries = |k: &str| -> Vec<toml::Table> {
        compare
            .and_then(|t| t.get(k))
            .and_then(toml::Value::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_table().cloned()).collect())
            .unwrap_or_default()
    };
    let mut guards = Vec::new();
    for g in entries("guards") {
        let (metric, within) = (string(Some(&g), "metric"), string(Some(&g), "within"));
        match (metric, within.map(Tolerance::parse)) {
            (Some(m), Some(Ok(tolerance))) => guards.push(GuardSpec {
                metric: m.to_owned(),
                tolerance,
            }),
            _ => notes.push(format!(
                "A guard ({}) could not be read by this version and is not evaluated.",
                toml::Value::Table(g.clone())
            )),
        }
    }
    let mut claims = Vec::new();
    for c in entries("claims") {
        let get = |k: &str| string(Some(&c), k);
        match (get("metric"), get("variant"), get("speedup").map(Claim::parse)) {
            (Some(m), Some(v), Some(Ok(claim))) => claims.push(ClaimSpec {
                metric: m.to_owned(),
                variant: v.to_owned(),
                claim,
                text: get("speedup").unwrap_or_default().to_owned(),
                source: get("source").map(str::to_owned).or_else(|| {
                    let s = c.get("source").and_then(toml::Value::as_table);
                    Some(format!(
                        "{}, section \"{}\"",
                        string(s, "document")?,
                        string(s, "section")?
                    ))
                }),
                requires: Default::default(),
                quote: get("quote").map(str::to_owned),
                change: get("change").map(str::to_owned),
                variant_change: table("variants")
                    .and_then(|t| t.get(v))
                    .and_then(|t| string(t.as_table(), "change"))
                    .map(str::to_owned),
                source_metric: get("source_metric").map(str::to_owned),
                untestable: get("untestable").map(str::to_owned),
                differs: get("differs").map(str::to_owned),
                made_on: None,
            }),
            _ => notes.push(format!(
                "A claim ({}) could not be read by this version and is not judged.",
                toml::Value::Table(c.clone())
            )),
        }
    }
    let direction = match string(compare, "direction") {
        Some("higher") => Some(Direction::HigherIsBetter),
        Some("lower") => Some(Direction::LowerIsBetter),
        _ => None,
    };
    let band = string(compare, "band")
        .and_then(|b| b.trim().trim_end_matches('%').trim().parse::<f64>().ok())
        .map_or(0.02, |p| p / 100.0);
    let schedule = table("schedule");
    let int = |k: &str, default: u32| {
        schedule
            .and_then(|t| t.get(k))
            .and_then(toml::Value::as_integer)
            .and_then(|i| u32::try_from(i).ok())
            .unwrap_or(default)
    };
    let spec = StoredSpec {
        // Recovered, not stored: analysed by an older version (see PAIRED_SINCE).
        version: 0,
        experiment: string(table("experiment"), "name").unwrap_or_default().to_owned(),
        description: string(table("experiment"), "description")
            .unwrap_or_default()
            .to_owned(),
        smoke,
        schedule: ScheduleSpec {
            warmup: int("warmup", 1),
            repetitions: int("repetitions", 5),
            order: if string(schedule, "order") == Some("sequential") {
                Order::Sequential
            } else {
                Order::Interleaved
            },
            seed: schedule
                .and_then(|t| t.get("seed"))
                .and_then(toml::Value::as_integer)
                .and_then(|i| u64::try_from(i).ok()),
            sequential: None,
            max_time_seconds: None,
        },
        stages,
        compare: CompareSpec {
            baseline: string(compare, "baseline")
                .map(str::to_owned)
                .or_else(|| variants.first().cloned())
                .unwrap_or_else(|| "baseline".to_owned()),
            primary: string(compare, "primary").unwrap_or("trial.seconds").to_owned(),
            direction,
            alpha: number("alpha", 0.01),
            band,
            resamples: compare
                .and_then(|t| t.get("resamples"))
                .and_then(toml::Value::as_integer)
                .and_then(|i| usize::try_from(i).ok())
                .unwrap_or(10_000),
            seed,
            guards,
            claims,
            sweep_neighbours: string(compare, "sweep") == Some("neighbours"),
            quality_under_test: string(compare, "quality") != Some("not_under_test"),
        },
        variants,
        configs,
    };
    (spec, notes)
}
