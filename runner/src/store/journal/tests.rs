//! The journal: trials written beside the database, replayed once it is back, never twice.

use super::*;
use crate::metrics::Metric;
use crate::record::{StageRecord, StageStatus};

pub(crate) fn header(id: &str) -> RunHeader {
    RunHeader {
        id: id.into(),
        experiment: "exp".into(),
        description: String::new(),
        manifest_path: "exp.toml".into(),
        manifest_text: "[experiment]\nname = \"exp\"\n".into(),
        manifest_hash: "abc".into(),
        smoke: false,
        seed: 7,
        planned_trials: 3,
        started_at: Utc::now(),
        env: crate::measure::Fingerprint::collect(Path::new(".")),
        command: "measured run exp.toml --seed 7".into(),
        lease_seconds: Some(60.0),
        database: String::new(),
        stock_database: None,
        spec: None,
        stock_data: None,
    }
}

pub(crate) fn trial(index: u32, env: &str) -> TrialRecord {
    TrialRecord {
        index,
        config: "a".into(),
        variant: "a".into(),
        sweep: vec![("bs".into(), "64".into())],
        repetition: index,
        block: 0,
        warmup: false,
        ok: true,
        error: None,
        seconds: 0.5 + f64::from(index),
        started_at: Utc::now(),
        finished_at: Utc::now(),
        environment_hash: env.into(),
        worker: "host:1".into(),
        git_commit: Some(format!("{index:040x}")),
        git_dirty: index == 1,
        load: crate::measure::TrialLoad {
            load_before: Some(0.5),
            load_after: Some(1.25),
            other_cpu: Some(0.75),
            cores: Some(4),
            cpu_mhz: (index != 2).then_some(2600.5),
            ticks: Some(crate::measure::TickDelta {
                busy: 300 + u64::from(index),
                own: 100,
                total: 800,
                cpus: 4,
            }),
        },
        stages: vec![StageRecord {
            name: "work".into(),
            kind: "command".into(),
            position: 0,
            status: StageStatus::Ok,
            cache_hit: false,
            seconds: 0.5,
            peak_rss_bytes: Some(1 << 20),
            error: None,
            content_hash: None,
            metrics: vec![Metric {
                name: "loss".into(),
                value: 0.25,
                unit: "loss".into(),
                step: Some(1),
            }],
            notes: vec![format!("dropped 1 symbol with no rows in the whole history: S{index}")],
            facts: [
                ("device", "cuda"),
                ("rnn_engine", if index == 1 { "dfdx" } else { "cudnn" }),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        }],
    }
}

#[test]
fn reads_back_what_was_appended_and_ignores_a_torn_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = Journal::path_for(dir.path(), "exp", "r1");
    let h = header("r1");
    let mut j = Journal::create(&path, &h).unwrap();
    j.append_trial(&trial(0, &h.env.hash)).unwrap();
    j.append_trial(&trial(1, &h.env.hash)).unwrap();
    // A crash in the middle of writing the third line.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(br#"{"kind":"trial","trial":{"index":2,"con"#)
        .unwrap();
    let c = read(&path).unwrap();
    assert_eq!(c.header.id, "r1");
    assert_eq!(c.trials.iter().map(|t| t.index).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(c.trials[1].stages[0].metrics[0].step, Some(1));
    assert_eq!(c.trials[1].git_commit.as_deref(), Some(format!("{:040x}", 1).as_str()));
    assert!(c.trials[1].git_dirty && !c.trials[0].git_dirty);
    assert_eq!(c.trials[1].load, trial(1, "").load);
    assert_eq!(c.trials[1].stages[0].notes, trial(1, "").stages[0].notes);
    assert_eq!(c.trials[1].stages[0].facts, trial(1, "").stages[0].facts);
    assert_eq!(c.trials[1].stages[0].facts["rnn_engine"], "dfdx");
    assert!(c.status.is_none());
    assert_eq!(find(dir.path(), Some("r")), vec![path.clone()]);
    assert!(find(dir.path(), Some("r2")).is_empty());
}

#[test]
fn a_corrupt_line_before_the_end_is_an_error_not_a_silent_skip() {
    let dir = tempfile::tempdir().unwrap();
    let path = Journal::path_for(dir.path(), "exp", "r1");
    let h = header("r1");
    let mut j = Journal::create(&path, &h).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"not json\n")
        .unwrap();
    j.append_trial(&trial(0, &h.env.hash)).unwrap();
    let e = read(&path).unwrap_err().to_string();
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn flush_restores_a_lost_run_and_stores_each_trial_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    crate::db::wait(async {
        let db = Db::connect(dir.path().join("r.sqlite").to_str().unwrap())
            .await
            .unwrap();
        let path = Journal::path_for(dir.path(), "exp", "r1");
        let h = header("r1");
        let mut j = Journal::create(&path, &h).unwrap();
        for i in 0..3 {
            j.append_trial(&trial(i, &h.env.hash)).unwrap();
        }
        j.append_status(&store::RunStatus::Finished, Some(Utc::now()), None)
            .unwrap();
        let c = read(&path).unwrap();
        // The database never saw the run (a new file): the run row comes back too.
        let first = flush(&db, &c).await.unwrap();
        assert_eq!(
            first,
            Flushed {
                run_restored: true,
                inserted: 3,
                already: 0
            }
        );
        let again = flush(&db, &c).await.unwrap();
        assert_eq!(
            again,
            Flushed {
                run_restored: false,
                inserted: 0,
                already: 3
            }
        );
        assert!(missing(&db, &c).await.unwrap().is_empty());
        let run = store::load_run(&db, "r1").await.unwrap();
        assert_eq!(
            (run.status, run.stored_trials, run.seed),
            (store::RunStatus::Finished, 3, 7)
        );
        let stored = store::load_trials(&db, "r1").await.unwrap();
        assert_eq!(stored[2].seconds, 2.5);
        assert_eq!(stored[0].stages[0].metrics[0].value, 0.25);
        assert_eq!(stored[2].git_commit.as_deref(), Some(format!("{:040x}", 2).as_str()));
        assert!(stored[1].git_dirty && !stored[2].git_dirty);
        for t in &stored {
            assert_eq!(t.load, trial(t.index, "").load, "{t:?}");
            assert_eq!(t.stages[0].notes, trial(t.index, "").stages[0].notes);
        }
        assert_eq!(stored[2].load.cpu_mhz, None);
        db.close().await;
    });
}

#[test]
fn a_journal_appears_under_its_name_only_with_its_header_and_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = Journal::path_for(dir.path(), "exp", "r1.worker-1");
    let j = Journal::create(&path, &header("r1")).unwrap();
    // Under its own name from the start of its life: header first, lock held.
    assert_eq!(read(&path).unwrap().header.id, "r1");
    assert!(in_use(&path), "a replay elsewhere must see it in use");
    assert!(claim(&path).is_none());
    // Nothing left under the staging name, and `find` never lists one.
    let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["r1.worker-1.journal.jsonl"]);
    std::fs::write(path.parent().unwrap().join("r2.journal.jsonl.new"), "").unwrap();
    assert_eq!(find(dir.path(), None), std::slice::from_ref(&path));
    // The name of an existing journal is never taken over.
    let again = Journal::create(&path, &header("r9"));
    assert!(again.is_err());
    assert_eq!(read(&path).unwrap().header.id, "r1");
    drop(j);
}

#[test]
fn a_journal_written_before_trials_had_a_commit_load_notes_or_facts_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = Journal::path_for(dir.path(), "exp", "r1");
    let h = header("r1");
    let _j = Journal::create(&path, &h).unwrap();
    // A trial line as older versions wrote it: no `git_commit`, `git_dirty`, `load`, stage
    // `notes` or `facts`.
    let mut line = serde_json::to_value(Entry::Trial {
        trial: Box::new(trial(0, &h.env.hash)),
    })
    .unwrap();
    let t = line["trial"].as_object_mut().unwrap();
    t.remove("git_commit");
    t.remove("git_dirty");
    t.remove("load");
    t["stages"][0].as_object_mut().unwrap().remove("notes");
    t["stages"][0].as_object_mut().unwrap().remove("facts");
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(f, "{line}").unwrap();
    let c = read(&path).unwrap();
    assert_eq!(c.trials.len(), 1);
    assert_eq!(c.trials[0].git_commit, None);
    assert!(!c.trials[0].git_dirty);
    assert!(c.trials[0].load.is_empty() && c.trials[0].stages[0].notes.is_empty());
    assert!(c.trials[0].stages[0].facts.is_empty());
}
