//! How long each function is. `syn` says which functions a file has (every form: free, in an
//! `impl` or a trait, nested, with any visibility and qualifiers), leaving out test code as the
//! module graphs do. `syn` built without span locations knows no lines, so a small lexer over
//! the text finds where each of them starts and where its body's braces close: it skips
//! comments, strings (raw ones too) and character literals, so a brace or a `fn` in them counts
//! for nothing. Each function `syn` lists must be found by the lexer, in order, or the check
//! fails, so that a form the lexer misreads cannot pass unseen.

use super::folders::{is_cfg_test, is_test_item};
use syn::ext::IdentExt;
use syn::visit::Visit;

/// A function with a body, as the lexer finds it: 1-based lines of `fn` and of the closing brace.
#[derive(Debug, Clone, PartialEq)]
pub struct FnSpan {
    pub name: String,
    pub line: usize,
    pub end: usize,
}

/// The functions with a body that `syn` finds in a file's non-test code, in source order.
struct Lister {
    names: Vec<String>,
}

impl<'ast> Visit<'ast> for Lister {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_item(item) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.names.push(f.sig.ident.unraw().to_string());
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            self.names.push(f.sig.ident.unraw().to_string());
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if f.default.is_some() && !is_cfg_test(&f.attrs) {
            self.names.push(f.sig.ident.unraw().to_string());
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// The non-test functions with a body, with the lines they span. Panics when `syn` cannot
/// parse the file, or lists a function the lexer does not find.
pub fn functions(label: &str, text: &str) -> Vec<FnSpan> {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{label}: {e}"));
    let mut lister = Lister { names: Vec::new() };
    lister.visit_file(&file);
    let spans = lex(text);
    let mut out = Vec::new();
    let mut next = 0;
    for name in lister.names {
        let Some(at) = spans[next..].iter().position(|s| s.name == name) else {
            panic!(
                "{label}: syn lists fn `{name}`, which the lexer did not find after line {}",
                { spans.get(next.saturating_sub(1)).map_or(0, |s| s.line) }
            );
        };
        out.push(spans[next + at].clone());
        next += at + 1;
    }
    out
}

/// Every `fn NAME ... { ... }` in `text`, in order of their `fn`.
fn lex(text: &str) -> Vec<FnSpan> {
    let chars: Vec<char> = text.chars().collect();
    let mut line = 1;
    let mut i = 0;
    let mut found: Vec<FnSpan> = Vec::new();
    // Open braces: the index in `found` of the function whose body a brace opens, if any.
    let mut braces: Vec<Option<usize>> = Vec::new();
    // A named `fn` whose body has not opened yet, and the depth of `(`/`[` since its name.
    let mut pending: Option<(usize, i32)> = None;
    let mut last_word = String::new();
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\n' => line += 1,
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if next == Some('*') => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        line += usize::from(chars[i] == '\n');
                        i += 1;
                    }
                }
                continue;
            }
            '"' => {
                i = skip_string(&chars, i + 1, false, 0, &mut line);
                continue;
            }
            '\'' => {
                // A character literal ('x', '\n', '\u{..}'), or else a lifetime ('a).
                if next == Some('\\') {
                    i += 3;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 2;
                }
            }
            '{' => {
                let opens = match pending {
                    Some((at, 0)) => {
                        pending = None;
                        Some(at)
                    }
                    _ => None,
                };
                braces.push(opens);
            }
            '}' => {
                if let Some(Some(at)) = braces.pop() {
                    found[at].end = line;
                }
            }
            '(' | '[' => {
                if let Some((_, depth)) = pending.as_mut() {
                    *depth += 1;
                }
            }
            ')' | ']' => {
                if let Some((_, depth)) = pending.as_mut() {
                    *depth -= 1;
                }
            }
            // A declaration without a body.
            ';' if pending.is_some_and(|(_, depth)| depth == 0) => {
                let (at, _) = pending.take().unwrap();
                found.remove(at);
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let mut word: String = chars[start..i].iter().collect();
                // A raw identifier (`r#match`) is one word.
                if word == "r" && chars.get(i) == Some(&'#') && chars.get(i + 1).is_some_and(|c| c.is_alphabetic()) {
                    i += 1;
                    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                        i += 1;
                    }
                    word = chars[start + 2..i].iter().collect();
                }
                // Raw strings and byte strings: r"..", r#".."#, br"..", b"..", c"..".
                let raw = matches!(word.as_str(), "r" | "br" | "cr");
                if raw || word == "b" || word == "c" {
                    let hashes = if raw {
                        chars[i..].iter().take_while(|&&h| h == '#').count()
                    } else {
                        0
                    };
                    if chars.get(i + hashes) == Some(&'"') {
                        i = skip_string(&chars, i + hashes + 1, raw, hashes, &mut line);
                        last_word.clear();
                        continue;
                    }
                }
                if last_word == "fn" {
                    found.push(FnSpan {
                        name: word.clone(),
                        line,
                        end: 0,
                    });
                    pending = Some((found.len() - 1, 0));
                }
                last_word = word;
                continue;
            }
            _ => {}
        }
        if !c.is_whitespace() {
            last_word.clear();
        }
        i += 1;
    }
    found.retain(|f| f.end > 0);
    found
}

/// Skips a string's text from `i` (just after its opening quote) and returns the index after
/// its closing quote, which a raw string's `hashes` must follow; only a plain string has escapes.
fn skip_string(chars: &[char], mut i: usize, raw: bool, hashes: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' if !raw => {
                *line += usize::from(chars.get(i + 1) == Some(&'\n'));
                i += 2;
                continue;
            }
            '\n' => *line += 1,
            '"' if chars[i + 1..].iter().take(hashes).filter(|&&h| h == '#').count() == hashes => {
                return i + 1 + hashes;
            }
            _ => {}
        }
        i += 1;
    }
    i
}

#[test]
fn the_lexer_spans_every_form_and_ignores_what_is_not_code() {
    let text = r####"
pub(super) async fn a() {
    let s = "fn fake() { { {";
    let r = r#"fn raw() { "# ;
    let c = '{';
    let l: &'static str = "}";
    // fn comment() {
    /* fn block() { /* nested */ } */
}

impl X {
    pub(in crate::m) const unsafe fn b<T: Fn(u8) -> u8>(t: T)
    where
        T: Copy,
    {
        fn inner() {}
    }
}

trait T {
    fn declared(&self);
    fn defaulted(&self) -> [u8; 2] {
        [0; 2]
    }
}

extern "C" fn r#c() {}

#[cfg(test)]
mod tests {
    fn in_tests() {}
}
"####;
    let spans = functions("planted.rs", text);
    let got: Vec<(&str, usize, usize)> = spans.iter().map(|s| (s.name.as_str(), s.line, s.end)).collect();
    assert_eq!(
        got,
        [
            ("a", 2, 9),
            ("b", 12, 17),
            ("inner", 16, 16),
            ("defaulted", 22, 24),
            ("c", 27, 27)
        ]
    );
}
