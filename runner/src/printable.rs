//! Text from untrusted input made safe for a terminal (manifest, CSV, database or stage text ->
//! **printable** -> error messages and snippets).
//!
//! A manifest, a CSV file or a stage's output can hold control bytes: an escape sequence that
//! retitles the terminal or moves the cursor, a bell, a carriage return that overwrites the
//! line, NULs, or bidirectional overrides that show text in another order than it is read.
//! Everything measured echoes from such input goes through [`printable`] first: C0 controls
//! and DEL become their Unicode control pictures (`␛`, `␀`, `␇`, `␡`), and C1 controls and
//! invisible direction marks become `\u{..}` escapes. Newlines and tabs stay.

use std::borrow::Cow;

/// `text` with every control character made visible (see the module documentation).
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_visible(&mut out, c);
    }
    Cow::Owned(out)
}

/// Whether `c` must not reach a terminal as it is.
pub fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_direction_mark(c)
}

/// Pushes `c`, made visible when it is a control character.
pub fn push_visible(out: &mut String, c: char) {
    match c {
        '\n' | '\t' => out.push(c),
        '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
        '\u{7f}' => out.push('\u{2421}'),
        c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        c => out.push(c),
    }
}

/// Invisible characters that change the order text is shown in (the "Trojan Source" set), and
/// zero-width marks.
fn is_direction_mark(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
    )
}

/// An error and its causes on one line, each cause once: a message that already quotes its
/// cause (`cannot read x: Permission denied (os error 13)`) is not followed by it again.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !part.is_empty() && !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    printable(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_retitle_ring_and_overwrite_nothing() {
        let shown = printable("x\u{1b}]0;PWNED\u{7}y\r\0z\u{7f}\u{9b}31m\u{202e}cba");
        assert_eq!(shown, "x␛]0;PWNED␇y␍␀z␡\\u{9b}31m\\u{202e}cba");
        assert!(!shown.chars().any(|c| c.is_control()));
        assert!(matches!(printable("plain\ttext\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_cause_already_in_its_message_is_printed_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot write events: {0}")]
        struct Wrapper(#[source] std::io::Error);
        let io = || std::io::Error::from_raw_os_error(13);
        let e = Wrapper(io());
        let text = error_chain(&e);
        assert_eq!(text.matches(&io().to_string()).count(), 1, "{text}");
        let chained = anyhow::Error::new(io()).context("cannot read the manifest");
        let text = error_chain(chained.as_ref());
        assert_eq!(text, format!("cannot read the manifest: {}", io()));
    }
}
