//! `--color`: manifest errors are coloured only on a terminal (`auto`), or when asked.

use crate::common::{bin, fixture, run};

fn check_stderr(extra: &[&str], no_color: bool) -> String {
    let mut c = bin();
    if !no_color {
        c.env_remove("NO_COLOR");
    }
    let out = run(c.args(extra).arg("check").arg(fixture("invalid/unknown_kind.toml")));
    assert_eq!(out.status.code(), Some(2));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn manifest_errors_to_a_pipe_are_plain_unless_colour_is_asked_for() {
    for (args, no_color) in [
        (&[][..], false),
        (&["--color", "auto"][..], false),
        (&["--color", "never"][..], false),
    ] {
        let err = check_stderr(args, no_color);
        assert!(err.contains("error"), "{err}");
        assert!(!err.contains("\x1b["), "{args:?}: {err:?}");
    }
    // Asked for, colour comes even to a pipe and with NO_COLOR set.
    let err = check_stderr(&["--color", "always"], true);
    assert!(err.contains("\x1b["), "{err:?}");
    assert!(err.contains("error"), "{err}");
}
