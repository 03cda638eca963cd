//! `measured bisect` on throwaway repositories whose program gets slower at a planted commit:
//! mostly a latency the program prints (a value, not a timing, so which commit is bad is a fact
//! of the repository and the test can name it), and once a sleep three times as long, judged by
//! wall time within a noise band wide enough for a loaded machine.

use crate::common::{bin, git, git_repo, latency_sh, run, scalar, text, write};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Each trial gets its own factor (a few tenths of a percent apart), so the blocks vary as
/// measurements do; the seed fixes the order, so every run here is the same every time.
const MANIFEST: &str = r#"[experiment]
name = "bisected"
[schedule]
warmup = 0
repetitions = { min = 8, max = 40 }
seed = 5
[stages.bench]
kind = "command"
argv = ["sh", "bench.sh", "{{ 1 + 0.002 * (trial % 5) }}"]
[compare]
primary = "bench.latency"
"#;

/// A repository with one commit per base latency (the manifest in the first); returns it with
/// each commit's 12-digit abbreviation, oldest first.
fn repo(dir: &Path, bases: &[f64]) -> (PathBuf, Vec<String>) {
    let programs: Vec<(String, String)> = bases
        .iter()
        .map(|b| (format!("latency {b}"), latency_sh(&b.to_string())))
        .collect();
    repo_of(dir, MANIFEST, &programs)
}

/// A repository with `manifest` as `exp.toml` and one commit per (subject, `bench.sh`); returns
/// it with each commit's 12-digit abbreviation, oldest first.
fn repo_of(dir: &Path, manifest: &str, programs: &[(String, String)]) -> (PathBuf, Vec<String>) {
    let repo = git_repo(dir);
    write(&repo, "exp.toml", manifest);
    let mut shas = Vec::new();
    for (i, (subject, program)) in programs.iter().enumerate() {
        write(&repo, "bench.sh", program);
        git(&repo, &["add", "-A"]);
        git(
            &repo,
            &["commit", "-q", "--allow-empty", "-m", &format!("change {i}: {subject}")],
        );
        shas.push(git(&repo, &["rev-parse", "--short=12", "HEAD"]));
    }
    (repo, shas)
}

fn bisect(dir: &Path, repo: &Path, good: &str) -> Output {
    run(bin()
        .arg("--database")
        .arg(dir.join("r.sqlite"))
        .arg("bisect")
        .arg(repo.join("exp.toml"))
        .args(["--good", good, "--bad", "HEAD", "--results-dir"])
        .arg(dir.join("out")))
}

#[test]
fn bisect_names_the_commit_that_made_the_metric_slower() {
    let dir = tempfile::tempdir().unwrap();
    // Commit 5 of 8 after the good one makes the latency 50% higher.
    let bases = [0.1, 0.1, 0.1, 0.1, 0.1, 0.15, 0.15, 0.15, 0.15];
    let (repo, shas) = repo(dir.path(), &bases);
    let out = bisect(dir.path(), &repo, &shas[0]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("first bad commit: {} change 5", shas[5])),
        "{t}"
    );
    // Its interval is against its parent, and holds the planted ratio 0.1 / 0.15.
    let against = stdout
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!(
                "  against {} (the commit before it): slower, speedup ",
                shas[4]
            ))
        })
        .unwrap_or_else(|| panic!("{t}"));
    let ci = against.split_once("CI ").unwrap().1;
    let (lo, hi) = ci.split_once("x-").unwrap();
    let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.split_once('x').unwrap().0.parse().unwrap());
    assert!(lo <= 0.1 / 0.15 + 1e-3 && 0.1 / 0.15 - 1e-3 <= hi, "{against}");
    // Every step is a stored run, and the page links each step's report.
    let steps = stdout.lines().filter(|l| l.starts_with("step ")).count();
    assert!((3..=5).contains(&steps), "{t}");
    let url = dir.path().join("r.sqlite");
    assert_eq!(
        scalar(url.to_str().unwrap(), "SELECT COUNT(*) FROM runs") as usize,
        steps
    );
    let page_path = stdout.lines().find_map(|l| l.strip_prefix("bisect: ")).unwrap();
    let page = std::fs::read_to_string(page_path).unwrap();
    let links: Vec<&str> = page
        .match_indices("](")
        .map(|(i, _)| &page[i + 2..i + 2 + page[i + 2..].find(')').unwrap()])
        .collect();
    assert_eq!(links.len(), steps, "{page}");
    for l in links {
        assert!(Path::new(page_path).with_file_name(l).is_file(), "{l}");
    }
    assert!(page.contains(&format!("first bad commit: {}", shas[5])), "{page}");
}

#[test]
fn bisect_finds_a_planted_sleep_by_wall_time() {
    let dir = tempfile::tempdir().unwrap();
    // The stage's wall time is the metric; commit 3 of 5 after the good one sleeps 3x as long.
    // A 30% band absorbs what a busy machine adds to a 50 ms sleep, and the step is far beyond it.
    let manifest = r#"[experiment]
name = "slept"
[schedule]
warmup = 1
repetitions = { min = 8, max = 60 }
seed = 11
[stages.bench]
kind = "command"
argv = ["sh", "bench.sh"]
metrics = false
[compare]
primary = "bench.seconds"
band = "30%"
"#;
    let programs: Vec<(String, String)> = [0.05, 0.05, 0.05, 0.15, 0.15, 0.15]
        .iter()
        .map(|s| (format!("sleep {s}"), format!("#!/bin/sh\nsleep {s}\n")))
        .collect();
    let (repo, shas) = repo_of(dir.path(), manifest, &programs);
    let out = bisect(dir.path(), &repo, &shas[0]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("first bad commit: {} change 3: sleep 0.15", shas[3])),
        "{t}"
    );
    assert!(
        stdout.contains(&format!(
            "  against {} (the commit before it): slower, speedup ",
            shas[2]
        )),
        "{t}"
    );
}

#[test]
fn a_regression_below_the_noise_band_ends_undecidable_rather_than_a_guess() {
    let dir = tempfile::tempdir().unwrap();
    // Half a percent slower from commit 2: inside the default noise band of 2%.
    let (repo, shas) = repo(dir.path(), &[0.1, 0.1, 0.1005, 0.1005]);
    let out = bisect(dir.path(), &repo, &shas[0]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("undecidable: the bad end is not slower than the good one beyond the noise band"),
        "{t}"
    );
    assert!(!t.contains("first bad commit"), "{t}");
}

#[test]
fn the_ends_must_be_commits_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, shas) = repo(dir.path(), &[0.1, 0.2]);
    let backwards = run(bin()
        .arg("--database")
        .arg(dir.path().join("r.sqlite"))
        .arg("bisect")
        .arg(repo.join("exp.toml"))
        .args(["--good", "HEAD", "--bad", &shas[0]]));
    assert_eq!(backwards.status.code(), Some(2), "{}", text(&backwards));
    assert!(
        text(&backwards).contains("is not an earlier commit than --bad"),
        "{}",
        text(&backwards)
    );
    let missing = run(bin()
        .arg("bisect")
        .arg(repo.join("exp.toml"))
        .args(["--good", "nope", "--bad", "HEAD"]));
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        text(&missing).contains("--good `nope` is not a commit"),
        "{}",
        text(&missing)
    );
    assert!(!dir.path().join("r.sqlite").exists());
}
