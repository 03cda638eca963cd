//! Tests of synthetic markets on both backends: one version per options and generator, the
//! demo market only for an empty database, and another generator's market never reused.

use crate::db::Db;
use crate::kinds::LoadParams;
use crate::market::tests::{both_backends, count_rows, flatten, load_version, on_postgres, on_sqlite, small_market};
use crate::market::*;
use crate::metrics::Recorder;

both_backends!(
    synth_is_reproducible_and_never_touches_a_stored_version,
    demo_market_fills_only_an_empty_database,
    a_market_of_another_generator_is_regenerated_never_reused,
);

async fn synth_is_reproducible_and_never_touches_a_stored_version(db: Db) {
    let hidden = indicatif::ProgressBar::hidden();
    let (first, report) = catalog::ensure_synth(&db, &small_market(11), &hidden).await.unwrap();
    let rows = report.expect("generated").rows;
    let hash_a = load_version(&db, LoadParams::default(), &first)
        .await
        .unwrap()
        .content_hash;
    // The same options again: the same version, nothing written.
    let (again, report) = catalog::ensure_synth(&db, &small_market(11), &hidden).await.unwrap();
    assert_eq!((again.clone(), report), (first.clone(), None));
    assert_eq!(count_rows(&db).await, rows as i64, "no duplicates");
    // Another seed is another version beside it; the first keeps every bar.
    let (other, _) = catalog::ensure_synth(&db, &small_market(12), &hidden).await.unwrap();
    assert_ne!(other.id, first.id);
    let hash_c = load_version(&db, LoadParams::default(), &other)
        .await
        .unwrap()
        .content_hash;
    assert_ne!(hash_a, hash_c, "another seed is another market");
    assert_eq!(
        load_version(&db, LoadParams::default(), &first)
            .await
            .unwrap()
            .content_hash,
        hash_a
    );
    // `synth` itself does not look first: the unique origin key refuses a second copy.
    let third = synth(&db, &small_market(11), &hidden).await;
    assert!(
        third.is_err(),
        "one origin, one version: the unique key refuses a second"
    );
    let listed = crate::market::versions::list(&db).await.unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0].label(), first.label);
    assert_eq!(first.label, "synth-12x80-2019-12-20-s11-mixed@1");
}

async fn demo_market_fills_only_an_empty_database(db: Db) {
    let hidden = indicatif::ProgressBar::hidden();
    let (version, report) = catalog::ensure_synth(&db, &demo_options(), &hidden).await.unwrap();
    let report = report.expect("empty database");
    assert_eq!(report.symbols, DEMO_SYMBOLS);
    assert_eq!(report.seed, DEMO_SEED);
    assert_eq!(count_rows(&db).await, report.rows as i64);
    assert_eq!(
        catalog::ensure_synth(&db, &demo_options(), &hidden).await.unwrap(),
        (version, None)
    );
    assert!(report.to_string().contains("seed 20240601"), "{report}");
    let decided = decide_data(
        &db,
        &DataSpec::default(),
        &StockPlace {
            shown: "test".into(),
            embedded: true,
            named: false,
            command: "measured".into(),
        },
    )
    .await
    .unwrap()
    .unwrap();
    assert!(
        decided.is_empty(),
        "a database holding data gets no demo market: {decided:?}"
    );
}

/// What data preparation decides for the declared `market` on `db`, as the embedded database
/// (`embedded`) or a shared one.
async fn decide_for(db: &Db, market: &SynthOptions, embedded: bool) -> Result<Vec<Step>, Refusal> {
    let spec = DataSpec {
        declared: true,
        synth: Some(SynthDecl {
            options: market.clone(),
            at: vec!["data".into(), "synth".into()],
        }),
        ..DataSpec::default()
    };
    let place = StockPlace {
        shown: "test".into(),
        embedded,
        named: !embedded,
        command: "measured".into(),
    };
    decide_data(db, &spec, &place).await.unwrap()
}

/// Makes version `id` read as the same market written by generator 1, its bars changed the way
/// an older generator's would differ.
async fn as_generator_one(db: &Db, id: i64, market: &SynthOptions) {
    let mut origin = crate::market::versions::Origin::synth(market);
    if let crate::market::versions::Origin::Synth { generator, .. } = &mut origin {
        *generator = 1;
    }
    let statements = [
        "UPDATE dataset_versions SET origin = $1, origin_key = $2 WHERE id = $3",
        "UPDATE daily_bars SET close = close * 1.01 WHERE version = $3 AND $1 <> $2",
    ];
    let json = serde_json::to_string(&origin).unwrap();
    for sql in statements {
        crate::on_pool!(db, |p| {
            sqlx::query(sql)
                .bind(&json)
                .bind(origin.key())
                .bind(id)
                .execute(p)
                .await
                .unwrap();
        });
    }
}

async fn a_market_of_another_generator_is_regenerated_never_reused(db: Db) {
    let market = small_market(21);
    let hidden = indicatif::ProgressBar::hidden();
    let (old, _) = catalog::ensure_synth(&db, &market, &hidden).await.unwrap();
    // The in-memory generator gives exactly the bars a load of the written market returns.
    let loaded = load_version(&db, LoadParams::default(), &old).await.unwrap();
    assert_eq!(flatten(&synth_bars(&market).unwrap()), flatten(&loaded));
    for embedded in [true, false] {
        assert!(
            decide_for(&db, &market, embedded).await.unwrap().is_empty(),
            "this generator's market is reused"
        );
    }

    // The same options, written by generator 1: other bars, so a new version beside them, on
    // the embedded database and on a shared one alike (nothing is replaced).
    as_generator_one(&db, old.id, &market).await;
    let before = load_version(&db, LoadParams::default(), &old).await.unwrap();
    for embedded in [true, false] {
        let steps = decide_for(&db, &market, embedded).await.unwrap();
        assert!(
            matches!(&steps[..], [Step::Generate { beside, .. }] if beside == &vec![old.label.clone()]),
            "{steps:?}"
        );
    }
    let steps = decide_for(&db, &market, true).await.unwrap();
    let done = apply_data(&db, steps, true).await.unwrap();
    assert!(done[0].ends_with("synth-12x80-2019-12-20-s21-mixed@2"), "{done:?}");
    let spec = DataSpec {
        declared: true,
        synth: Some(SynthDecl {
            options: market.clone(),
            at: vec![],
        }),
        ..DataSpec::default()
    };
    let view = data_view(&db, &spec).await.unwrap();
    assert_eq!(view.labels(), "synth-12x80-2019-12-20-s21-mixed@2");
    let fresh = load_within(&db, &LoadParams::default(), &view, &mut Recorder::new())
        .await
        .unwrap();
    assert_eq!(flatten(&fresh), flatten(&synth_bars(&market).unwrap()));
    // The old version is still there, bar for bar.
    let after = load_version(&db, LoadParams::default(), &old).await.unwrap();
    assert_eq!(after, before);
    assert_ne!(after.content_hash, fresh.content_hash);
}
