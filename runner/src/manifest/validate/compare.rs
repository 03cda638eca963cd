//! The `[compare]` section: baseline, primary metric, guards and claims, each metric checked
//! against what the stages produce.

use super::*;
use crate::hint::{closest, did_you_mean};
use crate::manifest::diag::ManifestError;
use crate::manifest::raw::RawCompare;
use crate::manifest::{CompareDef, Config, GuardDef};
use std::path::Path;

impl Validator {
    pub(in crate::manifest) fn metric_ref(&mut self, metric: &str, at: &[&str], stages: &[Def]) -> bool {
        let parts = crate::metrics::summed(metric);
        if parts.len() > 1 {
            return self.summed_metric_ref(metric, &parts, at, stages);
        }
        let span = self.value_span(at);
        let Some((stage, name)) = metric.split_once('.').filter(|(s, n)| !s.is_empty() && !n.is_empty()) else {
            self.err(
                ManifestError::new(format!("metric `{metric}` must be written `<stage>.<metric>`"), span)
                    .hint("e.g. \"train.epoch_seconds\", \"train.seconds\" (stage wall time) or \"trial.seconds\""),
            );
            return false;
        };
        if stage == "trial" {
            if name != "seconds" {
                self.err(
                    ManifestError::new(format!("unknown trial metric `{metric}`"), span)
                        .hint("the only trial metric is `trial.seconds`"),
                );
                return false;
            }
            return true;
        }
        let Some(def) = stages.iter().find(|s| s.name == stage) else {
            let hint = did_you_mean(stage, stages.iter().map(|s| s.name.as_str())).unwrap_or_else(|| {
                format!(
                    "defined stages: {}",
                    stages.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                )
            });
            self.err(
                ManifestError::new(
                    format!("metric `{metric}` names stage `{stage}`, which is not defined"),
                    span,
                )
                .label("no such stage")
                .hint(hint),
            );
            return false;
        };
        if !self.stage_records(def, metric, name, span.clone()) {
            return false;
        }
        if def.cache {
            self.err(
                ManifestError::new(
                    format!(
                        "metric `{metric}` is of stage `{stage}`, which has `cache = true`: it runs once per \
                         config and its later trials reuse the result, so there is one sample per side, not one per trial"
                    ),
                    span,
                )
                .label("cached stage")
                .hint(format!(
                    "compare a metric of a stage that runs every trial, or remove `cache = true` from stage `{stage}`"
                )),
            );
            return false;
        }
        true
    }

    /// A sum of metrics (`features.seconds + train.h2d_seconds`): every part a metric, all in
    /// one unit.
    fn summed_metric_ref(&mut self, metric: &str, parts: &[&str], at: &[&str], stages: &[Def]) -> bool {
        let known = parts.iter().all(|p| self.metric_ref(p, at, stages));
        let units: std::collections::BTreeSet<&str> = parts.iter().filter_map(|p| metric_unit(p, stages)).collect();
        if known && units.len() > 1 {
            let span = self.value_span(at);
            self.err(
                ManifestError::new(
                    format!(
                        "metric `{metric}` adds up metrics in different units ({})",
                        units.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                    span,
                )
                .hint("add up metrics of one unit, e.g. seconds: \"features.seconds + train.h2d_seconds\""),
            );
            return false;
        }
        known
    }

    /// Whether stage `def`'s kind records metric `name` (a kind whose metrics are not known
    /// before the run, a command's, records any); an error with the closest name otherwise.
    fn stage_records(&mut self, def: &Def, metric: &str, name: &str, span: Option<std::ops::Range<usize>>) -> bool {
        let Some(known) = def.kind.and_then(crate::kinds::catalog::names) else {
            return true;
        };
        let kind = def.kind.map_or("", crate::kinds::StageKind::as_str);
        if known.iter().any(|(n, _)| n == name) {
            return true;
        }
        let stage = &def.name;
        let hint = closest(name, known.iter().map(|(n, _)| n.as_str()))
            .map(|c| format!("did you mean `{stage}.{c}`?"))
            .unwrap_or_else(|| {
                let listed: Vec<&str> = known.iter().map(|(n, _)| n.as_str()).take(12).collect();
                let more = known.len().saturating_sub(listed.len());
                format!(
                    "a `{kind}` stage records {}{}; `measured schema` lists them all",
                    listed.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                )
            });
        self.err(
            ManifestError::new(
                format!("metric `{metric}`: a `{kind}` stage records no metric `{name}`"),
                span,
            )
            .label("no such metric")
            .hint(hint),
        );
        false
    }

    // Long because: it reads `[compare]`'s keys one after another, each with its own check and
    // located error.
    pub(super) fn compare(
        &mut self,
        raw: Option<&RawCompare>,
        stages: &[Def],
        variants: &[String],
        dir: &Path,
    ) -> Option<CompareDef> {
        let first = variants.first().cloned().unwrap_or_else(|| "baseline".into());
        let Some(raw) = raw else {
            return Some(CompareDef {
                baseline: first,
                primary: "trial.seconds".into(),
                higher_is_better: None,
                alpha: 0.01,
                band: 0.02,
                resamples: 10_000,
                guards: Vec::new(),
                claims: Vec::new(),
                allow_identical: false,
                sweep_neighbours: false,
                quality_under_test: true,
            });
        };
        let baseline = raw.baseline.clone().unwrap_or(first);
        if !variants.is_empty() && !variants.contains(&baseline) {
            let span = self.value_span(&["compare", "baseline"]);
            let hint = did_you_mean(&baseline, variants.iter().map(String::as_str))
                .unwrap_or_else(|| format!("variants: {}", variants.join(", ")));
            self.err(
                ManifestError::new(format!("baseline `{baseline}` is not a variant"), span)
                    .label("no such variant")
                    .hint(hint),
            );
        }
        let primary = raw.primary.clone().unwrap_or_else(|| "trial.seconds".into());
        self.metric_ref(&primary, &["compare", "primary"], stages);
        let higher_is_better = match raw.direction.as_deref() {
            None => None,
            Some("lower") => Some(false),
            Some("higher") => Some(true),
            Some(other) => {
                let span = self.value_span(&["compare", "direction"]);
                self.err(
                    ManifestError::new(
                        format!("direction must be \"lower\" or \"higher\", got \"{other}\""),
                        span,
                    )
                    .hint("\"lower\" for times, \"higher\" for throughput and accuracy"),
                );
                None
            }
        };
        let sweep_neighbours = match raw.sweep.as_deref() {
            None | Some("first") => false,
            Some("neighbours") => true,
            Some(other) => {
                let span = self.value_span(&["compare", "sweep"]);
                self.err(
                    ManifestError::new(
                        format!("sweep must be \"first\" or \"neighbours\", got \"{other}\""),
                        span,
                    )
                    .hint("\"neighbours\" adds a table of each sweep point against the previous one"),
                );
                false
            }
        };
        let quality_under_test = match raw.quality.as_deref() {
            None | Some("under_test") => true,
            Some("not_under_test") => false,
            Some(other) => {
                let span = self.value_span(&["compare", "quality"]);
                self.err(
                    ManifestError::new(
                        format!("quality must be \"under_test\" or \"not_under_test\", got \"{other}\""),
                        span,
                    )
                    .label("unknown value")
                    .hint(
                        "\"under_test\" (the default) fails a guard when a trained model is no better than \
                         predicting zero; \"not_under_test\" for experiments about speed alone",
                    ),
                );
                true
            }
        };
        let alpha = raw.alpha.unwrap_or(0.01);
        if !(alpha > 0.0 && alpha < 0.5) {
            let span = self.value_span(&["compare", "alpha"]);
            self.err(
                ManifestError::new(format!("alpha must be between 0 and 0.5, got {alpha}"), span)
                    .hint("0.01 is the default; 0.05 is the usual looser level"),
            );
        }
        let band = match raw.band.as_deref() {
            None => 0.02,
            Some(b) => match parse_percent(b) {
                Some(x) if (0.0..1.0).contains(&x) => x,
                _ => {
                    let span = self.value_span(&["compare", "band"]);
                    self.err(
                        ManifestError::new(format!("band `{b}` is not a percentage between 0% and 100%"), span)
                            .hint("write e.g. band = \"2%\""),
                    );
                    0.02
                }
            },
        };
        let resamples = raw.resamples.unwrap_or(10_000);
        if resamples < 10_000 {
            let span = self.value_span(&["compare", "resamples"]);
            self.err(
                ManifestError::new(format!("resamples must be at least 10000, got {resamples}"), span)
                    .hint("fewer bootstrap resamples make the confidence interval itself noisy"),
            );
        }
        let mut guards = Vec::new();
        for (i, g) in raw.guards.iter().enumerate() {
            let idx = i.to_string();
            let (Some(metric), Some(within)) = (&g.metric, &g.within) else {
                self.missing_keys(
                    "guard",
                    &idx,
                    &[("metric", g.metric.is_some()), ("within", g.within.is_some())],
                );
                continue;
            };
            self.metric_ref(metric, &["compare", "guards", &idx, "metric"], stages);
            if let Err((msg, hint)) = check_tolerance(within) {
                let span = self.value_span(&["compare", "guards", &idx, "within"]);
                self.err(ManifestError::new(msg, span).maybe_hint(hint));
            }
            guards.push(GuardDef {
                metric: metric.clone(),
                within: within.clone(),
            });
        }
        let mut claims = Vec::new();
        for (i, c) in raw.claims.iter().enumerate() {
            let idx = i.to_string();
            let time_cost = c
                .metric
                .as_deref()
                .is_some_and(|m| Self::is_time_cost(m, &primary, higher_is_better, stages));
            if let Some(claim) = self.claim(c, &idx, &baseline, stages, variants, dir, time_cost) {
                claims.push(claim);
            }
        }
        Some(CompareDef {
            baseline,
            primary,
            higher_is_better,
            alpha,
            band,
            resamples,
            guards,
            claims,
            allow_identical: raw.allow_identical,
            sweep_neighbours,
            quality_under_test,
        })
    }
}

impl Validator {
    /// A claim's `made_on`: for a value claim only, with its hardware in words, and a link
    /// rate that comes with the metric giving this run's rate (in GB/s), or neither.
    pub(super) fn made_on(
        &mut self,
        raw: Option<&crate::manifest::raw::RawMadeOn>,
        idx: &str,
        is_value: bool,
        stages: &[Def],
    ) -> Option<crate::stats::MadeOn> {
        let raw = raw?;
        let at = |key: &'static str| ["compare", "claims", idx, "made_on", key];
        let mut ok = true;
        if !is_value {
            let span = self.value_span(&["compare", "claims", idx, "made_on"]);
            self.err(
                ManifestError::new("`made_on` is for a value claim", span)
                    .label("a speedup claim")
                    .hint("a speedup is a ratio on one machine; state `requires` for the conditions it was made under"),
            );
            ok = false;
        }
        let hardware = raw.hardware.as_deref().map(str::trim).unwrap_or_default();
        if hardware.is_empty() {
            let span = self.value_span(&["compare", "claims", idx, "made_on"]);
            self.err(
                ManifestError::new("`made_on` does not say the hardware in words", span)
                    .hint("add hardware = \"...\" as the source states it, e.g. \"a V100 on a PCIe 3.0 x16 link\""),
            );
            ok = false;
        }
        if let Some(rate) = raw.link_gbps.filter(|r| !(r.is_finite() && *r > 0.0)) {
            let span = self.value_span(&at("link_gbps"));
            self.err(ManifestError::new(
                format!("link rate {rate} GB/s is not a positive number"),
                span,
            ));
            ok = false;
        }
        match (&raw.link_gbps, &raw.link_metric) {
            (Some(_), Some(metric)) => {
                if self.metric_ref(metric, &at("link_metric"), stages) && metric_unit(metric, stages) != Some("GB/s") {
                    let span = self.value_span(&at("link_metric"));
                    self.err(
                        ManifestError::new(format!("`{metric}` is not a rate in GB/s"), span)
                            .hint("name the metric that gives this run's link rate, e.g. copy.link_theoretical_gbps"),
                    );
                    ok = false;
                }
            }
            (None, None) => {}
            (have, _) => {
                let (key, missing) = if have.is_some() {
                    ("link_gbps", "link_metric")
                } else {
                    ("link_metric", "link_gbps")
                };
                let span = self.value_span(&at(key));
                self.err(
                    ManifestError::new(format!("`{key}` without `{missing}`"), span)
                        .hint("give both: the claim's link rate and the metric of this run's, to scale a time by"),
                );
                ok = false;
            }
        }
        ok.then(|| crate::stats::MadeOn {
            hardware: hardware.to_owned(),
            gpu: raw.gpu.clone().filter(|g| !g.trim().is_empty()),
            link_gbps: raw.link_gbps,
            link_metric: raw.link_metric.clone(),
        })
    }

    /// A claim made on N cores (`requires.min_cores`) is judged only at configs that run N
    /// threads (`stats::params_unmet`): when the configs of its variant set a thread count and
    /// none is N, no run anywhere could judge it. Claims this experiment does not
    /// judge whatever it measures (untestable, another change or measurement) ask nothing of
    /// the configs. Run once the claims are valid, so each claim's index is its entry's.
    pub(super) fn claims_reach_their_cores(&mut self, compare: &CompareDef, configs: &[Config], stages: &[Def]) {
        for (i, c) in compare.claims.iter().enumerate() {
            let Some(need) = c.requires.min_cores else { continue };
            let judged = c.untestable.is_none()
                && c.source_metric.is_none()
                && c.variant_change.as_ref().is_none_or(|v| *v == c.change);
            let counts: Vec<Vec<(String, u64)>> = configs
                .iter()
                .filter(|k| k.variant == c.variant)
                .map(|k| thread_counts(k, stages))
                .collect();
            if !judged || counts.is_empty() || counts.iter().any(Vec::is_empty) {
                continue;
            }
            let all: Vec<(String, u64)> = counts.into_iter().flatten().collect();
            if all.iter().any(|(_, n)| *n == u64::from(need)) {
                continue;
            }
            let Some((path, _)) = all.first().cloned() else {
                continue;
            };
            let ran: Vec<String> = all.iter().map(|(_, n)| n.to_string()).collect();
            let idx = i.to_string();
            let span = self
                .value_span(&["compare", "claims", &idx, "requires", "min_cores"])
                .or_else(|| self.value_span(&["compare", "claims", &idx]));
            self.err(
                ManifestError::new(
                    format!(
                        "the claim is for {need} cores; no config of `{}` runs {need} threads (they run {}), so no \
                         run could judge it",
                        c.variant,
                        ran.join(", ")
                    ),
                    span,
                )
                .label(format!("needs a config with {need} threads"))
                .hint(format!(
                    "sweep the thread count up to {need}, e.g. `\"{path}\" = [1, 2, 4, {need}]`; on a machine with \
                     fewer than {need} cores that config runs oversubscribed and judges nothing"
                )),
            );
        }
    }
}

/// Every thread or worker count the stages of `config` set, as `(stages.<stage>.<key>, n)`.
fn thread_counts(config: &Config, stages: &[Def]) -> Vec<(String, u64)> {
    let params: indexmap::IndexMap<String, serde_json::Value> = config
        .stages
        .iter()
        .zip(stages)
        .map(|(s, def)| (def.name.clone(), serde_json::to_value(&s.table).unwrap_or_default()))
        .collect();
    crate::stats::thread_counts(&params)
}

pub(super) fn parse_percent(s: &str) -> Option<f64> {
    let s = s.trim();
    match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|x| x / 100.0),
        None => s.parse::<f64>().ok(),
    }
    .filter(|x| x.is_finite())
}

pub(super) fn check_tolerance(s: &str) -> Result<(), (String, Option<String>)> {
    crate::stats::Tolerance::parse(s).map(|_| ()).map_err(|e| {
        (
            format!("guard tolerance `{s}`: {}", e.message),
            Some(e.hint.to_string()),
        )
    })
}

pub(super) fn check_claim(s: &str) -> Result<(), (String, Option<String>)> {
    crate::stats::Claim::parse(s).map(|_| ()).map_err(|e| {
        (
            format!("claimed speedup `{s}`: {}", e.message),
            Some(e.hint.to_string()),
        )
    })
}

/// The unit of a metric as far as the manifest tells: `s` for stage and trial wall times, the
/// catalog's unit for a built-in stage's metric; `None` for what a command prints.
pub(super) fn metric_unit(metric: &str, stages: &[Def]) -> Option<&'static str> {
    let parts = crate::metrics::summed(metric);
    if parts.len() > 1 {
        // A sum has its parts' unit when they share one.
        let units: Vec<Option<&'static str>> = parts.iter().map(|p| metric_unit(p, stages)).collect();
        return units[0].filter(|u| units.iter().all(|v| *v == Some(*u)));
    }
    let (stage, name) = metric.split_once('.')?;
    if stage == "trial" {
        return (name == "seconds").then_some("s");
    }
    let def = stages.iter().find(|s| s.name == stage)?;
    match def.kind.and_then(|k| crate::kinds::catalog::find_in(k, name)) {
        Some(decl) => Some(decl.unit),
        None => (name == "seconds").then_some("s"),
    }
}
