//! `measured publish`: the static site, from SQLite and PostgreSQL, checked as files and in a
//! real headless Chromium driven over WebDriver (chromedriver + fantoccini).
//!
//! The browser tests fail, never skip, when Chromium or chromedriver is missing:
//! `scripts/test.sh` installs both (Debian's `chromium` and `chromium-driver`) the way it
//! installs PostgreSQL.

use crate::common::{bin, pg_url, run, text};
use measured::publish::fixture::{commit_of, store_history, FixtureSpec};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Stores `spec`'s history in the database at `url`; returns the run ids, oldest first.
fn store(url: &str, spec: &FixtureSpec, dir: &Path) -> Vec<String> {
    rt().block_on(async {
        let db = measured::db::Db::connect(url).await.expect("connect");
        let ids = store_history(&db, spec, dir).await.expect("fixture history stores");
        db.close().await;
        ids
    })
}

fn publish(url: &str, out: &Path) -> std::process::Output {
    run(bin().args(["--database", url, "publish", "--out"]).arg(out))
}

/// Six runs on six commits, a 20% slowdown from the fourth (index 3) on; a second experiment
/// of three steady runs; a third of four runs alternating between two machines.
fn site(url: &str, dir: &Path) -> (PathBuf, Vec<String>) {
    let mut steady = FixtureSpec::with_step("steady", 3);
    steady.step_at = None;
    let mut latency = FixtureSpec::with_step("latency", 6);
    latency.step_at = Some(3);
    let ids = store(url, &latency, dir);
    store(url, &steady, dir);
    let mut machines = FixtureSpec::with_step("machines", 4);
    machines.step_at = None;
    machines.machines = 2;
    store(url, &machines, dir);
    let out = dir.join("site");
    let o = publish(url, &out);
    assert!(o.status.success(), "{}", text(&o));
    (out, ids)
}

/// The `<section>` of `metric` in an experiment page.
fn section<'a>(page: &'a str, metric: &str) -> &'a str {
    let start = page
        .find(&format!(r#"data-metric="{metric}""#))
        .unwrap_or_else(|| panic!("no section for {metric}"));
    let end = page[start..].find("</section>").map_or(page.len(), |e| start + e);
    &page[start..end]
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn publishes_every_experiment_and_run_from_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    let (out, ids) = site(&url, dir.path());
    let index = read(&out.join("index.html"));
    assert!(index.contains(r#"data-experiment="latency""#), "{index}");
    assert!(index.contains(r#"data-experiment="steady""#), "{index}");
    assert!(index.contains("13 runs of 3 experiments"), "{index}");
    for id in &ids {
        let page = read(&out.join("runs").join(id).join("index.html"));
        assert!(page.contains(&format!("Run {id}")), "{page}");
        // The run's report, with its charts beside it.
        assert!(page.contains("<table"), "{page}");
        assert!(out.join("runs").join(id).join("primary_distribution.svg").is_file());
    }
    let page = read(&out.join("experiments/latency.html"));
    let exp = section(&page, "work.latency");
    // One step per config, both into the fourth commit.
    let to = &commit_of("latency", 3)[..10];
    assert_eq!(
        exp.matches(&format!(r#"class="step" data-commit="{to}""#)).count(),
        2,
        "{exp}"
    );
    assert_eq!(
        exp.matches(r#"class="step" "#).count(),
        2,
        "only the injected step is marked"
    );
    assert!(exp.contains("regressed"), "{exp}");
}

#[test]
fn republishing_renders_only_the_new_run() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    let (out, ids) = site(&url, dir.path());
    let page = out.join("runs").join(&ids[0]).join("index.html");
    let before = std::fs::metadata(&page).unwrap().modified().unwrap();
    let o = publish(&url, &out);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("0 rendered, 13 reused; 0 files written"),
        "{}",
        text(&o)
    );
    let mut one = FixtureSpec::with_step("latency-more", 1);
    one.step_at = None;
    store(&url, &one, dir.path());
    let o = publish(&url, &out);
    assert!(text(&o).contains("1 rendered, 13 reused"), "{}", text(&o));
    // The old run's page was not rewritten; the index was (it lists the new experiment).
    assert_eq!(std::fs::metadata(&page).unwrap().modified().unwrap(), before);
    assert!(read(&out.join("index.html")).contains("latency-more"));
}

#[test]
fn publishes_from_postgres() {
    let url = pg_url();
    let dir = tempfile::tempdir().unwrap();
    let (out, ids) = site(&url, dir.path());
    assert!(read(&out.join("index.html")).contains(r#"data-experiment="latency""#));
    assert!(out.join("runs").join(&ids[5]).join("index.html").is_file());
    let page = read(&out.join("experiments/latency.html"));
    let exp = section(&page, "work.latency");
    assert_eq!(exp.matches(r#"class="step" "#).count(), 2, "{exp}");
}

#[test]
fn refuses_to_write_into_a_folder_it_did_not_publish() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    store(&url, &FixtureSpec::with_step("latency", 2), dir.path());
    let out = dir.path().join("docs");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let o = publish(&url, &out);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("was not written by `measured publish`"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1, "nothing was written there");
}

/// Names read back from the database are data: with `<script>`, quotes and `../` in the
/// experiment, variant, claim (text, source, quote) and metric names, no page carries markup
/// from them and no file lands outside the site.
#[test]
fn hostile_names_stay_inert_in_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    store(&url, &FixtureSpec::with_step("latency", 3), dir.path());
    let evil = r#"<script>alert("x")</script>'../../evil"#;
    let q = evil.replace('\'', "''");
    rt().block_on(async {
        let db = measured::db::Db::connect(&url).await.unwrap();
        let measured::db::Db::Sqlite(p) = &db else {
            unreachable!()
        };
        // A claim whose text, source and quote carry the same.
        let spec: String = sqlx::query_scalar("SELECT spec FROM runs LIMIT 1")
            .fetch_one(p)
            .await
            .unwrap();
        let mut spec: serde_json::Value = serde_json::from_str(&spec).unwrap();
        spec["compare"]["claims"] = serde_json::json!([{
            "metric": "work.latency", "variant": "optimized",
            "claim": { "unit": "percent", "low": 10.0, "high": 30.0, "point": false },
            "text": evil, "source": evil, "quote": evil, "requires": {},
        }]);
        sqlx::query("UPDATE runs SET spec = ?1")
            .bind(spec.to_string())
            .execute(p)
            .await
            .unwrap();
        for sql in [
            format!("UPDATE runs SET experiment = '{q}'"),
            format!("UPDATE metrics SET name = '{q}'"),
            format!("UPDATE trials SET config = '{q}' WHERE config = 'optimized'"),
            format!(
                "UPDATE runs SET spec = replace(spec, '\"optimized\"', '\"{}\"')",
                q.replace('"', "\\\"")
            ),
            format!("UPDATE runs SET description = '{q}'"),
        ] {
            sqlx::query(&sql).execute(p).await.expect(&sql);
        }
        db.close().await;
    });
    let out = dir.path().join("site");
    let o = publish(&url, &out);
    assert!(o.status.success(), "{}", text(&o));
    let mut pages = 0;
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            assert!(!p.ends_with("evil"), "a file escaped: {}", p.display());
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "html" || x == "svg") {
                let body = read(&p);
                assert!(!body.contains("<script"), "{}: {body}", p.display());
                pages += 1;
            }
        }
    }
    assert!(pages >= 5, "{pages} pages checked");
    let index = read(&out.join("index.html"));
    assert!(
        index.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;&#x2f;script&gt;"),
        "{index}"
    );
    // The experiment's page is named by a hash of the name, not by the name.
    assert!(index.contains(r#"href="experiments&#x2f;x-"#), "{index}");
}

/// A run stored before branches, machine load and run specs were recorded publishes, with what
/// it lacks shown as unknown.
#[test]
fn runs_stored_before_publish_with_missing_fields_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    let results = dir.path().join("results");
    let o = run(crate::common::run_cmd(&url, &results, &[]).arg(crate::common::fixture("valid/minimal.toml")));
    assert!(o.status.success(), "{}", text(&o));
    rt().block_on(async {
        let db = measured::db::Db::connect(&url).await.unwrap();
        let measured::db::Db::Sqlite(p) = &db else { unreachable!() };
        for sql in [
            "UPDATE runs SET git_branch = NULL, spec = NULL, stock_data = NULL",
            "UPDATE trials SET load_before = NULL, load_after = NULL, cpu_other = NULL, cpu_cores = NULL, cpu_mhz = NULL, git_commit = NULL",
        ] {
            sqlx::query(sql).execute(p).await.expect(sql);
        }
        db.close().await;
    });
    let out = dir.path().join("site");
    let o = publish(&url, &out);
    assert!(o.status.success(), "{}", text(&o));
    let index = read(&out.join("index.html"));
    assert!(index.contains(r#"data-experiment="fixture""#), "{index}");
    assert!(index.contains("load unknown"), "{index}");
    let id = crate::common::strings(&url, "SELECT id FROM runs").remove(0);
    let page = read(&out.join("runs").join(&id).join("index.html"));
    assert!(
        page.contains(r#"<th scope="row">Branch</th><td>unknown</td>"#),
        "{page}"
    );
    assert!(page.contains("not recorded"), "no data fingerprint: {page}");
}

// ---------------------------------------------------------------------------------------
// In a real browser.

fn find_program(env: &str, names: &[&str]) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        return PathBuf::from(p);
    }
    for name in names {
        for dir in std::env::var("PATH").unwrap_or_default().split(':').chain(["/usr/bin"]) {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "{} not found (set {env} or install Debian's chromium and chromium-driver): run the suite with `bash scripts/test.sh`, which installs them",
        names.join(" or ")
    );
}

/// chromedriver on a free port, stopped on drop.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_driver() -> Driver {
    let exe = find_program("MEASURED_CHROMEDRIVER", &["chromedriver"]);
    let port = free_port();
    let child = Command::new(&exe)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
    Driver { child, port }
}

/// A headless Chromium session with browser and network logging.
async fn browser(driver: &Driver, profile: &Path) -> fantoccini::Client {
    let chromium = find_program("MEASURED_CHROMIUM", &["chromium", "chromium-browser"]);
    let caps: serde_json::Map<String, serde_json::Value> = serde_json::from_value(serde_json::json!({
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,1000",
                format!("--user-data-dir={}", profile.display()),
            ],
        },
        "goog:loggingPrefs": { "browser": "ALL", "performance": "ALL" },
    }))
    .unwrap();
    let url = format!("http://127.0.0.1:{}", driver.port);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match fantoccini::ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(c) => return c,
            Err(e) if Instant::now() > deadline => panic!("the browser did not start: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// chromedriver's log endpoint (not in the W3C protocol, so not in fantoccini's API).
#[derive(Debug)]
struct GetLog(&'static str);

impl fantoccini::wd::WebDriverCompatibleCommand for GetLog {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }
    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(serde_json::json!({ "type": self.0 }).to_string()),
        )
    }
}

async fn log(c: &fantoccini::Client, kind: &'static str) -> Vec<serde_json::Value> {
    match c.issue_cmd(GetLog(kind)).await.expect("read the browser log") {
        serde_json::Value::Array(v) => v,
        other => panic!("unexpected log: {other}"),
    }
}

/// Console errors since the last call, and every URL our pages asked for (the browser's own
/// start page is not ours).
async fn console_and_requests(c: &fantoccini::Client) -> (Vec<String>, Vec<String>) {
    let errors = log(c, "browser")
        .await
        .into_iter()
        .filter(|e| e["level"] == "SEVERE")
        .map(|e| e["message"].to_string())
        .collect();
    let requests = log(c, "performance")
        .await
        .into_iter()
        .filter_map(|e| {
            let m: serde_json::Value = serde_json::from_str(e["message"].as_str()?).ok()?;
            let params = &m["message"]["params"];
            let ours = params["documentURL"].as_str().is_some_and(|d| d.starts_with("file://"));
            (m["message"]["method"] == "Network.requestWillBeSent" && ours)
                .then(|| params["request"]["url"].as_str().map(str::to_owned))
                .flatten()
        })
        .collect();
    (errors, requests)
}

async fn attr(e: &fantoccini::elements::Element, name: &str) -> String {
    e.attr(name).await.unwrap().unwrap_or_default()
}

/// Saves a screenshot of the current page into `$MEASURED_SCREENSHOTS/<name>` when that is
/// set (`scripts/screenshots.sh` sets it to `docs/screenshots`).
async fn screenshot(c: &fantoccini::Client, name: &str, height: u32) {
    if let Some(dir) = std::env::var_os("MEASURED_SCREENSHOTS") {
        c.set_window_size(1280, height).await.expect("resize");
        let png = c.screenshot().await.expect("screenshot");
        c.set_window_size(1280, 1000).await.expect("resize");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(Path::new(&dir).join(name), png).unwrap();
    }
}

#[test]
fn the_site_works_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("r.sqlite").display());
    let (out, ids) = site(&url, dir.path());
    let out = out.canonicalize().unwrap();
    let driver = start_driver();
    rt().block_on(async {
        use fantoccini::Locator::Css;
        let c = browser(&driver, &dir.path().join("profile")).await;
        let page = |rel: &str| format!("file://{}", out.join(rel).display());
        // What the browser did before it was pointed at the site is not the site's.
        console_and_requests(&c).await;
        let mut requests = Vec::new();

        // The index lists every experiment with its verdict in words.
        c.goto(&page("index.html")).await.unwrap();
        let rows = c.find_all(Css("tr.experiment")).await.unwrap();
        let mut seen = Vec::new();
        for r in &rows {
            let name = attr(r, "data-experiment").await;
            let verdicts = r.find(Css("td.verdicts")).await.unwrap().text().await.unwrap();
            assert!(verdicts.contains("faster"), "{name}: {verdicts}");
            seen.push(name);
        }
        seen.sort();
        assert_eq!(seen, ["latency", "machines", "steady"]);
        screenshot(&c, "publish-index.png", 760).await;
        let (errors, r) = console_and_requests(&c).await;
        assert!(errors.is_empty(), "console errors on the index: {errors:?}");
        requests.extend(r);

        // The experiment page: six points per series, the step marker at the injected commit.
        c.goto(&page("experiments/latency.html")).await.unwrap();
        let chart = r#"section[data-metric="work.latency"]"#;
        for series in ["0", "1"] {
            let points = c
                .find_all(Css(&format!(r#"{chart} g.series[data-series="{series}"] a.pt"#)))
                .await
                .unwrap();
            assert_eq!(points.len(), 6, "points in series {series}");
        }
        let steps = c.find_all(Css(&format!("{chart} g.step"))).await.unwrap();
        assert_eq!(steps.len(), 2, "one step per config");
        let injected = &commit_of("latency", 3)[..10];
        for step in &steps {
            assert_eq!(attr(step, "data-commit").await, injected);
            assert_eq!(attr(step, "data-run").await, ids[3]);
            // Drawn where the injected run's point is.
            let marker_x = step.find(Css("line")).await.unwrap().rectangle().await.unwrap().0;
            let point = c
                .find(Css(&format!(r#"{chart} a.pt[data-run="{}"] circle"#, ids[3])))
                .await
                .unwrap()
                .rectangle()
                .await
                .unwrap();
            let centre = point.0 + point.2 / 2.0;
            assert!(
                (marker_x - centre).abs() < 3.0,
                "marker at {marker_x}, point at {centre}"
            );
        }
        screenshot(&c, "publish-experiment.png", 1900).await;
        let (errors, r) = console_and_requests(&c).await;
        assert!(errors.is_empty(), "console errors on the experiment page: {errors:?}");
        requests.extend(r);

        // A click on a point opens that run's page.
        let target = &ids[1];
        c.find(Css(&format!(
            r#"{chart} g.series[data-series="0"] a.pt[data-run="{target}"]"#
        )))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
        c.wait().for_element(Css("main article.report")).await.unwrap();
        let now = c.current_url().await.unwrap();
        assert!(now.as_str().ends_with(&format!("runs/{target}/index.html")), "{now}");
        let heading = c.find(Css("h1")).await.unwrap().text().await.unwrap();
        assert_eq!(heading, format!("Run {target}"));
        let (errors, r) = console_and_requests(&c).await;
        assert!(errors.is_empty(), "console errors on the run page: {errors:?}");
        requests.extend(r);

        // Machines are never joined into one line, and the filter shows one machine's series.
        c.goto(&page("experiments/machines.html")).await.unwrap();
        let chart = r#"section[data-metric="work.latency"]"#;
        let series = c.find_all(Css(&format!("{chart} g.series"))).await.unwrap();
        assert_eq!(series.len(), 4, "two configs on each of two machines");
        for s in &series {
            assert_eq!(s.find_all(Css("a.pt")).await.unwrap().len(), 2);
        }
        c.find(Css("#env-e1")).await.unwrap().click().await.unwrap();
        for s in &series {
            let shown = s.is_displayed().await.unwrap();
            assert_eq!(shown, attr(s, "data-env").await == "e1", "filtered to machine e1");
        }
        let (errors, r) = console_and_requests(&c).await;
        assert!(errors.is_empty(), "console errors on the machines page: {errors:?}");
        requests.extend(r);

        assert!(requests.len() >= 6, "the network log saw the pages: {requests:?}");
        let outside: Vec<_> = requests.iter().filter(|u| !u.starts_with("file://")).collect();
        assert!(outside.is_empty(), "requests left file://: {outside:?}");
        c.close().await.unwrap();
    });
}

/// Benchmark, not a test of the suite (`bench/publish_bench.sh` runs it): how long a published
/// experiment page with 1,000 points per chart takes to become interactive in headless
/// Chromium, from the browser's own navigation timing.
#[test]
#[ignore = "benchmark: bench/publish_bench.sh runs it on a page it published"]
fn bench_a_thousand_point_page_in_chromium() {
    let page = std::env::var("MEASURED_BENCH_PAGE").expect("MEASURED_BENCH_PAGE: the experiment page to open");
    let dir = tempfile::tempdir().unwrap();
    let driver = start_driver();
    rt().block_on(async {
        let c = browser(&driver, &dir.path().join("profile")).await;
        let mut interactive = Vec::new();
        let mut loaded = Vec::new();
        let mut points = 0;
        for _ in 0..7 {
            c.goto("about:blank").await.unwrap();
            c.goto(&format!("file://{page}")).await.unwrap();
            let t = c
                .execute(
                    "const n = performance.getEntriesByType('navigation')[0]; \
                     return [n.domInteractive, n.loadEventEnd, \
                     document.querySelectorAll('section.metric g.series[data-series=\"0\"]')[0].querySelectorAll('a.pt').length];",
                    vec![],
                )
                .await
                .unwrap();
            interactive.push(t[0].as_f64().unwrap());
            loaded.push(t[1].as_f64().unwrap());
            points = t[2].as_u64().unwrap();
        }
        let (errors, _) = console_and_requests(&c).await;
        assert!(errors.is_empty(), "{errors:?}");
        // One point per stored run of the experiment: the bench stores RUNS / 10 of each.
        let expected: u64 = std::env::var("MEASURED_BENCH_POINTS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1000);
        assert!(
            points >= expected,
            "the page has {points} points in its first series, expected {expected}"
        );
        println!(
            "{points} points per series: interactive after {:.0} ms (median of 7; range {:.0}-{:.0}), load event after {:.0} ms",
            measured::stats::median(&interactive),
            interactive.iter().copied().fold(f64::INFINITY, f64::min),
            interactive.iter().copied().fold(0.0, f64::max),
            measured::stats::median(&loaded)
        );
        c.close().await.unwrap();
    });
}
