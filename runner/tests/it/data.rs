//! `[data]`: the stock data a manifest declares is prepared before a run is stored, every load
//! stage is checked against it before the first trial, and every run names the data it read.

use crate::common::{bin, fixture, run, run_cmd, scalar, strings, text, write};
use std::path::{Path, PathBuf};

/// The data columns of every imported bar, in order: equal strings mean untouched rows.
const IMPORTED_ROWS: &str =
    "SELECT COALESCE(group_concat(row, ';'), '') FROM (SELECT symbol || ',' || trade_date || ',' || \
     open || ',' || high || ',' || low || ',' || close || ',' || volume || ',' || amount || ',' || adj_factor AS row \
     FROM daily_bars WHERE version IN (SELECT id FROM dataset_versions WHERE origin_key LIKE 'import:%') \
     ORDER BY symbol, trade_date)";

fn experiments() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

fn runs(db: &Path) -> i64 {
    scalar(db.to_str().unwrap(), "SELECT COUNT(*) FROM runs")
}

/// Runs `sql` (an UPDATE) on the SQLite file `db`.
fn execute(db: &Path, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = measured::db::Db::connect(db.to_str().unwrap()).await.unwrap();
        if let measured::db::Db::Sqlite(p) = &db {
            sqlx::query(sql).execute(p).await.expect(sql);
        }
        db.close().await;
    });
}

/// A manifest of one load stage (and a normalize stage when `seq_len` is given) over
/// `symbols`, declaring `data`.
fn manifest(name: &str, data: &str, symbols: &str, extra: &str) -> String {
    format!(
        "[experiment]\nname = \"{name}\"\n\n{data}\n[schedule]\nwarmup = 0\nrepetitions = 2\n\n[stages.load]\n\
         kind = \"load\"\nsymbols = {symbols}\n{extra}"
    )
}

fn stock_data(db: &Path, run: &str) -> serde_json::Value {
    let json = strings(
        db.to_str().unwrap(),
        &format!("SELECT COALESCE(stock_data, 'null') FROM runs WHERE id = '{run}'"),
    );
    serde_json::from_str(&json[0]).unwrap()
}

fn latest_run(db: &Path) -> String {
    strings(
        db.to_str().unwrap(),
        "SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1",
    )
    .remove(0)
}

#[test]
fn every_experiment_passes_preflight_on_a_fresh_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    for exp in experiments() {
        // Smoke mode: the 500-symbol experiments declare the small demo market there.
        let out = run(bin()
            .arg("--database")
            .arg(&db)
            .args(["--quiet", "run", "--smoke", "--preflight-only"])
            .arg(&exp));
        assert_eq!(out.status.code(), Some(0), "{}:\n{}", exp.display(), text(&out));
        assert!(text(&out).contains("preflight: ok"), "{}", text(&out));
        let plan = run(bin().arg("--database").arg(&db).args(["plan", "--smoke"]).arg(&exp));
        assert_eq!(plan.status.code(), Some(0), "{}:\n{}", exp.display(), text(&plan));
        let reads = std::fs::read_to_string(&exp).unwrap().contains("kind = \"load\"");
        assert_eq!(
            text(&plan).contains("preflight: every load stage's needs are met"),
            reads,
            "{}:\n{}",
            exp.display(),
            text(&plan)
        );
        let raw = std::fs::read_to_string(&exp).unwrap();
        assert!(raw.contains("\n[data]\n"), "{} declares no [data]", exp.display());
    }
    assert_eq!(runs(&db), 0, "a preflight stores no run");
}

#[test]
fn a_declared_market_is_added_beside_the_demo_market_and_the_quickstart_reads_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let results = dir.path().join("results");
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/quickstart.toml");
    let first = run(run_cmd(&db, &results, &["--smoke"]).arg(&quickstart));
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let quick_a = latest_run(&db);
    // Every quickstart training records its untimed warm-up step beside the epoch clock.
    let train_metric = |name: &str| {
        scalar(
            db.to_str().unwrap(),
            &format!(
                "SELECT COUNT(*) FROM metrics WHERE run_id = '{quick_a}' AND stage = 'train' \
                 AND name = '{name}' AND step IS NULL AND value > 0"
            ),
        )
    };
    let trials = scalar(
        db.to_str().unwrap(),
        &format!("SELECT COUNT(*) FROM trials WHERE run_id = '{quick_a}' AND status = 'ok'"),
    );
    assert!(trials > 0);
    assert_eq!(train_metric("first_step_seconds"), trials);
    assert_eq!(train_metric("epoch_seconds"), trials);
    // The 500-symbol experiments' market, scaled down: same style and seed, fewer symbols and days.
    let big = write(
        dir.path(),
        "big.toml",
        &manifest(
            "normalize-big",
            "[data]\nsynth = { symbols = 60, days = 300, start = 2015-01-01, seed = 42, style = \"mixed\" }\n",
            "{ first = 60 }",
            "cache = true\n\n[stages.features]\nkind = \"normalize\"\nneeds = [\"load\"]\nseq_len = 20\npreset = \"minimal\"\n",
        ),
    );
    let out = run(run_cmd(&db, &results, &[]).arg(&big));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("generated the synthetic market 60 symbols x 300 days"),
        "{}",
        text(&out)
    );
    let id = latest_run(&db);
    assert_eq!(
        scalar(
            db.to_str().unwrap(),
            &format!("SELECT COUNT(*) FROM trials WHERE run_id = '{id}' AND status = 'ok'")
        ),
        2
    );
    let data = stock_data(&db, &id);
    assert_eq!(
        (data["symbols"].as_u64(), data["sources"][0]["seed"].as_u64()),
        (Some(60), Some(42))
    );
    let again = run(run_cmd(&db, &results, &["--smoke"]).arg(&quickstart));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let quick_b = latest_run(&db);
    let data = stock_data(&db, &quick_b);
    assert_eq!(
        (data["symbols"].as_u64(), data["sources"][0]["seed"].as_u64()),
        (Some(50), Some(20_240_601))
    );
    let hash = |run: &str| {
        strings(
            db.to_str().unwrap(),
            &format!("SELECT DISTINCT content_hash FROM stage_results WHERE run_id = '{run}' AND stage = 'load' AND content_hash IS NOT NULL"),
        )
    };
    assert_eq!(
        hash(&quick_a),
        hash(&quick_b),
        "the quickstart reads its own version again"
    );
}

#[test]
fn imported_rows_are_never_touched_and_loads_read_only_the_declared_market() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let results = dir.path().join("results");
    let imported = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["data", "import"])
        .arg(fixture("data/TEST1.csv")));
    assert_eq!(imported.status.code(), Some(0), "{}", text(&imported));
    let before = strings(db.to_str().unwrap(), IMPORTED_ROWS);
    assert!(before[0].starts_with("TEST1,2024-01-02,10.0"), "{before:?}");
    for seed in [7, 8] {
        let m = write(
            dir.path(),
            "m.toml",
            &manifest(
                "synth-beside-import",
                &format!("[data]\nsynth = {{ symbols = 30, days = 200, seed = {seed} }}\n"),
                "\"all\"",
                "",
            ),
        );
        let out = run(run_cmd(&db, &results, &[]).arg(&m));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(
            strings(db.to_str().unwrap(), IMPORTED_ROWS),
            before,
            "imported rows changed"
        );
        let id = latest_run(&db);
        let loaded = |agg: &str| {
            scalar(
                db.to_str().unwrap(),
                &format!(
                    "SELECT CAST({agg}(value) AS INTEGER) FROM metrics WHERE run_id = '{id}' AND stage = 'load' \
                     AND name = 'symbols'"
                ),
            )
        };
        assert_eq!(
            (loaded("MIN"), loaded("MAX")),
            (30, 30),
            "`all` means the declared market's symbols, not the imported one"
        );
    }
    // A selection larger than the declared market is refused, even though the database has more.
    let m = write(
        dir.path(),
        "more.toml",
        &manifest(
            "more",
            "[data]\nsynth = { symbols = 30, days = 200, seed = 8 }\n",
            "{ first = 31 }",
            "",
        ),
    );
    let runs_before = runs(&db);
    let out = run(run_cmd(&db, &results, &[]).arg(&m));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("needs 31 symbols but the data declared in [data] has 30"),
        "{}",
        text(&out)
    );
    assert_eq!(runs(&db), runs_before);
    assert_eq!(strings(db.to_str().unwrap(), IMPORTED_ROWS), before);
}

#[test]
fn a_selection_the_demo_market_cannot_serve_stops_before_any_trial_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let text_of =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/quickstart.toml")).unwrap();
    // The quickstart without its [data] table, selecting 500 symbols.
    let start = text_of.find("\n[data]\n").unwrap() + 1;
    let end = start + text_of[start..].find("\n\n").unwrap() + 2;
    let body = format!("{}{}", &text_of[..start], &text_of[end..]).replace("{ first = 20 }", "{ first = 500 }");
    let m = write(dir.path(), "q.toml", &body);
    let experiments = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    std::fs::copy(
        experiments.join("sources/stock-trainer.md"),
        dir.path().join("sources/stock-trainer.md"),
    )
    .unwrap();
    let line = body.lines().position(|l| l.contains("{ first = 500 }")).unwrap() + 1;
    let out = run(run_cmd(&db, &dir.path().join("results"), &[]).arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("q.toml:{line}:11")), "{t}");
    assert!(t.contains("needs 500 symbols but the stock database has 50"), "{t}");
    assert!(t.contains("[data]\n     synth = { symbols = 500, days = 2500"), "{t}");
    assert!(t.contains("data synth --symbols 500 --days 2500"), "{t}");
    assert!(!t.contains("trial 0"), "no trial ran: {t}");
    assert_eq!(runs(&db), 0);
    // `plan` says the same, reading only.
    let plan = run(bin().arg("--database").arg(&db).arg("plan").arg(&m));
    assert_eq!(plan.status.code(), Some(1), "{}", text(&plan));
    assert!(text(&plan).contains(&format!("q.toml:{line}:11")), "{}", text(&plan));
    assert_eq!(runs(&db), 0);
}

#[test]
fn declared_files_are_verified_by_sha256_and_imported_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let results = dir.path().join("results");
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::copy(fixture("data/TEST1.csv"), dir.path().join("data/TEST1.csv")).unwrap();
    let sha = measured::market::file_sha256(&fixture("data/TEST1.csv")).unwrap();
    let wrong = "0".repeat(64);
    let m = |sha: &str| {
        manifest(
            "files",
            &format!("[data]\nimport = [{{ path = \"data/TEST1.csv\", sha256 = \"{sha}\" }}]\n"),
            "\"all\"",
            "",
        )
    };
    let bad = write(dir.path(), "bad.toml", &m(&wrong));
    let out = run(run_cmd(&db, &results, &[]).arg(&bad));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("data/TEST1.csv") && t.contains(&sha) && t.contains(&wrong),
        "{t}"
    );
    assert!(t.contains("bad.toml:"), "located in the manifest: {t}");
    assert_eq!(runs(&db), 0);
    assert_eq!(
        scalar(db.to_str().unwrap(), "SELECT COUNT(*) FROM daily_bars"),
        0,
        "nothing imported"
    );
    let good = write(dir.path(), "good.toml", &m(&sha));
    for _ in 0..2 {
        let out = run(run_cmd(&db, &results, &[]).arg(&good));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    assert_eq!(scalar(db.to_str().unwrap(), "SELECT COUNT(*) FROM daily_bars"), 5);
    assert_eq!(
        scalar(db.to_str().unwrap(), "SELECT COUNT(*) FROM dataset_versions"),
        1,
        "one version, found again by the file's sha256"
    );
    let data = stock_data(&db, &latest_run(&db));
    assert_eq!(data["sources"][0]["sha256"].as_str(), Some(sha.as_str()), "{data}");
    assert_eq!(data["sources"][0]["file"].as_str(), Some("data/TEST1.csv"), "{data}");
}

#[test]
fn a_named_stock_database_gets_the_declared_market_beside_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let stock = dir.path().join("stock.sqlite");
    let made =
        run(bin()
            .arg("--stock-database")
            .arg(&stock)
            .args(["data", "synth", "--symbols", "20", "--days", "100"]));
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    let held = |sql: &str| scalar(stock.to_str().unwrap(), sql);
    let first = "SELECT COUNT(*) FROM symbols WHERE version = \
                 (SELECT id FROM dataset_versions WHERE dataset = 'synth-20x100-2015-01-01-s42-mixed')";
    assert_eq!(held(first), 20);
    let m = write(
        dir.path(),
        "m.toml",
        &manifest("other", "[data]\nsynth = { symbols = 30, days = 100 }\n", "\"all\"", ""),
    );
    let db = dir.path().join("r.sqlite");
    let out = run(run_cmd(
        &db,
        &dir.path().join("results"),
        &["--stock-database", stock.to_str().unwrap()],
    )
    .arg(&m));
    let t = text(&out);
    // A shared database loses nothing: the declared market is a version beside the one there.
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("generated the synthetic market 30 symbols x 100 days from 2015-01-01, seed 42, style mixed as a new version"),
        "{t}"
    );
    assert_eq!(held(first), 20, "the market that was there is untouched");
    assert_eq!(held("SELECT COUNT(*) FROM dataset_versions"), 2);
    let data = stock_data(&db, &latest_run(&db));
    assert_eq!(
        data["symbols"].as_u64(),
        Some(30),
        "the run read the declared market: {data}"
    );
    assert_eq!(
        data["versions"][0]["label"].as_str(),
        Some("synth-30x100-2015-01-01-s42-mixed@1"),
        "{data}"
    );
}

#[test]
fn compare_refuses_different_data_naming_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let results = dir.path().join("results");
    let mut ids = Vec::new();
    for (symbols, seed) in [(20, 7), (30, 42)] {
        let m = write(
            dir.path(),
            "m.toml",
            &manifest(
                "two-markets",
                &format!("[data]\nsynth = {{ symbols = {symbols}, days = 100, seed = {seed} }}\n"),
                "{ first = 20 }",
                "",
            ),
        );
        let out = run(run_cmd(&db, &results, &[]).arg(&m));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        ids.push(latest_run(&db));
    }
    let compare = |ids: &[String]| {
        run(bin()
            .arg("--database")
            .arg(&db)
            .args(["compare", &ids[0], &ids[1], "--results-dir"])
            .arg(&results))
    };
    let out = compare(&ids);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("20 vs 30 symbols") && t.contains("seed 7 vs 42"), "{t}");
    assert!(t.contains("--allow-different-data"), "{t}");
    // A run stored without a data identity is unknown, never guessed.
    execute(
        &db,
        &format!("UPDATE runs SET stock_data = NULL WHERE id = '{}'", ids[0]),
    );
    let t = text(&compare(&ids));
    assert!(t.contains(&format!("run {}: stock data unknown", ids[0])), "{t}");
}

#[test]
fn runs_without_a_data_identity_show_report_and_compare_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let results = dir.path().join("results");
    let m = write(
        dir.path(),
        "m.toml",
        &manifest(
            "old-run",
            "[data]\nsynth = { symbols = 10, days = 100 }\n",
            "\"all\"",
            "",
        ),
    );
    let mut ids = Vec::new();
    for _ in 0..2 {
        let out = run(run_cmd(&db, &results, &[]).arg(&m));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        ids.push(latest_run(&db));
    }
    let show = run(bin().arg("--database").arg(&db).args(["show", &ids[1]]));
    let shown = String::from_utf8_lossy(&show.stdout).to_string();
    assert!(
        shown.lines().nth(1).is_some_and(|l| l.starts_with("data: 10 symbols")),
        "the data comes first: {shown}"
    );
    assert!(shown.contains("content hash of `load`: "), "{shown}");
    execute(
        &db,
        &format!("UPDATE runs SET stock_data = NULL WHERE id = '{}'", ids[0]),
    );
    let show = run(bin().arg("--database").arg(&db).args(["show", &ids[0]]));
    assert_eq!(show.status.code(), Some(0), "{}", text(&show));
    assert!(text(&show).contains("data: unknown"), "{}", text(&show));
    let report = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["report", &ids[0], "--results-dir"])
        .arg(&results));
    assert_eq!(report.status.code(), Some(0), "{}", text(&report));
    let folder = results.join("old-run").join(&ids[0]);
    let md = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(md.contains("Stock data: unknown"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("report.json")).unwrap()).unwrap();
    assert!(json["stock_data"].is_null(), "{json}");
    let known = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["report", &ids[1], "--results-dir"])
        .arg(&results));
    assert_eq!(known.status.code(), Some(0), "{}", text(&known));
    let md = std::fs::read_to_string(results.join("old-run").join(&ids[1]).join("report.md")).unwrap();
    let data = md.split("### Data").nth(1).unwrap_or_default();
    assert!(
        data.trim_start().starts_with("Stock data: 10 symbols"),
        "the Data section leads with it: {md}"
    );
    // Same bars loaded: comparing them needs no identity.
    let out = run(bin()
        .arg("--database")
        .arg(&db)
        .args(["compare", &ids[0], &ids[1], "--results-dir"])
        .arg(&results));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A manifest of two variants whose command fails with `failure` (per variant).
fn failing(dir: &Path, keep_going: bool, differently: bool) -> PathBuf {
    let code = if differently { "$CODE" } else { "3" };
    write(
        dir,
        "fail.toml",
        &format!(
            "[experiment]\nname = \"fails\"\n[schedule]\nwarmup = 1\nrepetitions = 8\nkeep_going = {keep_going}\n\
             [stages.work]\nkind = \"command\"\nshell = true\nargv = [\"echo broken >&2; exit {code}\"]\n\
             env = {{ CODE = \"3\" }}\n[variants.a]\n[variants.b]\n\"stages.work.env\" = {{ CODE = \"4\" }}\n"
        ),
    )
}

#[test]
fn a_run_whose_first_trials_all_fail_alike_stops_unless_told_to_keep_going() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let results = dir.path().join("results");
    let out = run(run_cmd(&db, &results, &[]).arg(failing(dir.path(), false, false)));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("stopped: the first trial of every config failed with the same error"),
        "{t}"
    );
    assert!(t.contains("keep_going = true"), "{t}");
    let id = latest_run(&db);
    let count = |sql: &str| scalar(db.to_str().unwrap(), &sql.replace("RUN", &id));
    assert_eq!(
        count("SELECT COUNT(*) FROM trials WHERE run_id = 'RUN'"),
        2,
        "what ran is stored"
    );
    assert_eq!(strings(db.to_str().unwrap(), "SELECT status FROM runs"), ["stopped"]);
    let show = run(bin().arg("--database").arg(&db).args(["show", &id]));
    assert!(
        text(&show).contains("stopped: the first trial of every config failed"),
        "{}",
        text(&show)
    );

    let out = run(run_cmd(&db, &results, &[]).arg(failing(dir.path(), true, false)));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let id = latest_run(&db);
    let count = |sql: &str| scalar(db.to_str().unwrap(), &sql.replace("RUN", &id));
    assert_eq!(
        count("SELECT COUNT(*) FROM trials WHERE run_id = 'RUN'"),
        18,
        "keep_going runs everything"
    );
    assert_eq!(
        strings(
            db.to_str().unwrap(),
            &format!("SELECT status FROM runs WHERE id = '{id}'")
        ),
        ["finished"]
    );

    // Configs failing differently are not the same failure: the run goes on.
    let out = run(run_cmd(&db, &results, &[]).arg(failing(dir.path(), false, true)));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let id = latest_run(&db);
    assert_eq!(
        scalar(
            db.to_str().unwrap(),
            &format!("SELECT COUNT(*) FROM trials WHERE run_id = '{id}'")
        ),
        18
    );
}

#[test]
fn on_postgres_declared_markets_and_files_are_versions_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let url = crate::common::pg_url();
    let results = dir.path().join("results");
    std::fs::copy(fixture("data/TEST1.csv"), dir.path().join("TEST1.csv")).unwrap();
    let sha = measured::market::file_sha256(&fixture("data/TEST1.csv")).unwrap();
    let data = |seed: u64| {
        format!(
            "[data]\nsynth = {{ symbols = 12, days = 120, seed = {seed}, style = \"us\" }}\n\
             import = [{{ path = \"TEST1.csv\", sha256 = \"{sha}\" }}]\n\
             require = {{ min_symbols = 13, min_days = 120, codes = [\"TEST1\"] }}\n"
        )
    };
    let m = write(dir.path(), "a.toml", &manifest("pg-data", &data(7), "\"all\"", ""));
    let out = run(run_cmd(&url, &results, &[]).arg(&m));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(scalar(&url, "SELECT COUNT(*) FROM symbols"), 13);
    assert_eq!(scalar(&url, "SELECT COUNT(*) FROM dataset_versions"), 2);
    let stock: serde_json::Value =
        serde_json::from_str(&strings(&url, "SELECT stock_data FROM runs").remove(0)).unwrap();
    assert_eq!(stock["symbols"].as_u64(), Some(13), "{stock}");
    assert_eq!(stock["sources"][1]["sha256"].as_str(), Some(sha.as_str()), "{stock}");
    // Another market declared with the same file: a version beside the first, which keeps
    // every bar; each run reads its own market.
    let before = scalar(&url, "SELECT COUNT(*) FROM daily_bars");
    let m = write(dir.path(), "b.toml", &manifest("pg-data", &data(8), "\"all\"", ""));
    let out = run(run_cmd(&url, &results, &[]).arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("generated the synthetic market 12 symbols x 120 days from 2015-01-01, seed 8"),
        "{t}"
    );
    assert_eq!(scalar(&url, "SELECT COUNT(*) FROM runs"), 2);
    assert_eq!(scalar(&url, "SELECT COUNT(*) FROM dataset_versions"), 3);
    assert!(scalar(&url, "SELECT COUNT(*) FROM daily_bars") > before);
    let seeds = strings(
        &url,
        "SELECT (stock_data::jsonb -> 'sources' -> 0 ->> 'seed') FROM runs ORDER BY started_at",
    );
    assert_eq!(seeds, ["7", "8"]);
    // A requirement the data does not meet is located at the requirement.
    let m = write(
        dir.path(),
        "c.toml",
        &manifest(
            "pg-data",
            &data(7).replace("min_days = 120", "min_days = 200"),
            "\"all\"",
            "",
        ),
    );
    let out = run(run_cmd(&url, &results, &[]).arg(&m));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("requires at least 200 trading days") && t.contains("c.toml:"),
        "{t}"
    );
}
