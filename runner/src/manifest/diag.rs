//! Located manifest errors and their rendering (validate -> CLI, exit code 2).
//!
//! Every error carries the byte span it is about, what is wrong, and a hint; rendering shows
//! `file:line:col`, the source line and a caret, like a compiler.

use crate::printable::{needs_escape, printable, push_visible};
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One problem in a manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestError {
    pub message: String,
    pub span: Option<Range<usize>>,
    /// Short text under the caret.
    pub label: String,
    pub hint: Option<String>,
}

impl ManifestError {
    pub fn new(message: impl Into<String>, span: Option<Range<usize>>) -> Self {
        Self {
            message: message.into(),
            span,
            label: String::new(),
            hint: None,
        }
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn maybe_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }
}

/// All problems found in one manifest file.
#[derive(Debug, Clone)]
pub struct ManifestErrors {
    pub path: PathBuf,
    pub text: String,
    pub errors: Vec<ManifestError>,
}

impl ManifestErrors {
    pub fn single(path: &Path, text: &str, error: ManifestError) -> Self {
        Self {
            path: path.to_owned(),
            text: text.to_owned(),
            errors: vec![error],
        }
    }

    /// Renders the errors as plain text (no colour), the form used in snapshots and logs: the
    /// first `MAX_ERRORS_SHOWN`, a count of the rest, at most `MAX_RENDERED_BYTES`.
    pub fn render(&self) -> String {
        self.bounded(self.emit(false))
    }

    /// Renders the errors for stderr: coloured (ANSI) when `colour`, else as [`Self::render`].
    pub fn render_for_stderr(&self, colour: bool) -> String {
        self.bounded(self.emit(colour))
    }

    /// Every error against a view of the file made for it ([`View`]): control characters made
    /// visible and long lines cut around the error, so that neither the file nor the messages
    /// (which quote it) can drive the terminal or flood it. The `file:line:col` each error
    /// names is the original file's, whatever the view cut.
    fn emit(&self, colour: bool) -> String {
        let name = printable(&self.path.display().to_string()).into_owned();
        let config = Config::default();
        let mut out = String::new();
        for e in self.errors.iter().take(MAX_ERRORS_SHOWN) {
            let span = e.span.as_ref().map(|s| clamp(s.clone(), self.text.len()));
            let view = View::new(&self.text, span.as_ref().map(|s| s.start));
            let file = SimpleFile::new(name.as_str(), view.text.as_str());
            let mut diag = Diagnostic::error().with_message(printable(&crate::hint::plain_types(&e.message)));
            if let Some(span) = &span {
                let mapped = view.map(span.start)..view.map(span.end);
                diag = diag.with_labels(vec![Label::primary((), mapped).with_message(printable(&e.label))]);
            } else {
                diag = diag.with_notes(vec![format!("in {name}")]);
            }
            if let Some(h) = &e.hint {
                diag = diag.with_notes(vec![format!("hint: {}", printable(h))]);
            }
            let mut buf = if colour {
                term::termcolor::Buffer::ansi()
            } else {
                term::termcolor::Buffer::no_color()
            };
            // Writing into a buffer cannot fail; an error here would only lose the message text.
            let _ = term::emit(&mut buf, &config, &file, &diag);
            let mut text = String::from_utf8_lossy(buf.as_slice()).into_owned();
            if let Some(span) = &span {
                let (line, shown) = column(&view.text, view.map(span.start));
                let (_, real) = column(&self.text, span.start);
                if shown != real {
                    text = text.replacen(&format!("{name}:{line}:{shown}"), &format!("{name}:{line}:{real}"), 1);
                }
            }
            out.push_str(&text);
        }
        out
    }

    /// `text` with the count of the errors not shown, cut at `MAX_RENDERED_BYTES`.
    fn bounded(&self, mut text: String) -> String {
        let more = self.errors.len().saturating_sub(MAX_ERRORS_SHOWN);
        if more > 0 {
            text.push_str(&format!(
                "and {more} more error{} (fix these first)\n",
                if more == 1 { "" } else { "s" }
            ));
        }
        if text.len() > MAX_RENDERED_BYTES {
            // Cut so that the text and the note together stay within the bound.
            const NOTE: &str = "\n… (error output cut at 64 KiB)\n";
            let mut cut = MAX_RENDERED_BYTES - NOTE.len();
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str(NOTE);
        }
        text
    }
}

/// Errors a manifest's report shows; the rest are counted.
pub const MAX_ERRORS_SHOWN: usize = 20;
/// Longest rendered error report (a manifest line of megabytes would otherwise be echoed).
pub const MAX_RENDERED_BYTES: usize = 64 * 1024;

/// Characters of a source line shown in full; a longer line is cut to [`LINE_WINDOW`] characters
/// either side of the error (a minified or binary file is one line of megabytes).
pub const MAX_LINE_CHARS: usize = 240;
const LINE_WINDOW: usize = 100;

/// A manifest's text as one error shows it, with the byte offsets of the original mapped into
/// it: control characters replaced by visible ones, and each line longer than
/// [`MAX_LINE_CHARS`] cut to the part around the error (or its start), the rest shown as `…`.
struct View {
    text: String,
    /// Each replaced or cut piece: `(original start, original end, start in the view, end in
    /// the view)`, in order. Between pieces the text is copied, so offsets move by a constant.
    pieces: Vec<(usize, usize, usize, usize)>,
}

impl View {
    fn new(source: &str, focus: Option<usize>) -> View {
        let mut view = View {
            text: String::with_capacity(source.len().min(1 << 16)),
            pieces: Vec::new(),
        };
        let mut start = 0;
        for line in source.split_inclusive('\n') {
            view.push_line(start, line, focus);
            start += line.len();
        }
        view
    }

    fn push_line(&mut self, start: usize, line: &str, focus: Option<usize>) {
        let chars = line.chars().count();
        let keep = if chars <= MAX_LINE_CHARS {
            0..chars
        } else {
            let at = focus
                .filter(|f| (start..start + line.len()).contains(f))
                .map_or(0, |f| line[..f - start].chars().count());
            at.saturating_sub(LINE_WINDOW)..(at + LINE_WINDOW).min(chars)
        };
        let mut cut_from: Option<usize> = None;
        for (i, (at, c)) in line.char_indices().enumerate() {
            let offset = start + at;
            if !keep.contains(&i) && c != '\n' {
                cut_from.get_or_insert(offset);
                continue;
            }
            if let Some(from) = cut_from.take() {
                self.replace(from, offset, "…");
            }
            let crlf = c == '\r' && line[at + 1..].starts_with('\n');
            if needs_escape(c) && !crlf {
                let mut shown = String::new();
                push_visible(&mut shown, c);
                self.replace(offset, offset + c.len_utf8(), &shown);
            } else {
                self.text.push(c);
            }
        }
        if let Some(from) = cut_from {
            self.replace(from, start + line.len(), "…");
        }
    }

    fn replace(&mut self, from: usize, to: usize, with: &str) {
        let at = self.text.len();
        self.text.push_str(with);
        self.pieces.push((from, to, at, self.text.len()));
    }

    /// Where the original byte `offset` is in the view; an offset inside a replaced or cut
    /// piece maps to the piece's start.
    fn map(&self, offset: usize) -> usize {
        let i = self.pieces.partition_point(|p| p.0 <= offset);
        match i.checked_sub(1).map(|i| self.pieces[i]) {
            None => offset,
            Some((_, to, at, _)) if offset < to => at,
            Some((_, to, _, end)) => end + (offset - to),
        }
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `text`, as codespan counts
/// them.
fn column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

fn clamp(span: Range<usize>, len: usize) -> Range<usize> {
    let start = span.start.min(len);
    let end = span.end.clamp(start, len);
    start..end
}

impl std::fmt::Display for ManifestErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for ManifestErrors {}

/// Errors sorted by where they are in the file (unlocated ones first), each reported once.
pub(in crate::manifest) fn in_file_order(mut errors: Vec<ManifestError>) -> Vec<ManifestError> {
    // A set, not a list: a file of 40,000 mistakes must not take 40,000^2 comparisons.
    let mut seen = std::collections::HashSet::new();
    errors.retain(|e| seen.insert((e.message.clone(), e.span.as_ref().map(|s| (s.start, s.end)))));
    errors.sort_by_key(|e| e.span.as_ref().map(|s| (s.start, s.end)));
    errors
}
