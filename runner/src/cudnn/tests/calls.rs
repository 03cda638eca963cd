//! What the plan asks of cuDNN, call by call, for an LSTM and a GRU of two shapes each.

use super::{Recorded, Stub};
use crate::arch::ModelKind;
use crate::cudnn::{BackwardIo, ForwardIo, RnnPlan, RnnShape};
use std::collections::BTreeSet;
use std::ffi::c_void;

fn p(v: usize) -> *mut c_void {
    v as *mut c_void
}

fn io() -> ForwardIo {
    ForwardIo {
        x: p(0xa1),
        y: p(0xa2),
        hx: p(0xa3),
        cx: p(0xa4),
        hy: p(0xa5),
        cy: p(0xa6),
        weights: p(0xa7),
    }
}

fn grads() -> BackwardIo {
    BackwardIo {
        dy: p(0xb1),
        dx: p(0xb2),
        dhy: p(0xb3),
        dcy: p(0xb4),
        dhx: p(0xb5),
        dcx: p(0xb6),
        dweights: p(0xb7),
    }
}

/// The log's call names, in order, and the lines of one call.
fn names(log: &[String]) -> Vec<&str> {
    log.iter().map(|l| l.split(' ').next().unwrap()).collect()
}

fn line<'a>(log: &'a [String], call: &str) -> &'a str {
    log.iter()
        .find(|l| l.starts_with(&format!("{call} ")))
        .unwrap_or_else(|| panic!("no {call} in {log:#?}"))
}

// Long because: one plan's whole life, with every figure it must pass checked in sequence.
fn check_shape(shape: RnnShape) {
    let stub = Stub::new();
    let mut mem = Recorded::default();
    let (g, h, l) = (shape.kind.gates(), shape.hidden, shape.layers);
    {
        // SAFETY: the stub takes any handle and touches no pointer it is given.
        let mut plan = unsafe { RnnPlan::new(&stub.api, p(0x42), shape, &mut mem, 7) }.unwrap();
        // The sizes cuDNN gave, kept by the plan.
        let layer = |input: usize| 4 * (g * h * input + g * h * h + 2 * g * h);
        assert_eq!(plan.weight_bytes, layer(shape.input) + (l - 1) * layer(h));
        assert_eq!(plan.work_bytes, 1000 + l * h);
        let reserve = if shape.train { 2000 + shape.input * h } else { 0 };
        assert_eq!(plan.reserve_bytes, reserve);
        // SAFETY: as above.
        unsafe { plan.forward(&io()) }.unwrap();
        if shape.train {
            // SAFETY: as above.
            unsafe { plan.backward(&io(), &grads()) }.unwrap();
        } else {
            assert!(
                // SAFETY: as above.
                unsafe { plan.backward(&io(), &grads()) }.is_err(),
                "no backward pass on an inference plan"
            );
        }
    }
    let log = stub.log();
    let mode = if shape.kind == ModelKind::Lstm { 2 } else { 3 };
    let dropout = shape.train && l > 1 && shape.dropout > 0.0;
    let mut order = vec![
        "create",
        "cudnnSetDropoutDescriptor",
        "create",
        "cudnnSetRNNDescriptor_v8",
    ];
    if dropout {
        order.insert(1, "cudnnDropoutGetStatesSize");
    }
    order.extend([
        "create",
        "cudnnSetRNNDataDescriptor",
        "create",
        "cudnnSetRNNDataDescriptor",
        "create",
        "cudnnSetTensorNdDescriptor",
        "cudnnGetRNNWeightSpaceSize",
        "cudnnGetRNNTempSpaceSizes",
        "cudnnRNNForward",
    ]);
    if shape.train {
        order.extend(["cudnnRNNBackwardData_v8", "cudnnRNNBackwardWeights_v8"]);
    }
    order.extend(["destroy"; 5]);
    assert_eq!(names(&log), order, "{log:#?}");

    // Descriptor dims, data types, math type, direction, input mode, bias mode.
    let rnn = log.iter().find(|l| l.starts_with("create rnn ")).unwrap();
    let rnn_id = rnn.rsplit(' ').next().unwrap();
    let dropout_id = log[0].rsplit(' ').next().unwrap();
    assert_eq!(
        line(&log, "cudnnSetRNNDescriptor_v8"),
        format!(
            "cudnnSetRNNDescriptor_v8 algo=0 cell={mode} bias=2 dir=0 input_mode=0 type=0 math_prec=0 math_type=3 \
             input={} hidden={h} proj={h} layers={l} dropout={dropout_id} aux=1",
            shape.input
        )
    );
    let data: Vec<&String> = log
        .iter()
        .filter(|l| l.starts_with("cudnnSetRNNDataDescriptor"))
        .collect();
    for (line, width) in data.iter().zip([shape.input, h]) {
        assert_eq!(
            **line,
            format!(
                "cudnnSetRNNDataDescriptor type=0 layout=2 max_seq={} batch={} vector={width} all_lengths_max=1 fill=0",
                shape.seq_len, shape.batch
            )
        );
    }
    let b = shape.batch;
    assert_eq!(
        line(&log, "cudnnSetTensorNdDescriptor"),
        format!(
            "cudnnSetTensorNdDescriptor type=0 dims={l},{b},{h} strides={},{h},1",
            b * h
        )
    );
    let fwd = if shape.train { 1 } else { 0 };
    assert!(line(&log, "cudnnGetRNNTempSpaceSizes").starts_with(&format!("cudnnGetRNNTempSpaceSizes fwd={fwd} ")));
    let p_text = if dropout {
        format!("{}", shape.dropout)
    } else {
        "0".into()
    };
    assert!(
        line(&log, "cudnnSetDropoutDescriptor").starts_with(&format!("cudnnSetDropoutDescriptor p={p_text} ")),
        "{log:#?}"
    );

    // The workspace and reserve sizes asked for are the ones allocated and passed.
    let work = 1000 + l * h;
    let reserve = if shape.train { 2000 + shape.input * h } else { 0 };
    let mut sizes: Vec<usize> = mem.allocs.iter().map(|a| a.1).collect();
    let mut expected = vec![work, 4 * b];
    if shape.train {
        expected.push(reserve);
    }
    if dropout {
        expected.push(4096);
    }
    sizes.sort_unstable();
    expected.sort_unstable();
    assert_eq!(sizes, expected);
    let addr = |bytes: usize| mem.allocs.iter().find(|a| a.1 == bytes).map_or(0, |a| a.0);
    let fwd_line = line(&log, "cudnnRNNForward");
    assert!(
        fwd_line.contains(&format!("work={work}@{:#x}", addr(work))),
        "{fwd_line}"
    );
    if shape.train {
        assert!(
            fwd_line.contains(&format!("reserve={reserve}@{:#x}", addr(reserve))),
            "{fwd_line}"
        );
        let wgrad = line(&log, "cudnnRNNBackwardWeights_v8");
        assert!(wgrad.starts_with("cudnnRNNBackwardWeights_v8 add=0 "), "{wgrad}");
        assert!(wgrad.contains("dweights=") && wgrad.contains("@0xb7"), "{wgrad}");
        let dgrad = line(&log, "cudnnRNNBackwardData_v8");
        assert!(dgrad.contains("dhy=0xb3") && dgrad.contains("dcy=0xb4"), "{dgrad}");
    } else {
        assert!(fwd_line.contains("reserve=0@(nil)"), "{fwd_line}");
    }
    // The sequence lengths went to the device as one length per row.
    assert_eq!(mem.uploads, [(addr(4 * b), vec![shape.seq_len as i32; b])]);

    // Every descriptor created is destroyed, every buffer freed.
    let ids = |what: &str| -> BTreeSet<String> {
        log.iter()
            .filter(|l| l.starts_with(what))
            .map(|l| l.split(' ').skip(1).collect::<Vec<_>>().join(" "))
            .collect()
    };
    assert_eq!(ids("create "), ids("destroy "));
    assert!(ids("create ").contains(&format!("rnn {rnn_id}")));
    let allocated: BTreeSet<usize> = mem.allocs.iter().map(|a| a.0).collect();
    assert_eq!(allocated, mem.freed.iter().copied().collect::<BTreeSet<_>>());
    assert_eq!(mem.freed.len(), allocated.len(), "freed once each");
}

fn shape(kind: ModelKind, input: usize, hidden: usize, layers: usize, batch: usize, seq_len: usize) -> RnnShape {
    RnnShape {
        kind,
        input,
        hidden,
        layers,
        batch,
        seq_len,
        dropout: 0.25,
        train: true,
    }
}

#[test]
fn an_lstm_plan_asks_cudnn_for_what_the_cpu_engine_computes() {
    check_shape(shape(ModelKind::Lstm, 3, 2, 2, 5, 4));
    check_shape(RnnShape {
        dropout: 0.0,
        ..shape(ModelKind::Lstm, 11, 64, 3, 256, 30)
    });
    check_shape(RnnShape {
        train: false,
        ..shape(ModelKind::Lstm, 11, 64, 3, 256, 30)
    });
}

#[test]
fn a_gru_plan_asks_cudnn_for_what_the_cpu_engine_computes() {
    check_shape(shape(ModelKind::Gru, 3, 2, 2, 5, 4));
    check_shape(shape(ModelKind::Gru, 7, 16, 1, 64, 10));
    check_shape(RnnShape {
        train: false,
        ..shape(ModelKind::Gru, 7, 16, 1, 64, 10)
    });
}

#[test]
fn a_failed_call_is_named_and_undoes_what_was_made() {
    let stub = Stub::new();
    stub.fail(c"cudnnGetRNNTempSpaceSizes");
    let mut mem = Recorded::default();
    // SAFETY: the stub takes any handle.
    let err = unsafe { RnnPlan::new(&stub.api, p(0x42), shape(ModelKind::Lstm, 3, 2, 2, 5, 4), &mut mem, 1) }
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.0, "cudnnGetRNNTempSpaceSizes returned 3 (CUDNN_STATUS_BAD_PARAM)");
    let log = stub.log();
    let count = |what: &str| log.iter().filter(|l| l.starts_with(what)).count();
    assert_eq!(count("create "), count("destroy "), "{log:#?}");
    assert_eq!(mem.allocs.len(), mem.freed.len());
    let mlp = RnnShape {
        kind: ModelKind::Mlp,
        ..shape(ModelKind::Lstm, 3, 2, 2, 5, 4)
    };
    // SAFETY: as above.
    assert!(unsafe { RnnPlan::new(&stub.api, p(0x42), mlp, &mut mem, 1) }.is_err());
}
