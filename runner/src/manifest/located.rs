//! Locating problems found after validation (the stock database lacks what a stage needs, the
//! declared data cannot be prepared) in the manifest, so they read like every other manifest
//! error: `file:line:col`, the line, a caret, a hint.

use super::diag::in_file_order;
use super::diag::{ManifestError, ManifestErrors};
use super::spans::{Seg, SpanIndex};
use super::Experiment;
use std::ops::Range;

fn segs(at: &[String]) -> Vec<Seg<'_>> {
    at.iter()
        .map(|p| match p.parse::<usize>() {
            Ok(i) => Seg::Index(i),
            Err(_) => Seg::Key(p),
        })
        .collect()
}

/// The span of the key (or, with `key = false`, the value) at a key path such as
/// `["data", "import", "0", "sha256"]`; the nearest enclosing key when the path is not
/// written out in the file.
pub fn span_of(exp: &Experiment, at: &[String], key: bool) -> Option<Range<usize>> {
    let l = SpanIndex::new(&exp.text).locate(&segs(at));
    if key {
        l.key.or(l.value)
    } else {
        l.value.or(l.key)
    }
}

/// Where config `config` gets its value of parameter `param` of stage `stage`: its variant's
/// override, its sweep point, `[smoke]` (in a smoke run), or the stage's own table; the stage's
/// header when the value is a default.
pub fn param_span(exp: &Experiment, config: usize, stage: &str, param: &str) -> Option<Range<usize>> {
    let spans = SpanIndex::new(&exp.text);
    let c = &exp.configs[config];
    let dotted = format!("stages.{stage}.{param}");
    let mut places: Vec<Vec<Seg<'_>>> = vec![
        vec![Seg::Key("variants"), Seg::Key(&c.variant), Seg::Key(&dotted)],
        vec![
            Seg::Key("variants"),
            Seg::Key(&c.variant),
            Seg::Key("stages"),
            Seg::Key(stage),
            Seg::Key(param),
        ],
    ];
    let smoke_axis = format!("sweep.{dotted}");
    if let Some((_, shown)) = c.sweep_point.iter().find(|(p, _)| *p == dotted) {
        let index = exp
            .sweep
            .iter()
            .find(|a| a.path == dotted)
            .and_then(|a| a.values.iter().position(|v| v.to_string() == *shown));
        if let Some(i) = index {
            if exp.smoke {
                places.push(vec![Seg::Key("smoke"), Seg::Key(&smoke_axis), Seg::Index(i)]);
            }
            places.push(vec![Seg::Key("sweep"), Seg::Key(&dotted), Seg::Index(i)]);
        }
    }
    if exp.smoke {
        places.push(vec![Seg::Key("smoke"), Seg::Key(&dotted)]);
        places.push(vec![
            Seg::Key("smoke"),
            Seg::Key("stages"),
            Seg::Key(stage),
            Seg::Key(param),
        ]);
    }
    places.push(vec![Seg::Key("stages"), Seg::Key(stage), Seg::Key(param)]);
    places
        .iter()
        .find_map(|p| spans.value_at(p))
        .or_else(|| spans.locate(&[Seg::Key("stages"), Seg::Key(stage)]).key)
}

/// Problems with `exp`, in file order, rendered like manifest errors.
pub fn located(exp: &Experiment, errors: Vec<ManifestError>) -> ManifestErrors {
    ManifestErrors {
        path: exp.path.clone(),
        text: exp.text.clone(),
        errors: in_file_order(errors),
    }
}
