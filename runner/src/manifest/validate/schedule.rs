//! The `[schedule]` section and `[smoke]` overrides: repetition and warm-up bounds.

use super::*;
use crate::manifest::diag::ManifestError;
use crate::manifest::StageDef;
use indexmap::IndexMap;
use std::ops::Range;

impl Validator {
    /// Warm-up and repetitions of `[schedule]` within their bounds.
    pub(super) fn schedule_bounds(&mut self, schedule: &crate::manifest::Schedule) {
        for (key, value, max) in [
            ("repetitions", schedule.repetitions, MAX_REPETITIONS),
            ("warmup", schedule.warmup, MAX_WARMUP),
        ] {
            let span = self.value_span(&["schedule", key]);
            self.bound(key, value, max, span);
        }
    }

    /// `key` = `value` within `max` (`MAX_WARMUP`, `MAX_REPETITIONS`).
    pub(super) fn bound(&mut self, key: &str, value: u32, max: u32, span: Option<Range<usize>>) {
        if value > max {
            self.err(
                ManifestError::new(format!("`{key}` = {value} is above the limit of {max}"), span)
                    .label("too many")
                    .hint("a run of this size would not finish; split it into several runs"),
            );
        }
    }

    pub(super) fn apply_smoke(
        &mut self,
        table: &toml::Table,
        stages: &[StageDef],
        base: &mut [toml::Table],
        schedule: &mut crate::manifest::Schedule,
        sweep: &mut Option<IndexMap<String, toml::Value>>,
    ) {
        for ov in flatten(table, &["smoke".to_owned()]) {
            let at: Vec<&str> = ov.at.iter().map(String::as_str).collect();
            if let Some(field) = ov.path.strip_prefix("schedule.") {
                let n = ov.value.as_integer().filter(|n| *n >= 0 && *n <= u32::MAX as i64);
                match (field, n) {
                    ("warmup", Some(n)) => {
                        schedule.warmup = n as u32;
                        let span = self.value_span(&at);
                        self.bound(field, schedule.warmup, MAX_WARMUP, span);
                    }
                    ("repetitions", Some(n)) if n >= 1 => {
                        schedule.repetitions = n as u32;
                        let span = self.value_span(&at);
                        self.bound(field, schedule.repetitions, MAX_REPETITIONS, span);
                    }
                    ("warmup" | "repetitions", _) => {
                        let span = self.value_span(&at);
                        self.err(ManifestError::new(
                            format!("`{}` must be a whole number (repetitions at least 1)", ov.path),
                            span,
                        ));
                    }
                    _ => {
                        let span = self.key_span(&at);
                        self.err(ManifestError::new(format!("[smoke] cannot change `{}`", ov.path), span).hint("[smoke] may set schedule.warmup, schedule.repetitions, sweep.<axis>, data.<key> and stage parameters"));
                    }
                }
                continue;
            }
            if ov.path.starts_with("data.") {
                self.smoke_data.push(ov);
                continue;
            }
            if let Some(axis) = ov.path.strip_prefix("sweep.") {
                match sweep.as_mut().and_then(|s| s.get_mut(axis)) {
                    Some(slot) => {
                        *slot = ov.value.clone();
                        self.smoke_sweep_at.insert(axis.to_owned(), ov.at.clone());
                    }
                    None => {
                        let span = self.key_span(&at);
                        self.err(
                            ManifestError::new(
                                format!("[smoke] sets sweep axis `{axis}`, which is not in [sweep]"),
                                span,
                            )
                            .hint("name an axis defined in [sweep]"),
                        );
                    }
                }
                continue;
            }
            if let Some((si, segs)) = self.check_path(&ov, stages, "smoke override") {
                match set_path(&mut base[si], &segs, ov.value.clone()) {
                    Ok(()) => self.smoke_origin.push((si, segs[0].clone(), ov.at.clone())),
                    Err(msg) => {
                        let span = self.key_span(&at);
                        self.err(ManifestError::new(msg, span));
                    }
                }
            }
        }
    }
}
