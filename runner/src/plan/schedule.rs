//! The trial schedule (plan): warm-up trials first, then repetitions, interleaved in seeded,
//! shuffled blocks so that configs alternate in time and drift hits them alike.

use crate::manifest::{Order, Schedule};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// One trial of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ScheduledTrial {
    /// Position in time order; the trial's identity within its run.
    pub index: u32,
    pub config: usize,
    /// Repetition number among measured trials (or among warm-ups when `warmup`).
    pub repetition: u32,
    pub warmup: bool,
    /// Trials of one block hold one repetition of every config, run back to back.
    pub block: u32,
}

/// Plans every trial for `n_configs` configs.
pub fn schedule(n_configs: usize, s: &Schedule, seed: u64) -> Vec<ScheduledTrial> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    let push = |out: &mut Vec<ScheduledTrial>, config, repetition, warmup, block| {
        let index = out.len() as u32;
        out.push(ScheduledTrial {
            index,
            config,
            repetition,
            warmup,
            block,
        });
    };
    match s.order {
        Order::Interleaved => {
            let blocks = (0..s.warmup)
                .map(|r| (r, true))
                .chain((0..s.repetitions).map(|r| (r, false)));
            for (block, (rep, warmup)) in blocks.enumerate() {
                let mut configs: Vec<usize> = (0..n_configs).collect();
                configs.shuffle(&mut rng);
                for c in configs {
                    push(&mut out, c, rep, warmup, block as u32);
                }
            }
        }
        Order::Sequential => {
            for c in 0..n_configs {
                for rep in 0..s.warmup {
                    push(&mut out, c, rep, true, rep);
                }
                for rep in 0..s.repetitions {
                    push(&mut out, c, rep, false, s.warmup + rep);
                }
            }
        }
    }
    out
}

/// The seed a stage gets in a trial: the same for every config of one repetition (so that
/// configs are compared on equal footing), different across repetitions (so that results show
/// their real variance rather than one lucky draw).
pub fn stage_seed(run_seed: u64, trial: &ScheduledTrial, stage: &str) -> u64 {
    let mut h = splitmix(run_seed ^ 0x6d65_6173_7572_6564);
    h = splitmix(h ^ u64::from(trial.repetition) ^ if trial.warmup { 1 << 40 } else { 0 });
    for b in stage.bytes() {
        h = splitmix(h ^ u64::from(b));
    }
    h
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(order: Order, warmup: u32, reps: u32) -> Schedule {
        Schedule {
            keep_going: false,
            warmup,
            repetitions: reps,
            sequential: None,
            max_time: None,
            order,
            seed: Some(1),
        }
    }

    #[test]
    fn interleaved_blocks_hold_every_config_once() {
        let t = schedule(6, &sched(Order::Interleaved, 1, 5), 42);
        assert_eq!(t.len(), 36);
        assert_eq!(t.iter().filter(|t| t.warmup).count(), 6);
        for block in 0..6 {
            let mut cs: Vec<usize> = t.iter().filter(|x| x.block == block).map(|x| x.config).collect();
            cs.sort_unstable();
            assert_eq!(cs, (0..6).collect::<Vec<_>>());
        }
        // Warm-ups come first.
        assert!(t[..6].iter().all(|x| x.warmup) && t[6..].iter().all(|x| !x.warmup));
    }

    #[test]
    fn same_seed_same_order_other_seed_other_order() {
        let a = schedule(4, &sched(Order::Interleaved, 1, 5), 7);
        let b = schedule(4, &sched(Order::Interleaved, 1, 5), 7);
        let c = schedule(4, &sched(Order::Interleaved, 1, 5), 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn sequential_runs_configs_one_after_another() {
        let t = schedule(2, &sched(Order::Sequential, 1, 2), 0);
        let cs: Vec<usize> = t.iter().map(|x| x.config).collect();
        assert_eq!(cs, vec![0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn stage_seeds_pair_configs_and_vary_by_repetition() {
        let t = schedule(2, &sched(Order::Interleaved, 0, 2), 3);
        let rep0: Vec<u64> = t
            .iter()
            .filter(|x| x.repetition == 0)
            .map(|x| stage_seed(9, x, "train"))
            .collect();
        let rep1: Vec<u64> = t
            .iter()
            .filter(|x| x.repetition == 1)
            .map(|x| stage_seed(9, x, "train"))
            .collect();
        assert_eq!(rep0[0], rep0[1]);
        assert_ne!(rep0[0], rep1[0]);
        assert_ne!(stage_seed(9, &t[0], "train"), stage_seed(9, &t[0], "load"));
    }
}
