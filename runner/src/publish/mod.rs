//! `measured publish`: every stored run as a self-contained static site (results database ->
//! run digests, cached beside the site -> per-experiment series with their steps -> HTML pages
//! from `templates/site_*.html.j2`).
//!
//! The site needs no server and no network: pages link to each other relatively, the one
//! stylesheet library (simple.css, MIT, pinned, see `docs/publish.md`) is vendored into the
//! binary, charts are inline SVG, and no page runs a script (its Content-Security-Policy says
//! so). Layout:
//!
//! ```text
//! index.html                      every experiment with its latest run
//! experiments/<slug>.html         each metric over the runs, per config, machine and branch
//! runs/<slug>/index.html          a run's report, with its charts beside it
//! data/runs/<slug>.json           the run's digest (what a re-publish reuses)
//! assets/                         stylesheets and their licence
//! ```
//!
//! Re-publishing renders only runs whose digest key changed (a new run, a resumed one, a new
//! binary or template), and rewrites a page only when its bytes differ.

pub mod chart;
pub mod digest;
pub mod fixture;
pub mod html;
mod pages;
pub mod series;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::db::{self, Db};
use crate::report::RunData;
use crate::store::StoredRun;
use crate::store::{self, RunRow, StoreError};
use digest::RunDigest;
use html::Pages;
use pages::{experiment_page, index_page};
use series::MetricChart;

/// Version of the digest and page layout: bumping it re-renders every run.
const FORMAT: u32 = 2;
/// Marks a folder as a site `publish` wrote, so that it never deletes files elsewhere.
const MARKER: &str = "data/site.json";
/// Runs loaded from the database at once (their report inputs are held in memory together).
const CHUNK: usize = 64;

const SIMPLE_CSS: &str = include_str!("../../assets/simple.css/simple.min.css");
const SIMPLE_CSS_LICENSE: &str = include_str!("../../assets/simple.css/LICENSE");
const SITE_CSS: &str = include_str!("../../assets/site.css");

/// Failures that stop a publish (a run that cannot be read is skipped with a note instead).
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{0} is not empty and was not written by `measured publish`\nhint: name an empty or new folder with --out"
    )]
    NotASite(PathBuf),
    #[error("template error: {0}")]
    Template(#[from] minijinja::Error),
    #[error("the thread reading runs from the database stopped unexpectedly")]
    Loader,
    #[error("cannot draw the chart of {metric} in {experiment}: {message}")]
    Chart {
        experiment: String,
        metric: String,
        message: String,
    },
}

/// What `measured publish` reads and where it writes.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    pub out: PathBuf,
    /// Publish smoke runs too (they are not measurements, and left out by default).
    pub include_smoke: bool,
    /// Where restyled `site_*.html.j2` templates are looked for.
    pub templates_dir: Option<PathBuf>,
}

/// What a publish did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Published {
    pub runs: usize,
    pub experiments: usize,
    /// Runs summarized and rendered now.
    pub rendered: usize,
    /// Runs whose digest and page were reused.
    pub reused: usize,
    /// Files written (new or changed).
    pub written: usize,
    /// Pages that were already up to date.
    pub unchanged: usize,
    pub smoke_left_out: usize,
    /// Runs that could not be read, each with why.
    pub skipped: Vec<String>,
}

/// A name that is safe as a file name stays itself; anything else becomes a hash of it, so a
/// name read from the database (`../x`, `<script>`) never becomes a path.
pub fn slug(name: &str) -> String {
    if crate::paths::is_valid_name(name) {
        name.to_owned()
    } else {
        format!("x-{}", &crate::digest::hex_sha256(name.as_bytes())[..16])
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PublishError + '_ {
    move |source| PublishError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Writes `bytes` to `path` unless it already holds exactly them; `true` when it wrote.
/// A write goes to a temporary file renamed into place, so a reader never sees half a page.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool, PublishError> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let tmp = path.with_extension("tmp-publish");
    std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    Ok(true)
}

/// The key a run's digest and page are kept under: anything that changes what they show.
fn digest_key(row: &RunRow, pages: &Pages) -> String {
    let mut text = format!(
        "{FORMAT}\n{}\n{}\n{}\n{}\n{}\n{:?}\n{}\n{}\n{}",
        crate::build_info::version(),
        pages.hash,
        row.id,
        row.status,
        row.started_at.to_rfc3339(),
        row.finished_at.map(|t| t.to_rfc3339()),
        row.manifest_hash,
        row.planned_trials,
        row.environment_hash,
    );
    // A run still going changes with every trial: render it every time.
    if row.status == crate::store::RunStatus::Running {
        text.push_str(&chrono::Utc::now().to_rfc3339());
    }
    crate::digest::hex_sha256(text.as_bytes())
}

fn read_digest(out: &Path, slug: &str) -> Option<RunDigest> {
    let text = std::fs::read(out.join("data/runs").join(format!("{slug}.json"))).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Makes sure `out` is a folder publish may write into: new, empty, or a site it wrote.
fn claim_out(out: &Path) -> Result<(), PublishError> {
    if out.join(MARKER).is_file() {
        return Ok(());
    }
    if out.exists() && std::fs::read_dir(out).map_err(io(out))?.next().is_some() {
        return Err(PublishError::NotASite(out.to_owned()));
    }
    std::fs::create_dir_all(out.join("data")).map_err(io(out))?;
    std::fs::write(
        out.join(MARKER),
        format!("{{\"format\": {FORMAT}, \"generator\": \"measured publish\"}}\n"),
    )
    .map_err(io(out))?;
    Ok(())
}

/// A run's page and charts, rendered, with its digest.
struct RenderedRun {
    digest: RunDigest,
    files: Vec<(PathBuf, Vec<u8>)>,
}

#[derive(Serialize)]
struct Fact {
    name: &'static str,
    value: String,
}

fn render_run(
    data: &RunData,
    row: &RunRow,
    slug: String,
    key: String,
    pages: &Pages,
    md_templates: Option<&Path>,
) -> Result<RenderedRun, String> {
    let report = crate::report::build_report(data);
    let digest = digest::digest(data, &report, key, slug.clone(), row.smoke, &row.environment_hash);
    let dir = PathBuf::from("runs").join(&slug);
    let mut files = Vec::new();
    for (file, svg) in crate::report::render_charts(&report).map_err(|e| e.to_string())? {
        files.push((dir.join(file), svg.into_bytes()));
    }
    let markdown = crate::report::render_markdown(&report, md_templates).map_err(|e| e.to_string())?;
    let unknown = || "unknown".to_owned();
    let facts = vec![
        Fact {
            name: "Commit",
            value: digest.commit.clone().map_or_else(unknown, |c| {
                format!("{c}{}", if digest.dirty { " (dirty)" } else { "" })
            }),
        },
        Fact {
            name: "Branch",
            value: digest.branch.clone().unwrap_or_else(unknown),
        },
        Fact {
            name: "Machine",
            value: digest.machine.clone(),
        },
        Fact {
            name: "Environment",
            value: if digest.environment.is_empty() {
                unknown()
            } else {
                digest.environment.chars().take(12).collect()
            },
        },
        Fact {
            name: "Status",
            value: digest.status.clone(),
        },
        Fact {
            name: "Started",
            value: digest.started_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        },
    ];
    let page = pages
        .render(
            "site_run.html.j2",
            &minijinja::context! {
                root => "../../",
                title => format!("Run {}", digest.id),
                run => &digest,
                experiment_href => format!("../../experiments/{}.html", self::slug(&digest.experiment)),
                facts => facts,
                data => &digest.data,
                report_html => minijinja::Value::from_safe_string(html::markdown_to_html(&markdown)),
                version => crate::build_info::version(),
            },
        )
        .map_err(|e| e.to_string())?;
    files.push((dir.join("index.html"), page.into_bytes()));
    let mut json = serde_json::to_vec(&digest).map_err(|e| e.to_string())?;
    json.push(b'\n');
    files.push((PathBuf::from("data/runs").join(format!("{slug}.json")), json));
    Ok(RenderedRun { digest, files })
}

/// Loads the runs of `chunk` from the database; a run whose spec cannot be read is reported
/// in `skipped`.
fn load_chunk(
    db: &Db,
    database: &str,
    chunk: Vec<(RunRow, String, String)>,
    skipped: &mut Vec<String>,
) -> Result<Vec<(RunData, RunRow, String, String)>, PublishError> {
    let mut out = Vec::with_capacity(chunk.len());
    for (row, slug, key) in chunk {
        let trials = db::wait(store::load_trials(db, &row.id))?;
        let stored = match StoredRun::new(row.clone(), trials) {
            Ok(s) => s,
            Err(e) => {
                skipped.push(format!("run {}: {e}", row.id));
                continue;
            }
        };
        let data = db::wait(crate::rundata::of_run_with_hosts(&stored, db, database))?;
        out.push((data, row, slug, key));
    }
    Ok(out)
}

// Long because: the pipeline (list runs, render chunks on scoped threads while the next is read,
// write pages, remove stale ones) shares the scope's borrows.
/// Publishes every run stored in `db` (reached at `database`) into `opts.out`.
pub fn publish(db: &Db, database: &str, opts: &PublishOptions) -> Result<Published, PublishError> {
    let out = opts.out.as_path();
    claim_out(out)?;
    let pages = Pages::new(opts.templates_dir.as_deref())?;
    let md_templates = opts
        .templates_dir
        .as_deref()
        .filter(|d| d.join("report.md.j2").is_file());
    let mut summary = Published::default();
    let rows = db::wait(store::list_runs(db, None, u32::MAX))?;
    let mut digests: Vec<RunDigest> = Vec::with_capacity(rows.len());
    let mut todo = Vec::new();
    let mut seen_slugs = HashSet::new();
    for row in rows {
        if row.smoke && !opts.include_smoke {
            summary.smoke_left_out += 1;
            continue;
        }
        let slug = slug(&row.id);
        if !seen_slugs.insert(slug.clone()) {
            summary
                .skipped
                .push(format!("run {}: its folder name collides with another run's", row.id));
            continue;
        }
        let key = digest_key(&row, &pages);
        match read_digest(out, &slug) {
            Some(d) if d.key == key && out.join("runs").join(&slug).join("index.html").is_file() => {
                summary.reused += 1;
                digests.push(d);
            }
            _ => todo.push((row, slug, key)),
        }
    }
    // Runs are read from the database on one thread while the previous chunk renders on the
    // others.
    let mut chunks: Vec<Vec<(RunRow, String, String)>> = Vec::new();
    let mut todo = todo.into_iter().peekable();
    while todo.peek().is_some() {
        chunks.push(todo.by_ref().take(CHUNK).collect());
    }
    std::thread::scope(|scope| -> Result<(), PublishError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let loader = scope.spawn(move || -> Result<Vec<String>, PublishError> {
            let mut skipped = Vec::new();
            for chunk in chunks {
                let loaded = load_chunk(db, database, chunk, &mut skipped)?;
                if tx.send(loaded).is_err() {
                    break;
                }
            }
            Ok(skipped)
        });
        let mut rendering = || -> Result<(), PublishError> {
            for loaded in &rx {
                let rendered: Vec<Result<RenderedRun, (String, String)>> = loaded
                    .par_iter()
                    .map(|(data, row, slug, key)| {
                        render_run(data, row, slug.clone(), key.clone(), &pages, md_templates)
                            .map_err(|e| (row.id.clone(), e))
                    })
                    .collect();
                for r in rendered {
                    match r {
                        Ok(run) => {
                            for (path, bytes) in &run.files {
                                if write_if_changed(&out.join(path), bytes)? {
                                    summary.written += 1;
                                } else {
                                    summary.unchanged += 1;
                                }
                            }
                            summary.rendered += 1;
                            digests.push(run.digest);
                        }
                        Err((id, e)) => summary.skipped.push(format!("run {id}: {e}")),
                    }
                }
            }
            Ok(())
        };
        let rendered = rendering();
        // A failed render stops the loader at its next chunk.
        drop(rx);
        let skipped = loader.join().map_err(|_| PublishError::Loader)??;
        summary.skipped.extend(skipped);
        rendered
    })?;
    digests.sort_by(|a, b| (a.started_at, &a.id).cmp(&(b.started_at, &b.id)));
    summary.runs = digests.len();
    let mut by_experiment: BTreeMap<&str, Vec<&RunDigest>> = BTreeMap::new();
    for d in &digests {
        by_experiment.entry(d.experiment.as_str()).or_default().push(d);
    }
    summary.experiments = by_experiment.len();
    let pages_out: Vec<Result<(PathBuf, String), PublishError>> = by_experiment
        .par_iter()
        .map(|(name, runs)| {
            experiment_page(name, runs, &pages)
                .map(|p| (PathBuf::from("experiments").join(format!("{}.html", slug(name))), p))
        })
        .collect();
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for p in pages_out {
        let (path, page) = p?;
        files.push((path, page.into_bytes()));
    }
    files.push((
        PathBuf::from("index.html"),
        index_page(&by_experiment, &summary, &pages)?.into_bytes(),
    ));
    files.push((PathBuf::from("assets/simple.min.css"), SIMPLE_CSS.as_bytes().to_vec()));
    files.push((
        PathBuf::from("assets/simple.css-LICENSE.txt"),
        SIMPLE_CSS_LICENSE.as_bytes().to_vec(),
    ));
    files.push((PathBuf::from("assets/site.css"), SITE_CSS.as_bytes().to_vec()));
    for (path, bytes) in files {
        if write_if_changed(&out.join(&path), &bytes)? {
            summary.written += 1;
        } else {
            summary.unchanged += 1;
        }
    }
    remove_stale(out, &digests, &by_experiment)?;
    Ok(summary)
}

/// Removes the pages and digests of runs and experiments no longer stored.
fn remove_stale(
    out: &Path,
    digests: &[RunDigest],
    experiments: &BTreeMap<&str, Vec<&RunDigest>>,
) -> Result<(), PublishError> {
    let runs: HashSet<String> = digests.iter().map(|d| d.slug.clone()).collect();
    let exps: HashSet<String> = experiments.keys().map(|e| format!("{}.html", slug(e))).collect();
    let listed = |dir: &Path| -> Vec<(String, PathBuf)> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                    .collect()
            })
            .unwrap_or_default()
    };
    for (name, path) in listed(&out.join("runs")) {
        if !runs.contains(&name) {
            std::fs::remove_dir_all(&path).map_err(io(&path))?;
        }
    }
    for (name, path) in listed(&out.join("data/runs")) {
        if !name.strip_suffix(".json").is_some_and(|s| runs.contains(s)) {
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    for (name, path) in listed(&out.join("experiments")) {
        if !exps.contains(&name) {
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    Ok(())
}
