//! What a command prints: lines read with a bound on their length, `{"metric": ...}` lines
//! parsed into metrics, and the tail of stderr kept for the failure message.

use super::*;
use serde::Deserialize;
use std::collections::VecDeque;
use std::io::Read;

/// Longest metric name a program may print, in bytes.
pub const MAX_METRIC_NAME: usize = 128;

/// Longest unit a program may print, in bytes.
pub const MAX_METRIC_UNIT: usize = 64;

/// A metric line printed by the program:
/// `{"metric": "loss", "value": 0.31, "unit": "loss", "step": 3}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MetricLine {
    /// Stage-local name: 1 to [`MAX_METRIC_NAME`] of `A-Z a-z 0-9 _ - .`, so that
    /// `<stage>.<metric>` names it in a manifest.
    pub metric: String,
    pub value: f64,
    /// At most [`MAX_METRIC_UNIT`] bytes, without control characters.
    #[serde(default)]
    pub unit: String,
    pub step: Option<i64>,
}

/// What one stdout line of a command stage says: `None` for a line that is no metric line
/// (it does not start with `{`, so plain output is not an error), `Some(Ok)` for a metric,
/// `Some(Err(why))` for a line that looks like JSON but is no valid metric line.
pub fn parse_metric_line(line: &str) -> Option<Result<MetricLine, String>> {
    if !line.trim_start().starts_with('{') {
        return None;
    }
    let m = match serde_json::from_str::<MetricLine>(line) {
        Ok(m) => m,
        Err(e) => return Some(Err(e.to_string())),
    };
    let name_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    Some(if m.metric.is_empty() {
        Err("the metric name is empty".to_owned())
    } else if m.metric.len() > MAX_METRIC_NAME {
        Err(format!(
            "the metric name is {} bytes long (at most {MAX_METRIC_NAME})",
            m.metric.len()
        ))
    } else if !m.metric.chars().all(name_ok) {
        Err(format!(
            "metric name `{}` has characters other than A-Z a-z 0-9 _ - .",
            m.metric.escape_debug()
        ))
    } else if m.unit.len() > MAX_METRIC_UNIT {
        Err(format!(
            "the unit is {} bytes long (at most {MAX_METRIC_UNIT})",
            m.unit.len()
        ))
    } else if m.unit.chars().any(char::is_control) {
        Err(format!("unit `{}` has control characters", m.unit.escape_debug()))
    } else {
        Ok(m)
    })
}

/// Stdout lines of one stage run that look like JSON but are no metric line: the first
/// [`BAD_LINES_SHOWN`] with their reason, the rest only counted.
#[derive(Debug, Default, PartialEq)]
pub(super) struct BadLines {
    /// (1-based line number, why)
    pub(super) shown: Vec<(usize, String)>,
    pub(super) total: usize,
}

impl BadLines {
    pub(super) fn push(&mut self, line: usize, why: String) {
        if self.shown.len() < BAD_LINES_SHOWN {
            self.shown
                .push((line, crate::metrics::cut(&why, BAD_LINE_REASON_CHARS)));
        }
        self.total += 1;
    }
}

/// Longest output line kept, in bytes; the rest of a longer line is dropped.
pub const MAX_LINE: usize = 1 << 20;

/// Cuts output into lines as its bytes arrive, in pieces of any size: output is bytes, so
/// invalid UTF-8 is replaced rather than fatal, a `\r` before the newline is dropped, and a line
/// longer than [`MAX_LINE`] is cut rather than held.
#[derive(Debug, Default)]
pub(super) struct Lines {
    line: Vec<u8>,
    /// Lines handed out so far.
    n: usize,
}

impl Lines {
    /// Takes the next bytes, calling `f` with each line they complete (0-based number, text).
    pub(super) fn feed(&mut self, mut bytes: &[u8], f: &mut impl FnMut(usize, &str)) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let end = newline.unwrap_or(bytes.len());
            let room = MAX_LINE.saturating_sub(self.line.len());
            self.line.extend_from_slice(&bytes[..end.min(room)]);
            match newline {
                Some(i) => {
                    self.emit(f);
                    bytes = &bytes[i + 1..];
                }
                None => break,
            }
        }
    }

    /// The output ended: hands out its last line when it had no newline.
    pub(super) fn finish(&mut self, f: &mut impl FnMut(usize, &str)) {
        if !self.line.is_empty() {
            self.emit(f);
        }
    }

    fn emit(&mut self, f: &mut impl FnMut(usize, &str)) {
        f(self.n, String::from_utf8_lossy(&self.line).trim_end_matches('\r'));
        self.n += 1;
        self.line.clear();
    }
}

/// Calls `f` with each line of `r` (0-based number, text), reading until the end, as
/// [`Lines`] cuts them. The pipe is drained even when a line is unreadable, so the program
/// never dies of a closed pipe.
pub fn each_line(mut r: impl Read, mut f: impl FnMut(usize, &str)) {
    let mut lines = Lines::default();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => lines.feed(&buf[..n], &mut f),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    lines.finish(&mut f);
}

/// The last `n` lines of an output, as they arrive.
#[derive(Debug)]
pub(super) struct Tail {
    lines: VecDeque<String>,
    n: usize,
}

impl Tail {
    pub(super) fn new(n: usize) -> Self {
        Self {
            lines: VecDeque::with_capacity(n + 1),
            n,
        }
    }

    pub(super) fn push(&mut self, line: &str) {
        self.lines.push_back(line.to_owned());
        if self.lines.len() > self.n {
            self.lines.pop_front();
        }
    }

    /// The lines kept, joined.
    pub(super) fn text(&self) -> String {
        self.lines.iter().map(String::as_str).collect::<Vec<_>>().join("\n")
    }
}
