//! Tests of the `command` stage's pieces: templates, the metric protocol, working folders.

use super::output::{MAX_METRIC_NAME, MAX_METRIC_UNIT};
use super::*;

#[test]
fn the_pid_window_starts_above_the_counter_and_reads_everything_after_a_wrap() {
    let w = PidWindow::starting_at(Some(1000));
    w.saw(Some(1200));
    assert_eq!(w.floor_now(Some(1300)), Some(1001));
    // The counter went down: it wrapped, and pids below 1001 may be the stage's now.
    let wrapped = PidWindow::starting_at(Some(1000));
    wrapped.saw(Some(32_000));
    wrapped.saw(Some(400));
    assert_eq!(wrapped.floor_now(Some(900)), None);
    // A wrap between the last tick and the exit counts too.
    let late = PidWindow::starting_at(Some(1000));
    assert_eq!(late.floor_now(Some(301)), None);
    // No counter to read: every process is read.
    assert_eq!(PidWindow::starting_at(None).floor_now(Some(5)), None);
    assert_eq!(PidWindow::starting_at(Some(1000)).floor_now(None), None);
}

#[test]
fn the_leftover_check_tries_the_pids_of_a_small_window_and_lists_proc_otherwise() {
    use super::process::window_pids;
    assert_eq!(window_pids(1001, 1003), Some(1001..=1003));
    // Nothing started since the stage began: an empty window, nothing to read.
    assert_eq!(window_pids(1001, 1000).map(Iterator::count), Some(0));
    // Too many to try one by one, or a counter below the floor (it wrapped).
    assert_eq!(window_pids(1001, 1001 + 300), None);
    assert_eq!(window_pids(1001, 400), None);
}

#[test]
fn output_lines_are_the_same_whatever_pieces_the_bytes_arrive_in() {
    let input = b"one\r\ntwo\n\nthree\xff\nfour".to_vec();
    let whole = {
        let mut seen = Vec::new();
        each_line(&input[..], |i, l| seen.push((i, l.to_owned())));
        seen
    };
    assert_eq!(whole.len(), 5, "{whole:?}");
    for size in [1, 2, 3, 7] {
        let mut lines = super::output::Lines::default();
        let mut seen = Vec::new();
        let mut f = |i: usize, l: &str| seen.push((i, l.to_owned()));
        for chunk in input.chunks(size) {
            lines.feed(chunk, &mut f);
        }
        lines.finish(&mut f);
        assert_eq!(seen, whole, "pieces of {size} bytes");
    }
}

#[test]
fn output_lines_are_bytes_cut_at_a_bound_and_read_to_the_end() {
    let mut input = b"ok\n\xff\xfe bad utf-8\r\n".to_vec();
    input.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
    input.extend(b"\nlast");
    let mut seen = Vec::new();
    each_line(&input[..], |i, l| {
        seen.push((i, l.len(), l.chars().take(3).collect::<String>()))
    });
    assert_eq!(
        seen,
        [
            (0, 2, "ok".to_owned()),
            (1, "\u{fffd}\u{fffd} bad utf-8".len(), "\u{fffd}\u{fffd} ".to_owned()),
            (2, MAX_LINE, "xxx".to_owned()),
            (3, 4, "las".to_owned())
        ]
    );
}

#[test]
fn metric_lines_parse_and_bad_ones_say_why() {
    assert_eq!(parse_metric_line("plain text"), None);
    assert_eq!(parse_metric_line(""), None);
    assert_eq!(
        parse_metric_line(r#" {"metric": "epoch.loss-2_x", "value": 0.5, "unit": "loss", "step": 3}"#),
        Some(Ok(MetricLine {
            metric: "epoch.loss-2_x".into(),
            value: 0.5,
            unit: "loss".into(),
            step: Some(3)
        }))
    );
    let bad = |line: &str| match parse_metric_line(line) {
        Some(Err(why)) => why,
        other => panic!("{line}: {other:?}"),
    };
    assert!(bad(r#"{"metrc": "a", "value": 1}"#).contains("missing field `metric`"));
    assert_eq!(bad(r#"{"metric": "", "value": 1}"#), "the metric name is empty");
    let long = "x".repeat(MAX_METRIC_NAME + 1);
    assert_eq!(
        bad(&format!(r#"{{"metric": "{long}", "value": 1}}"#)),
        "the metric name is 129 bytes long (at most 128)"
    );
    let longest = "x".repeat(MAX_METRIC_NAME);
    assert!(matches!(
        parse_metric_line(&format!(r#"{{"metric": "{longest}", "value": 1}}"#)),
        Some(Ok(_))
    ));
    for name in ["a b", "a/b", "ä", r"a\nb", "a`b", r"a\u0000"] {
        assert!(
            bad(&format!(r#"{{"metric": "{name}", "value": 1}}"#)).contains("has characters other than"),
            "{name}"
        );
    }
    let unit = "u".repeat(MAX_METRIC_UNIT + 1);
    assert!(bad(&format!(r#"{{"metric": "a", "value": 1, "unit": "{unit}"}}"#)).contains("unit is 65 bytes"));
    assert!(bad(r#"{"metric": "a", "value": 1, "unit": "s\n"}"#).contains("control characters"));
}

#[test]
fn bad_lines_keep_the_first_few_with_short_reasons_and_count_the_rest() {
    let mut bad = BadLines::default();
    for i in 0..1000 {
        bad.push(i + 1, "y".repeat(10_000));
    }
    assert_eq!(bad.total, 1000);
    assert_eq!(bad.shown.len(), BAD_LINES_SHOWN);
    assert!(bad
        .shown
        .iter()
        .all(|(_, why)| why.chars().count() == BAD_LINE_REASON_CHARS));
    assert_eq!(bad.shown.last().unwrap().0, BAD_LINES_SHOWN);
}

#[test]
fn a_relative_cwd_is_relative_to_the_manifest_and_a_missing_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let manifest_dir = dir.path().canonicalize().unwrap().join("experiments");
    std::fs::create_dir_all(manifest_dir.join("data")).unwrap();
    assert_eq!(working_dir(&manifest_dir, "data"), manifest_dir.join("data"));
    assert_eq!(working_dir(&manifest_dir, "/abs"), PathBuf::from("/abs"));
    assert_eq!(
        unusable_working_dir(&manifest_dir.join("data"), "data", &manifest_dir),
        None
    );

    let missing = unusable_working_dir(&manifest_dir.join("nope"), "nope", &manifest_dir).unwrap();
    assert!(
        missing.starts_with(&format!(
            "working directory `{}` does not exist (cwd = \"nope\", relative to the manifest's directory {})",
            manifest_dir.join("nope").display(),
            manifest_dir.display()
        )),
        "{missing}"
    );
    std::fs::write(manifest_dir.join("file"), "").unwrap();
    let file = manifest_dir.join("file");
    let not_dir = unusable_working_dir(&file, file.to_str().unwrap(), &manifest_dir).unwrap();
    assert!(not_dir.contains("is not a directory"), "{not_dir}");
    assert!(
        !not_dir.contains("relative to"),
        "an absolute cwd is not relative: {not_dir}"
    );
}

#[test]
fn text_without_templates_renders_as_the_template_engine_would() {
    let params = |argv: &[&str], cwd: Option<&str>| -> crate::kinds::CommandParams {
        let mut t = toml::Table::new();
        t.insert(
            "argv".into(),
            argv.iter().map(|a| toml::Value::from(*a)).collect::<Vec<_>>().into(),
        );
        if let Some(c) = cwd {
            t.insert("cwd".into(), c.into());
        }
        t.insert(
            "env".into(),
            toml::Value::Table([("A".to_owned(), "x y".into())].into_iter().collect()),
        );
        crate::kinds::checked(&t).unwrap()
    };
    let trial = crate::kinds::TrialInfo {
        run_id: "RUN".into(),
        trial_index: 3,
        config: "c".into(),
        variant: "v".into(),
        repetition: 1,
        warmup: false,
    };
    // Plain text takes the short way; one brace sends the same text through minijinja.
    for (plain, templated) in [
        (vec!["sleep", "0.1"], vec!["sleep", "{{ '0.1' }}"]),
        (vec!["sh", "-c", "a && b; c"], vec!["sh", "-c", "a && b; {{ 'c' }}"]),
    ] {
        let (_, a) = params(&plain, Some("sub/dir")).render_all(&trial, 7, "s");
        let (_, b) = params(&templated, Some("{{ 'sub/dir' }}")).render_all(&trial, 7, "s");
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((&a.argv, &a.env, &a.cwd), (&b.argv, &b.env, &b.cwd));
    }
    // A trailing newline is dropped by the engine, so such text is rendered by it.
    let (_, r) = params(&["echo", "x\n"], None).render_all(&trial, 7, "s");
    assert_eq!(r.unwrap().argv, ["echo", "x"]);
}
