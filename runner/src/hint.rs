//! Hints for mistyped names: "did you mean" suggestions and the advice attached to serde and
//! TOML messages, shared by manifest errors and stage parameter errors.

/// The closest candidate to `name`, for "did you mean" hints.
pub(crate) fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    closest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

/// The candidate most like `name`, when one is like it at all.
pub(crate) fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

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
        return Some("add it; the manifest reference in README.md lists every key".to_owned());
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
        return Some("see the manifest reference in README.md for the accepted values".to_owned());
    }
    None
}
