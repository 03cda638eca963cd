//! Claims no run of a manifest can judge, found before anything runs (`measured check`): a
//! claim made on CUDA whose configs keep a model or transfer stage on the CPU, a claim made at
//! parameter values (`requires.params`) no config of its variant has, one about a change or a
//! measurement the experiment does not make, or a value stated for hardware no machine can be
//! matched to (`made_on` without a GPU). Such a claim reports *not reproduced here* or
//! *not this experiment's claim* on every machine; `check` says so at the claim's line, with
//! what is missing. Warnings, not errors: the experiment still measures what it measures.

use super::{ClaimDef, Config, Experiment};
use crate::kinds::StageKind;
use crate::manifest::spans::{Seg, SpanIndex};

/// For a stage kind that records the device it ran on, its default when `device` is unset.
fn default_device(kind: StageKind) -> Option<&'static str> {
    match kind {
        StageKind::Train | StageKind::Validate | StageKind::Transfer => Some("cpu"),
        StageKind::Command | StageKind::Load | StageKind::Normalize => None,
    }
}

/// One warning per claim no run can judge: `file:line:col: warning: ...` with a hint line.
pub fn unjudgeable_claims(exp: &Experiment) -> Vec<String> {
    let spans = SpanIndex::new(&exp.text);
    let mut out = Vec::new();
    for (i, claim) in exp.compare.claims.iter().enumerate() {
        let Some((why, hint)) = never_judged(exp, claim) else {
            continue;
        };
        let at = spans.locate(&[Seg::Key("compare"), Seg::Key("claims"), Seg::Index(i)]);
        let offset = at.value.or(at.key).map_or(0, |r| r.start);
        let (line, col) = line_col(&exp.text, offset);
        out.push(format!(
            "{}:{line}:{col}: warning: claim \"{}\" can be judged by no run of this manifest: {why}\n  hint: {hint}",
            crate::printable::printable(&exp.path.display().to_string()),
            claim.speedup
        ));
    }
    out
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Why no run can judge `claim`, and what would let one; `None` when some config can.
fn never_judged(exp: &Experiment, claim: &ClaimDef) -> Option<(String, String)> {
    if claim.untestable.is_some() {
        return None;
    }
    if let Some(source) = &claim.source_metric {
        return Some((
            format!(
                "the source measured {source}, which this experiment does not, so every run reports it as not this \
                 experiment's claim"
            ),
            "judge it with an experiment that measures what the source measured, or remove it".to_owned(),
        ));
    }
    if let Some(change) = claim.variant_change.as_ref().filter(|c| **c != claim.change) {
        return Some((
            format!(
                "it is about \"{}\", and variant `{}` makes \"{change}\", so every run reports it as not this \
                 experiment's claim",
                claim.change, claim.variant
            ),
            "judge it with an experiment whose variant makes that change, or remove it".to_owned(),
        ));
    }
    if let Some(on) = claim.made_on.as_ref().filter(|on| on.gpu.is_none()) {
        return Some((
            format!(
                "its figure was stated for {}, and `made_on` names no GPU a machine could be matched to, so every run \
                 reports its value as context",
                on.hardware
            ),
            "name the GPU in `made_on.gpu` where the source does; where it does not, the figure can be measured \
             but not judged"
                .to_owned(),
        ));
    }
    let configs: Vec<&Config> = exp.configs.iter().filter(|c| c.variant == claim.variant).collect();
    let reasons: Vec<Vec<String>> = configs.iter().map(|c| config_misses(exp, claim, c)).collect();
    if configs.is_empty() || reasons.iter().any(Vec::is_empty) {
        return None;
    }
    let first = &reasons[0];
    let mut hint = "set what the claim was made under in the variant, or state the claim's conditions as its source \
                    made them"
        .to_owned();
    if first.iter().any(|r| r.contains("on the CPU")) {
        hint = "set `device = \"cuda\"` (or `\"auto\"`) on those stages in the claim's variant".to_owned();
    }
    Some((
        format!(
            "the claim is for {}; {} {}",
            claim.requires.describe(),
            if configs.len() == 1 {
                format!("config `{}` has", configs[0].name)
            } else {
                format!(
                    "none of the {} configs of `{}` meets it; `{}` has",
                    configs.len(),
                    claim.variant,
                    configs[0].name
                )
            },
            first.join(", ")
        ),
        hint,
    ))
}

/// What config `c` lacks for `claim`, whatever machine runs it: a model or transfer stage left
/// on the CPU (its default) under a CUDA claim, a CUDA stage under a CPU claim, and the
/// `requires.params` values it does not have.
fn config_misses(exp: &Experiment, claim: &ClaimDef, c: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(want) = claim.requires.device.as_deref() {
        for (def, stage) in exp.stages.iter().zip(&c.stages) {
            let Some(default) = default_device(def.kind) else {
                continue;
            };
            let device = stage.table.get("device").and_then(toml::Value::as_str);
            let runs = device.unwrap_or(default);
            let never = match want {
                "cuda" => runs == "cpu",
                "cpu" => runs == "cuda",
                _ => false,
            };
            if never {
                let how = if device.is_some() {
                    format!("`device = \"{runs}\"`")
                } else {
                    "no `device`, so the CPU".to_owned()
                };
                out.push(match runs {
                    "cpu" => format!("stage `{}` on the CPU ({how})", def.name),
                    _ => format!("stage `{}` on CUDA ({how})", def.name),
                });
            }
        }
    }
    let params: indexmap::IndexMap<String, serde_json::Value> = exp
        .stages
        .iter()
        .zip(&c.stages)
        .map(|(d, s)| (d.name.clone(), serde_json::to_value(&s.table).unwrap_or_default()))
        .collect();
    let only_params = crate::stats::ClaimConditions {
        params: claim.requires.params.clone(),
        ..Default::default()
    };
    out.extend(crate::stats::params_unmet(&only_params, &params));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters_from_one() {
        let text = "a = 1\n[compare]\n  claims = []\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, text.find("claims").unwrap()), (3, 3));
    }
}
