//! Whether what measured writes to stderr is coloured: `--color auto|always|never`, decided once
//! at start. `auto` colours only a terminal, and never when `NO_COLOR` is set (not empty).

use clap::ColorChoice;
use std::io::IsTerminal;
use std::sync::OnceLock;

static STDERR: OnceLock<bool> = OnceLock::new();

/// Whether `choice` colours a stream that `is_terminal` says is (or is not) a terminal, with
/// `no_color` the value of `NO_COLOR`.
pub fn decide(choice: ColorChoice, is_terminal: bool, no_color: Option<&str>) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => is_terminal && no_color.is_none_or(str::is_empty),
    }
}

/// Decides once for stderr from `choice`, the environment and the stream; later calls keep the
/// first answer.
pub fn init(choice: ColorChoice) -> bool {
    *STDERR.get_or_init(|| {
        let no_color = std::env::var("NO_COLOR").ok();
        decide(choice, std::io::stderr().is_terminal(), no_color.as_deref())
    })
}

/// Whether stderr is coloured: as decided by [`init`], else as `auto` would.
pub fn stderr() -> bool {
    init(ColorChoice::Auto)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colours_only_a_terminal_without_no_color() {
        assert!(decide(ColorChoice::Auto, true, None));
        assert!(decide(ColorChoice::Auto, true, Some("")));
        assert!(!decide(ColorChoice::Auto, false, None));
        assert!(!decide(ColorChoice::Auto, true, Some("1")));
        assert!(decide(ColorChoice::Always, false, Some("1")));
        assert!(!decide(ColorChoice::Never, true, None));
    }
}
