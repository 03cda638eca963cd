//! What a stage would run for a config, shown before any run (`measured plan --show-commands`,
//! plan -> **preview** -> the typed parameters): a `command` stage's rendered command line,
//! read from its parameters alone, without building the stage.

use super::command::{sample_trial, CommandParams};
use super::registry::StageParams;
use std::path::{Path, PathBuf};

impl StageParams {
    /// What the stage would run for a config (a command stage renders its templates for
    /// repetition 0 with seed 0; paths resolve against `manifest_dir`, as in a run); `None`
    /// when there is nothing to show beyond parameters.
    pub fn preview(&self, config: &str, variant: &str, manifest_dir: &Path) -> Option<String> {
        match self {
            StageParams::Command(p) => p.preview(config, variant, manifest_dir),
            StageParams::Load(_)
            | StageParams::Normalize(_)
            | StageParams::Train(_)
            | StageParams::Validate(_)
            | StageParams::Transfer(_) => None,
        }
    }
}

impl CommandParams {
    /// The command line for a config, as a shell would take it: `(in DIR) ENV=... argv...`.
    /// `None` when a template does not render (the check reports that).
    pub fn preview(&self, config: &str, variant: &str, manifest_dir: &Path) -> Option<String> {
        let sample = sample_trial(config, variant);
        let (_, rendered) = self.render_all(&sample, 0, "STAGE");
        let r = rendered.ok()?;
        let quote = |a: &str| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+%@".contains(c)) {
                a.to_owned()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        };
        let mut out = String::new();
        let dir = match &r.cwd {
            Some(cwd) => shown_working_dir(manifest_dir, cwd),
            None => shown_dir(manifest_dir).display().to_string(),
        };
        out.push_str(&format!("(in {}) ", quote(&dir)));
        for (k, v) in &r.env {
            out.push_str(&format!("{k}={} ", quote(v)));
        }
        if self.shell {
            out.push_str(&format!("sh -c {}", quote(&r.argv[0])));
        } else {
            out.push_str(&r.argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "));
        }
        Some(out)
    }
}

/// Where the program of a stage with `cwd` runs, written for people: the manifest's folder
/// canonical (no `..` from how the manifest was named) joined with `cwd` as written (an
/// absolute `cwd` stays as it is).
pub fn shown_working_dir(manifest_dir: &Path, cwd: &str) -> String {
    shown_dir(manifest_dir).join(cwd).display().to_string()
}

/// An existing folder, canonical when possible, else absolute.
pub fn shown_dir(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
}
