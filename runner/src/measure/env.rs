//! The environment fingerprint: which code ran where (stored with each run and trial, shown
//! in reports, compared across hosts).

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;

/// Settings given to every git command measured runs, ahead of the repository's own config: no
/// filesystem monitor and no hooks, so reading a repository's state (or checking out a revision
/// of it) never runs a command that the repository's config names.
pub(crate) const NO_REPO_COMMANDS: [&str; 4] = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Hash of the machine fields (host, cpu, cores, os, gpu, versions).
    pub hash: String,
    pub host: String,
    pub cpu: String,
    pub cores: usize,
    pub os: String,
    pub gpu: String,
    pub measured_version: String,
    pub rustc: String,
    pub git_commit: String,
    pub git_dirty: bool,
    /// The branch checked out (`None`: a detached HEAD, no repository, or a fingerprint
    /// written before it was recorded). Like the commit, not part of `hash`.
    #[serde(default)]
    pub git_branch: Option<String>,
    /// The commit this binary was built from (`unknown` outside a git checkout; empty for
    /// runs stored before it was recorded).
    #[serde(default)]
    pub build_commit: String,
    /// The binary was built from a tree with uncommitted changes to tracked files.
    #[serde(default)]
    pub build_dirty: bool,
}

impl Fingerprint {
    /// Reads the current machine; git state is taken from the repository holding `dir`.
    pub fn collect(dir: &Path) -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into());
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let os = os_name();
        let gpu = gpu_name();
        let measured_version = env!("CARGO_PKG_VERSION").to_owned();
        let rustc = env!("MEASURED_RUSTC_VERSION").to_owned();
        let GitState {
            commit: git_commit,
            dirty: git_dirty,
            branch: git_branch,
        } = git_state(dir);
        let build = crate::build_info::BuildCommit::current();
        let build_commit = build.commit.clone().unwrap_or_else(|| "unknown".into());
        let build_dirty = build.dirty;
        // The build is part of the identity: two binaries are two environments, each stored
        // with its own commit.
        let hash = crate::digest::hex_sha256(
            format!(
                "{host}\n{cpu}\n{cores}\n{os}\n{gpu}\n{measured_version}\n{rustc}\n{}",
                build.label()
            )
            .as_bytes(),
        )[..16]
            .to_owned();
        Self {
            hash,
            host,
            cpu,
            cores,
            os,
            gpu,
            measured_version,
            rustc,
            git_commit,
            git_dirty,
            git_branch,
            build_commit,
            build_dirty,
        }
    }
}

fn os_name() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_owned())
    });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .ok();
    match (pretty, kernel) {
        (Some(p), Some(k)) => format!("{p} (Linux {k})"),
        (Some(p), None) => p,
        (None, Some(k)) => format!("Linux {k}"),
        (None, None) => std::env::consts::OS.to_owned(),
    }
}

fn gpu_name() -> String {
    if !cfg!(feature = "cuda") {
        return "none (CPU build)".into();
    }
    // A CUDA build runs on machines without CUDA too: say why no stage can use a GPU here.
    if let Err(why) = crate::cuda_dl::probe() {
        return format!("none ({why})");
    }
    Command::new("nvidia-smi")
        .args(["--query-gpu=name,driver_version", "--format=csv,noheader"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.lines().next().unwrap_or("").trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The code a run starts from: the repository holding its manifest.
struct GitState {
    /// The full sha of HEAD (`unknown` outside a repository or before its first commit).
    commit: String,
    /// Tracked files differ from `commit`.
    dirty: bool,
    /// The branch HEAD points at (`None` when detached or without a commit).
    branch: Option<String>,
}

/// A git command in `dir`, run to its end (`None`: git could not be started).
fn git(dir: &Path, args: &[&str]) -> Option<std::process::Output> {
    Command::new("git")
        .args(NO_REPO_COMMANDS)
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()
}

/// The trimmed output of a successful git command, if not empty.
fn git_line(dir: &Path, args: &[&str]) -> Option<String> {
    git(dir, args)
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn git_state(dir: &Path) -> GitState {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Some(commit) = git_line(dir, &["rev-parse", "HEAD"]) else {
        return GitState {
            commit: "unknown".into(),
            dirty: false,
            branch: None,
        };
    };
    let dirty = git(dir, &["status", "--porcelain", "--untracked-files=no"])
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    // Fails (quietly, with `-q`) on a detached HEAD.
    let branch = git_line(dir, &["symbolic-ref", "--short", "-q", "HEAD"]);
    GitState { commit, dirty, branch }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=Bench", "-c", "user.email=bench@example.com"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A repository at `dir` with one commit, on `branch`.
    fn repo_on(dir: &Path, branch: &str) {
        run_git(dir, &["init", "-q"]);
        run_git(dir, &["symbolic-ref", "HEAD", &format!("refs/heads/{branch}")]);
        std::fs::write(dir.join("f"), "x").unwrap();
        run_git(dir, &["add", "f"]);
        run_git(dir, &["commit", "-q", "-m", "one"]);
    }

    #[test]
    fn the_branch_is_read_and_none_when_detached_or_outside_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        repo_on(&repo, "feature/fast-path");
        let on_branch = git_state(&repo);
        assert_eq!(on_branch.branch.as_deref(), Some("feature/fast-path"));
        assert_eq!(on_branch.commit.len(), 40, "{}", on_branch.commit);
        run_git(&repo, &["checkout", "-q", "--detach"]);
        let detached = git_state(&repo);
        assert_eq!((detached.commit, detached.branch), (on_branch.commit, None));
        let outside = dir.path().join("plain");
        std::fs::create_dir(&outside).unwrap();
        let none = git_state(&outside);
        assert_eq!((none.commit.as_str(), none.branch), ("unknown", None));
    }

    #[test]
    fn reading_the_state_of_a_repository_runs_none_of_its_commands() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        repo_on(&repo, "main");
        let marker = dir.path().join("ran");
        let hook = dir.path().join("hook.sh");
        std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
        let mut perms = std::fs::metadata(&hook).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&hook, perms).unwrap();
        run_git(&repo, &["config", "core.fsmonitor", hook.to_str().unwrap()]);
        // A dirty tree makes `status` look at the working tree, where the monitor is asked.
        std::fs::write(repo.join("f"), "y").unwrap();
        let f = Fingerprint::collect(&repo);
        assert!(f.git_dirty);
        assert!(!marker.exists(), "the repository's core.fsmonitor command ran");
    }

    #[test]
    fn the_branch_does_not_change_the_environment_hash() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        repo_on(&a, "main");
        repo_on(&b, "experiment");
        let (fa, fb) = (Fingerprint::collect(&a), Fingerprint::collect(&b));
        assert_eq!(fa.git_branch.as_deref(), Some("main"));
        assert_eq!(fb.git_branch.as_deref(), Some("experiment"));
        assert_eq!(fa.hash, fb.hash);
    }

    #[test]
    fn a_fingerprint_stored_without_a_branch_reads_back_with_none() {
        let f = Fingerprint::collect(Path::new("."));
        let mut json = serde_json::to_value(&f).unwrap();
        json.as_object_mut().unwrap().remove("git_branch");
        let back: Fingerprint = serde_json::from_value(json).unwrap();
        assert_eq!(back.git_branch, None);
        assert_eq!(back.hash, f.hash);
    }
}
