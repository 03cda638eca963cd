//! Planning: a validated experiment -> the ordered list of trials to run (validate -> **plan**
//! -> exec). It reads only the validated experiment: a command it shows is rendered from the
//! stage's typed parameters, and no stage is built.

mod schedule;

pub use schedule::{schedule, stage_seed, ScheduledTrial};

use crate::manifest::{Experiment, Order};
use std::fmt::Write;

/// Renders what `measured plan` prints: configs, stage order, and every trial in time order.
pub fn describe(
    exp: &Experiment,
    seed: u64,
    seed_is_random: bool,
    trials: &[ScheduledTrial],
    show_commands: bool,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "experiment: {}", exp.name);
    if !exp.description.is_empty() {
        let _ = writeln!(out, "  {}", exp.description);
    }
    let order: Vec<&str> = exp.order.iter().map(|&i| exp.stages[i].name.as_str()).collect();
    let _ = writeln!(out, "stages (in order): {}", order.join(" -> "));
    let _ = writeln!(out, "configs ({}):", exp.configs.len());
    for (i, c) in exp.configs.iter().enumerate() {
        match &c.revision {
            Some(r) => {
                let _ = writeln!(out, "  [{i}] {}  ({})", c.name, r.summary());
            }
            None => {
                let _ = writeln!(out, "  [{i}] {}", c.name);
            }
        }
        if show_commands {
            describe_config(&mut out, exp, i);
        }
    }
    let measured = trials.iter().filter(|t| !t.warmup).count();
    let warm = trials.len() - measured;
    let _ = writeln!(
        out,
        "schedule: {} order, {} warm-up + {} repetitions per config, seed {}{}",
        match exp.schedule.order {
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
        },
        exp.schedule.warmup,
        exp.schedule.repetitions,
        seed,
        if seed_is_random {
            " (drawn for this plan; set [schedule] seed or --seed to fix it)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "trials: {} ({} warm-up, not counted; {} measured)",
        trials.len(),
        warm,
        measured
    );
    if let Some(p) = exp.schedule.sequential {
        let looks: Vec<String> = p.looks().iter().map(u32::to_string).collect();
        let _ = writeln!(
            out,
            "sequential: the run looks at its comparisons and claims after {} blocks and stops once every one is \
             decided{}; the trials below are its most",
            looks.join(", "),
            exp.schedule
                .max_time
                .map(|t| format!(
                    " or another block would pass max_time ({})",
                    humantime::format_duration(t)
                ))
                .unwrap_or_default()
        );
    }
    for t in trials {
        let _ = writeln!(
            out,
            "  {:>4}  block {:>3}  {:<9} {}",
            t.index,
            t.block,
            if t.warmup {
                "warm-up".to_owned()
            } else {
                format!("rep {}", t.repetition)
            },
            exp.configs[t.config].name
        );
    }
    out
}

/// A config's parameters that differ from the first config's, and each command it runs
/// (rendered for repetition 0 with seed 0).
fn describe_config(out: &mut String, exp: &Experiment, i: usize) {
    let c = &exp.configs[i];
    let first = &exp.configs[0];
    if let Some(rev) = &c.revision {
        let _ = writeln!(out, "        code: {}", rev.describe());
    }
    for &si in &exp.order {
        let name = &exp.stages[si].name;
        let stage = &c.stages[si];
        if i > 0 {
            for (k, v) in &stage.table {
                if first.stages[si].table.get(k) != Some(v) {
                    let _ = writeln!(out, "        {name}.{k} = {v}");
                }
            }
        }
        // A git variant's commands resolve against the manifest's folder in its checkout.
        let dir = c.checkout_dir().unwrap_or(exp.dir());
        if let Some(cmd) = stage.params.preview(&c.name, &c.variant, dir) {
            let _ = writeln!(out, "        {name}: {cmd}");
        }
    }
}
