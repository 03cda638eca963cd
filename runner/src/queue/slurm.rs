//! Slurm glue (submit -> **slurm** -> job array of workers; status -> squeue): the batch script,
//! `sbatch --array`, and the array's state from `squeue`.
//!
//! The database URL reaches the tasks only through the environment (`--export=ALL`): it is
//! never written into the script, because scripts and Slurm logs are readable by others.

use super::QueueError;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `measured submit --slurm` asks of Slurm.
#[derive(Debug, Clone, Default)]
pub struct SlurmOptions {
    /// Array tasks, one worker each.
    pub workers: u32,
    pub partition: Option<String>,
    pub gres: Option<String>,
    pub time: Option<String>,
    /// Further `sbatch` options, written into the script as `#SBATCH` lines.
    pub sbatch_args: Vec<String>,
}

/// Everything the script refers to.
pub struct ScriptSpec<'a> {
    pub run_id: &'a str,
    pub experiment: &'a str,
    /// The `measured` binary the tasks run (this one, by absolute path).
    pub binary: &'a Path,
    /// Tasks start here (relative paths in the manifest resolve as for a local run).
    pub workdir: &'a Path,
    /// Where Slurm writes each task's output.
    pub log_dir: &'a Path,
}

/// Rejects option values that would break out of their `#SBATCH` line.
fn check_value(what: &str, v: &str) -> Result<(), QueueError> {
    if v.is_empty() || v.contains(['\n', '\r', '\0']) {
        return Err(QueueError::SlurmOption(format!(
            "{what} `{}` is empty or spans lines",
            v.escape_debug()
        )));
    }
    Ok(())
}

/// POSIX shell single-quoting.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The batch script every array task runs: one `measured worker --run RUN`.
pub fn script(o: &SlurmOptions, s: &ScriptSpec<'_>) -> Result<String, QueueError> {
    if o.workers == 0 {
        return Err(QueueError::SlurmOption("--workers must be at least 1".into()));
    }
    let mut out = String::from("#!/bin/bash\n");
    let _ = writeln!(
        out,
        "# measured: worker array for run {} (experiment {})",
        s.run_id, s.experiment
    );
    let name = crate::paths::file_safe(s.experiment);
    let _ = writeln!(out, "#SBATCH --job-name=measured-{name}");
    let _ = writeln!(out, "#SBATCH --array=0-{}", o.workers - 1);
    let _ = writeln!(out, "#SBATCH --output={}", s.log_dir.join("slurm-%A_%a.out").display());
    let _ = writeln!(out, "#SBATCH --chdir={}", s.workdir.display());
    // DATABASE_URL travels in the submitting environment, never in this file.
    out.push_str("#SBATCH --export=ALL\n");
    for (flag, v) in [("partition", &o.partition), ("gres", &o.gres), ("time", &o.time)] {
        if let Some(v) = v {
            check_value(&format!("--{flag}"), v)?;
            let _ = writeln!(out, "#SBATCH --{flag}={v}");
        }
    }
    for a in &o.sbatch_args {
        check_value("--sbatch-arg", a)?;
        if !a.starts_with('-') {
            return Err(QueueError::SlurmOption(format!(
                "--sbatch-arg `{a}` is not an sbatch option (write it as --name=value)"
            )));
        }
        let _ = writeln!(out, "#SBATCH {a}");
    }
    out.push_str("set -eu\n");
    out.push_str(
        ": \"${DATABASE_URL:?DATABASE_URL is not set: submit with it in the environment (sbatch --export=ALL)}\"\n",
    );
    let _ = writeln!(
        out,
        "exec {} worker --run {}",
        shell_quote(&s.binary.display().to_string()),
        shell_quote(s.run_id)
    );
    Ok(out)
}

/// Writes the script to `path` and submits it as a job array; returns the Slurm job id.
/// `database_url` goes into sbatch's environment only.
pub fn submit(path: &Path, script_text: &str, workers: u32, database_url: &str) -> Result<String, QueueError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| QueueError::Io {
            path: dir.to_path_buf(),
            source: e,
        })?;
    }
    std::fs::write(path, script_text).map_err(|e| QueueError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let out = Command::new("sbatch")
        .arg("--parsable")
        .arg(format!("--array=0-{}", workers - 1))
        .arg(path)
        .env("DATABASE_URL", database_url)
        .output()
        .map_err(|e| QueueError::Sbatch(format!("cannot run sbatch: {e} (is Slurm installed and on PATH?)")))?;
    let text = |b: &[u8]| crate::db::redact_text(String::from_utf8_lossy(b).trim(), database_url);
    if !out.status.success() {
        return Err(QueueError::Sbatch(format!(
            "sbatch exited with {}: {}",
            out.status,
            text(&out.stderr)
        )));
    }
    // `--parsable` prints `jobid` or `jobid;cluster`.
    let stdout = text(&out.stdout);
    let job = stdout
        .lines()
        .last()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    if job.is_empty() || !job.chars().all(|c| c.is_ascii_digit()) {
        return Err(QueueError::Sbatch(format!("sbatch printed no job id: `{stdout}`")));
    }
    Ok(job)
}

/// The array's tasks as `squeue` lists them (`5_0 RUNNING`, `5_[2-3] PENDING`); empty once
/// the array left the queue. `Err` when squeue cannot be asked (not installed, no controller).
pub fn squeue(job: &str) -> Result<Vec<(String, String)>, String> {
    let out = Command::new("squeue")
        .args(["-h", "-j", job, "-o", "%i %T"])
        .output()
        .map_err(|e| format!("cannot run squeue: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // A job that finished longer than MinJobAge ago is unknown to the controller.
        if stderr.contains("Invalid job id") {
            return Ok(Vec::new());
        }
        return Err(format!("squeue failed: {}", stderr.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().split_once(' '))
        .map(|(id, st)| (id.to_owned(), st.trim().to_owned()))
        .collect())
}

/// Where `submit --slurm` keeps the script and task logs of a run.
pub fn run_dir(results_dir: &Path, experiment: &str, run_id: &str) -> PathBuf {
    results_dir.join(experiment).join(run_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ScriptSpec<'static> {
        ScriptSpec {
            run_id: "20250101-000000-abcd",
            experiment: "ab test",
            binary: Path::new("/opt/it's/measured"),
            workdir: Path::new("/srv/bench"),
            log_dir: Path::new("/srv/bench/results/ab/20250101-000000-abcd"),
        }
    }

    #[test]
    fn script_runs_one_worker_per_task_and_holds_no_secret() {
        let o = SlurmOptions {
            workers: 3,
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
            time: Some("01:00:00".into()),
            sbatch_args: vec!["--mem=4G".into()],
        };
        let s = script(&o, &spec()).unwrap();
        for line in [
            "#SBATCH --array=0-2",
            "#SBATCH --partition=gpu",
            "#SBATCH --gres=gpu:1",
            "#SBATCH --time=01:00:00",
            "#SBATCH --mem=4G",
            "#SBATCH --export=ALL",
            "#SBATCH --job-name=measured-ab_test",
            "exec '/opt/it'\\''s/measured' worker --run '20250101-000000-abcd'",
        ] {
            assert!(s.lines().any(|l| l == line), "missing `{line}` in:\n{s}");
        }
        assert!(!s.contains("postgres://"), "{s}");
    }

    #[test]
    fn bad_options_are_rejected() {
        let mut o = SlurmOptions {
            workers: 0,
            ..SlurmOptions::default()
        };
        assert!(matches!(script(&o, &spec()), Err(QueueError::SlurmOption(_))));
        o.workers = 1;
        o.sbatch_args = vec!["--mem=1G\nrm -rf /".into()];
        assert!(matches!(script(&o, &spec()), Err(QueueError::SlurmOption(_))));
        o.sbatch_args = vec!["mem=1G".into()];
        assert!(matches!(script(&o, &spec()), Err(QueueError::SlurmOption(_))));
    }
}
