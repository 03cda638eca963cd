//! HTML for the site: run reports from Markdown (pulldown-cmark, with every raw HTML fragment
//! turned into text and links limited to safe schemes), pages from the `site_*.html.j2`
//! templates (minijinja with HTML auto-escaping, so recorded names stay text).

use std::path::Path;

use minijinja::{AutoEscape, Environment};
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};
use serde::Serialize;

/// Templates the site is rendered from, with the copies compiled into the binary.
const TEMPLATES: [(&str, &str); 4] = [
    (
        "site_layout.html.j2",
        include_str!("../../../templates/site_layout.html.j2"),
    ),
    (
        "site_index.html.j2",
        include_str!("../../../templates/site_index.html.j2"),
    ),
    (
        "site_experiment.html.j2",
        include_str!("../../../templates/site_experiment.html.j2"),
    ),
    ("site_run.html.j2", include_str!("../../../templates/site_run.html.j2")),
];

/// The site's templates: each read from `dir` when it holds it (so a team can restyle the
/// site without rebuilding), else the copy compiled in. Everything is HTML-escaped unless
/// marked safe.
pub struct Pages {
    env: Environment<'static>,
    /// Hash of the template texts in use: part of every run page's key.
    pub hash: String,
}

impl Pages {
    pub fn new(dir: Option<&Path>) -> Result<Pages, minijinja::Error> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        let mut texts = String::new();
        for (name, builtin) in TEMPLATES {
            let text = dir
                .map(|d| d.join(name))
                .filter(|p| p.is_file())
                .and_then(|p| std::fs::read_to_string(p).ok())
                .unwrap_or_else(|| builtin.to_owned());
            texts.push_str(&text);
            env.add_template_owned(name, text)?;
        }
        Ok(Pages {
            env,
            hash: crate::digest::hex_sha256(texts.as_bytes()),
        })
    }

    pub fn render<T: Serialize>(&self, name: &str, ctx: &T) -> Result<String, minijinja::Error> {
        self.env.get_template(name)?.render(ctx)
    }
}

/// A URL a page may link to: relative, a fragment, or http(s)/mailto. Anything else
/// (`javascript:`, `data:`, `file:`) becomes `#`.
fn safe_url(url: &str) -> bool {
    let scheme_end = url.find(':');
    let path_start = url.find(['/', '?', '#']).unwrap_or(url.len());
    match scheme_end {
        Some(i) if i < path_start => {
            let scheme = url[..i].to_ascii_lowercase();
            matches!(scheme.as_str(), "http" | "https" | "mailto")
        }
        _ => true,
    }
}

/// Renders a report's Markdown to HTML. Raw HTML in it (which a recorded name or message could
/// carry) is shown as text, never interpreted; unsafe link targets are dropped.
pub fn markdown_to_html(markdown: &str) -> String {
    let parser =
        Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH).map(|event| match event {
            Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) if !safe_url(&dest_url) => Event::Start(Tag::Link {
                link_type,
                dest_url: CowStr::Borrowed("#"),
                title,
                id,
            }),
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) if !safe_url(&dest_url) => Event::Start(Tag::Image {
                link_type,
                dest_url: CowStr::Borrowed("#"),
                title,
                id,
            }),
            other => other,
        });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut out, parser);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_in_markdown_is_shown_as_text() {
        let html = markdown_to_html("run of `<b>x</b>` by <script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img src=x"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(html.contains("<code>&lt;b&gt;x&lt;/b&gt;</code>"), "{html}");
    }

    #[test]
    fn unsafe_link_targets_are_dropped() {
        let html = markdown_to_html("[a](javascript:alert(1)) [b](JavaScript:x) [c](data:text/html,x) [d](chart.svg) [e](https://example.org/a:b) ![f](x.svg)");
        assert!(!html.to_ascii_lowercase().contains("javascript:"), "{html}");
        assert!(!html.contains("data:text"), "{html}");
        assert!(html.contains(r#"href="chart.svg""#), "{html}");
        assert!(html.contains(r#"href="https://example.org/a:b""#), "{html}");
        assert!(html.contains(r#"src="x.svg""#), "{html}");
    }

    #[test]
    fn pages_escape_what_they_are_given() {
        let pages = Pages::new(None).expect("builtin templates parse");
        let env = pages.env.clone();
        let out = env
            .render_str("{{ x }}", minijinja::context! { x => "<script>\"'../" })
            .expect("renders");
        assert_eq!(out, "&lt;script&gt;&quot;&#x27;..&#x2f;");
    }
}
