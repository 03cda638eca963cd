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
//! look before it, so it is covered the same way. Pocock-type rather than O'Brien-Fleming-type
//! spending because the signed-rank test's smallest p-value (`2 / 2^n`) needs a usable level
//! at the early looks for a clear effect to stop a run early.

use serde::{Deserialize, Serialize};

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
    /// Nominal significance level of the test at this look.
    pub alpha: f64,
    /// Nominal two-sided error of the interval at this look.
    pub error: f64,
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

    /// The look after `blocks` blocks, with the levels it may use of the test's `alpha` and
    /// of the interval's `error` (0.05 for a 95% interval).
    pub fn look(&self, blocks: u32, alpha: f64, error: f64) -> Look {
        let looks = self.looks();
        let mut taken: Vec<u32> = looks.iter().copied().filter(|&l| l <= blocks).collect();
        let planned_look = taken.last() == Some(&blocks);
        if !planned_look {
            taken.push(blocks);
        }
        let max = f64::from(self.max.max(1));
        let t = f64::from(blocks) / max;
        let before = taken.len().checked_sub(2).map_or(0.0, |i| f64::from(taken[i]) / max);
        Look {
            blocks,
            planned: looks.len(),
            planned_look,
            alpha: spent(alpha, t) - spent(alpha, before),
            error: spent(error, t) - spent(error, before),
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
            assert!(look.planned_look && look.alpha > 0.0);
            alpha += look.alpha;
            error += look.error;
        }
        assert!((alpha - 0.01).abs() < 1e-15 && (error - 0.05).abs() < 1e-15);
        // The first look spends the Pocock-type share of its information fraction.
        let first = p.look(8, 0.01, 0.05);
        assert!((first.alpha - 0.01 * (1.0 + (std::f64::consts::E - 1.0) * 0.02).ln()).abs() < 1e-15);
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
