//! Input that cannot fool a terminal or hang the tool: control bytes in a manifest never reach
//! the output, a FIFO is refused at once, a binary file's line is cut, an OS error is said once
//! and a file that is not a SQLite database gets a SQLite hint.

use crate::common::{bin, run, text};
use std::path::Path;
use std::time::{Duration, Instant};

/// Bytes a terminal acts on: C0 controls other than newline and tab, DEL, the C1 controls and
/// the invisible direction marks (as UTF-8).
fn acting_bytes(out: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(out);
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .map(|c| format!("U+{:04X}", c as u32))
        .collect()
}

/// `measured check` on `name` in `dir`, as the process is started from that folder, so paths in
/// messages are relative.
fn check_in(dir: &Path, name: &str) -> std::process::Output {
    run(bin().current_dir(dir).args(["--color", "never", "check", name]))
}

#[test]
fn no_control_byte_of_a_manifest_reaches_the_output_of_check() {
    let dir = tempfile::tempdir().unwrap();
    // Every control character, raw in a string (a TOML error), in a comment and a key, and as
    // TOML escapes in values that messages quote.
    let mut raw = String::new();
    for b in (0u32..0x20).chain([0x7f, 0x9b, 0x202e, 0x2066]) {
        let c = char::from_u32(b).unwrap();
        if c != '\n' && c != '\r' {
            raw.push(c);
        }
    }
    let escaped: String = raw.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
    let manifests = [
        format!("[experiment]\nname = \"x{raw}y\"\n"),
        format!("# {raw}\n[experiment]\nname = \"ok\"\n"),
        format!("[experiment]\nname = \"x{escaped}y\"\ndescription = \"{escaped}\"\n[stages.w]\nkind = \"command\"\nargv = [\"true\"]\n"),
        format!("[experiment]\nname = \"ok\"\n[stages.\"w{escaped}\"]\nkind = \"c{escaped}\"\nargv = [\"true\"]\n"),
        format!("[experiment]\nname = \"ok\"\n\"{escaped}\" = 1\n[stages.w]\nkind = \"command\"\nargv = [\"true\"]\nvars = {{ x = nan }}\n"),
    ];
    for (i, m) in manifests.iter().enumerate() {
        let name = format!("m{i}\u{1b}]0;PWNED\u{7}.toml");
        std::fs::write(dir.path().join(&name), m).unwrap();
        let out = check_in(dir.path(), &name);
        assert_eq!(out.status.code(), Some(2), "manifest {i}: {}", text(&out));
        let mut all = out.stdout.clone();
        all.extend(&out.stderr);
        assert_eq!(
            acting_bytes(&all),
            Vec::<String>::new(),
            "manifest {i}:\n{}",
            text(&out)
        );
        assert!(
            text(&out).contains('␛'),
            "the escape is shown, not dropped: {}",
            text(&out)
        );
    }
}

#[test]
fn a_fifo_as_manifest_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe.toml"))
        .status()
        .unwrap();
    assert!(made.success());
    let mut child = bin()
        .current_dir(dir.path())
        .args(["--color", "never", "check", "pipe.toml"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("check blocked on a FIFO");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    insta::assert_snapshot!("fifo_manifest", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_binary_file_as_manifest_shows_a_cut_line_without_its_nuls() {
    let dir = tempfile::tempdir().unwrap();
    // An ELF header's shape: a magic number, then thousands of NULs before the first byte that
    // is not UTF-8.
    let mut bytes = b"\x7fELF\x02\x01\x01".to_vec();
    bytes.extend(std::iter::repeat_n(0u8, 3550));
    bytes.extend(b"\x3e\x00\xff\xfe");
    std::fs::write(dir.path().join("a.out"), &bytes).unwrap();
    let out = check_in(dir.path(), "a.out");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(acting_bytes(&out.stderr), Vec::<String>::new(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stderr);
    // The line is cut to the part around the error: not 3,550 NULs.
    assert!(shown.matches('␀').count() <= 2 * 100 + 1, "{shown}");
    insta::assert_snapshot!("binary_manifest", shown);
}

#[test]
fn an_os_error_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = crate::common::write(
        dir.path(),
        "ok.toml",
        "[experiment]\nname = \"ok\"\n[schedule]\nrepetitions = 1\nwarmup = 0\n[stages.a]\nkind = \"command\"\nargv = [\"true\"]\n",
    );
    std::fs::write(dir.path().join("a-file"), "").unwrap();
    let out = run(bin()
        .arg("--database")
        .arg(dir.path().join("r.sqlite"))
        .args(["run", "--results-dir"])
        .arg(dir.path().join("a-file/results"))
        .arg(&m));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let os = std::io::Error::from_raw_os_error(libc::ENOTDIR).to_string();
    assert_eq!(err.matches(&os).count(), 1, "{err}");
}

#[test]
fn a_file_that_is_not_a_sqlite_database_gets_a_sqlite_hint() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("notes.sqlite"),
        "meeting notes, not a database\n".repeat(200),
    )
    .unwrap();
    let out = run(bin()
        .current_dir(dir.path())
        .args(["--database", "notes.sqlite", "runs"]));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("server accepts connections"), "{err}");
    insta::assert_snapshot!("not_a_sqlite_database", err);
}

#[test]
fn a_number_that_is_not_finite_is_refused_on_the_command_line() {
    let out = run(bin().args(["worker", "--any", "--max-idle-seconds", "nan"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("must be between 0 and 2592000 seconds"),
        "{}",
        text(&out)
    );
}
