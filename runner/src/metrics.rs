//! Metric samples recorded by stages (stage -> exec -> reporters/store).
//!
//! A stage records metrics under stage-local names (`epoch_seconds`); reports and `[compare]`
//! refer to them as `<stage>.<metric>` (`train.epoch_seconds`).
//!
//! A stage also records notes: plain sentences on what it left out or changed on its own
//! (symbols it dropped, rows it skipped), so that a run says what its figures cover.
//!
//! And facts: what the stage actually ran on and with, once defaults and `auto` are resolved
//! (`device = "cuda"`, `rnn_engine = "cudnn"`), as name -> text pairs. The names each kind
//! records are declared in `kinds::facts`; claims are judged on the trials whose facts meet
//! their conditions.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One measured value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    /// `s`, `B`, `count`, a rate ending in `/s`, `score` (higher is better) or `loss` (lower is better).
    pub unit: String,
    /// Position in a series (epoch, step, size index), `None` for a single value.
    pub step: Option<i64>,
}

/// Metrics one stage run keeps (a program printing metric lines without end cannot make
/// measured hold more); further ones are counted and noted, not kept.
pub const MAX_METRICS: usize = 100_000;
/// Notes one stage run keeps; further ones are counted, not kept.
pub const MAX_NOTES: usize = 20;
/// Characters of one note; a longer note is cut and ends with `…`.
pub const MAX_NOTE_CHARS: usize = 1000;
/// Names a note lists before saying how many more there are.
pub const MAX_NAMED: usize = 10;
/// Facts one stage run keeps; further names are counted and noted, not kept.
pub const MAX_FACTS: usize = 32;
/// Characters of a fact's name; a longer name is not kept.
pub const MAX_FACT_NAME: usize = 64;
/// Characters of a fact's value; a longer value is cut and ends with `…`.
pub const MAX_FACT_CHARS: usize = 300;

/// What one stage run recorded about what it ran on: fact name -> value.
pub type Facts = BTreeMap<String, String>;

/// Collects the metrics and notes one stage run records.
#[derive(Debug, Default, Clone)]
pub struct Recorder {
    metrics: Vec<Metric>,
    /// Metrics past [`MAX_METRICS`].
    metrics_left_out: usize,
    notes: Vec<String>,
    /// Notes past [`MAX_NOTES`].
    notes_left_out: usize,
    facts: Facts,
    /// Facts not kept: past [`MAX_FACTS`], or with a name that is not a fact's.
    facts_left_out: usize,
}

impl Recorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a single value (at most [`MAX_METRICS`] per stage run).
    pub fn record(&mut self, name: impl Into<String>, value: f64, unit: &str) {
        self.push(name.into(), None, value, unit);
    }

    /// Records one point of a series (per epoch, per size, ...).
    pub fn record_step(&mut self, name: impl Into<String>, step: i64, value: f64, unit: &str) {
        self.push(name.into(), Some(step), value, unit);
    }

    fn push(&mut self, name: String, step: Option<i64>, value: f64, unit: &str) {
        if self.metrics.len() >= MAX_METRICS {
            self.metrics_left_out += 1;
            return;
        }
        self.metrics.push(Metric {
            name,
            value,
            unit: unit.to_owned(),
            step,
        });
    }

    /// Metrics recorded past [`MAX_METRICS`] and not kept.
    pub fn metrics_left_out(&self) -> usize {
        self.metrics_left_out
    }

    /// Records a note: what the stage dropped, skipped or changed, with figures. Kept once
    /// (a repeated note is not stored twice), cut to [`MAX_NOTE_CHARS`], at most
    /// [`MAX_NOTES`] per stage run.
    pub fn note(&mut self, text: impl Into<String>) {
        let text = cut(text.into().trim(), MAX_NOTE_CHARS);
        if text.is_empty() || self.notes.contains(&text) {
            return;
        }
        if self.notes.len() < MAX_NOTES {
            self.notes.push(text);
        } else {
            self.notes_left_out += 1;
        }
    }

    /// Records a fact: what the stage ran on or with (`device` = `cuda`), after defaults and
    /// `auto` are resolved. A name is lowercase ASCII letters, digits and `_`, at most
    /// [`MAX_FACT_NAME`] characters; recording a name again replaces its value. The value is
    /// cut to [`MAX_FACT_CHARS`]; at most [`MAX_FACTS`] names per stage run.
    pub fn fact(&mut self, name: &str, value: impl Into<String>) {
        let valid = !name.is_empty()
            && name.len() <= MAX_FACT_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid || (self.facts.len() >= MAX_FACTS && !self.facts.contains_key(name)) {
            self.facts_left_out += 1;
            return;
        }
        let value = cut(value.into().trim(), MAX_FACT_CHARS);
        self.facts.insert(name.to_owned(), value);
    }

    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// The facts, taken out; a note says how many were not kept, if any (so take the facts
    /// before [`Recorder::into_parts`]).
    pub fn take_facts(&mut self) -> Facts {
        if self.facts_left_out > 0 {
            let left_out = std::mem::take(&mut self.facts_left_out);
            self.note(format!(
                "{left_out} more facts were recorded but not kept (at most {MAX_FACTS} per stage run, \
                 named in lowercase letters, digits and `_`)"
            ));
        }
        std::mem::take(&mut self.facts)
    }

    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// The value recorded under `name` without a step, if any.
    #[cfg(test)]
    pub(crate) fn single(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name && m.step.is_none())
            .map(|m| m.value)
    }

    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    pub fn into_metrics(self) -> Vec<Metric> {
        self.metrics
    }

    /// The metrics and the notes (with one saying how many metrics, and one how many notes,
    /// were left out, if any).
    pub fn into_parts(self) -> (Vec<Metric>, Vec<String>) {
        let mut notes = self.notes;
        if self.metrics_left_out > 0 {
            notes.push(format!(
                "{} more metrics were recorded but not kept (at most {MAX_METRICS} per stage run)",
                self.metrics_left_out
            ));
        }
        if self.notes_left_out > 0 {
            notes.push(format!(
                "{} more notes were recorded but not kept (at most {MAX_NOTES} per stage run)",
                self.notes_left_out
            ));
        }
        (self.metrics, notes)
    }
}

/// `s` cut to at most `max` characters, ending with `…` when it was cut.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max.saturating_sub(1)) {
        Some((i, _)) if s[i..].chars().nth(1).is_some() => format!("{}…", &s[..i]),
        _ => s.to_owned(),
    }
}

/// `A, B, C` for up to [`MAX_NAMED`] names, then `(and K more)`.
pub fn named_list(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(MAX_NAMED).map(String::as_str).collect();
    let more = names.len().saturating_sub(MAX_NAMED);
    if more > 0 {
        format!("{} (and {more} more)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// `1 symbol`, `3 symbols`.
pub fn count(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// The metrics a comparison or claim adds up: `features.seconds + train.h2d_seconds` names two
/// (each trial's value is their sum); a plain name names itself. Parts are trimmed.
pub fn summed(metric: &str) -> Vec<&str> {
    metric.split('+').map(str::trim).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_bounded_in_length_and_number_and_kept_once() {
        let mut rec = Recorder::new();
        rec.note("dropped 1 symbol");
        rec.note("dropped 1 symbol");
        rec.note("x".repeat(5000));
        assert_eq!(rec.notes().len(), 2);
        assert_eq!(rec.notes()[1].chars().count(), MAX_NOTE_CHARS);
        assert!(rec.notes()[1].ends_with('…'));
        for i in 0..30 {
            rec.note(format!("note {i}"));
        }
        let (_, notes) = rec.into_parts();
        assert_eq!(notes.len(), MAX_NOTES + 1);
        assert_eq!(
            notes[MAX_NOTES],
            "12 more notes were recorded but not kept (at most 20 per stage run)"
        );
    }

    #[test]
    fn metrics_are_bounded_in_number_and_the_rest_counted() {
        let mut rec = Recorder::new();
        for i in 0..MAX_METRICS + 5 {
            if i % 2 == 0 {
                rec.record("m", i as f64, "s");
            } else {
                rec.record_step("curve", i as i64, 1.0, "loss");
            }
        }
        assert_eq!(rec.metrics().len(), MAX_METRICS);
        assert_eq!(rec.metrics_left_out(), 5);
        assert_eq!(rec.metrics()[MAX_METRICS - 1].step, Some(MAX_METRICS as i64 - 1));
        let (metrics, notes) = rec.into_parts();
        assert_eq!(metrics.len(), MAX_METRICS);
        assert_eq!(
            notes,
            ["5 more metrics were recorded but not kept (at most 100000 per stage run)"]
        );
        let (_, none) = Recorder::new().into_parts();
        assert!(none.is_empty());
    }

    #[test]
    fn facts_are_bounded_replaced_by_name_and_the_rest_noted() {
        let mut rec = Recorder::new();
        rec.fact("device", "cpu");
        rec.fact("device", " cuda ");
        rec.fact("gpu", "x".repeat(5000));
        rec.fact("Bad-Name", "kept? no");
        rec.fact("", "no name");
        assert_eq!(rec.facts()["device"], "cuda");
        assert_eq!(rec.facts()["gpu"].chars().count(), MAX_FACT_CHARS);
        assert!(rec.facts()["gpu"].ends_with('…'));
        for i in 0..40 {
            rec.fact(&format!("f{i}"), i.to_string());
        }
        // Replacing a kept fact still works at the bound.
        rec.fact("device", "cpu");
        let facts = rec.take_facts();
        assert_eq!(facts.len(), MAX_FACTS);
        assert_eq!(facts["device"], "cpu");
        assert!(rec.facts().is_empty(), "taken out");
        let (_, notes) = rec.into_parts();
        assert_eq!(
            notes,
            [
                "12 more facts were recorded but not kept (at most 32 per stage run, named in lowercase \
              letters, digits and `_`)"
            ]
        );
        let mut quiet = Recorder::new();
        quiet.fact("threads", "2");
        assert_eq!(quiet.take_facts().len(), 1);
        assert!(quiet.into_parts().1.is_empty(), "no note when every fact was kept");
    }

    #[test]
    fn lists_name_ten_and_count_the_rest() {
        let names: Vec<String> = (0..13).map(|i| format!("S{i}")).collect();
        assert_eq!(
            named_list(&names),
            "S0, S1, S2, S3, S4, S5, S6, S7, S8, S9 (and 3 more)"
        );
        assert_eq!(named_list(&names[..2]), "S0, S1");
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "ab…");
        assert_eq!(cut("ééé", 2), "é…");
        assert_eq!(
            (count(1, "symbol"), count(2, "symbol")),
            ("1 symbol".into(), "2 symbols".into())
        );
    }
}
