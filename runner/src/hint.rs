//! Hints for mistyped names: "did you mean" suggestions and the advice attached to serde and
//! TOML messages, shared by manifest errors and stage parameter errors.

/// The closest candidate to `name`, for "did you mean" hints.
pub(crate) fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    closest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

/// Longest name, in bytes, compared for a suggestion.
const MAX_SUGGESTED_LEN: usize = 256;

/// The candidate most like `name`, when one is like it at all: spelled alike, or the name
/// other tools use for it (`learning_rate` for `lr`, see [`ALIASES`]).
pub(crate) fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // A name this long is no mistyped key or program, and comparing it costs its length times
    // each candidate's: untrusted input gets no suggestion.
    if name.len() > MAX_SUGGESTED_LEN {
        return None;
    }
    let candidates: Vec<&'a str> = candidates
        .into_iter()
        .filter(|c| c.len() <= MAX_SUGGESTED_LEN)
        .collect();
    let plain = name.to_ascii_lowercase().replace('-', "_");
    if let Some(&(_, ours)) = ALIASES.iter().find(|(theirs, _)| *theirs == plain) {
        if let Some(c) = candidates.iter().find(|c| **c == ours) {
            return Some(c);
        }
    }
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Names other tools (PyTorch, Keras, hyperfine, CI files) give what measured names otherwise,
/// too unlike it in spelling for "did you mean": what they write, and measured's name. Used
/// only when measured's name is among the candidates.
const ALIASES: [(&str, &str); 23] = [
    ("learning_rate", "lr"),
    ("learningrate", "lr"),
    ("step_size", "lr"),
    ("batch", "batch_size"),
    ("batchsize", "batch_size"),
    ("num_epochs", "epochs"),
    ("n_epochs", "epochs"),
    ("max_epochs", "epochs"),
    ("hidden_size", "hidden"),
    ("hidden_sizes", "hidden"),
    ("hidden_layers", "hidden"),
    ("num_layers", "layers"),
    ("sequence_length", "seq_len"),
    ("seq_length", "seq_len"),
    ("lookback", "seq_len"),
    ("num_threads", "threads"),
    ("n_threads", "threads"),
    ("command", "argv"),
    ("cmd", "argv"),
    ("args", "argv"),
    ("workdir", "cwd"),
    ("working_directory", "cwd"),
    ("depends_on", "needs"),
];

/// A hint for the messages serde and the TOML parser produce.
pub(crate) fn serde_hint(message: &str) -> Option<String> {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let name = &rest[..rest.find('`').unwrap_or(rest.len())];
        let known: Vec<&str> = match (message.split_once("expected one of "), message.split_once("expected ")) {
            (Some((_, list)), _) => list
                .split(", ")
                .map(|s| s.trim_matches(|c| c == '`' || c == '.'))
                .collect(),
            (None, Some((_, list))) => list
                .split(" or ")
                .map(|s| s.trim_matches(|c| c == '`' || c == '.'))
                .collect(),
            _ => Vec::new(),
        };
        return did_you_mean(name, known.iter().copied()).or_else(|| Some(format!("known keys: {}", known.join(", "))));
    }
    if message.starts_with("missing field") {
        return Some("add it; the manifest reference in docs/manifest.md lists every key".to_owned());
    }
    if message.contains("duplicate key") {
        return Some("each key may appear once per table: remove or rename one of them".to_owned());
    }
    if message.contains("expected u32") || message.contains("expected u64") || message.contains("expected usize") {
        return Some("this value must be a whole number, 0 or more".to_owned());
    }
    if message.contains("expected f64") || message.contains("expected f32") {
        return Some("write a number, e.g. 30.0".to_owned());
    }
    if message.contains("expected a boolean") {
        return Some("write true or false (without quotes)".to_owned());
    }
    if message.contains("expected a string") {
        return Some("write the value in double quotes".to_owned());
    }
    if message.contains("expected a sequence") {
        return Some("write a list, e.g. [\"a\", \"b\"]".to_owned());
    }
    if message.contains("unknown variant") {
        if let Some((_, list)) = message
            .split_once("expected one of ")
            .or_else(|| message.split_once("expected "))
        {
            return Some(format!("use one of {list}"));
        }
    }
    if message.starts_with("invalid") || message.contains("expected") {
        return Some("see the manifest reference in docs/manifest.md for the accepted values".to_owned());
    }
    None
}

/// A serde message in the manifest's terms: Rust type names (`struct RawSource`, `u32`, `f64`)
/// become what a TOML writer writes (a table, a whole number, a number), and serde's
/// `sequence` and `map` become TOML's array and table.
pub(crate) fn plain_types(message: &str) -> String {
    // Named types first (their names are internal), then the primitive names as whole words.
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some((before, kind, after)) = next_named_type(rest) {
        match before.strip_suffix("did not match any variant of ") {
            Some(lead) if kind == "untagged enum " => {
                out.push_str(lead);
                out.push_str("matches none of the accepted forms");
                let name_len = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                rest = &after[name_len..];
                continue;
            }
            _ => out.push_str(before),
        }
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        out.push_str(match kind {
            "untagged enum " => "any of its accepted forms",
            "enum " => "one of the accepted values",
            "tuple struct " => "an array",
            "newtype struct " | "unit struct " => "a value",
            _ => "a table",
        });
        rest = &after[name_len..];
    }
    out.push_str(rest);
    // Serde names the type it expected right after "expected ", and the type it got right after
    // "invalid type: "; only there is a word such as `f32` or `map` a type name rather than
    // text of the message (a precision, a parameter's value).
    let words = [
        ("a sequence", "an array"),
        ("sequence", "array"),
        ("a map", "a table"),
        ("map", "table"),
        ("usize", "a whole number, 0 or more"),
        ("u64", "a whole number, 0 or more"),
        ("u32", "a whole number, 0 or more"),
        ("u16", "a whole number, 0 or more"),
        ("u8", "a whole number, 0 or more"),
        ("i64", "a whole number"),
        ("i32", "a whole number"),
        ("f64", "a number"),
        ("f32", "a number"),
    ];
    let mut text = out;
    for lead in ["expected ", "invalid type: "] {
        for (from, to) in words {
            text = replace_word(&text, &format!("{lead}{from}"), &format!("{lead}{to}"));
        }
    }
    text
}

/// The text before the first `struct X` / `enum X` (and its kinds), the kind, and what follows
/// the kind.
fn next_named_type(text: &str) -> Option<(&str, &'static str, &str)> {
    const KINDS: [&str; 5] = [
        "untagged enum ",
        "tuple struct ",
        "newtype struct ",
        "unit struct ",
        "struct ",
    ];
    let mut best: Option<(usize, &'static str)> = None;
    for kind in KINDS.into_iter().chain(["enum "]) {
        let mut from = 0;
        while let Some(i) = text[from..].find(kind).map(|i| i + from) {
            let starts_word = i == 0 || !text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
            let named = text[i + kind.len()..].starts_with(|c: char| c.is_ascii_uppercase());
            if starts_word && named {
                if best.is_none_or(|(b, k)| i < b || (i == b && kind.len() > k.len())) {
                    best = Some((i, kind));
                }
                break;
            }
            from = i + kind.len();
        }
    }
    best.map(|(i, kind)| (&text[..i], kind, &text[i + kind.len()..]))
}

/// `text` with `word` replaced where it stands as a whole word (not inside `u32x` or a quoted
/// value such as `"map"`).
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '`' || c == '"';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(word) {
        out.push_str(&rest[..i]);
        let whole = !out.ends_with(is_word) && !rest[i + word.len()..].starts_with(is_word);
        out.push_str(if whole { with } else { word });
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::{closest, plain_types, MAX_SUGGESTED_LEN};

    /// A mistyped name gets the name it meant; a name longer than any key or program (an
    /// untrusted 100,000-character argv[0], say) gets none, and costs no comparison.
    #[test]
    fn only_names_of_a_plausible_length_get_a_suggestion() {
        assert_eq!(closest("gzipp", ["gzip", "zip", "bzip2"]), Some("gzip"));
        let long = "g".repeat(MAX_SUGGESTED_LEN + 1);
        assert_eq!(closest(&long, ["gzip", long.as_str()]), None);
        assert_eq!(closest("gzip", [long.as_str()]), None);
    }

    #[test]
    fn serde_messages_name_toml_types_not_rust_ones() {
        assert_eq!(
            plain_types("invalid type: string \"doc\", expected struct RawSource"),
            "invalid type: string \"doc\", expected a table"
        );
        assert_eq!(
            plain_types("invalid value: integer `-1`, expected u32"),
            "invalid value: integer `-1`, expected a whole number, 0 or more"
        );
        assert_eq!(
            plain_types("invalid type: sequence, expected f64"),
            "invalid type: array, expected a number"
        );
        assert_eq!(
            plain_types("data did not match any variant of untagged enum RawRepetitions"),
            "data matches none of the accepted forms"
        );
        assert_eq!(
            plain_types("invalid type: map, expected enum DeviceKind"),
            "invalid type: table, expected one of the accepted values"
        );
        // Names users wrote, and the message's own words, stay as written.
        assert_eq!(
            plain_types("unknown stage `u32` in `map`"),
            "unknown stage `u32` in `map`"
        );
        assert_eq!(plain_types("unknown feature \"map\""), "unknown feature \"map\"");
        assert_eq!(
            plain_types("CUDA trains in f32 in this build"),
            "CUDA trains in f32 in this build"
        );
    }
}
