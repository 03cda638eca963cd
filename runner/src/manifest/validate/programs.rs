//! Command stages whose program cannot start (validate -> **programs**): `argv[0]` is looked
//! up as the trial would look it up, so that `gzipp` is a located error in `check` rather than
//! a failed first trial.

use super::{Def, Validator};
use crate::kinds::{StageKind, StageParams};
use crate::manifest::diag::ManifestError;
use crate::manifest::Config;
use std::path::Path;

impl Validator {
    /// Each command stage's program, per distinct parameter table across configs. Skipped
    /// where it cannot be told before the run: configs that run a git revision's code (its
    /// checkout and build come first), and a path under the manifest's folder when a stage this
    /// one needs is a command too (which may build it).
    pub(super) fn programs_resolve(&mut self, stages: &[Def], configs: &[Config], manifest_dir: &Path) {
        let mut reported: Vec<(usize, String)> = Vec::new();
        for config in configs.iter().filter(|c| c.revision.is_none()) {
            for (si, def) in stages
                .iter()
                .enumerate()
                .filter(|(_, s)| s.kind == Some(StageKind::Command))
            {
                let Some(StageParams::Command(params)) = config.stages.get(si).map(|s| &s.params) else {
                    continue;
                };
                let Some(problem) = params.unresolved_program(manifest_dir) else {
                    continue;
                };
                let built_before = stages_needed(stages, si).any(|j| stages[j].kind == Some(StageKind::Command));
                let is_path = params.argv.first().is_some_and(|p| p.contains('/'));
                if (built_before && is_path) || reported.contains(&(si, problem.message.clone())) {
                    continue;
                }
                reported.push((si, problem.message.clone()));
                let span = self
                    .loc(&["stages", &def.name, "argv", "0"])
                    .value
                    .or_else(|| self.value_span(&["stages", &def.name, "argv"]))
                    .or_else(|| self.key_span(&["stages", &def.name]));
                self.err(
                    ManifestError::new(format!("stage `{}`: {}", def.name, problem.message), span)
                        .label("cannot start")
                        .hint(problem.hint),
                );
            }
        }
    }
}

/// Every stage `si` needs, directly or through others.
fn stages_needed(stages: &[Def], si: usize) -> impl Iterator<Item = usize> {
    let mut seen = vec![false; stages.len()];
    let mut todo = stages[si].needs.clone();
    while let Some(j) = todo.pop() {
        if !std::mem::replace(&mut seen[j], true) {
            todo.extend(stages[j].needs.iter().copied());
        }
    }
    seen.into_iter().enumerate().filter_map(|(j, s)| s.then_some(j))
}
