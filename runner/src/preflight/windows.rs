//! The preflight's check of `normalize` stages (preflight -> **windows**): whether the bars a
//! load stage loads leave one training and one validation window at each config's `seq_len`,
//! counted as the stage counts them, so that a `seq_len` too long fails before the first trial
//! with the largest that fits, not in every trial.

use crate::db::Db;
use crate::kinds::{LoadParams, StageKind, StageParams};
use crate::manifest::{self, Experiment, ManifestError};
use crate::market::{self, DataView};

/// What one load stage loads for some of the configs: the symbols it keeps, with their bars.
pub(super) struct Loaded<'a> {
    pub(super) stage: usize,
    pub(super) configs: &'a [usize],
    pub(super) params: &'a LoadParams,
    pub(super) spans: &'a std::collections::HashMap<String, market::BarSpan>,
}

/// Normalize stages fed by `loaded`: each needs one training window (feature warm-up +
/// `seq_len` + `horizon` bars of a symbol before the split) and one validation window (its
/// end `gap` rows past the split, its target inside the data), as the stage builds them from
/// the same bars. A `seq_len` too long for them is named with the largest that fits.
pub(super) async fn window_problems(
    exp: &Experiment,
    db: &Db,
    view: &DataView,
    loaded: &Loaded<'_>,
) -> Result<Vec<ManifestError>, market::MarketError> {
    let mut out = Vec::new();
    let (Some(first), Some(last)) = (
        loaded.spans.values().map(|s| s.first).min(),
        loaded.spans.values().map(|s| s.last).max(),
    ) else {
        return Ok(out);
    };
    let codes: Vec<String> = loaded.spans.keys().cloned().collect();
    for (ni, def) in exp.stages.iter().enumerate() {
        if def.kind != StageKind::Normalize || !def.needs.contains(&loaded.stage) {
            continue;
        }
        let mut reported: Vec<String> = Vec::new();
        for &ci in loaded.configs {
            let Some(r) = exp.configs[ci].stages.get(ni) else {
                continue;
            };
            let StageParams::Normalize(p) = &r.params else {
                continue;
            };
            let split = p.split_between(first, last);
            let before_split = split.pred_opt().map(|d| loaded.params.end.map_or(d, |e| e.min(d)));
            let before = market::bars_per_symbol(db, view, &codes, loaded.params.start, before_split).await?;
            let rows: Vec<(u64, u64)> = loaded
                .spans
                .iter()
                .map(|(code, s)| (before.get(code).map_or(0, |b| b.bars), s.bars))
                .collect();
            let Some(problem) = Windows::of(p, split, &rows).problem() else {
                continue;
            };
            if reported.contains(&problem.0) {
                continue;
            }
            reported.push(problem.0.clone());
            let (message, hint) = problem;
            out.push(
                ManifestError::new(
                    format!(
                        "stage `{}` (config `{}`): {message}, in the bars stage `{}` loads",
                        def.name, exp.configs[ci].name, exp.stages[loaded.stage].name
                    ),
                    manifest::param_span(exp, ci, &def.name, "seq_len"),
                )
                .label("longer than the data")
                .hint(hint),
            );
        }
    }
    Ok(out)
}

/// The windows a `normalize` stage can build from symbols with `(rows before the split, rows)`
/// each, in the stage's own arithmetic (`features::windows`).
struct Windows<'a> {
    p: &'a crate::features::NormalizeParams,
    split: chrono::NaiveDate,
    warm: i64,
    /// The largest `seq_len` that leaves a training window, and one that leaves a validation
    /// window (`None`: none does).
    train_fit: Option<i64>,
    valid_fit: Option<i64>,
    /// The most rows any symbol has before the split.
    most_before: i64,
}

impl<'a> Windows<'a> {
    fn of(p: &'a crate::features::NormalizeParams, split: chrono::NaiveDate, rows: &[(u64, u64)]) -> Self {
        let warm = p.warmup_rows() as i64;
        let h = p.horizon as i64;
        let per_symbol = p.scope == crate::features::NormScope::PerSymbol;
        let positive = |n: i64| (n >= 1).then_some(n);
        // A training window ends at `warm + seq_len - 1` or later, its target `h` rows
        // further, before the split.
        let train_fit = rows.iter().filter_map(|&(v0, _)| positive(v0 as i64 - warm - h)).max();
        // A validation window ends `gap` rows past the split (and not before the features
        // warm up), its target inside the data; per-symbol scaling also needs `seq_len`
        // training rows after the warm-up.
        let valid_fit = rows
            .iter()
            .filter_map(|&(v0, n)| {
                let (v0, n) = (v0 as i64, n as i64);
                let mut fit = n - h - warm;
                match p.gap {
                    None => fit = fit.min(n - h - 1 - v0),
                    Some(g) if v0 + g as i64 + h + 1 > n => return None,
                    Some(_) => {}
                }
                if per_symbol {
                    fit = fit.min(v0 - warm);
                }
                positive(fit)
            })
            .max();
        Windows {
            p,
            split,
            warm,
            train_fit,
            valid_fit,
            most_before: rows.iter().map(|r| r.0 as i64).max().unwrap_or(0),
        }
    }

    /// What is wrong with the stage's `seq_len` here, and the fix; `None` when both windows
    /// fit.
    fn problem(&self) -> Option<(String, String)> {
        let seq_len = self.p.seq_len as i64;
        let train = self.train_fit.is_some_and(|f| seq_len <= f);
        let valid = self.valid_fit.is_some_and(|f| seq_len <= f);
        if train && valid {
            return None;
        }
        let needed = self.warm + seq_len + self.p.horizon as i64;
        let message = if !train {
            format!(
                "seq_len = {seq_len} leaves no training window: one needs {needed} bars of a symbol before the split \
                 ({}; {} warm-up + seq_len {seq_len} + horizon {}), and the most any symbol has there is {}",
                self.split, self.warm, self.p.horizon, self.most_before
            )
        } else {
            format!(
                "seq_len = {seq_len} leaves no validation window: no symbol has the rows after the split ({}) for \
                 one (gap {} + horizon {} + 1, after {} warm-up rows and {} training rows to scale by)",
                self.split,
                self.p.gap_rows(),
                self.p.horizon,
                self.warm,
                seq_len
            )
        };
        let more = "declare a longer market ([data] synth = { days = ... }), widen the load's `start`/`end`, or move \
                    the split (`valid_fraction`, `split_date`)";
        let hint = match self.train_fit.zip(self.valid_fit).map(|(t, v)| t.min(v)) {
            Some(fit) if fit >= 1 => {
                format!("the largest seq_len that fits is {fit}: write seq_len = {fit} or less, or {more}")
            }
            _ => format!("no seq_len fits these bars: {more}"),
        };
        Some((message, hint))
    }
}
