//! Synthetic stored runs for the publish benchmark and the site's tests (not measurements):
//! one experiment's history over a number of commits, with a known step, stored through the
//! same store calls a real run uses.
//!
//! Each run has two configs (`baseline`, `optimized`) and a command stage `work` whose
//! `latency` metric is drawn around a level: 10 ms for the baseline, 8 ms for the optimized
//! variant, times `step_factor` from run `step_at` on, with a relative spread of `noise`.

use chrono::{DateTime, Duration, Utc};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use crate::db::Db;
use crate::digest::hex_sha256;
use crate::measure::Fingerprint;
use crate::metrics::Metric;
use crate::record::{StageRecord, StageStatus, TrialRecord};
use crate::store::{self, StoreError};

/// What history to store.
#[derive(Debug, Clone)]
pub struct FixtureSpec {
    pub experiment: String,
    /// Runs, one per commit, oldest first.
    pub runs: usize,
    pub repetitions: u32,
    /// Runs alternate between this many machines (distinct environment hashes).
    pub machines: usize,
    /// First run (0-based) whose latency is multiplied by `step_factor`.
    pub step_at: Option<usize>,
    pub step_factor: f64,
    /// Relative standard deviation of a trial's latency.
    pub noise: f64,
    pub seed: u64,
    pub start: DateTime<Utc>,
    /// The branch every run says it started on.
    pub branch: String,
}

impl FixtureSpec {
    /// A history of `runs` runs of `experiment` with a 20% slowdown from the middle run on.
    pub fn with_step(experiment: &str, runs: usize) -> FixtureSpec {
        FixtureSpec {
            experiment: experiment.to_owned(),
            runs,
            repetitions: 8,
            machines: 1,
            step_at: Some(runs / 2),
            step_factor: 1.2,
            noise: 0.005,
            seed: 7,
            start: DateTime::parse_from_rfc3339("2026-01-05T09:00:00Z")
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or_default(),
            branch: "main".to_owned(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the fixture manifest does not validate: {0}")]
    Manifest(String),
}

/// The commit the fixture says run `i` measured.
pub fn commit_of(experiment: &str, i: usize) -> String {
    hex_sha256(format!("{experiment} commit {i}").as_bytes())[..40].to_owned()
}

fn manifest(spec: &FixtureSpec) -> String {
    format!(
        r#"[experiment]
name = "{}"
description = "Synthetic history: a command stage whose latency steps at a known commit"

[schedule]
warmup = 0
repetitions = {}
seed = 1

[stages.work]
kind = "command"
argv = ["echo", "{{{{ level }}}}"]
vars = {{ level = 10 }}

[variants.baseline]
[variants.optimized]
"stages.work.vars.level" = 8

[compare]
baseline = "baseline"
primary = "work.latency"
"#,
        spec.experiment, spec.repetitions
    )
}

/// Stores the runs of `spec` in `db`; returns their ids, oldest first. `dir` is where the
/// manifest is said to live (it is parsed, never run).
pub async fn store_history(db: &Db, spec: &FixtureSpec, dir: &std::path::Path) -> Result<Vec<String>, FixtureError> {
    let text = manifest(spec);
    let exp = crate::manifest::parse_str(&dir.join(format!("{}.toml", spec.experiment)), &text, false)
        .map_err(|e| FixtureError::Manifest(e.to_string()))?;
    let base_env = Fingerprint::collect(dir);
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let spread = Normal::new(0.0, spec.noise.max(0.0)).unwrap_or_else(|_| Normal::new(0.0, 0.0).expect("zero spread"));
    let mut ids = Vec::with_capacity(spec.runs);
    for i in 0..spec.runs {
        let machine = i % spec.machines.max(1);
        let mut env = base_env.clone();
        env.host = format!("bench-{machine}");
        env.hash = hex_sha256(format!("fixture machine {machine}").as_bytes());
        env.git_commit = commit_of(&spec.experiment, i);
        env.git_dirty = false;
        env.git_branch = Some(spec.branch.clone());
        let id: String = format!("fx-{}-{i:05}", spec.experiment).chars().take(64).collect();
        let started = spec.start + Duration::minutes(10 * i as i64);
        let trials = crate::plan::schedule(exp.configs.len(), &exp.schedule, spec.seed + i as u64);
        store::insert_run(
            db,
            &store::NewRun {
                id: &id,
                experiment: &exp,
                seed: spec.seed,
                planned_trials: trials.len() as u32,
                env: &env,
                command: "fixture",
                started_at: started,
                lease_seconds: None,
                stock_database: "",
                stock_data: None,
            },
        )
        .await?;
        let factor = match spec.step_at {
            Some(at) if i >= at => spec.step_factor,
            _ => 1.0,
        };
        for t in &trials {
            let level = if t.config == 0 { 0.010 } else { 0.008 };
            let latency = level * factor * (1.0 + spread.sample(&mut rng));
            let at = started + Duration::milliseconds(i64::from(t.index) * 50);
            let config = &exp.configs[t.config];
            let record = TrialRecord {
                index: t.index,
                config: config.name.clone(),
                variant: config.variant.clone(),
                sweep: config.sweep_point.clone(),
                repetition: t.repetition,
                block: t.block,
                warmup: t.warmup,
                ok: true,
                error: None,
                seconds: latency,
                started_at: at,
                finished_at: at + Duration::microseconds((latency * 1e6) as i64),
                environment_hash: env.hash.clone(),
                worker: format!("{}:1", env.host),
                git_commit: Some(env.git_commit.clone()),
                git_dirty: false,
                load: Default::default(),
                stages: vec![StageRecord {
                    name: "work".to_owned(),
                    kind: "command".to_owned(),
                    position: 0,
                    status: StageStatus::Ok,
                    cache_hit: false,
                    seconds: latency,
                    peak_rss_bytes: None,
                    error: None,
                    content_hash: None,
                    metrics: vec![Metric {
                        name: "latency".to_owned(),
                        value: latency,
                        unit: "s".to_owned(),
                        step: None,
                    }],
                    notes: Vec::new(),
                    facts: Default::default(),
                }],
            };
            store::insert_trial(db, &id, &record).await?;
        }
        store::set_run_status(
            db,
            &id,
            &store::RunStatus::Finished,
            Some(started + Duration::minutes(1)),
        )
        .await?;
        ids.push(id);
    }
    Ok(ids)
}
