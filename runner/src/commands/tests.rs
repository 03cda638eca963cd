//! Unit tests of the command layer: run statuses, resume and reproduce lines.

use super::run::{final_status, unstored_message};
use super::*;
use crate::exec::Outcome;
use crate::store::RunStatus;
use std::path::PathBuf;

#[test]
fn a_run_that_ran_everything_but_stored_less_is_never_finished() {
    assert_eq!(final_status(Outcome::Finished, 20, 20), RunStatus::Finished);
    assert_eq!(final_status(Outcome::Finished, 19, 20), RunStatus::Incomplete);
    assert_eq!(final_status(Outcome::Interrupted, 5, 20), RunStatus::Interrupted);
}

#[test]
fn the_reproduce_line_names_databases_that_are_not_the_defaults_without_passwords() {
    let exp = manifest::parse_str(
        Path::new("experiments/a b.toml"),
        "[experiment]\nname = \"x\"\n[stages.work]\nkind = \"command\"\nargv = [\"true\"]\n",
        false,
    )
    .unwrap();
    let mut g = Globals {
        database: db::DEFAULT_SQLITE_PATH.into(),
        stock_database: None,
        quiet: true,
    };
    assert_eq!(
        reproduce_command("run", &exp, 7, &g),
        "measured run 'experiments/a b.toml' --seed 7"
    );
    g.database = "postgres://alice:s3cret@db/results".into();
    g.stock_database = Some("postgres://bob:hunter2@db/stock".into());
    assert_eq!(
        reproduce_command("submit", &exp, 7, &g),
        "measured submit 'experiments/a b.toml' --seed 7 --database 'postgres://alice:***@db/results' \
         --stock-database 'postgres://bob:***@db/stock'"
    );
}

#[test]
fn the_unstored_message_names_the_run_the_journal_and_the_command() {
    let u = crate::store::Unstored {
        run_id: "20261124-120000-abcd".into(),
        url: "postgres://u:***@db/results".into(),
        journal: PathBuf::from("out/exp/20261124-120000-abcd.journal.jsonl"),
        trials: 7,
        error: "connection refused".into(),
    };
    let m = unstored_message(&u, Some(Path::new("out")), None);
    assert!(m.contains("run 20261124-120000-abcd"), "{m}");
    assert!(m.contains("postgres://u:***@db/results"), "{m}");
    assert!(
        m.contains("all 7 finished trials are kept in out/exp/20261124-120000-abcd.journal.jsonl"),
        "{m}"
    );
    assert!(
        m.ends_with("measured run --resume 20261124-120000-abcd --results-dir out"),
        "{m}"
    );
    assert_eq!(m.matches("connection refused").count(), 1, "the cause once: {m}");
    let default = unstored_message(&u, None, None);
    assert!(
        default.ends_with("measured run --resume 20261124-120000-abcd"),
        "{default}"
    );
    let elsewhere = unstored_message(&u, None, Some("/srv/repo/results/measured.sqlite"));
    assert!(
        elsewhere.ends_with("measured run --resume 20261124-120000-abcd --database /srv/repo/results/measured.sqlite"),
        "{elsewhere}"
    );
}
