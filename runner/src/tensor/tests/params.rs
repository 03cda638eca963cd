//! Parameters of `train` and `validate`: defaults, bounds, and errors that name the offending field.

use super::*;

#[test]
fn params_parse_with_defaults_and_reject_unknown_keys() {
    let p: TrainParams = toml::from_str("").unwrap();
    assert_eq!(p, TrainParams::default());
    let p: TrainParams =
        toml::from_str("hidden = [2048, 1024, 512]\nactivation = \"gelu\"\nprecision = \"f32\"\ngrad_clip = 1.0")
            .unwrap();
    assert_eq!(p.hidden, Some(vec![2048, 1024, 512]));
    assert_eq!(p.activation, Activation::Gelu);
    assert!(p.check().is_ok());
    assert!(toml::from_str::<TrainParams>("batchsize = 3").is_err());
    assert!(toml::from_str::<ValidateParams>("epochs = 3").is_err());
    assert!(toml::from_str::<TrainParams>("device = \"tpu\"").is_err());
}

#[test]
fn epochs_stop_at_their_documented_bound() {
    let at = |epochs| TrainParams {
        epochs,
        ..Default::default()
    };
    assert!(at(100_000).check().is_ok());
    let e = at(100_001).check().unwrap_err();
    assert_eq!(e.field, "epochs");
    assert!(e.message.contains("at most 100000"), "{}", e.message);
    assert_eq!(at(usize::MAX).check().unwrap_err().field, "epochs");
}

#[test]
fn check_reports_the_offending_field() {
    let cases: Vec<(TrainParams, &str)> = vec![
        (
            TrainParams {
                hidden: Some(vec![8, 0]),
                ..Default::default()
            },
            "hidden",
        ),
        (
            TrainParams {
                dropout: 1.0,
                ..Default::default()
            },
            "dropout",
        ),
        (
            TrainParams {
                batch_size: 0,
                ..Default::default()
            },
            "batch_size",
        ),
        (
            TrainParams {
                epochs: 0,
                ..Default::default()
            },
            "epochs",
        ),
        (
            TrainParams {
                lr: 0.0,
                ..Default::default()
            },
            "lr",
        ),
        (
            TrainParams {
                lr: f64::NAN,
                ..Default::default()
            },
            "lr",
        ),
        (
            TrainParams {
                weight_decay: -1.0,
                ..Default::default()
            },
            "weight_decay",
        ),
        (
            TrainParams {
                grad_clip: Some(0.0),
                ..Default::default()
            },
            "grad_clip",
        ),
        (
            TrainParams {
                prefetch: 1000,
                ..Default::default()
            },
            "prefetch",
        ),
        (
            TrainParams {
                loss_reads_per_step: 0,
                ..Default::default()
            },
            "loss_reads_per_step",
        ),
        (
            TrainParams {
                precision: Precision::Bf16,
                ..Default::default()
            },
            "precision",
        ),
    ];
    for (params, field) in cases {
        let err = params.check().expect_err(field);
        assert_eq!(err.field, field, "{err}");
        // A run with bad parameters fails cleanly too, before touching any data.
        let r = train(
            learnable_windows(4, 1, 0),
            &params,
            0,
            &mut Recorder::new(),
            &AtomicBool::new(false),
        );
        assert!(matches!(r, Err(TrainError::Params(e)) if e.field == field));
    }
    // f16 runs on the CPU; bf16 and f16 run the MLP on CUDA; elsewhere each says why and what
    // is supported (whether or not this binary has CUDA).
    assert_eq!(
        TrainParams {
            precision: Precision::F16,
            ..Default::default()
        }
        .check(),
        Ok(())
    );
    for (precision, device) in [
        (Precision::Bf16, DeviceKind::Cuda),
        (Precision::F16, DeviceKind::Cuda),
        (Precision::F16, DeviceKind::Auto),
    ] {
        let checked = TrainParams {
            precision,
            device,
            ..Default::default()
        }
        .check();
        // Accepted; without the `cuda` feature the device is what is refused.
        assert!(
            checked.as_ref().is_ok() || checked.as_ref().is_err_and(|e| e.field == "device"),
            "{} on {}: {checked:?}",
            precision.as_str(),
            device.as_str()
        );
    }
    for (precision, device, model, why) in [
        (Precision::Bf16, DeviceKind::Cpu, ModelKind::Mlp, "not bf16"),
        (
            Precision::Bf16,
            DeviceKind::Auto,
            ModelKind::Mlp,
            "the CPU has no bf16 kernels",
        ),
        (
            Precision::F16,
            DeviceKind::Cuda,
            ModelKind::Lstm,
            "a recurrent model (here lstm) trains in f32",
        ),
        (
            Precision::Bf16,
            DeviceKind::Cuda,
            ModelKind::Gru,
            "a recurrent model (here gru) trains in f32",
        ),
        (
            Precision::F16,
            DeviceKind::Auto,
            ModelKind::Gru,
            "(here gru) trains in f32",
        ),
    ] {
        let err = TrainParams {
            precision,
            device,
            model,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(err.field, "precision");
        assert!(err.message.contains(why), "{}", err.message);
        assert!(
            err.hint
                .as_deref()
                .is_some_and(|h| h.contains("\"bf16\" on \"cuda\" for the MLP")),
            "{err:?}"
        );
    }
    // `cuda_graph = true` insists, so it is refused where no graph can apply; "auto" and false
    // are accepted anywhere.
    for (device, model, why) in [
        (DeviceKind::Cpu, ModelKind::Mlp, "runs on \"cpu\""),
        (
            DeviceKind::Auto,
            ModelKind::Lstm,
            "trains a recurrent model (here lstm)",
        ),
    ] {
        let err = TrainParams {
            cuda_graph: CudaGraph::On,
            device,
            model,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(err.field, "cuda_graph", "{err}");
        assert!(err.message.contains(why), "{}", err.message);
    }
    for graph in [CudaGraph::Auto, CudaGraph::Off] {
        let params = TrainParams {
            cuda_graph: graph,
            ..Default::default()
        };
        assert_eq!(params.check(), Ok(()));
    }
    assert!(ValidateParams {
        batch_size: 0,
        ..Default::default()
    }
    .check()
    .is_err());
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_without_the_feature_says_how_to_build_it() {
    let train_err = TrainParams {
        device: DeviceKind::Cuda,
        ..Default::default()
    }
    .check()
    .unwrap_err();
    let valid_err = ValidateParams {
        device: DeviceKind::Cuda,
        ..Default::default()
    }
    .check()
    .unwrap_err();
    for err in [train_err, valid_err] {
        assert_eq!(err.field, "device");
        assert!(
            err.hint.as_deref().unwrap_or("").contains("scripts/build-cuda.sh"),
            "{err:?}"
        );
    }
}
