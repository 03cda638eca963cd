//! `measured ab`'s manifest from its options: templates that render as the commands, the
//! shapes of the manifest, and the errors of options that cannot make one.

use super::manifest::{ab_manifest, template, STAGE};
use super::results::Unit;
use super::*;
use crate::cli::{Cli, Command};
use crate::manifest::Experiment;
use clap::Parser;

fn args(words: &[&str]) -> AbArgs {
    let argv = ["measured", "ab"].iter().chain(words).copied();
    match Cli::try_parse_from(argv).expect("the options parse").command {
        Command::Ab(a) => a,
        other => panic!("not ab: {other:?}"),
    }
}

/// The experiment `words` make, run from the manifest's own folder.
fn experiment(words: &[&str]) -> (Experiment, Vec<String>) {
    let made = ab_manifest(&args(words), ".").unwrap_or_else(|e| panic!("{e}"));
    let exp = crate::manifest::parse_str(Path::new("ab.toml"), &made.text, false)
        .unwrap_or_else(|e| panic!("{}\n{}", e.render(), made.text));
    (exp, made.names)
}

/// Each config's command as the stage would run it (trial 0).
fn commands(exp: &Experiment) -> Vec<Vec<String>> {
    let si = exp.stages.iter().position(|s| s.name == STAGE).unwrap();
    let trial = crate::kinds::TrialInfo {
        run_id: "RUN".into(),
        trial_index: 0,
        config: "c".into(),
        variant: "v".into(),
        repetition: 0,
        warmup: false,
    };
    exp.configs
        .iter()
        .map(|c| {
            let crate::kinds::StageParams::Command(p) = &c.stages[si].params else {
                panic!("stage {si} is not a command stage")
            };
            let (_, r) = p.render_all(&trial, 0, STAGE);
            r.unwrap().argv
        })
        .collect()
}

#[test]
fn a_command_becomes_a_template_that_renders_as_itself_with_its_parameters_filled() {
    let env = minijinja::Environment::new();
    let ctx = serde_json::json!({ "n": 4, "dir": "a b" });
    let params = ["n".to_owned(), "dir".to_owned()];
    for (command, rendered) in [
        ("sleep 0.1", "sleep 0.1"),
        ("awk '{print $1}' f", "awk '{print $1}' f"),
        ("echo {{ x }} {% if %} {# c #}", "echo {{ x }} {% if %} {# c #}"),
        ("xz -T{n} -c {dir}/f", "xz -T4 -c a b/f"),
        ("echo {{n}}", "echo {4}"),
        ("echo {m} {n", "echo {m} {n"),
    ] {
        let t = template(command, &params);
        assert_eq!(env.render_str(&t, &ctx).unwrap(), rendered, "{command} -> {t}");
    }
}

#[test]
fn two_commands_are_two_variants_of_one_stage_compared_on_its_wall_time() {
    let (exp, names) = experiment(&["sleep 0.100", "sleep 0.110"]);
    assert_eq!(names, ["sleep-0-100", "sleep-0-110"]);
    assert_eq!(exp.variants, names);
    assert_eq!(exp.compare.primary, "bench.seconds");
    assert_eq!(exp.compare.baseline, "sleep-0-100");
    assert_eq!(commands(&exp), [vec!["sleep 0.100"], vec!["sleep 0.110"]]);
    let plan = exp.schedule.sequential.unwrap();
    assert_eq!((exp.schedule.warmup, plan.min, plan.max), (1, 10, 200));
    assert_eq!(exp.schedule.max_time, Some(std::time::Duration::from_secs(120)));
    assert!(!exp.compare.allow_identical);
}

#[test]
fn without_a_shell_the_words_are_split_and_other_shells_get_dash_c() {
    let (exp, _) = experiment(&["-N", "sleep 0.1", "printf '%s\\n' 'a b'"]);
    assert_eq!(commands(&exp), [vec!["sleep", "0.1"], vec!["printf", "%s\\n", "a b"]]);
    let (exp, _) = experiment(&["--shell", "bash --norc", "echo {1..3}"]);
    assert_eq!(commands(&exp), [vec!["bash", "--norc", "-c", "echo {1..3}"]]);
}

#[test]
fn parameter_lists_sweep_every_command_and_prepare_runs_first() {
    let (exp, names) = experiment(&[
        "-n",
        "one",
        "-n",
        "two",
        "sort -S{mb}M f",
        "sort --parallel=2 -S{mb}M f",
        "-L",
        "mb",
        "8,64",
        "--prepare",
        "sync",
        "--runs",
        "12",
        "--warmup",
        "0",
    ]);
    assert_eq!(names, ["one", "two"]);
    let configs: Vec<&str> = exp.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(configs, ["one[mb=8]", "one[mb=64]", "two[mb=8]", "two[mb=64]"]);
    assert_eq!(
        commands(&exp),
        [
            vec!["sort -S8M f"],
            vec!["sort -S64M f"],
            vec!["sort --parallel=2 -S8M f"],
            vec!["sort --parallel=2 -S64M f"]
        ]
    );
    let bench = exp.stages.iter().find(|s| s.name == STAGE).unwrap();
    assert_eq!(exp.stages[bench.needs[0]].name, "prepare");
    assert_eq!((exp.schedule.repetitions, exp.schedule.sequential), (12, None));
}

#[test]
fn the_same_command_twice_is_an_a_a_comparison() {
    let (exp, names) = experiment(&["true", "true"]);
    assert_eq!(names, ["true", "true-2"]);
    assert!(exp.compare.allow_identical);
}

#[test]
fn options_that_cannot_make_a_manifest_say_which_and_how_to_fix_it() {
    let cases: &[&[&str]] = &[
        &["-n", "a", "x", "y"],
        &["-n", "a b", "x"],
        &["   "],
        &["x", "-L", "t", "1,2"],
        &["x {t}", "-L", "seed", "1,2"],
        &["x {t}", "-L", "t", "1,1"],
        &["x", "--min", "3"],
        &["x", "--runs", "5"],
        &["x", "--max-time", "soon"],
        &["x", "--min", "20", "--max", "10"],
        &["x", "y", "z", "-p", "a", "-p", "b"],
        &["x {t}", "-L", "t", "1,2", "-p", "rm {t}"],
        &["-N", "echo 'open"],
        &["x", "--shell", "''"],
        &["x", "--name", "a/b"],
    ];
    let messages: Vec<String> = cases
        .iter()
        .map(|words| {
            let message = ab_manifest(&args(words), ".")
                .err()
                .unwrap_or_else(|| panic!("{words:?} was accepted"));
            format!("{}\n{message}", shlex::try_join(words.iter().copied()).unwrap())
        })
        .collect();
    insta::assert_snapshot!(messages.join("\n\n"));
}

#[test]
fn the_commands_run_in_the_current_folder_named_from_the_manifests() {
    let p = |s: &str| PathBuf::from(s);
    assert_eq!(relative_dir(&p("/r/results/ab"), &p("/r")), p("../.."));
    assert_eq!(relative_dir(&p("/r"), &p("/r")), p("."));
    assert_eq!(relative_dir(&p("/r/bench"), &p("/r/src/x")), p("../src/x"));
    assert_eq!(relative_dir(&p("/"), &p("/r")), p("r"));
}

#[test]
fn the_table_reads_each_row_in_one_unit() {
    let u = Unit::of(0.1006);
    assert_eq!(
        (u.show(0.1006), u.show(0.000091)),
        ("100.600 ms".into(), "0.091 ms".into())
    );
    assert_eq!(Unit::of(2.5).show(2.5), "2.500 s");
    assert_eq!(Unit::of(0.0004).show(0.0004), "400.000 µs");
    assert_eq!(Unit::of(f64::NAN).show(f64::NAN), "-");
}
