//! Repetitions until decided (stats: the looks of a sequential run -> the levels each look's
//! test and interval use).
//!
//! A run with `repetitions = { min, max }` adds blocks and looks at its comparisons after
//! `min` blocks, then each time the count has grown by half (`8, 12, 18, 27, 40, ...`), and at
//! `max`. Looking again and again at a test made for one look would find a difference in an
//! A/A run sooner or later; here the error is *spent* over the looks instead (a
//! group-sequential design, Lan and DeMets). With information fraction `t = blocks / max`, the
//! Pocock-type spending function `a(t) = alpha * ln(1 + (e - 1) t)` says how much of `alpha`
//! may be used up by `t`; look `k` tests at the increment `a(t_k) - a(t_{k-1})`, and its
//! interval has the error `b(t_k) - b(t_{k-1})` of the same function over the interval's 5%.
//!
//! The increments are used as they are, with no correction for the looks' correlation: by the
//! union bound the chance that *any* look rejects a true null is at most the sum of the
//! increments, `a(1) = alpha`, and every look's interval holds the truth at once with
//! probability at least 95% (a repeated confidence interval), whatever the stopping rule
//! made of the earlier looks. That is a little conservative and needs no numerical
//! integration; the simulations in `stats/tests` measure it. A look the plan did not name (a
//! time budget that ran out between looks, an interrupted run) spends from the last planned
//! look before it, so it is covered the same way.
//!
//! **Looks that cannot decide spend nothing.** The signed-rank test's smallest p-value after
//! `n` blocks is `2 / 2^n`; a look whose share of alpha is below it can never reject, and one
//! whose share of the interval's error is too small for `n` blocks gives no interval. Such a
//! look spends none of its share: the next look that can use it gets everything the function
//! allows by then. Whether a look can decide depends only on the plan, never on the data, so
//! the union bound still holds. With `repetitions = { min = 8, max = 200 }` and alpha 0.01, the
//! look at 8 blocks would have 0.00066 against a floor of 0.0078; it spends nothing, and the
//! look at 12 tests at 0.00098 (floor 0.00049). `check` names the first look that can decide. Pocock-type rather than O'Brien-Fleming-type
//! spending because the signed-rank test's smallest p-value (`2 / 2^n`) needs a usable level
//! at the early looks for a clear effect to stop a run early.

use serde::{Deserialize, Serialize};

use super::paired::tail_count;
use super::rank::min_attainable_p;

/// How much the block count grows from one planned look to the next.
pub const LOOK_GROWTH: f64 = 1.5;

/// `[schedule] repetitions = { min, max }`: blocks are added until every question is decided,
/// from `min` up to `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequentialPlan {
    pub min: u32,
    pub max: u32,
}

/// The analysis after some number of blocks: which look it is and the levels it uses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Look {
    /// Complete blocks analysed.
    pub blocks: u32,
    /// Block counts of the looks taken so far, this one last.
    pub taken: Vec<u32>,
    /// Looks the plan names from `min` to `max`.
    pub planned: usize,
    /// Whether `blocks` is one of them (a budget or an interruption can end a run between
    /// looks).
    pub planned_look: bool,
    /// Nominal significance level of the test at this look: 0 when this look cannot reject
    /// (its share is below the test's smallest p-value), which then spends nothing.
    pub alpha: f64,
    /// Nominal two-sided error of the interval at this look: 0 when its share is too small for
    /// an interval over this many blocks, which then spends nothing.
    pub error: f64,
}

/// What one planned look may use, for `check` and `plan`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LookLevel {
    pub blocks: u32,
    /// The share of alpha the test uses here; 0 when the look cannot reject.
    pub alpha: f64,
    /// The test's smallest possible p-value after `blocks` blocks.
    pub floor: f64,
    /// The share of the interval's error used here; 0 when no interval can be had.
    pub error: f64,
}

impl LookLevel {
    /// Whether this look can reach any verdict: a rejection, or an interval to judge.
    pub fn can_decide(&self) -> bool {
        self.alpha > 0.0 || self.error > 0.0
    }
}

/// The spending function: how much of `total` may be spent by information fraction `t`.
pub fn spent(total: f64, t: f64) -> f64 {
    total * (1.0 + (std::f64::consts::E - 1.0) * t.clamp(0.0, 1.0)).ln()
}

impl SequentialPlan {
    /// The planned looks, ascending: `min`, then each 1.5 times the one before (at least one
    /// block more), ending at `max`.
    pub fn looks(&self) -> Vec<u32> {
        let max = self.max.max(1);
        let mut looks = vec![self.min.clamp(1, max)];
        while let Some(&last) = looks.last().filter(|&&l| l < max) {
            let next = ((f64::from(last) * LOOK_GROWTH).round() as u32).max(last + 1);
            looks.push(next.min(max));
        }
        looks
    }

    /// Whether the plan looks after `blocks` blocks.
    pub fn is_look(&self, blocks: u32) -> bool {
        self.looks().contains(&blocks)
    }

    /// The levels of the looks after `taken` blocks (ascending), each look spending what the
    /// function allows by then less what earlier looks spent, or nothing when it cannot use it
    /// (see the module docs).
    fn levels(&self, taken: &[u32], alpha: f64, error: f64) -> Vec<LookLevel> {
        let max = f64::from(self.max.max(1));
        let (mut spent_alpha, mut spent_error) = (0.0, 0.0);
        taken
            .iter()
            .map(|&blocks| {
                let t = f64::from(blocks) / max;
                let floor = min_attainable_p(blocks as usize, true);
                let mut level = LookLevel {
                    blocks,
                    alpha: spent(alpha, t) - spent_alpha,
                    floor,
                    error: spent(error, t) - spent_error,
                };
                if floor < level.alpha {
                    spent_alpha += level.alpha;
                } else {
                    level.alpha = 0.0;
                }
                if tail_count(blocks as usize, level.error) > 0 {
                    spent_error += level.error;
                } else {
                    level.error = 0.0;
                }
                level
            })
            .collect()
    }

    /// The level of every planned look, for `check` and `plan`.
    pub fn planned_levels(&self, alpha: f64, error: f64) -> Vec<LookLevel> {
        self.levels(&self.looks(), alpha, error)
    }

    /// The first planned look that can reject at its share of `alpha`; `None` when none can.
    pub fn first_deciding_look(&self, alpha: f64, error: f64) -> Option<u32> {
        self.planned_levels(alpha, error)
            .iter()
            .find(|l| l.alpha > 0.0)
            .map(|l| l.blocks)
    }

    /// The look after `blocks` blocks, with the levels it may use of the test's `alpha` and
    /// of the interval's `error` (0.05 for a 95% interval).
    pub fn look(&self, blocks: u32, alpha: f64, error: f64) -> Look {
        let looks = self.looks();
        let mut taken: Vec<u32> = looks.iter().copied().filter(|&l| l <= blocks).collect();
        let planned_look = taken.last() == Some(&blocks);
        if !planned_look {
            taken.push(blocks);
        }
        let this = self.levels(&taken, alpha, error).pop().unwrap_or(LookLevel {
            blocks,
            alpha: 0.0,
            floor: 1.0,
            error: 0.0,
        });
        Look {
            blocks,
            planned: looks.len(),
            planned_look,
            alpha: this.alpha,
            error: this.error,
            taken,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_grow_by_half_from_min_to_max() {
        let p = SequentialPlan { min: 8, max: 200 };
        assert_eq!(p.looks(), vec![8, 12, 18, 27, 41, 62, 93, 140, 200]);
        assert_eq!(SequentialPlan { min: 8, max: 8 }.looks(), vec![8]);
        assert_eq!(SequentialPlan { min: 2, max: 5 }.looks(), vec![2, 3, 5]);
        assert!(p.is_look(27) && !p.is_look(28));
    }

    #[test]
    fn the_looks_spend_exactly_alpha() {
        let p = SequentialPlan { min: 8, max: 400 };
        let (mut alpha, mut error) = (0.0, 0.0);
        for blocks in p.looks() {
            let look = p.look(blocks, 0.01, 0.05);
            assert!(look.planned_look);
            alpha += look.alpha;
            error += look.error;
        }
        assert!((alpha - 0.01).abs() < 1e-15 && (error - 0.05).abs() < 1e-15);
        // The look at 8 blocks cannot reject (its share, 0.00034, is below 2 / 2^8); the look at
        // 12 is the first to spend, and spends everything the function allows by then
        // (0.00050, above 2 / 2^12 = 0.00049).
        assert_eq!(p.look(8, 0.01, 0.05).alpha, 0.0);
        assert_eq!(p.first_deciding_look(0.01, 0.05), Some(12));
        let first = p.look(12, 0.01, 0.05);
        assert!((first.alpha - spent(0.01, 12.0 / 400.0)).abs() < 1e-15, "{first:?}");
    }

    /// The plan of the manifest reference: the look at 8 blocks would have 0.00066 of alpha
    /// against a floor of 2 / 2^8 = 0.0078; it spends nothing, and the look at 12 gets the
    /// function's whole 0.00098 (floor 0.00049), so it is the first that can decide.
    #[test]
    fn a_look_that_cannot_reject_spends_nothing() {
        let p = SequentialPlan { min: 8, max: 200 };
        let levels = p.planned_levels(0.01, 0.05);
        assert_eq!(levels[0].blocks, 8);
        assert_eq!(levels[0].alpha, 0.0);
        assert!((levels[0].floor - 2.0 / 256.0).abs() < 1e-15);
        // No 95%-share interval at 8 blocks either: 0.0033 of error is below 2 / 2^8.
        assert_eq!(levels[0].error, 0.0);
        assert!(!levels[0].can_decide());
        assert!((levels[1].alpha - spent(0.01, 0.06)).abs() < 1e-15, "{:?}", levels[1]);
        assert!(levels[1].alpha > levels[1].floor);
        assert_eq!(p.first_deciding_look(0.01, 0.05), Some(12));
        let total: f64 = levels.iter().map(|l| l.alpha).sum();
        assert!((total - 0.01).abs() < 1e-15);
        // A plan whose every look is below the floor spends nothing at all.
        assert_eq!(SequentialPlan { min: 2, max: 5 }.first_deciding_look(0.01, 0.05), None);
    }

    #[test]
    fn a_look_between_planned_ones_spends_from_the_last_planned() {
        let p = SequentialPlan { min: 8, max: 200 };
        let l = p.look(30, 0.01, 0.05);
        assert_eq!(l.taken, vec![8, 12, 18, 27, 30]);
        assert!(!l.planned_look);
        assert!((l.alpha - (spent(0.01, 0.15) - spent(0.01, 0.135))).abs() < 1e-15);
    }
}
