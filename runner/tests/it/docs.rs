//! The docs cannot drift from the code: every TOML block in README.md, docs/ and bench/ passes
//! `measured check`, and every `measured ...` command shown in a shell block parses with the
//! real command line (and names manifests that exist).

use crate::common::{bin, run, text};
use clap::Parser;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn docs() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    for dir in ["docs", "bench"] {
        let mut md: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        md.sort();
        files.extend(md);
    }
    files
}

/// The fenced blocks of `lang` in a Markdown text, with the line each starts on.
fn blocks(md: &str, langs: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in md.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut current, fence) {
            (None, Some(lang)) if langs.contains(&lang.trim()) => current = Some((i + 1, String::new())),
            (None, Some(_)) => current = Some((0, String::new())), // another language: skipped
            (Some(_), Some(_)) => {
                let (start, body) = current.take().unwrap();
                if start > 0 {
                    out.push((start, body));
                }
            }
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

#[test]
fn every_toml_block_in_the_docs_passes_check() {
    let dir = tempfile::tempdir().unwrap();
    // The examples' claims quote the committed sources.
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/sources");
    std::fs::create_dir(dir.path().join("sources")).unwrap();
    for entry in std::fs::read_dir(&sources).unwrap() {
        let from = entry.unwrap().path();
        std::fs::copy(&from, dir.path().join("sources").join(from.file_name().unwrap())).unwrap();
    }
    let mut checked = 0;
    for doc in docs() {
        let md = std::fs::read_to_string(&doc).unwrap();
        for (line, body) in blocks(&md, &["toml"]) {
            let file = dir.path().join(format!("block-{checked}.toml"));
            std::fs::write(&file, &body).unwrap();
            let out = run(bin().arg("check").arg(&file));
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}:{line}: the TOML block does not pass `measured check`:\n{}",
                doc.display(),
                text(&out)
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "found only {checked} TOML blocks");
}

#[test]
fn every_command_shown_in_the_docs_parses() {
    let mut parsed = 0;
    for doc in docs() {
        let md = std::fs::read_to_string(&doc).unwrap();
        for (line, body) in blocks(&md, &["sh", "bash", "console"]) {
            for cmd in body.lines().map(str::trim) {
                let cmd = cmd.split(" # ").next().unwrap_or_default().trim();
                // A redirection or a pipeline: what follows the measured command is the shell's.
                let cmd = cmd.split(['>', '|', '&', ';']).next().unwrap_or_default().trim();
                let Some(args) = cmd
                    .strip_prefix("measured ")
                    .or_else(|| cmd.strip_prefix("cargo run --release -- "))
                else {
                    continue;
                };
                let words: Vec<&str> = std::iter::once("measured").chain(args.split_whitespace()).collect();
                if let Err(e) = measured::cli::Cli::try_parse_from(&words) {
                    panic!("{}:{line}: `{cmd}` does not parse:\n{e}", doc.display());
                }
                for w in words.iter().filter(|w| w.ends_with(".toml")) {
                    assert!(
                        root().join(w).is_file(),
                        "{}:{line}: `{cmd}` names missing {w}",
                        doc.display()
                    );
                }
                parsed += 1;
            }
        }
    }
    assert!(parsed >= 5, "found only {parsed} commands");
}

#[test]
fn every_command_has_help_with_an_example() {
    use clap::CommandFactory;
    fn walk(cmd: &mut clap::Command, path: &str, missing: &mut Vec<String>) {
        let name = format!("{path} {}", cmd.get_name()).trim().to_owned();
        let help = cmd.render_long_help().to_string();
        if !help.contains("Example") {
            missing.push(name.clone());
        }
        for sub in cmd.get_subcommands_mut() {
            if sub.get_name() != "help" {
                walk(sub, &name, missing);
            }
        }
    }
    let mut missing = Vec::new();
    walk(&mut measured::cli::Cli::command(), "", &mut missing);
    assert!(missing.is_empty(), "no example in --help of: {missing:?}");
}
