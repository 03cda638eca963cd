//! Run data assembled from stored trials: configs, failures and notes as the reports read them.

use super::*;

fn fp(host: &str, cpu: &str, gpu: &str) -> Fingerprint {
    Fingerprint {
        hash: format!("h-{host}"),
        host: host.into(),
        cpu: cpu.into(),
        cores: 8,
        os: "Linux".into(),
        gpu: gpu.into(),
        measured_version: "0.1.0".into(),
        rustc: "rustc".into(),
        git_commit: "abc".into(),
        git_dirty: false,
        git_branch: Some("main".into()),
        build_commit: "def".into(),
        build_dirty: false,
    }
}

fn trial(index: u32, variant: &str, host: &str, pid: u32, warmup: bool) -> TrialRecord {
    TrialRecord {
        index,
        config: variant.into(),
        variant: variant.into(),
        sweep: Vec::new(),
        repetition: 0,
        block: index / 2,
        warmup,
        ok: true,
        error: None,
        seconds: 1.0,
        started_at: chrono::Utc::now(),
        finished_at: chrono::Utc::now(),
        environment_hash: format!("h-{host}"),
        worker: format!("{host}:{pid}"),
        git_commit: None,
        git_dirty: false,
        load: Default::default(),
        stages: Vec::new(),
    }
}

/// A stage named (and of the kind) `name` that ran for 0.1 s, with these notes and facts.
fn stage(name: &str, notes: Vec<String>, facts: crate::metrics::Facts) -> crate::record::StageRecord {
    crate::record::StageRecord {
        name: name.into(),
        kind: name.into(),
        position: 0,
        status: StageStatus::Ok,
        cache_hit: false,
        seconds: 0.1,
        peak_rss_bytes: None,
        error: None,
        content_hash: None,
        metrics: Vec::new(),
        notes,
        facts,
    }
}

#[test]
fn one_note_per_host_and_a_warning_when_machines_differ() {
    let trials = vec![
        trial(0, "a", "n1", 10, true),
        trial(1, "b", "n1", 10, true),
        trial(2, "a", "n1", 10, false),
        trial(3, "b", "n1", 10, false),
        trial(4, "a", "n2", 20, false),
        trial(5, "b", "n2", 20, false),
    ];
    let envs: BTreeMap<String, Fingerprint> = [
        fp("n1", "Xeon 8480", "H100, 550.1"),
        fp("n2", "EPYC 9654", "H100, 550.1"),
    ]
    .into_iter()
    .map(|e| (e.hash.clone(), e))
    .collect();
    let notes = host_notes(&trials, &envs);
    assert_eq!(notes.len(), 3, "{notes:#?}");
    assert!(
        notes[0].starts_with(
            "Host n1 (environment h-n1): 2 measured trials (1 a, 1 b) and 2 warm-up by 1 worker; CPU Xeon 8480"
        ),
        "{}",
        notes[0]
    );
    assert!(
        notes[1].contains("Host n2") && notes[1].contains("EPYC 9654"),
        "{}",
        notes[1]
    );
    assert!(
        notes[2].starts_with("Warning: hosts differ in CPU model (Xeon 8480 on n1; EPYC 9654 on n2)"),
        "{}",
        notes[2]
    );
}

fn stored_run(stock_database: Option<&str>) -> (RunRow, StoredSpec) {
    let text = "[experiment]\nname = \"db\"\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\n";
    let exp = crate::manifest::parse_str(std::path::Path::new("db.toml"), text, false).unwrap();
    let exp = StoredSpec::of(&exp, 1);
    let row = RunRow {
        id: "20260101-000000-0000".into(),
        experiment: "db".into(),
        description: String::new(),
        manifest_path: "db.toml".into(),
        manifest_text: text.into(),
        manifest_hash: "h".into(),
        smoke: false,
        seed: 1,
        status: crate::store::RunStatus::Finished,
        error: None,
        planned_trials: 0,
        started_at: chrono::Utc::now(),
        finished_at: None,
        git_commit: "abc".into(),
        git_dirty: false,
        git_branch: None,
        environment_hash: "e".into(),
        command: "measured run db.toml --seed 1".into(),
        heartbeat_at: None,
        lease_seconds: 60.0,
        stock_database: stock_database.map(str::to_owned),
        spec: None,
        stock_data: None,
        stored_trials: 0,
        failed_trials: 0,
    };
    (row, exp)
}

#[test]
fn the_report_names_both_databases_without_passwords() {
    let (row, exp) = stored_run(Some("postgres://bob:***@stock.example/bars"));
    let data = run_data(&row, &exp, &[], None, "postgres://alice:s3cret@db.example/results");
    let report = crate::report::build_report(&data);
    assert_eq!(report.databases.results, "postgres://alice:***@db.example/results");
    let md = crate::report::render_markdown(&report, None).unwrap();
    assert!(
        md.contains(
            "Results database `postgres://alice:***@db.example/results`; stock database `postgres://bob:***@stock.example/bars`."
        ),
        "{md}"
    );
    let json = serde_json::to_string(&report).unwrap();
    assert!(!md.contains("s3cret") && !json.contains("s3cret"), "{json}");

    // Runs stored before the stock database was recorded, and runs that read their own.
    let (old, exp) = stored_run(None);
    let md = crate::report::render_markdown(
        &crate::report::build_report(&run_data(&old, &exp, &[], None, "r.sqlite")),
        None,
    )
    .unwrap();
    assert!(
        md.contains("Results database `r.sqlite`; stock database not recorded."),
        "{md}"
    );
    let (same, exp) = stored_run(Some("r.sqlite"));
    let md = crate::report::render_markdown(
        &crate::report::build_report(&run_data(&same, &exp, &[], None, "r.sqlite")),
        None,
    )
    .unwrap();
    assert!(
        md.contains("Results database `r.sqlite`; stock data from the same database."),
        "{md}"
    );
}

#[test]
fn the_branch_is_in_the_environment_only_when_known() {
    let (mut row, exp) = stored_run(None);
    let unknown = run_data(&row, &exp, &[], None, "r.sqlite");
    assert!(
        !unknown.environment.contains_key("git_branch"),
        "{:?}",
        unknown.environment
    );
    row.git_branch = Some("feature/fast-path".into());
    let known = run_data(&row, &exp, &[], None, "r.sqlite");
    assert_eq!(
        known.environment.get("git_branch").map(String::as_str),
        Some("feature/fast-path")
    );
}

#[test]
fn stage_notes_are_listed_once_with_their_configs_and_trial_counts() {
    let with_note = |index, variant: &str, warmup, note: &str| {
        let mut t = trial(index, variant, "n1", 1, warmup);
        t.stages.push(stage("load", vec![note.to_owned()], Default::default()));
        t
    };
    let trials = vec![
        with_note(0, "a", true, "dropped 1 symbol with no rows in the whole history: X"),
        with_note(1, "b", false, "dropped 1 symbol with no rows in the whole history: X"),
        with_note(2, "a", false, "something else"),
        with_note(3, "b", false, "dropped 1 symbol with no rows in the whole history: X"),
    ];
    let (notes, left_out) = stage_notes(&trials);
    assert_eq!(left_out, 0);
    assert_eq!(notes.len(), 2);
    assert_eq!(
        (notes[0].trials, notes[0].configs.clone()),
        (3, vec!["a".into(), "b".into()])
    );
    assert_eq!((notes[1].note.as_str(), notes[1].trials), ("something else", 1));
    let many: Vec<TrialRecord> = (0..MAX_STAGE_NOTES as u32 + 5)
        .map(|i| with_note(i, "a", false, &format!("note {i}")))
        .collect();
    let (notes, left_out) = stage_notes(&many);
    assert_eq!((notes.len(), left_out), (MAX_STAGE_NOTES, 5));
}

#[test]
fn load_figures_leave_out_warm_up_trials_and_old_runs_say_nothing() {
    let mut warm = trial(0, "a", "n1", 1, true);
    warm.load = crate::measure::TrialLoad {
        load_before: Some(9.0),
        load_after: Some(9.0),
        other_cpu: Some(8.0),
        cores: Some(8),
        cpu_mhz: Some(1000.0),
        ticks: None,
    };
    let mut measured = trial(1, "a", "n1", 1, false);
    measured.load = crate::measure::TrialLoad {
        load_before: Some(0.5),
        load_after: Some(0.7),
        other_cpu: Some(0.2),
        cores: Some(8),
        cpu_mhz: Some(3000.0),
        ticks: None,
    };
    let m = machine_load(&[warm.clone(), measured]);
    let l = m.load.as_ref().unwrap();
    assert_eq!((l.trials, l.max, l.busy), (1, 0.7, false));
    assert!(m.warnings().is_empty());
    // Trials stored before the readings existed: no figures at all.
    let (row, spec) = stored_run(None);
    let old = [trial(0, "a", "n1", 1, false), trial(1, "a", "n1", 1, false)];
    let data = run_data(&row, &spec, &old, None, "r.sqlite");
    assert_eq!(data.machine, MachineLoad::default());
    assert!(data
        .notes
        .iter()
        .all(|n| !n.contains("Busy") && !n.contains("frequency")));
}

#[test]
fn same_machines_no_warning_and_single_worker_no_notes() {
    let envs: BTreeMap<String, Fingerprint> = [fp("n1", "Xeon", "none"), fp("n2", "Xeon", "none")]
        .into_iter()
        .map(|e| (e.hash.clone(), e))
        .collect();
    let two = vec![trial(0, "a", "n1", 1, false), trial(1, "b", "n2", 2, false)];
    let notes = host_notes(&two, &envs);
    assert_eq!(notes.len(), 2);
    assert!(notes.iter().all(|n| !n.starts_with("Warning")), "{notes:#?}");
    let one = vec![trial(0, "a", "n1", 1, false), trial(1, "b", "n1", 1, false)];
    assert!(host_notes(&one, &envs).is_empty());
}

#[test]
fn a_command_of_a_few_milliseconds_gets_a_repeat_to_try() {
    let timed = |index: u32, seconds: f64| {
        let mut t = trial(index, "work", "n1", 1, false);
        t.config = "baseline".into();
        t.stages.push(crate::record::StageRecord {
            name: "work".into(),
            kind: "command".into(),
            position: 0,
            status: StageStatus::Ok,
            cache_hit: false,
            seconds,
            peak_rss_bytes: None,
            error: None,
            content_hash: None,
            metrics: Vec::new(),
            notes: Vec::new(),
            facts: Default::default(),
        });
        t
    };
    let (row, spec) = stored_run(None);
    let short: Vec<TrialRecord> = [0.0009, 0.0011, 0.0010]
        .iter()
        .enumerate()
        .map(|(i, s)| timed(i as u32, *s))
        .collect();
    let notes = run_data(&row, &spec, &short, None, "r.sqlite").notes;
    let note = notes.iter().find(|n| n.contains("repeat =")).expect("a repeat to try");
    insta::assert_snapshot!(note);
    // Long enough already, or repeated already: nothing to suggest.
    let long: Vec<TrialRecord> = [0.02, 0.03]
        .iter()
        .enumerate()
        .map(|(i, s)| timed(i as u32, *s))
        .collect();
    let notes = run_data(&row, &spec, &long, None, "r.sqlite").notes;
    assert!(notes.iter().all(|n| !n.contains("repeat =")), "{notes:?}");
    let text = "[experiment]\nname = \"db\"\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\nrepeat = 20\n";
    let exp = crate::manifest::parse_str(std::path::Path::new("db.toml"), text, false).unwrap();
    let repeated = StoredSpec::of(&exp, 1);
    let notes = run_data(&row, &repeated, &short, None, "r.sqlite").notes;
    assert!(notes.iter().all(|n| !n.contains("repeat =")), "{notes:?}");
    // A program that prints its own metric is not timed by its process: nothing to suggest.
    let text = "[experiment]\nname = \"db\"\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\n\
                [compare]\nprimary = \"work.latency\"\n";
    let exp = crate::manifest::parse_str(std::path::Path::new("db.toml"), text, false).unwrap();
    let printed = StoredSpec::of(&exp, 1);
    let notes = run_data(&row, &printed, &short, None, "r.sqlite").notes;
    assert!(notes.iter().all(|n| !n.contains("repeat =")), "{notes:?}");
}

/// Facts per config: agreed where every measured trial recorded one value, listed with their
/// trials where they differ (a trial that did not record one counts as `None`).
#[test]
fn config_facts_agree_or_list_what_differed() {
    let with_facts = |index, variant: &str, warmup, facts: &[(&str, &str)]| {
        let mut t = trial(index, variant, "n1", 1, warmup);
        let facts = facts.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        t.stages.push(stage("train", Vec::new(), facts));
        t
    };
    let trials = vec![
        with_facts(0, "a", true, &[("device", "cpu")]),
        with_facts(1, "a", false, &[("device", "cuda"), ("rnn_engine", "cudnn")]),
        with_facts(2, "a", false, &[("device", "cuda"), ("rnn_engine", "dfdx")]),
        with_facts(3, "a", false, &[("device", "cuda")]),
        with_facts(4, "b", false, &[]),
    ];
    let facts = config_facts(&["a", "b"], &trials);
    assert_eq!(facts.len(), 1, "b recorded none: {facts:?}");
    let a = &facts[0];
    assert_eq!((a.config.as_str(), a.trials), ("a", 3));
    assert_eq!(a.agreed.len(), 1);
    assert_eq!(a.agreed["train.device"], "cuda", "the warm-up is not counted");
    assert_eq!(a.differed.len(), 1);
    assert_eq!(a.differed[0].fact, "train.rnn_engine");
    let values: Vec<(Option<&str>, usize)> = a.differed[0]
        .values
        .iter()
        .map(|v| (v.value.as_deref(), v.trials))
        .collect();
    assert_eq!(values, [(None, 1), (Some("cudnn"), 1), (Some("dfdx"), 1)]);
}
