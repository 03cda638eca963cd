//! `measured plan`: configs x repetitions, interleaved and reproducible.

use crate::common::{bin, fixture, run, text};

fn trial_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.contains(" block "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn plan_shows_54_interleaved_trials_reproducibly() {
    let path = fixture("valid/ab_sweep.toml");
    let a = run(bin().arg("plan").arg(&path));
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    let out = String::from_utf8_lossy(&a.stdout).to_string();
    assert!(
        out.contains("trials: 54 (6 warm-up, not counted; 48 measured)"),
        "{out}"
    );
    let lines = trial_lines(&out);
    assert_eq!(lines.len(), 54);
    // Interleaved: each block of 6 holds every config once, so baseline and fast alternate.
    for block in lines.chunks(6) {
        let mut names: Vec<&str> = block.iter().map(|l| l.split_whitespace().last().unwrap()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 6, "{block:?}");
    }
    let b = run(bin().arg("plan").arg(&path));
    assert_eq!(
        trial_lines(&String::from_utf8_lossy(&b.stdout)),
        lines,
        "same seed, same order"
    );
    let c = run(bin().arg("plan").arg(&path).args(["--seed", "7"]));
    assert_ne!(
        trial_lines(&String::from_utf8_lossy(&c.stdout)),
        lines,
        "another seed, another order"
    );
}

#[test]
fn plan_show_commands_renders_each_configs_commands_and_differences() {
    let out =
        run(bin()
            .arg("plan")
            .arg(fixture("valid/vars_read_both_ways.toml"))
            .args(["--seed", "3", "--show-commands"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let configs: String = stdout
        .lines()
        .skip_while(|l| !l.starts_with("configs"))
        .take_while(|l| !l.starts_with("schedule"))
        .map(|l| format!("{l}\n"))
        .collect();
    // Each command names the folder it runs in: the manifest's, wherever the checkout is.
    let folder = std::fs::canonicalize(fixture("valid")).unwrap();
    insta::assert_snapshot!(configs.replace(&folder.display().to_string(), "[FIXTURES]/valid"));
}
