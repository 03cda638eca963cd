//! What a command prints: lines read with a bound on their length, `{"metric": ...}` lines
//! parsed into metrics, and the tail of stderr kept for the failure message.

use super::*;
use serde::Deserialize;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};

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

/// Calls `f` with each line of `r` (0-based number, text), reading until the end: output is
/// bytes, so invalid UTF-8 is replaced rather than fatal, and a line longer than `MAX_LINE`
/// is cut rather than held. The pipe is drained even when a line is unreadable, so the
/// program never dies of a closed pipe.
pub fn each_line(r: impl Read, mut f: impl FnMut(usize, &str)) {
    let mut reader = BufReader::new(r);
    let mut line = Vec::new();
    let mut n = 0;
    let mut emit = |line: &mut Vec<u8>| {
        f(n, String::from_utf8_lossy(line).trim_end_matches('\r'));
        n += 1;
        line.clear();
    };
    loop {
        let buf = match reader.fill_buf() {
            Ok([]) => break,
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let newline = buf.iter().position(|&b| b == b'\n');
        let end = newline.unwrap_or(buf.len());
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(&buf[..end.min(room)]);
        let used = if newline.is_some() { end + 1 } else { end };
        reader.consume(used);
        if newline.is_some() {
            emit(&mut line);
        }
    }
    if !line.is_empty() {
        emit(&mut line);
    }
}

pub(super) fn tail_lines(r: impl Read, n: usize) -> String {
    let mut lines = VecDeque::with_capacity(n + 1);
    each_line(r, |_, line| {
        lines.push_back(line.to_owned());
        if lines.len() > n {
            lines.pop_front();
        }
    });
    lines.into_iter().collect::<Vec<_>>().join("\n")
}
