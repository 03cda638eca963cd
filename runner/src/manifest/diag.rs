//! Located manifest errors and their rendering (validate -> CLI, exit code 2).
//!
//! Every error carries the byte span it is about, what is wrong, and a hint; rendering shows
//! `file:line:col`, the source line and a caret, like a compiler.

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
        let mut out = term::termcolor::NoColor::new(Vec::new());
        self.emit(&mut out);
        self.bounded(String::from_utf8_lossy(&out.into_inner()).into_owned())
    }

    /// Renders the errors for stderr: coloured (ANSI) when `colour`, else as [`Self::render`].
    pub fn render_for_stderr(&self, colour: bool) -> String {
        if colour {
            let mut out = term::termcolor::Ansi::new(Vec::new());
            self.emit(&mut out);
            self.bounded(String::from_utf8_lossy(&out.into_inner()).into_owned())
        } else {
            self.render()
        }
    }

    fn emit(&self, out: &mut dyn term::termcolor::WriteColor) {
        let file = SimpleFile::new(self.path.display().to_string(), self.text.as_str());
        let config = Config::default();
        for e in self.errors.iter().take(MAX_ERRORS_SHOWN) {
            let mut diag = Diagnostic::error().with_message(&e.message);
            if let Some(span) = &e.span {
                let span = clamp(span.clone(), self.text.len());
                diag = diag.with_labels(vec![Label::primary((), span).with_message(&e.label)]);
            } else {
                diag = diag.with_notes(vec![format!("in {}", self.path.display())]);
            }
            if let Some(h) = &e.hint {
                diag = diag.with_notes(vec![format!("hint: {h}")]);
            }
            // Writing into a Vec cannot fail; an error here would only lose the message text.
            let _ = term::emit(out, &config, &file, &diag);
        }
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
