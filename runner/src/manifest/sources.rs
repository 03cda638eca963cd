//! The sources a manifest's claims quote: `sources/<document>.md` next to the manifest, one file
//! per source document. Each `## ` heading is a section of the document (its own heading, as
//! written); each `> ` line under it is a line of the document copied byte for byte. Anything
//! else (the `# ` title, notes in the project's own words) is not quoted text.
//!
//! The file is read line by line rather than by a Markdown parser on purpose: a parser would
//! interpret the quoted lines (`**` as emphasis, `|` rows as tables) and lose the exact bytes a
//! quote is compared with.

use std::path::{Path, PathBuf};

/// The folder holding the sources of the manifests in `manifest_dir`.
pub fn sources_dir(manifest_dir: &Path) -> PathBuf {
    manifest_dir.join("sources")
}

/// Why a claim's quote could not be found in its source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("claim source document `{document}` has no file {path}")]
    NoDocument {
        document: String,
        path: String,
        /// The documents that do exist.
        available: Vec<String>,
    },
    #[error("cannot read {path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("section `{section}` is not a `## ` heading of {path}")]
    NoSection {
        section: String,
        path: String,
        sections: Vec<String>,
    },
    #[error("the quote does not occur verbatim in a `> ` line under `## {section}` of {path}")]
    NoQuote {
        section: String,
        path: String,
        /// Another section of the file where it does occur.
        elsewhere: Option<String>,
    },
}

impl SourceError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            SourceError::NoDocument { available, path, .. } => {
                let known = if available.is_empty() {
                    "there are none yet".to_owned()
                } else {
                    format!("documents: {}", available.join(", "))
                };
                format!(
                    "a claim's `source.document` names a file {path} next to the manifest, holding the \
                     quoted lines of that document; {known}"
                )
            }
            SourceError::Unreadable { .. } => "check the file's permissions and that it is UTF-8".to_owned(),
            SourceError::NoSection { section, sections, .. } => {
                crate::hint::did_you_mean(section, sections.iter().map(String::as_str)).unwrap_or_else(|| {
                    if sections.is_empty() {
                        "the file has no `## ` section headings".to_owned()
                    } else {
                        format!("sections: {}", sections.join("; "))
                    }
                })
            }
            SourceError::NoQuote { elsewhere, section, .. } => match elsewhere {
                Some(other) => format!("it occurs under `## {other}`: set `source.section` to that section"),
                None => format!(
                    "copy the line from the source document byte for byte, as a `> ` line under `## {section}`, \
                     and quote it (or a part of it) exactly"
                ),
            },
        }
    }
}

/// A sources file: its sections in file order, each with its quoted lines (without `> `).
struct SourceFile {
    sections: Vec<(String, Vec<String>)>,
}

impl SourceFile {
    fn parse(text: &str) -> SourceFile {
        let mut sections: Vec<(String, Vec<String>)> = Vec::new();
        for line in text.lines() {
            if let Some(heading) = line.strip_prefix("## ") {
                sections.push((heading.trim_end().to_owned(), Vec::new()));
            } else if line.starts_with("# ") {
                // The document's title: a new document starts no section.
            } else if let (Some(quoted), Some((_, lines))) = (line.strip_prefix("> "), sections.last_mut()) {
                lines.push(quoted.to_owned());
            }
        }
        SourceFile { sections }
    }

    fn contains(lines: &[String], quote: &str) -> bool {
        lines.iter().any(|l| l.contains(quote))
    }
}

/// Checks that `quote` occurs verbatim (within one `> ` line) under `## section` of
/// `sources/<document>.md` next to the manifests in `manifest_dir`.
pub fn find_quote(manifest_dir: &Path, document: &str, section: &str, quote: &str) -> Result<(), SourceError> {
    let dir = sources_dir(manifest_dir);
    let path = dir.join(format!("{document}.md"));
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut available: Vec<String> = std::fs::read_dir(&dir)
                .map(|entries| {
                    entries
                        .filter_map(|e| e.ok())
                        .filter_map(|e| {
                            let name = e.file_name().to_string_lossy().into_owned();
                            name.strip_suffix(".md").map(str::to_owned)
                        })
                        .collect()
                })
                .unwrap_or_default();
            available.sort();
            return Err(SourceError::NoDocument {
                document: document.to_owned(),
                path: shown,
                available,
            });
        }
        Err(e) => {
            return Err(SourceError::Unreadable {
                path: shown,
                message: e.to_string(),
            })
        }
    };
    let file = SourceFile::parse(&text);
    let Some((_, lines)) = file.sections.iter().find(|(h, _)| h == section) else {
        return Err(SourceError::NoSection {
            section: section.to_owned(),
            path: shown,
            sections: file.sections.iter().map(|(h, _)| h.clone()).collect(),
        });
    };
    if !quote.is_empty() && SourceFile::contains(lines, quote) {
        return Ok(());
    }
    let elsewhere = file
        .sections
        .iter()
        .find(|(h, l)| h != section && !quote.is_empty() && SourceFile::contains(l, quote))
        .map(|(h, _)| h.clone());
    Err(SourceError::NoQuote {
        section: section.to_owned(),
        path: shown,
        elsewhere,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# report: a title\n\n## Results\n\n> | **Total** | **20x** |\nA note in our own words: 20x.\n\n## Other\n\n> 5-15% faster\n";

    fn dir_with(doc: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sources")).unwrap();
        std::fs::write(dir.path().join("sources").join("report.md"), doc).unwrap();
        dir
    }

    #[test]
    fn a_quote_is_found_only_in_quoted_lines_of_its_section() {
        let dir = dir_with(DOC);
        assert_eq!(
            find_quote(dir.path(), "report", "Results", "| **Total** | **20x** |"),
            Ok(())
        );
        assert_eq!(find_quote(dir.path(), "report", "Results", "**20x**"), Ok(()));
        // The note is not quoted text, and markup is part of the quote.
        assert!(matches!(
            find_quote(dir.path(), "report", "Results", "our own words"),
            Err(SourceError::NoQuote { elsewhere: None, .. })
        ));
        assert!(find_quote(dir.path(), "report", "Results", "| Total | 20x |").is_err());
        assert!(find_quote(dir.path(), "report", "Results", "").is_err());
        let moved = find_quote(dir.path(), "report", "Results", "5-15% faster").unwrap_err();
        assert_eq!(
            moved,
            SourceError::NoQuote {
                section: "Results".into(),
                path: dir.path().join("sources/report.md").display().to_string(),
                elsewhere: Some("Other".into()),
            }
        );
        assert!(moved.hint().contains("`## Other`"), "{}", moved.hint());
    }

    #[test]
    fn a_missing_document_or_section_names_what_exists() {
        let dir = dir_with(DOC);
        let doc = find_quote(dir.path(), "reprot", "Results", "20x").unwrap_err();
        assert!(matches!(&doc, SourceError::NoDocument { available, .. } if available == &["report"]));
        assert!(doc.hint().contains("documents: report"), "{}", doc.hint());
        let section = find_quote(dir.path(), "report", "Result", "20x").unwrap_err();
        assert!(matches!(&section, SourceError::NoSection { sections, .. } if sections == &["Results", "Other"]));
        assert!(section.hint().contains("Results"), "{}", section.hint());
    }
}
