//! The environment fingerprint: which code ran where (stored with each run and trial, shown
//! in reports, compared across hosts).

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;

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
        let (git_commit, git_dirty) = git_state(dir);
        let build = crate::build_info::BuildCommit::current();
        let build_commit = build.commit.clone().unwrap_or_else(|| "unknown".into());
        let build_dirty = build.dirty;
        // The build is part of the identity: two binaries are two environments, each stored
        // with its own commit.
        let hash = crate::manifest::hex_sha256(
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

fn git_state(dir: &Path) -> (String, bool) {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let commit = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned());
    let Some(commit) = commit else {
        return ("unknown".into(), false);
    };
    let dirty = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    (commit, dirty)
}
