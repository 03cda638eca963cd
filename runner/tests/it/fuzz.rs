//! Property/fuzz harness (stable Rust, proptest): the manifest parser and validator, the CSV
//! import's preparation and the command stage's stdout parsing get arbitrary and mutated
//! inputs. No input may panic, take more than 10 s, or (manifests) render more than 64 KiB
//! of errors; `measured check` of any file exits 0, 1 or 2 within 10 s.
//!
//! Cases per target: `MEASURED_FUZZ_CASES` (default [`DEFAULT_CASES`]); `scripts/fuzz.sh`
//! runs a million. See docs/fuzzing.md.

use crate::common::bin;
use measured::market::{prepare, ImportOptions, Layout};
use measured::stage::{each_line, parse_metric_line, MAX_LINE};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Cases per target when `MEASURED_FUZZ_CASES` is not set: bounded for CI.
const DEFAULT_CASES: u32 = 2048;
/// A long run prints a progress line after this many cases of a target.
const PROGRESS_EVERY: u64 = 100_000;
/// Longest one case may take.
const CASE_LIMIT: Duration = Duration::from_secs(10);
/// Most bytes of rendered manifest errors, the note saying they were cut included.
const MAX_RENDERED: usize = 64 * 1024;

fn cases() -> u32 {
    match std::env::var("MEASURED_FUZZ_CASES") {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("MEASURED_FUZZ_CASES must be a whole number, got `{v}`")),
        Err(_) => DEFAULT_CASES,
    }
}

fn runner() -> TestRunner {
    TestRunner::new(ProptestConfig {
        // No regressions files: a failure prints its (shrunk) input instead.
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases())
    })
}

/// Runs the property over `cases()` inputs and prints how many ran, how many of them the code
/// under test accepted (`Ok(true)`: a valid manifest, a clean import, a metric), and how long
/// they took.
fn fuzz<S: Strategy>(target: &str, strategy: S, test: impl Fn(S::Value) -> Result<bool, TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let started = Instant::now();
    let n = cases();
    let accepted = std::cell::Cell::new(0u64);
    let ran = std::cell::Cell::new(0u64);
    let result = runner().run(&strategy, |v| {
        accepted.set(accepted.get() + u64::from(test(v)?));
        ran.set(ran.get() + 1);
        if ran.get().is_multiple_of(PROGRESS_EVERY) {
            println!(
                "fuzz target {target}: {} cases so far, 0 failures, {:.0} s",
                ran.get(),
                started.elapsed().as_secs_f64()
            );
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("fuzz target `{target}` failed: {e}");
    }
    println!(
        "fuzz target {target}: {n} cases, 0 failures, {} accepted, {:.1} s",
        accepted.get(),
        started.elapsed().as_secs_f64()
    );
}

/// `f(input)` on its own thread: its result, or a failure when it panics or takes longer
/// than [`CASE_LIMIT`].
fn bounded<I: Send + 'static, T: Send + 'static>(
    input: I,
    f: impl FnOnce(I) -> T + Send + 'static,
) -> Result<T, TestCaseError> {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f(input));
    });
    match rx.recv_timeout(CASE_LIMIT) {
        Ok(v) => {
            let _ = worker.join();
            Ok(v)
        }
        Err(mpsc::RecvTimeoutError::Timeout) => Err(TestCaseError::fail(format!(
            "took longer than {} s",
            CASE_LIMIT.as_secs()
        ))),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let why = match worker.join() {
                Err(p) => p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default(),
                Ok(()) => String::new(),
            };
            Err(TestCaseError::fail(format!("panicked: {why}")))
        }
    }
}

// ---------------------------------------------------------------------------------------
// Corpus and mutations

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files_in(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == ext));
    v.sort();
    v
}

/// Folders holding corpus manifests, relative to the repository root.
const MANIFEST_DIRS: [&str; 4] = [
    "experiments",
    "runner/tests/fixtures/valid",
    "runner/tests/fixtures/invalid",
    "runner/tests/fixtures/fuzz",
];

/// One corpus file: its folder (an index into [`MANIFEST_DIRS`] for manifests) and bytes.
#[derive(Debug)]
struct Seed {
    dir: usize,
    bytes: Vec<u8>,
}

fn manifest_corpus() -> Vec<Seed> {
    let mut out = Vec::new();
    for (i, d) in MANIFEST_DIRS.iter().enumerate() {
        for p in files_in(&repo().join(d), "toml") {
            out.push(Seed {
                dir: i,
                bytes: std::fs::read(&p).unwrap(),
            });
        }
    }
    assert!(out.len() >= 50, "the manifest corpus has only {} files", out.len());
    out
}

fn csv_corpus() -> Vec<Seed> {
    let mut out = Vec::new();
    for d in [
        "runner/tests/fixtures/import",
        "runner/tests/fixtures/data",
        "runner/tests/fixtures/fuzz",
        "experiments",
    ] {
        for p in files_in(&repo().join(d), "csv") {
            out.push(Seed {
                dir: 0,
                bytes: std::fs::read(&p).unwrap(),
            });
        }
    }
    assert!(out.len() >= 5, "the CSV corpus has only {} files", out.len());
    out
}

/// A copy of every corpus folder (with its `sources/`) in a temporary directory, where
/// mutated manifests are written and read as `measured check` reads them.
struct Workspace {
    root: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let root = tempfile::tempdir().unwrap();
        for (i, d) in MANIFEST_DIRS.iter().enumerate() {
            let to = root.path().join(i.to_string());
            copy_dir(&repo().join(d), &to);
        }
        Workspace { root }
    }

    fn dir(&self, i: usize) -> PathBuf {
        self.root.path().join(i.to_string())
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let Ok(entries) = std::fs::read_dir(from) else { return };
    for e in entries {
        let e = e.unwrap();
        let ty = e.file_type().unwrap();
        if ty.is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else if ty.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Values that break naive parsers: limits of integer types, huge and special floats,
/// empty, long and path-like strings, bytes that are not UTF-8.
fn hostile(i: usize, quoted: bool) -> Vec<u8> {
    const RAW: [&[u8]; 20] = [
        b"4294967295",
        b"18446744073709551615",
        b"-1",
        b"0",
        b"1e308",
        b"-1e308",
        b"nan",
        b"inf",
        b"-inf",
        b"-9223372036854775808",
        b"9223372036854775808",
        b"1e-320",
        b"",
        b"../../x",
        b"\xff\xfe",
        b"\xc3(",
        b"/dev/null",
        b"\x00",
        b"0.0000001",
        b"99999999999999999999999999999999",
    ];
    let n = RAW.len() + 2;
    let v: Vec<u8> = match i % n {
        k if k < RAW.len() => RAW[k].to_vec(),
        k if k == RAW.len() => b"x".repeat(100_000),
        _ => "é\u{202e}\u{feff}".repeat(1000).into_bytes(),
    };
    if quoted {
        let mut q = b"\"".to_vec();
        q.extend(v);
        q.push(b'"');
        q
    } else {
        v
    }
}

/// Spans of double-quoted strings (within a line) and of number-like words: what
/// [`Op::Hostile`] replaces.
fn value_spans(b: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'+' | b':');
    while i < b.len() {
        let c = b[i];
        if c == b'"' {
            match b[i + 1..].iter().position(|&c| c == b'"' || c == b'\n') {
                Some(p) if b[i + 1 + p] == b'"' => {
                    out.push(i..i + p + 2);
                    i += p + 2;
                }
                _ => i += 1,
            }
        } else if (c.is_ascii_digit() || ((c == b'-' || c == b'+') && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
            && (i == 0 || !word(b[i - 1]))
        {
            let end = b[i + 1..].iter().position(|&c| !word(c)).map_or(b.len(), |p| i + 1 + p);
            out.push(i..end);
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Bytes that mean something in TOML and CSV.
const TOKENS: [&[u8]; 24] = [
    b"[", b"]", b"[[", b"]]", b"=", b"\"", b"'", b"'''", b"\"\"\"", b"{", b"}", b",", b".", b"#", b"\n", b"\r\n",
    b"\\", b"\\u", b"\t", b" ", b"\x00", b"\xff", b"\"\n", b",,",
];

/// One mutation of a corpus file; positions are taken modulo the length.
#[derive(Debug, Clone)]
enum Op {
    Flip {
        at: usize,
        mask: u8,
    },
    Delete {
        at: usize,
        len: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    InsertToken {
        at: usize,
        token: usize,
    },
    DuplicateLine {
        line: usize,
    },
    RemoveLine {
        line: usize,
    },
    SwapLines {
        a: usize,
        b: usize,
    },
    /// This file up to `at`, then another corpus file from `from`.
    Splice {
        other: usize,
        at: usize,
        from: usize,
    },
    /// Replaces the `nth` string or number by a hostile value.
    Hostile {
        nth: usize,
        value: usize,
        quoted: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let u = any::<usize>;
    prop_oneof![
        1 => (u(), 1..=255u8).prop_map(|(at, mask)| Op::Flip { at, mask }),
        1 => (u(), 1..64usize).prop_map(|(at, len)| Op::Delete { at, len }),
        1 => (u(), proptest::collection::vec(any::<u8>(), 1..16)).prop_map(|(at, bytes)| Op::Insert { at, bytes }),
        1 => (u(), u()).prop_map(|(at, token)| Op::InsertToken { at, token }),
        1 => u().prop_map(|line| Op::DuplicateLine { line }),
        1 => u().prop_map(|line| Op::RemoveLine { line }),
        1 => (u(), u()).prop_map(|(a, b)| Op::SwapLines { a, b }),
        1 => (u(), u(), u()).prop_map(|(other, at, from)| Op::Splice { other, at, from }),
        3 => (u(), u(), any::<bool>()).prop_map(|(nth, value, quoted)| Op::Hostile { nth, value, quoted }),
    ]
}

fn lines(b: &[u8]) -> Vec<Vec<u8>> {
    b.split_inclusive(|&c| c == b'\n').map(<[u8]>::to_vec).collect()
}

fn apply(mut b: Vec<u8>, ops: &[Op], corpus: &[Seed]) -> Vec<u8> {
    for op in ops {
        let len = b.len();
        match op {
            Op::Flip { at, mask } if len > 0 => b[at % len] ^= mask,
            Op::Flip { .. } => {}
            Op::Delete { at, len: n } => {
                let at = at % (len + 1);
                b.drain(at..(at + n).min(len));
            }
            Op::Insert { at, bytes } => {
                let at = at % (len + 1);
                b.splice(at..at, bytes.iter().copied());
            }
            Op::InsertToken { at, token } => {
                let at = at % (len + 1);
                b.splice(at..at, TOKENS[token % TOKENS.len()].iter().copied());
            }
            Op::DuplicateLine { line } | Op::RemoveLine { line } => {
                let mut ls = lines(&b);
                if !ls.is_empty() {
                    let i = line % ls.len();
                    if matches!(op, Op::DuplicateLine { .. }) {
                        let l = ls[i].clone();
                        ls.insert(i, l);
                    } else {
                        ls.remove(i);
                    }
                    b = ls.concat();
                }
            }
            Op::SwapLines { a, b: c } => {
                let mut ls = lines(&b);
                if !ls.is_empty() {
                    let n = ls.len();
                    ls.swap(a % n, c % n);
                    b = ls.concat();
                }
            }
            Op::Splice { other, at, from } => {
                let o = &corpus[other % corpus.len()].bytes;
                b.truncate(at % (len + 1));
                b.extend_from_slice(&o[from % (o.len() + 1)..]);
            }
            Op::Hostile { nth, value, quoted } => {
                let spans = value_spans(&b);
                if !spans.is_empty() {
                    let s = spans[nth % spans.len()].clone();
                    b.splice(s, hostile(*value, *quoted));
                }
            }
        }
    }
    b
}

/// A corpus file (by index, modulo the corpus size) and the mutations applied to it.
fn mutated() -> impl Strategy<Value = (usize, Vec<Op>)> {
    (any::<usize>(), proptest::collection::vec(op(), 1..8))
}

// ---------------------------------------------------------------------------------------
// Manifests

/// Parses `bytes` as the manifest `path` (written there first) and checks the bounds.
fn check_manifest(path: PathBuf, bytes: Vec<u8>) -> Result<bool, TestCaseError> {
    std::fs::write(&path, &bytes).unwrap();
    let rendered = bounded(path, |p| {
        measured::manifest::parse_file(&p, false).err().map(|e| e.render())
    })?;
    if let Some(text) = &rendered {
        prop_assert!(text.len() <= MAX_RENDERED, "{} bytes of rendered errors", text.len());
    }
    Ok(rendered.is_none())
}

/// Text shaped like TOML: tables, keys, values of every kind, some of them hostile.
fn tomlish() -> impl Strategy<Value = String> {
    let key = "[a-z_]{1,8}(\\.[a-z_]{1,8}){0,2}";
    let value = prop_oneof![
        "\"[a-z0-9 ./_-]{0,12}\"",
        "-?[0-9]{1,22}(\\.[0-9]{1,5})?(e-?[0-9]{1,3})?",
        Just("true".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        "\\[(\"[a-z]{0,4}\", ){0,3}\\]",
        (any::<usize>(), any::<bool>()).prop_map(|(i, q)| String::from_utf8_lossy(&hostile(i, q)).into_owned()),
    ];
    let line = prop_oneof![
        "\\[(experiment|schedule|stages\\.[a-z]{1,5}|compare|smoke|variants\\.[a-z]{1,5}|data)\\]",
        "\\[\\[(compare\\.claims|guards|variants|sweep)\\]\\]",
        (key, value).prop_map(|(k, v)| format!("{k} = {v}")),
        "kind = \"(command|load|normalize|model|transfer|[a-z]{0,6})\"",
    ];
    proptest::collection::vec(line, 0..40).prop_map(|ls| ls.join("\n"))
}

#[test]
fn fuzz_manifests_arbitrary_text() {
    let ws = Workspace::new();
    let path = ws.dir(0).join("fuzz_case.toml");
    let strategy = prop_oneof![
        any::<String>().prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..2048),
        tomlish().prop_map(String::into_bytes),
    ];
    fuzz("manifests (arbitrary)", strategy, |bytes| {
        check_manifest(path.clone(), bytes)
    });
}

#[test]
fn fuzz_manifests_mutated_corpus() {
    let ws = Workspace::new();
    let corpus = manifest_corpus();
    fuzz("manifests (mutated corpus)", mutated(), |(seed, ops)| {
        let s = &corpus[seed % corpus.len()];
        let bytes = apply(s.bytes.clone(), &ops, &corpus);
        check_manifest(ws.dir(s.dir).join("fuzz_case.toml"), bytes)
    });
}

// ---------------------------------------------------------------------------------------
// CSV import

/// Options of `measured import` that change how a file is read.
#[derive(Debug, Clone)]
struct CsvOptions {
    layout: Option<Layout>,
    symbol: Option<String>,
    columns: Option<String>,
    skip_bad: bool,
    date_format: Option<String>,
    gzip: bool,
}

fn csv_options() -> impl Strategy<Value = CsvOptions> {
    (
        prop_oneof![Just(None), Just(Some(Layout::Yahoo)), Just(Some(Layout::Tushare))],
        proptest::option::weighted(0.2, "[A-Za-z0-9._^=-]{0,40}"),
        proptest::option::weighted(
            0.2,
            "((date|open|high|low|close|volume|symbol|amount|adj_close|adj_factor|x)=[A-Za-z ]{0,8},?){0,8}",
        ),
        any::<bool>(),
        proptest::option::weighted(0.2, "(%[YmdHMSsbBjyaAeFT%:.+]|[-/ .,T]|%){0,8}"),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(layout, symbol, columns, skip_bad, date_format, gzip)| CsvOptions {
            layout,
            symbol,
            columns,
            skip_bad,
            date_format,
            gzip,
        })
}

/// A well-formed daily CSV in one of the known shapes, from generated numbers.
fn generated_csv() -> impl Strategy<Value = Vec<u8>> {
    let row = (
        0u32..20_000,
        -1e6f64..1e6,
        0f64..1e4,
        0f64..1e4,
        any::<u64>(),
        0usize..4,
    );
    (0usize..3, proptest::collection::vec(row, 0..40)).prop_map(|(shape, rows)| {
        let mut out = String::from(match shape {
            0 => "Date,Open,High,Low,Close,Adj Close,Volume\n",
            1 => "ts_code,trade_date,open,high,low,close,pre_close,change,pct_chg,vol,amount\n",
            _ => "Date,Symbol,Open,High,Low,Close,Volume\n",
        });
        for (day, open, up, down, volume, sym) in rows {
            let date = chrono::NaiveDate::from_ymd_opt(1990, 1, 1).unwrap() + chrono::Days::new(u64::from(day));
            let (high, low, close) = (open + up, open - down, open + (up - down) / 2.0);
            let sym = ["AAPL", "MSFT", "000001.SZ", "^GSPC"][sym];
            out.push_str(&match shape {
                0 => format!("{date},{open},{high},{low},{close},{close},{volume}\n"),
                1 => format!(
                    "{sym},{},{open},{high},{low},{close},{open},0,0,{volume},{volume}\n",
                    date.format("%Y%m%d")
                ),
                _ => format!("{date},{sym},{open},{high},{low},{close},{volume}\n"),
            });
        }
        out.into_bytes()
    })
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Prepares an import of `bytes` (as `FUZZ.csv`, or `FUZZ.csv.gz` gzip-compressed): it must
/// return, Ok or Err.
fn check_csv(dir: &Path, mut bytes: Vec<u8>, o: CsvOptions) -> Result<bool, TestCaseError> {
    let path = if o.gzip {
        bytes = gzip(&bytes);
        dir.join("FUZZ.csv.gz")
    } else {
        dir.join("FUZZ.csv")
    };
    std::fs::write(&path, &bytes).unwrap();
    let opts = ImportOptions {
        files: vec![path],
        layout: o.layout,
        symbol: o.symbol,
        columns: o.columns,
        skip_bad: o.skip_bad,
        date_format: o.date_format,
        dry_run: true,
        ..ImportOptions::default()
    };
    let outcome = bounded(opts, |opts| {
        prepare(&opts).map(|p| p.to_string()).map_err(|e| e.to_string())
    })?;
    let shown = match &outcome {
        Ok(s) | Err(s) => s.len(),
    };
    prop_assert!(shown <= 1 << 20, "{shown} bytes of import summary or error");
    Ok(outcome.is_ok())
}

#[test]
fn fuzz_csv_import() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = csv_corpus();
    let input = prop_oneof![
        3 => mutated().prop_map(|(seed, ops)| apply(corpus[seed % corpus.len()].bytes.clone(), &ops, &corpus)),
        2 => (generated_csv(), proptest::collection::vec(op(), 0..4)).prop_map(|(csv, ops)| apply(csv, &ops, &corpus)),
        1 => proptest::collection::vec(any::<u8>(), 0..1024),
        1 => any::<String>().prop_map(String::into_bytes),
    ];
    fuzz("CSV import", (input, csv_options()), |(bytes, o)| {
        check_csv(dir.path(), bytes, o)
    });
}

// ---------------------------------------------------------------------------------------
// Stage output

/// A JSON value, sometimes hostile, as a metric line's field.
fn json_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "\"[A-Za-z0-9_.-]{0,20}\"",
        "\"[^\"\\\\]{0,20}\"",
        "-?[0-9]{1,25}(\\.[0-9]{1,5})?([eE][-+]?[0-9]{1,4})?",
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just(format!("\"{}\"", "m".repeat(200))),
        Just("\"\\u0000\"".to_owned()),
        Just("\"\\ud800\"".to_owned()),
        Just("NaN".to_owned()),
        Just("1e999".to_owned()),
    ]
}

/// Lines shaped like metric lines, with fields missing, repeated or of the wrong type.
fn metricish() -> impl Strategy<Value = String> {
    let field = (
        prop_oneof![Just("metric"), Just("value"), Just("unit"), Just("step"), Just("other")],
        json_value(),
    );
    proptest::collection::vec(field, 0..6).prop_map(|fields| {
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
        format!("{{{}}}", body.join(", "))
    })
}

/// Well-formed metric lines whose name, unit and step may be out of bounds.
fn metric_line() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        3 => "[A-Za-z0-9_.-]{1,20}",
        1 => "[A-Za-z0-9_.-]{120,135}",
        1 => any::<String>(),
    ];
    let unit = prop_oneof![
        Just("s".to_owned()),
        Just("items/s".to_owned()),
        "[a-zA-Z/%]{0,70}",
        any::<String>()
    ];
    let step = proptest::option::of(any::<i64>());
    (name, -1e300f64..1e300, unit, step).prop_map(|(name, value, unit, step)| {
        let mut line = serde_json::json!({"metric": name, "value": value, "unit": unit});
        if let Some(step) = step {
            line["step"] = step.into();
        }
        line.to_string()
    })
}

fn check_metric_line(line: &str) -> Result<bool, TestCaseError> {
    let parsed = bounded(line.to_owned(), |l| parse_metric_line(&l))?;
    match &parsed {
        None => prop_assert!(!line.trim_start().starts_with('{'), "{:?}", line),
        Some(Ok(m)) => {
            prop_assert!(!m.metric.is_empty() && m.metric.len() <= 128, "{:?}", m.metric);
            prop_assert!(
                m.metric
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')),
                "{:?}",
                m.metric
            );
            prop_assert!(m.unit.len() <= 64 && !m.unit.chars().any(char::is_control));
        }
        Some(Err(why)) => prop_assert!(!why.is_empty()),
    }
    Ok(matches!(parsed, Some(Ok(_))))
}

/// A reader handing out the given chunks one read at a time (as a pipe does; an empty chunk
/// is skipped, since reading 0 bytes means the end).
struct Chunks(std::collections::VecDeque<Vec<u8>>);

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(mut c) = self.0.pop_front() else { return Ok(0) };
        if c.is_empty() {
            return self.read(buf);
        }
        let n = c.len().min(buf.len());
        buf[..n].copy_from_slice(&c[..n]);
        if n < c.len() {
            self.0.push_front(c.split_off(n));
        }
        Ok(n)
    }
}

/// Feeds `chunks` through `each_line` and every line through the metric parser, as the stage
/// does; checks the line count and bounds.
fn check_stdout(chunks: Vec<Vec<u8>>) -> Result<(), TestCaseError> {
    let all: Vec<u8> = chunks.concat();
    let expected =
        all.iter().filter(|&&b| b == b'\n').count() + usize::from(!all.is_empty() && all.last() != Some(&b'\n'));
    let (n, longest) = bounded(chunks, |chunks| {
        let mut n = 0;
        let mut longest = 0;
        each_line(Chunks(chunks.into()), |i, line| {
            assert_eq!(i, n);
            n += 1;
            longest = longest.max(line.len());
            let _ = parse_metric_line(line);
        });
        (n, longest)
    })?;
    prop_assert_eq!(n, expected);
    // Each kept byte becomes at most 3 (U+FFFD for a byte that is not UTF-8).
    prop_assert!(longest <= 3 * MAX_LINE);
    Ok(())
}

#[test]
fn fuzz_stage_output() {
    let line = prop_oneof![
        3 => metricish(),
        3 => metric_line(),
        1 => any::<String>(),
        1 => any::<String>().prop_map(|s| format!("{{{s}")),
    ];
    let chunk = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        metricish().prop_map(|s| format!("{s}\n").into_bytes()),
        Just(b"\r\n".to_vec()),
        Just(b"\xff\xfe\xc3".to_vec()),
    ];
    fuzz(
        "stage output",
        (line, proptest::collection::vec(chunk, 0..12)),
        |(line, chunks)| {
            let metric = check_metric_line(&line)?;
            check_stdout(chunks)?;
            Ok(metric)
        },
    );
}

/// Lines far past [`MAX_LINE`], with and without a newline, of bytes that are not UTF-8.
#[test]
fn fuzz_stage_output_huge_lines() {
    let huge: Vec<Vec<u8>> = vec![
        vec![b'x'; 3 * MAX_LINE + 7],
        [
            b"{\"metric\": \"",
            &vec![b'a'; 2 * MAX_LINE][..],
            b"\", \"value\": 1}\n",
        ]
        .concat(),
        vec![0xff; MAX_LINE + 1],
        [&vec![b'\n'; 1000][..], &vec![0xc3; 2 * MAX_LINE][..]].concat(),
    ];
    for input in huge {
        let chunks: Vec<Vec<u8>> = input.chunks(65_537).map(<[u8]>::to_vec).collect();
        check_stdout(chunks).unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// `measured check` of any file

/// `measured check <file>`: (exit code, bytes printed, time taken); killed after 10 s.
fn check_file(file: &Path, out_dir: &Path) -> (Option<i32>, u64, Duration) {
    let (out, err) = (out_dir.join("stdout"), out_dir.join("stderr"));
    let started = Instant::now();
    let mut child = bin()
        .arg("check")
        .arg(file)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("the measured binary runs");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > CASE_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let printed = std::fs::metadata(&out).unwrap().len() + std::fs::metadata(&err).unwrap().len();
    (status.and_then(|s| s.code()), printed, started.elapsed())
}

/// A small deterministic generator (xorshift), so the mutated files are the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 as usize
    }

    fn op(&mut self) -> Op {
        let (a, b, c) = (self.next(), self.next(), self.next());
        match self.next() % 10 {
            0 => Op::Flip {
                at: a,
                mask: (b % 255 + 1) as u8,
            },
            1 => Op::Delete { at: a, len: b % 64 },
            2 => Op::Insert {
                at: a,
                bytes: b.to_le_bytes().to_vec(),
            },
            3 => Op::InsertToken { at: a, token: b },
            4 => Op::DuplicateLine { line: a },
            5 => Op::RemoveLine { line: a },
            6 => Op::SwapLines { a, b },
            7 => Op::Splice {
                other: a,
                at: b,
                from: c,
            },
            _ => Op::Hostile {
                nth: a,
                value: b,
                quoted: c % 2 == 0,
            },
        }
    }
}

/// Files that are no manifest, or manifests of a size or shape meant to exhaust the checker:
/// deep nesting, a sweep of 40^6 points, a chain of 2,000 stages, `errors` errors.
fn hostile_shapes(errors: usize) -> Vec<(&'static str, Vec<u8>)> {
    let points = (0..40).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let mut sweep = String::from(
        "[experiment]\nname = \"bomb\"\n[schedule]\nwarmup = 0\nrepetitions = 1\n[stages.work]\n\
         kind = \"command\"\nargv = [\"true\"]\n[stages.work.vars]\n",
    );
    for i in 0..6 {
        sweep.push_str(&format!("v{i} = 0\n"));
    }
    sweep.push_str("[variants.a]\n[variants.b]\n[sweep]\n");
    for i in 0..6 {
        sweep.push_str(&format!("\"stages.work.vars.v{i}\" = [{points}]\n"));
    }
    let mut chain = String::from("[experiment]\nname = \"chain\"\n[schedule]\nrepetitions = 1\n");
    for i in 0..2000 {
        chain.push_str(&format!("[stages.s{i}]\nkind = \"command\"\nargv = [\"true\"]\n"));
        if i > 0 {
            chain.push_str(&format!("needs = [\"s{}\"]\n", i - 1));
        }
    }
    let mut many = String::from("[experiment]\nname = \"many\"\n");
    for i in 0..errors {
        many.push_str(&format!("unknown_{i} = {i}\n"));
    }
    vec![
        ("empty.toml", Vec::new()),
        ("binary.toml", (0..=255u8).cycle().take(10_000).collect()),
        ("huge_line.toml", hostile(20, true)),
        ("nul.toml", vec![0; 1000]),
        (
            "deep_arrays.toml",
            format!("x = {}{}\n", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
        ),
        (
            "deep_tables.toml",
            format!("x = {}1{}\n", "{a = ".repeat(5000), "}".repeat(5000)).into_bytes(),
        ),
        ("sweep_bomb.toml", sweep.into_bytes()),
        ("stage_chain.toml", chain.into_bytes()),
        ("many_errors.toml", many.into_bytes()),
    ]
}

/// Mutated manifests `measured check` reads, next to the corpus files.
const CHECKED_MUTANTS: usize = 40;

#[test]
fn fuzz_check_exits_0_1_or_2_quickly_with_bounded_output() {
    let ws = Workspace::new();
    let corpus = manifest_corpus();
    let out_dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = Vec::new();
    for (i, _) in MANIFEST_DIRS.iter().enumerate() {
        files.extend(files_in(&ws.dir(i), "toml"));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for k in 0..CHECKED_MUTANTS {
        let seed = &corpus[rng.next() % corpus.len()];
        let ops: Vec<Op> = (0..1 + rng.next() % 6).map(|_| rng.op()).collect();
        let path = ws.dir(seed.dir).join(format!("mutant_{k}.toml"));
        std::fs::write(&path, apply(seed.bytes.clone(), &ops, &corpus)).unwrap();
        files.push(path);
    }
    // Files that are no manifest at all.
    let odd = ws.root.path().join("odd");
    std::fs::create_dir_all(&odd).unwrap();
    for (name, body) in hostile_shapes(10_000) {
        std::fs::write(odd.join(name), body).unwrap();
        files.push(odd.join(name));
    }
    files.push(odd.clone()); // a folder
    files.push(odd.join("missing.toml"));
    let mut most = 0;
    for f in &files {
        let (code, printed, took) = check_file(f, out_dir.path());
        most = most.max(printed);
        assert!(
            matches!(code, Some(0..=2)),
            "{}: exit {code:?} (None: killed after 10 s or by a signal)",
            f.display()
        );
        assert!(took <= CASE_LIMIT, "{}: took {took:?}", f.display());
        assert!(
            printed as usize <= MAX_RENDERED,
            "{}: printed {printed} bytes",
            f.display()
        );
    }
    println!(
        "measured check: {} files, all exit 0, 1 or 2, at most {most} bytes printed",
        files.len()
    );
}
