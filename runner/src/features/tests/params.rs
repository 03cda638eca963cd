//! Normalization parameters: defaults, errors that name the field, and the feature presets.

use super::*;

#[test]
fn manifest_tables_deserialize_with_defaults() {
    let p: NormalizeParams = toml::from_str(
        "seq_len = 30\nsplit_date = 2022-01-01\nscope = \"pooled\"\nmethod = \"robust\"\n\
         features = [\"ret_1\", \"vol_120\"]\nparallel = true\nthreads = 2",
    )
    .unwrap();
    assert_eq!(p.split_date, Some(date("2022-01-01")));
    assert_eq!((p.seq_len, p.horizon, p.gap_rows()), (30, 1, 30));
    assert_eq!((p.scope, p.method), (NormScope::Pooled, NormMethod::Robust));
    assert_eq!(p.feature_list().unwrap(), vec![Feature::Ret(1), Feature::Vol(120)]);
    p.check().unwrap();
    // Through a parsed table, as a manifest loader hands it over, and with a quoted date.
    let table: toml::Table = toml::from_str("split_date = 2021-06-30").unwrap();
    let p: NormalizeParams = toml::Value::Table(table).try_into().unwrap();
    assert_eq!(p.split_date, Some(date("2021-06-30")));
    let p: NormalizeParams = toml::from_str("split_date = \"2021-06-30\"").unwrap();
    assert_eq!(p.split_date, Some(date("2021-06-30")));
    let d = NormalizeParams::default();
    assert_eq!((d.seq_len, d.parallel, d.threads), (60, false, 0));
    assert_eq!(d.feature_list().unwrap().len(), DEFAULT_PRESET.len());
    assert!(toml::from_str::<NormalizeParams>("seq_length = 3").is_err());
    assert!(toml::from_str::<NormalizeParams>("split_date = 2021-06-30T10:00:00").is_err());
}

#[test]
fn bad_parameters_name_the_field_and_suggest_a_fix() {
    let check = |text: &str| toml::from_str::<NormalizeParams>(text).unwrap().check().unwrap_err();
    let e = check("features = [\"ret_1\", \"rsi14\"]");
    assert_eq!(e.field, "features");
    assert_eq!(e.message, "unknown feature `rsi14`");
    assert_eq!(e.hint.as_deref(), Some("did you mean `rsi_14`?"));
    let e = check("preset = \"defualt\"");
    assert_eq!(
        (e.field.as_str(), e.hint.as_deref()),
        ("preset", Some("did you mean `default`?"))
    );
    assert_eq!(check("preset = \"minimal\"\nfeatures = [\"gap\"]").field, "preset");
    assert_eq!(check("features = [\"gap\", \"gap\"]").message, "`gap` is listed twice");
    assert_eq!(check("features = []").field, "features");
    assert!(check("features = [\"vol_1\"]")
        .message
        .contains("window must be in 2..=1000"));
    assert!(check("features = [\"zzz\"]").hint.unwrap().contains("ret_N"));
    assert_eq!(check("seq_len = 0").field, "seq_len");
    assert_eq!(check("horizon = 0").field, "horizon");
    assert_eq!(check("valid_fraction = 1.0").field, "valid_fraction");
    assert_eq!(
        check("valid_fraction = 0.2\nsplit_date = 2020-01-01").field,
        "valid_fraction"
    );
    assert_eq!(check("clip = -1.0").field, "clip");
    assert_eq!(check("threads = 5000").field, "threads");
    let err = try_build(&market(), &NormalizeParams { seq_len: 0, ..base() }).unwrap_err();
    assert!(matches!(err, NormalizeError::Params(_)));
}

#[test]
fn minimal_preset_warms_up_faster() {
    let bars = market();
    let full = build(&bars, &base());
    let minimal = build(
        &bars,
        &NormalizeParams {
            preset: Some("minimal".into()),
            ..base()
        },
    );
    assert_eq!(minimal.n_features, MINIMAL_PRESET.len());
    // Warm-up 20 rows instead of 60: 40 more training windows per symbol.
    assert_eq!(minimal.train.len(), full.train.len() + 40 * 8);
}

/// The `wide` preset is the stock trainer's width: 105 distinct, valid columns, the longest
/// look-back 120 days.
#[test]
fn the_wide_preset_has_105_distinct_features() {
    let features = crate::kinds::features::resolve(None, Some("wide")).unwrap();
    assert_eq!(features.len(), 105);
    let distinct: std::collections::HashSet<_> = features.iter().collect();
    assert_eq!(distinct.len(), 105);
    assert_eq!(features.iter().map(Feature::warmup).max(), Some(120));
}
