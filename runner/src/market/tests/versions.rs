//! Tests of dataset versions on both backends: imports that find their version or make a new
//! one, `--into` and its conflicts, and markets and files side by side.

use super::import::{only, opts, write, TUSHARE, YAHOO};
use crate::db::Db;
use crate::kinds::LoadParams;
use crate::market::tests::{both_backends, count_rows, load_version, load_with, on_postgres, on_sqlite};
use crate::market::*;
use std::path::PathBuf;

both_backends!(
    reimport_finds_its_version_and_a_changed_file_makes_a_new_one,
    into_extends_a_dataset_and_stops_at_a_conflict,
    synth_and_imports_are_versions_side_by_side,
);

async fn reimport_finds_its_version_and_a_changed_file_makes_a_new_one(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        write(dir.path(), "AAPL.csv", YAHOO),
        write(dir.path(), "t.csv", TUSHARE),
    ];
    let first = import(&db, &opts(files.clone())).await.unwrap();
    let v1 = first.version.clone().unwrap();
    assert_eq!(v1.label, "AAPL@1", "named after the first file");
    let before = load_with(&db, LoadParams::default()).await.0.unwrap();
    // The same files again: their version, nothing written.
    let again = import(&db, &opts(files)).await.unwrap();
    assert!(again.already && again.rows_written == 0, "{again:?}");
    assert_eq!(again.version.as_ref(), Some(&v1));
    assert_eq!(count_rows(&db).await, 7);
    // A corrected file is a new version of the dataset; the first keeps every bar.
    let fixed = YAHOO.replace("181.91,181.22", "181.95,181.22");
    let second = import(&db, &opts(vec![write(dir.path(), "AAPL.csv", &fixed)]))
        .await
        .unwrap();
    assert_eq!(second.version.as_ref().map(|v| v.label.as_str()), Some("AAPL@2"));
    assert_eq!(count_rows(&db).await, 10);
    let newest = load_with(&db, only(&["AAPL"])).await.0.unwrap();
    assert_eq!(newest.symbols[0].close[2], 181.95);
    let old = load_version(&db, LoadParams::default(), &v1).await.unwrap();
    assert_eq!(old, before, "the first version is unchanged, bar for bar");
    assert_eq!(
        old.symbols.iter().find(|s| s.symbol == "AAPL").unwrap().close[2],
        181.91
    );
    // A name of one's own, checked like any name.
    let named = ImportOptions {
        dataset: Some("bad name".into()),
        ..opts(vec![write(dir.path(), "other.csv", &YAHOO.replace("185.64", "185.60"))])
    };
    let err = import(&db, &named).await.unwrap_err().to_string();
    assert!(err.contains("cannot name a dataset"), "{err}");
}

async fn into_extends_a_dataset_and_stops_at_a_conflict(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    let base = import(&db, &opts(vec![write(dir.path(), "AAPL.csv", YAHOO)]))
        .await
        .unwrap()
        .version
        .unwrap();
    // Other symbols into the same dataset: a new version with both.
    let into = |files: Vec<PathBuf>, replace: bool| ImportOptions {
        into: Some("AAPL".into()),
        replace,
        ..opts(files)
    };
    let grown = import(&db, &into(vec![write(dir.path(), "t.csv", TUSHARE)], false))
        .await
        .unwrap();
    let v2 = grown.version.clone().unwrap();
    assert_eq!(v2.label, "AAPL@2");
    let both = load_version(&db, LoadParams::default(), &v2).await.unwrap();
    assert_eq!(both.symbols.len(), 3);
    assert_eq!(
        load_version(&db, LoadParams::default(), &base)
            .await
            .unwrap()
            .symbols
            .len(),
        1
    );
    // A file that disagrees with the dataset on a bar it holds: stopped, located, nothing written.
    let rows = count_rows(&db).await;
    let changed = write(
        dir.path(),
        "AAPL2.csv",
        &YAHOO.replace("181.91,181.22", "181.95,181.22"),
    );
    let named = |files: Vec<PathBuf>, replace| ImportOptions {
        symbol: Some("AAPL".into()),
        ..into(files, replace)
    };
    let err = import(&db, &named(vec![changed.clone()], false))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("{}:4: AAPL on 2024-01-04", changed.display())),
        "{err}"
    );
    assert!(
        err.contains("1 bar of the input differs from the bars AAPL@2 holds") && err.contains("--replace"),
        "{err}"
    );
    assert_eq!(count_rows(&db).await, rows, "nothing written");
    // --replace: the file's bar wins in a new version; the older versions stay as they were.
    let replaced = import(&db, &named(vec![changed], true)).await.unwrap().version.unwrap();
    assert_eq!(replaced.label, "AAPL@3");
    let got = load_version(&db, only(&["AAPL"]), &replaced).await.unwrap();
    assert_eq!(got.symbols[0].close[2], 181.95);
    let kept = load_version(&db, only(&["AAPL"]), &v2).await.unwrap();
    assert_eq!(kept.symbols[0].close[2], 181.91);
    let err = import(
        &db,
        &ImportOptions {
            into: Some("APPL".into()),
            ..opts(vec![dir.path().join("t.csv")])
        },
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("no dataset of that name") && err.contains("did you mean `AAPL`"),
        "{err}"
    );
}

async fn synth_and_imports_are_versions_side_by_side(db: Db) {
    let dir = tempfile::tempdir().unwrap();
    import(&db, &opts(vec![write(dir.path(), "KEEP.csv", YAHOO)]))
        .await
        .unwrap();
    let hidden = indicatif::ProgressBar::hidden();
    let market = crate::market::tests::small_market(4);
    let (version, first) = catalog::ensure_synth(&db, &market, &hidden).await.unwrap();
    let rows = first.unwrap().rows;
    assert_eq!(count_rows(&db).await, rows as i64 + 3, "both kept");
    // A run that declares nothing reads the newest version of every dataset: both.
    let view = data_view(&db, &DataSpec::default()).await.unwrap();
    assert_eq!(view.versions.len(), 2, "{view:?}");
    assert_eq!(load_with(&db, only(&["KEEP"])).await.0.unwrap().rows(), 3);

    // A file holding a code of the market is a dataset of its own; the market is untouched, and
    // a run that declares nothing must now choose.
    let taken = load_version(&db, LoadParams::default(), &version)
        .await
        .unwrap()
        .symbols[0]
        .symbol
        .clone();
    let before = load_version(&db, LoadParams::default(), &version).await.unwrap();
    let named = ImportOptions {
        symbol: Some(taken.clone()),
        ..opts(vec![write(dir.path(), "taken.csv", &YAHOO.replace("185.64", "185.60"))])
    };
    import(&db, &named).await.unwrap();
    assert_eq!(
        load_version(&db, LoadParams::default(), &version).await.unwrap(),
        before
    );
    let err = data_view(&db, &DataSpec::default()).await.unwrap_err().to_string();
    assert!(err.contains(&format!("`{taken}`")) && err.contains("--data"), "{err}");
    // A declared market reads its own version only, whatever else is stored.
    let spec = DataSpec {
        declared: true,
        synth: Some(SynthDecl {
            options: market.clone(),
            at: vec![],
        }),
        ..DataSpec::default()
    };
    assert_eq!(data_view(&db, &spec).await.unwrap().versions, vec![version]);
}
