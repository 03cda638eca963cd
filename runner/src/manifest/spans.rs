//! Source positions of manifest keys and values (raw TOML -> diagnostics).
//!
//! serde loses positions once a value is inside a `toml::Table`; this index re-parses the text
//! with toml_edit so any key path can be located for an error message.

use std::ops::Range;
use toml_edit::{Document, Item, Value};

/// One step of a path into the document: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

pub(crate) struct SpanIndex {
    doc: Option<Document<String>>,
}

/// Where a key and its value are.
#[derive(Debug, Clone, Default)]
pub(crate) struct Located {
    pub key: Option<Range<usize>>,
    pub value: Option<Range<usize>>,
}

impl SpanIndex {
    pub fn new(text: &str) -> Self {
        Self {
            doc: Document::parse(text.to_owned()).ok(),
        }
    }

    /// Finds the key and value at `path`, e.g. `[Key("stages"), Key("train"), Key("needs")]`.
    /// Returns the deepest position found, so a missing leaf still points at its parent.
    pub fn locate(&self, path: &[Seg<'_>]) -> Located {
        self.walk(path).0
    }

    /// The value at `path` when every segment of it exists (no fallback to a parent).
    pub fn value_at(&self, path: &[Seg<'_>]) -> Option<Range<usize>> {
        let (found, depth) = self.walk(path);
        (depth == path.len()).then_some(found.value).flatten()
    }

    /// The deepest position found along `path`, and how many segments were found.
    fn walk(&self, path: &[Seg<'_>]) -> (Located, usize) {
        let mut found = Located::default();
        let mut depth = 0;
        let Some(doc) = &self.doc else {
            return (found, depth);
        };
        let mut node = Node::Item(doc.as_item());
        for seg in path {
            let next = match (seg, node) {
                (Seg::Key(k), Node::Item(Item::Table(t))) => {
                    t.get_key_value(k).map(|(key, it)| (key.span(), Node::Item(it)))
                }
                (Seg::Key(k), Node::Item(Item::Value(Value::InlineTable(t))))
                | (Seg::Key(k), Node::Value(Value::InlineTable(t))) => {
                    t.get_key_value(k).map(|(key, it)| (key.span(), Node::Item(it)))
                }
                (Seg::Index(i), Node::Item(Item::ArrayOfTables(arr))) => arr.get(*i).map(|t| (None, Node::Table(t))),
                (Seg::Key(k), Node::Table(t)) => t.get_key_value(k).map(|(key, it)| (key.span(), Node::Item(it))),
                (Seg::Index(i), Node::Item(Item::Value(Value::Array(arr))))
                | (Seg::Index(i), Node::Value(Value::Array(arr))) => arr.get(*i).map(|v| (None, Node::Value(v))),
                _ => None,
            };
            let Some((key_span, next)) = next else { break };
            if key_span.is_some() {
                found.key = key_span;
            }
            found.value = next.span().or_else(|| found.key.clone());
            node = next;
            depth += 1;
        }
        (found, depth)
    }
}

#[derive(Clone, Copy)]
enum Node<'a> {
    Item(&'a Item),
    Value(&'a Value),
    Table(&'a toml_edit::Table),
}

impl Node<'_> {
    fn span(&self) -> Option<Range<usize>> {
        match self {
            Node::Item(i) => i.span(),
            Node::Value(v) => v.span(),
            Node::Table(t) => t.span(),
        }
    }
}
