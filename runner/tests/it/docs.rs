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
                // Quoted arguments (`measured ab 'gzip -9 -c f'`) are one word, as a shell reads them.
                let split = shlex::split(args).unwrap_or_else(|| args.split_whitespace().map(str::to_owned).collect());
                let words: Vec<&str> = std::iter::once("measured")
                    .chain(split.iter().map(String::as_str))
                    .collect();
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

/// The figures `1.77x (1.73x-1.82x)` in `text`: a ratio with its interval.
fn figures(text: &str) -> Vec<String> {
    let number = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.');
    let mut out = Vec::new();
    for (i, _) in text.match_indices("x (") {
        let start = text[..i]
            .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or(0, |p| p + 1);
        let Some(end) = text[i..].find(')').map(|p| i + p) else {
            continue;
        };
        let inner = &text[i + 3..end];
        let ok = number(&text[start..i])
            && inner
                .strip_suffix('x')
                .and_then(|s| s.split_once("x-"))
                .is_some_and(|(a, b)| number(a) && number(b));
        if ok {
            out.push(text[start..=end].to_owned());
        }
    }
    out
}

/// What the verdict column says for each claim verdict of `report.json`.
fn verdict_words(verdict: &str) -> &'static str {
    match verdict {
        "not_reproduced" => "not reproduced here",
        "not_this_experiments_claim" => "not this experiment's claim",
        "untestable" => "untestable",
        "supported" => "supported",
        "refuted" => "refuted",
        "inconclusive" => "inconclusive",
        other => panic!("unknown claim verdict {other}"),
    }
}

#[test]
fn the_results_tables_are_true_to_the_committed_reports() {
    let mut experiments: Vec<String> = std::fs::read_dir(root().join("experiments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    experiments.sort();
    for doc in ["README.md", "docs/results.md"] {
        let md = std::fs::read_to_string(root().join(doc)).unwrap();
        let base = root().join(doc).parent().unwrap().to_owned();
        let mut rows = Vec::new();
        for line in md.lines().filter(|l| l.starts_with("| [")) {
            let (name, rest) = line[3..].split_once("](").unwrap();
            let link = rest.split_once(')').unwrap().0;
            if !link.ends_with("/report.md") {
                continue;
            }
            let report = base.join(link);
            assert!(report.is_file(), "{doc}: {name} links to missing {link}");
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(report.with_file_name("report.json")).unwrap()).unwrap();
            assert_eq!(
                json["experiment"].as_str(),
                Some(name),
                "{doc}: the row of {name} links to another experiment"
            );
            let body = std::fs::read_to_string(&report).unwrap().replace('–', "-");
            // The report writes them in a sentence or in a table's cells: the ratio and its
            // interval must both be there.
            for figure in figures(line) {
                let (ratio, interval) = figure.trim_end_matches(')').split_once(" (").unwrap();
                assert!(
                    body.contains(ratio) && body.contains(interval),
                    "{doc}: {name} says {figure}, which {link} does not"
                );
            }
            let verdict_cell = line.trim_end_matches('|').rsplit('|').next().unwrap();
            let claims = json["claims"].as_array().unwrap();
            let said: Vec<&str> = claims
                .iter()
                .map(|c| verdict_words(c["verdict"].as_str().unwrap()))
                .collect();
            let all = [
                "not reproduced here",
                "not this experiment's claim",
                "untestable",
                "supported",
                "refuted",
            ];
            for words in all.iter().filter(|w| verdict_cell.contains(*w)) {
                assert!(
                    said.contains(words),
                    "{doc}: {name}'s verdict says {words:?}, its report {said:?}"
                );
            }
            for words in &said {
                assert!(
                    verdict_cell.contains(words),
                    "{doc}: {name}'s verdict leaves out {words:?}"
                );
            }
            if claims.is_empty() {
                assert!(
                    verdict_cell.contains("no claim"),
                    "{doc}: {name} has no claim: {verdict_cell}"
                );
            }
            rows.push(name.to_owned());
        }
        rows.sort();
        assert_eq!(rows, experiments, "{doc}: one row per committed experiment");
    }
}
