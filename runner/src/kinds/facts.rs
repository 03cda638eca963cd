//! The facts each built-in stage kind records (stage -> `Recorder::fact` -> store -> report),
//! declared once, like the metrics in `catalog`: what a stage ran on and with once defaults
//! and `auto` were resolved. Claims are judged on the trials whose facts meet their
//! conditions, so these names are stable; a test runs every built-in kind and fails when one
//! records a fact not declared here.

use super::kind::StageKind;

/// One fact a built-in stage kind records.
#[derive(Debug)]
pub struct FactDecl {
    pub name: &'static str,
    /// When it is recorded and what its values are.
    pub about: &'static str,
}

const fn f(name: &'static str, about: &'static str) -> FactDecl {
    FactDecl { name, about }
}

const DEVICE: FactDecl = f(
    "device",
    "`cpu` or `cuda`: the device the stage ran on, `auto` resolved",
);
const GPU: FactDecl = f("gpu", "the GPU's model name, on CUDA");
const MODEL_FACTS: &[FactDecl] = &[
    DEVICE,
    GPU,
    f("model", "`mlp`, `lstm` or `gru`"),
    f("hidden", "the hidden widths, comma-separated (`64,64`)"),
    f("batch_size", "windows per batch"),
    f(
        "precision",
        "`f32`, `bf16` or `f16`: the precision of the matrix products that ran (`validate` infers in f32; `f32` where a bf16 or f16 step's self-check failed on CUDA)",
    ),
    f(
        "precision_fallback",
        "why a bf16 or f16 MLP on CUDA trained in f32: the self-check's largest difference from the f32 step, or the error",
    ),
    f(
        "mlp_engine",
        "`cublas` or `dfdx`: the step an MLP ran on CUDA (this crate's cuBLAS step for bf16, f16 and CUDA graphs; dfdx's autodiff otherwise or when its self-check failed)",
    ),
    f(
        "mlp_engine_fallback",
        "why an f32 MLP on CUDA ran on dfdx when the cuBLAS step was wanted for its CUDA graph: the self-check's largest difference, or the error",
    ),
    f(
        "cuda_graph",
        "`true` or `false`: whether full training steps were replayed from a captured CUDA graph, on CUDA (`cuda_graph = \"auto\"` resolved by the graph's self-check)",
    ),
    f(
        "cuda_graph_fallback",
        "why steps ran eagerly where a CUDA graph was wanted: the replay's difference from the eager step, or the error",
    ),
    f("threads", "the CPU threads the stage's thread pool has"),
    f(
        "rnn_engine",
        "`cudnn` or `dfdx`: the engine an LSTM or GRU ran on, on CUDA (`rnn_engine = \"auto\"` resolved by the cuDNN self-check)",
    ),
    f(
        "rnn_engine_fallback",
        "why an LSTM or GRU on CUDA ran on dfdx when cuDNN was wanted: the self-check's largest difference, or cuDNN's error",
    ),
];

const NORMALIZE_FACTS: &[FactDecl] = &[f(
    "threads",
    "the threads the features were computed on (1 unless `parallel = true`)",
)];

const TRANSFER_FACTS: &[FactDecl] = &[DEVICE, GPU];

/// The facts of a stage kind; empty for kinds that record none (`load`, `command`).
pub fn declared_facts(kind: StageKind) -> &'static [FactDecl] {
    match kind {
        StageKind::Train | StageKind::Validate => MODEL_FACTS,
        StageKind::Normalize => NORMALIZE_FACTS,
        StageKind::Transfer => TRANSFER_FACTS,
        StageKind::Load | StageKind::Command => &[],
    }
}

/// The declaration of fact `name` in a stage of `kind`, the kind written as text as a stored
/// run keeps it (read with [`StageKind::parse`]); `None` also for text that names no kind.
pub fn find_fact(kind: &str, name: &str) -> Option<&'static FactDecl> {
    declared_facts(StageKind::parse(kind)?).iter().find(|d| d.name == name)
}

/// The facts of a kind as one sentence for `measured schema`; empty when it records none.
pub fn describe_facts(kind: StageKind) -> String {
    let decls = declared_facts(kind);
    if decls.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = decls.iter().map(|d| format!("`{}`: {}", d.name, d.about)).collect();
    format!("Facts (what it ran on): {}.", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fact_names_are_unique_per_kind_and_valid_fact_names() {
        for kind in StageKind::ALL {
            let names: Vec<&str> = declared_facts(kind).iter().map(|d| d.name).collect();
            let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
            assert_eq!(names.len(), unique.len(), "{kind}: {names:?}");
            for name in names {
                let mut rec = crate::metrics::Recorder::new();
                rec.fact(name, "x");
                assert_eq!(rec.facts().len(), 1, "`{name}` is a name Recorder::fact keeps");
            }
        }
        assert!(find_fact("train", "device").is_some());
        assert!(find_fact("load", "device").is_none());
        assert!(describe_facts(StageKind::Transfer).starts_with("Facts (what it ran on): `device`: "));
        assert_eq!(describe_facts(StageKind::Command), "");
    }
}
