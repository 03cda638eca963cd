//! The `[schedule]` section and `[smoke]` overrides: repetition and warm-up bounds.

use super::*;
use crate::manifest::diag::ManifestError;
use crate::manifest::{CompareDef, Order, Schedule};
use crate::stats::SequentialPlan;

/// Longest `max_time` accepted: 30 days.
const MAX_TIME: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);
use indexmap::IndexMap;
use std::ops::Range;

/// The error for a `max_time` that is not a string: a number gets the duration it meant.
fn not_a_duration_string(value: &toml::Value, span: Option<Range<usize>>) -> ManifestError {
    let seconds = match value {
        toml::Value::Integer(n) if *n > 0 => Some(n.to_string()),
        toml::Value::Float(f) if f.is_finite() && *f > 0.0 => Some(f.to_string()),
        _ => None,
    };
    let hint = match &seconds {
        Some(n) => format!("write max_time = \"{n}s\": a duration is a string with its unit"),
        None => "write a duration like \"90s\", \"15m\" or \"1h 30m\"".to_owned(),
    };
    ManifestError::new(
        format!("`max_time` must be a duration in quotes, found {}", value.type_str()),
        span,
    )
    .label(if seconds.is_some() {
        "a number without a unit"
    } else {
        "not a duration"
    })
    .hint(hint)
}

impl Validator {
    /// The validated `[schedule]`: a fixed count or a sequential plan, with its time budget.
    pub(super) fn schedule(&mut self, raw: &crate::manifest::raw::RawSchedule) -> Schedule {
        use crate::manifest::raw::RawRepetitions;
        let mut schedule = Schedule {
            warmup: raw.warmup,
            repetitions: raw.repetitions.most(),
            sequential: None,
            max_time: None,
            order: raw.order,
            seed: raw.seed,
            keep_going: raw.keep_going,
        };
        if let RawRepetitions::Sequential { min, max } = raw.repetitions {
            let span = self.value_span(&["schedule", "repetitions"]);
            if min == 0 || min > max {
                self.err(
                    ManifestError::new(
                        format!("`repetitions` = {{ min = {min}, max = {max} }} is not a range"),
                        span,
                    )
                    .label("min must be at least 1 and at most max")
                    .hint("write e.g. `repetitions = { min = 8, max = 400 }`"),
                );
            } else if raw.order == Order::Sequential {
                let order = self.value_span(&["schedule", "order"]);
                self.err(
                    ManifestError::new(
                        "`repetitions = { min, max }` adds blocks until decided, but `order = \"sequential\"` has no blocks",
                        order,
                    )
                    .label("no blocks to add")
                    .hint("use `order = \"interleaved\"` (the default), or a fixed `repetitions = N`"),
                );
            } else {
                schedule.sequential = Some(SequentialPlan { min, max });
            }
        }
        if let Some(value) = &raw.max_time {
            let span = self.value_span(&["schedule", "max_time"]);
            let text = match value {
                toml::Value::String(text) => text.clone(),
                other => {
                    self.err(not_a_duration_string(other, span));
                    return schedule;
                }
            };
            let text = &text;
            match humantime::parse_duration(text) {
                Ok(d) if d.is_zero() => {
                    self.err(ManifestError::new("`max_time` must be longer than zero", span).hint("write e.g. \"15m\""))
                }
                Ok(d) if d > MAX_TIME => self.err(
                    ManifestError::new(format!("`max_time` = \"{text}\" is above the limit of 30 days"), span)
                        .hint("split the experiment into several runs"),
                ),
                Ok(d) if matches!(raw.repetitions, RawRepetitions::Fixed(_)) => {
                    let _ = d;
                    self.err(
                        ManifestError::new("`max_time` needs `repetitions = { min, max }`", span)
                            .label("a fixed number of repetitions always runs to its end")
                            .hint("write `repetitions = { min = 8, max = 400 }` to stop when decided or out of time"),
                    )
                }
                Ok(d) => schedule.max_time = Some(d),
                Err(e) => {
                    // A bare number lacks only its unit: seconds, as `timeout` counts them.
                    let hint = match text.trim().parse::<f64>() {
                        Ok(n) if n.is_finite() && n > 0.0 => format!("write max_time = \"{}s\" (seconds)", text.trim()),
                        _ => "write a duration like \"90s\", \"15m\" or \"1h 30m\"".to_owned(),
                    };
                    self.err(
                        ManifestError::new(format!("`max_time` = \"{text}\" is not a duration: {e}"), span)
                            .label("not a duration")
                            .hint(hint),
                    )
                }
            }
        }
        schedule
    }

    /// A design whose repetitions cannot reach `alpha` reports "inconclusive" whatever the data:
    /// the exact rank test has a smallest possible p-value. Interleaved runs are compared in
    /// blocks with the signed-rank test (floor `2 / 2^n`), sequential-order runs with the
    /// Mann-Whitney test (floor `2 / C(2n, n)`). A sequential plan needs the floor at its first
    /// look. A claim needs a bounded 95% interval as well.
    pub(in crate::manifest) fn reachable_alpha(&mut self, schedule: &Schedule, compare: &CompareDef) {
        let paired = schedule.order == Order::Interleaved;
        // A sequential plan can decide from its first look whose share of alpha clears the
        // test's floor (earlier looks spend nothing); without one, from its last.
        let (n, what, are) = match schedule.sequential {
            Some(plan) => {
                let first = plan
                    .first_deciding_look(compare.alpha, crate::stats::INTERVAL_ERROR)
                    .unwrap_or(plan.max);
                (
                    first as usize,
                    format!("a plan whose looks end at {} blocks", plan.max),
                    "is",
                )
            }
            None => (
                schedule.repetitions as usize,
                format!("{} repetitions per config", schedule.repetitions),
                "are",
            ),
        };
        let floor = crate::stats::min_attainable_p(n, paired);
        let needed = (1..=64)
            .find(|&k| crate::stats::min_attainable_p(k, paired) < compare.alpha)
            .unwrap_or(64);
        let needed_claims = if compare.claims.is_empty() {
            0
        } else if paired {
            crate::stats::MIN_CLAIM_REPETITIONS.max(crate::stats::min_values_for_interval(crate::stats::INTERVAL_ERROR))
        } else {
            crate::stats::MIN_CLAIM_REPETITIONS
        };
        let span = self
            .loc(&["schedule", "repetitions"])
            .value
            .or_else(|| self.key_span(&["schedule"]))
            .or_else(|| self.value_span(&["compare", "alpha"]));
        let fix = |k: usize| match schedule.sequential {
            Some(plan) => format!(
                "start with `min = {k}` or more (`repetitions = {{ min = {k}, max = {} }}`)",
                plan.max.max(k as u32)
            ),
            None => format!("use repetitions = {k} or more"),
        };
        let design = if paired {
            format!("the signed-rank test over {n} blocks")
        } else {
            format!("the rank test with {n} vs {n} samples")
        };
        if floor >= compare.alpha {
            self.err(
                ManifestError::new(
                    format!(
                        "{what} can never reach alpha {}: the smallest p-value {design} can give is {}, so \
                         every comparison would be inconclusive whatever the data",
                        compare.alpha,
                        format_args!("{floor:.3}")
                    ),
                    span,
                )
                .label("too few repetitions")
                .hint(format!(
                    "{}, or raise `alpha` in [compare]",
                    fix(needed.max(needed_claims))
                )),
            );
        } else if n < needed_claims {
            self.err(
                ManifestError::new(
                    format!(
                        "{what} {are} too few to judge a claim: a claim needs at least {needed_claims}, below \
                         which no 95% interval is bounded or it covers less than it says"
                    ),
                    span,
                )
                .label("too few repetitions")
                .hint(fix(needed_claims)),
            );
        }
    }

    /// Warm-up and repetitions of `[schedule]` within their bounds.
    pub(super) fn schedule_bounds(&mut self, schedule: &Schedule) {
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
        stages: &[Def],
        base: &mut [toml::Table],
        schedule: &mut Schedule,
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
                        schedule.sequential = None;
                        schedule.max_time = None;
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
