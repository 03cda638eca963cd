//! The converter between the CPU engine's layout and cuDNN's packed weights, for hand-built
//! small models (input 3, hidden 2, 2 layers), against the stub's packed order written out.

use super::{Recorded, Stub};
use crate::arch::{Activation, Arch, ModelKind};
use crate::cudnn::layout::{self, Block};
use crate::cudnn::{RnnPlan, RnnShape};

const BASE: usize = 0x7000_0000;

/// The blocks the plan's network reports, with the weight space's length in floats.
fn blocks(stub: &Stub, kind: ModelKind) -> (Vec<Block>, usize) {
    let shape = RnnShape {
        kind,
        input: 3,
        hidden: 2,
        layers: 2,
        batch: 4,
        seq_len: 5,
        dropout: 0.0,
        train: true,
    };
    let mut mem = Recorded::default();
    // SAFETY: the stub takes any handle and reads no pointer it is given.
    let plan = unsafe { RnnPlan::new(&stub.api, std::ptr::null_mut(), shape, &mut mem, 0) }.unwrap();
    // SAFETY: as above.
    let blocks = unsafe {
        layout::query(
            &stub.api,
            plan.handle,
            plan.rnn,
            kind,
            2,
            plan.weight_bytes,
            BASE as *const _,
        )
    }
    .unwrap();
    (blocks, plan.weight_bytes / 4)
}

/// Hand-built parameters in `Arch::params` order: element `j` of parameter `p` is
/// `p + j / 100`, so every value says where it came from.
fn params(kind: ModelKind) -> Vec<Vec<f32>> {
    let arch = Arch {
        kind,
        seq_len: 5,
        n_features: 3,
        hidden: vec![2, 2],
        outputs: 1,
        activation: Activation::Relu,
    };
    arch.params()
        .iter()
        .enumerate()
        .map(|(p, spec)| (0..spec.len()).map(|j| p as f32 + j as f32 / 100.0).collect())
        .collect()
}

/// The packed order, written out: per layer, the matrices of linear layer IDs 0..2g-1 (input
/// then recurrent, gates in cuDNN's order), then their biases; a matrix `[H, in]` row-major.
/// Returns (param, gate, offset, rows, cols) per block in query order (matrix, then bias, per ID).
fn written_out(kind: ModelKind) -> Vec<(usize, usize, usize, usize, usize)> {
    let g = kind.gates();
    let mut out = Vec::new();
    let mut start = 0;
    for (l, input) in [(0, 3), (1, 2)] {
        let mats: Vec<usize> = (0..2 * g)
            .scan(start, |at, id| {
                let here = *at;
                *at += 2 * if id < g { input } else { 2 };
                Some(here)
            })
            .collect();
        let biases = start + g * 2 * input + g * 2 * 2;
        for (id, &mat) in mats.iter().enumerate() {
            let (rec, gate) = (usize::from(id >= g), id % g);
            out.push((4 * l + rec, gate, mat, 2, if id < g { input } else { 2 }));
            out.push((4 * l + 2 + rec, gate, biases + 2 * id, 2, 1));
        }
        start = biases + 2 * 2 * g;
    }
    out
}

fn check(kind: ModelKind) {
    let stub = Stub::new();
    let (blocks, len) = blocks(&stub, kind);
    let got: Vec<_> = blocks
        .iter()
        .map(|b| (b.param, b.gate, b.offset, b.rows, b.cols))
        .collect();
    assert_eq!(got, written_out(kind));
    let g = kind.gates();
    assert!(blocks.iter().all(|b| b.cpu_cols == 2 * g));

    let cpu = params(kind);
    let packed = layout::to_packed(&blocks, &cpu, len).unwrap();
    // A few elements by hand. Layer 0's first matrix (gate 0, `i` or `r`) is W_ih's columns 0..2
    // transposed: packed row r, column c = weight_ih[c][r] = element c * 2g + r of parameter 0.
    let w = |p: usize, j: usize| p as f32 + j as f32 / 100.0;
    assert_eq!(
        packed[..6],
        [
            w(0, 0),
            w(0, 2 * g),
            w(0, 4 * g),
            w(0, 1),
            w(0, 2 * g + 1),
            w(0, 4 * g + 1)
        ]
    );
    // Gate 1 (`f` or `z`) of W_ih: columns 2..4.
    assert_eq!(packed[6..9], [w(0, 2), w(0, 2 * g + 2), w(0, 4 * g + 2)]);
    // Layer 0's first recurrent matrix: W_hh's columns 0..2 transposed.
    assert_eq!(
        packed[6 * g..6 * g + 4],
        [w(1, 0), w(1, 2 * g), w(1, 1), w(1, 2 * g + 1)]
    );
    // Biases: b_ih gate by gate, then b_hh.
    let b0 = 10 * g;
    assert_eq!(packed[b0..b0 + 4], [w(2, 0), w(2, 1), w(2, 2), w(2, 3)]);
    assert_eq!(packed[b0 + 2 * g..b0 + 2 * g + 2], [w(3, 0), w(3, 1)]);
    // Layer 1 starts after layer 0's 10g + 4g floats, with W_ih of width 2.
    assert_eq!(
        packed[14 * g..14 * g + 4],
        [w(4, 0), w(4, 2 * g), w(4, 1), w(4, 2 * g + 1)]
    );
    assert_eq!(len, 14 * g + 12 * g);

    // The device's copies (one geam per block) compute the same as the host converter.
    let mut by_copies = vec![0.0f32; len];
    for b in &blocks {
        b.packing().apply(&cpu[b.param], &mut by_copies);
    }
    assert_eq!(by_copies, packed);
    let mut unpacked: Vec<Vec<f32>> = cpu.iter().map(|p| vec![0.0; p.len()]).collect();
    for b in &blocks {
        b.unpacking().apply(&packed, &mut unpacked[b.param]);
    }
    assert_eq!(unpacked[..8], cpu[..8]);

    // Round trips, bit for bit (signed zeros and NaN payloads included).
    let mut back: Vec<Vec<f32>> = cpu.iter().map(|p| vec![f32::NAN; p.len()]).collect();
    layout::from_packed(&blocks, &packed, &mut back).unwrap();
    let bits =
        |v: &[Vec<f32>]| -> Vec<Vec<u32>> { v.iter().map(|p| p.iter().map(|x| x.to_bits()).collect()).collect() };
    let recurrent = 8;
    assert_eq!(bits(&back[..recurrent]), bits(&cpu[..recurrent]));
    assert!(
        back[recurrent..].iter().flatten().all(|x| x.is_nan()),
        "the head is not touched"
    );
    let odd: Vec<f32> = (0..len)
        .map(|i| match i % 3 {
            0 => -0.0,
            1 => f32::from_bits(0x7fc0_0000 | i as u32),
            _ => i as f32 * 1e-30,
        })
        .collect();
    let mut through = params(kind);
    layout::from_packed(&blocks, &odd, &mut through).unwrap();
    let again = layout::to_packed(&blocks, &through, len).unwrap();
    assert_eq!(
        again.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        odd.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn the_lstm_converter_follows_cudnns_offsets_and_round_trips_bit_for_bit() {
    check(ModelKind::Lstm);
}

#[test]
fn the_gru_converter_follows_cudnns_offsets_and_round_trips_bit_for_bit() {
    check(ModelKind::Gru);
}

#[test]
fn a_block_outside_the_weight_space_is_refused() {
    let stub = Stub::new();
    let (blocks, len) = blocks(&stub, ModelKind::Gru);
    assert!(layout::to_packed(&blocks, &params(ModelKind::Gru), len - 1).is_err());
    assert!(layout::to_packed(&blocks, &params(ModelKind::Gru)[..3], len).is_err());
}
