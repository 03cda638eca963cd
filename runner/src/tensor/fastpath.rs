//! A faster path checked against its reference before it is trusted (the manifest's choice and
//! a check's outcome -> which path runs, recorded as a fact, with a stage note when it fell
//! back): cuDNN's LSTM and GRU against dfdx, and any later path of the same kind (lower
//! precision, CUDA graphs) against the path it replaces.
//!
//! The check runs the first time a process uses the fast path for a shape, before any timed
//! step, and its outcome is kept for the process: later stages and trials of that shape reuse
//! it and record the same facts and note. `auto` takes the fast path when the check agrees and
//! the reference when it disagrees or fails (the stage notes why, with the largest
//! difference, and records the reason as the fact `<fact>_fallback`); choosing the fast path
//! outright makes either a stage error.

use super::equivalence::{GRAD_TOLERANCE, LOSS_TOLERANCE};
use super::TrainError;
use crate::metrics::Recorder;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A fast path and the reference it is checked against.
#[derive(Debug, Clone, Copy)]
pub struct FastPath {
    /// The fact that records which path ran (`rnn_engine`).
    pub fact: &'static str,
    /// The fact's values for each path (`cudnn`, `dfdx`).
    pub fast: &'static str,
    pub reference: &'static str,
    /// The fast path in words, for notes and errors ("cuDNN's RNN").
    pub what: &'static str,
}

/// What the manifest asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// The fast path where its check agrees, else the reference.
    Auto,
    /// The fast path; a failed check fails the stage.
    Fast,
    /// The reference, unchecked.
    Reference,
}

/// How far the fast path's results are from the reference's on the same weights and batch:
/// each relative as in `check_step` (the loss relative to the reference's, outputs and each
/// gradient tensor relative to the tensor's largest element). `None` where not compared (a
/// forward pass has no loss or gradients).
#[derive(Debug, Clone, PartialEq)]
pub struct Differences {
    pub loss: Option<f64>,
    pub outputs: f64,
    pub grads: Option<f64>,
    /// The gradient tensor where `grads` was found.
    pub worst_grad: String,
    /// The most each may differ.
    pub tolerances: Tolerances,
}

/// The most a fast path's loss, outputs and gradients may differ from the reference's, in the
/// measures of [`Differences`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerances {
    pub loss: f64,
    pub outputs: f64,
    pub grads: f64,
}

impl Tolerances {
    /// Two f32 computations of the same step, summed in different orders (`check_step`'s);
    /// outputs are held to the gradients' bound, the same scaled measure.
    pub const F32: Tolerances = Tolerances {
        loss: LOSS_TOLERANCE,
        outputs: GRAD_TOLERANCE,
        grads: GRAD_TOLERANCE,
    };

    /// The same kernels run twice (a CUDA graph's replay against an eager step): bit for bit.
    pub const EXACT: Tolerances = Tolerances {
        loss: 0.0,
        outputs: 0.0,
        grads: 0.0,
    };
}

impl Differences {
    /// `None` when within every tolerance, else the largest difference against its tolerance.
    pub fn out_of_tolerance(&self) -> Option<String> {
        let mut worst: Option<(f64, String)> = None;
        let mut judge = |value: f64, tolerance: f64, what: String| {
            if !value.is_nan() && value <= tolerance {
                return;
            }
            // How far over: a NaN, or anything over a zero tolerance, counts as the worst.
            let ratio = if value.is_nan() || tolerance == 0.0 {
                f64::INFINITY
            } else {
                value / tolerance
            };
            if worst.as_ref().is_none_or(|w| ratio > w.0) {
                worst = Some((ratio, format!("{what} differ by {value:.2e} (tolerance {tolerance:e})")));
            }
        };
        let t = self.tolerances;
        if let Some(loss) = self.loss {
            judge(loss, t.loss, "the losses".into());
        }
        judge(self.outputs, t.outputs, "the outputs".into());
        if let Some(grads) = self.grads {
            judge(grads, t.grads, format!("the gradients of `{}`", self.worst_grad));
        }
        worst.map(|w| w.1)
    }
}

/// Each check's outcome, by fast path and shape, for the life of the process: `Ok` when the
/// fast path agreed, else why not.
fn outcomes() -> &'static Mutex<HashMap<String, Result<(), String>>> {
    static OUTCOMES: OnceLock<Mutex<HashMap<String, Result<(), String>>>> = OnceLock::new();
    OUTCOMES.get_or_init(Default::default)
}

impl FastPath {
    /// Whether to run the fast path for `shape` (a key naming everything the check depends
    /// on), running `check` the first time this process asks for it. Records the fact that
    /// says which path runs; on a fallback also a note and `<fact>_fallback`.
    pub fn decide(
        &self,
        wanted: Wanted,
        shape: &str,
        check: impl FnOnce() -> Result<Differences, String>,
        rec: &mut Recorder,
    ) -> Result<bool, TrainError> {
        if wanted == Wanted::Reference {
            rec.fact(self.fact, self.reference);
            return Ok(false);
        }
        let key = format!("{}:{shape}", self.fact);
        let cached = outcomes().lock().ok().and_then(|m| m.get(&key).cloned());
        let outcome = cached.unwrap_or_else(|| {
            let outcome = match check() {
                Ok(diffs) => diffs.out_of_tolerance().map_or(Ok(()), |why| {
                    Err(format!("its results disagree with {}'s: {why}", self.reference))
                }),
                Err(e) => Err(format!("it failed: {e}")),
            };
            if let Ok(mut m) = outcomes().lock() {
                m.insert(key, outcome.clone());
            }
            outcome
        });
        match (outcome, wanted) {
            (Ok(()), _) => {
                rec.fact(self.fact, self.fast);
                Ok(true)
            }
            (Err(why), Wanted::Fast) => Err(TrainError::StepMismatch(format!(
                "{} self-check ({}): {why}",
                self.what, shape
            ))),
            (Err(why), _) => {
                let reason = format!(
                    "{} self-check failed: {why}; ran on the {} path",
                    self.what, self.reference
                );
                rec.note(format!("{reason} (shape {shape})"));
                rec.fact(self.fact, self.reference);
                rec.fact(&format!("{}_fallback", self.fact), reason);
                Ok(false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: FastPath = FastPath {
        fact: "test_engine",
        fast: "fast",
        reference: "slow",
        what: "the test path",
    };

    fn diffs(loss: f64, outputs: f64, grads: f64) -> Differences {
        Differences {
            loss: Some(loss),
            outputs,
            grads: Some(grads),
            worst_grad: "rnn.0.weight_hh".into(),
            tolerances: Tolerances::F32,
        }
    }

    /// A shape key no other test uses (the outcomes are kept for the process).
    fn shape(name: &str) -> String {
        format!("{name}-{:?}", std::thread::current().id())
    }

    #[test]
    fn agreeing_results_take_the_fast_path_once_checked_per_shape() {
        let (mut rec, key) = (Recorder::new(), shape("agree"));
        let ran = std::cell::Cell::new(0);
        let check = || {
            ran.set(ran.get() + 1);
            Ok(diffs(1e-7, 5e-5, 9e-5))
        };
        assert!(PATH.decide(Wanted::Auto, &key, check, &mut rec).unwrap());
        assert!(PATH.decide(Wanted::Fast, &key, check, &mut rec).unwrap());
        assert_eq!(ran.get(), 1, "checked once per process and shape");
        assert_eq!(rec.facts()["test_engine"], "fast");
        assert_eq!(rec.take_facts().len(), 1);
        assert!(rec.into_parts().1.is_empty(), "no note when the fast path ran");
    }

    #[test]
    fn disagreeing_results_fall_back_with_the_largest_difference_or_fail_when_asked_for() {
        let (mut rec, key) = (Recorder::new(), shape("disagree"));
        assert!(!PATH
            .decide(Wanted::Auto, &key, || Ok(diffs(2e-5, 1e-6, 5e-3)), &mut rec)
            .unwrap());
        let reason = "the test path self-check failed: its results disagree with slow's: the gradients of \
                      `rnn.0.weight_hh` differ by 5.00e-3 (tolerance 1e-4); ran on the slow path";
        assert_eq!(rec.facts()["test_engine"], "slow");
        assert_eq!(rec.facts()["test_engine_fallback"], reason);
        let _ = rec.take_facts();
        assert_eq!(rec.into_parts().1, [format!("{reason} (shape {key})")]);
        // The same shape asked for outright: the kept outcome fails the stage.
        let err = PATH
            .decide(Wanted::Fast, &key, || Ok(diffs(0.0, 0.0, 0.0)), &mut Recorder::new())
            .unwrap_err();
        assert!(matches!(err, TrainError::StepMismatch(_)), "{err}");
        assert!(err.to_string().contains("differ by 5.00e-3"), "{err}");
    }

    #[test]
    fn a_failing_fast_path_falls_back_and_the_reference_is_never_checked() {
        let (mut rec, key) = (Recorder::new(), shape("error"));
        let failed = || Err("cudnnRNNForward returned 3 (CUDNN_STATUS_BAD_PARAM)".to_owned());
        assert!(!PATH.decide(Wanted::Auto, &key, failed, &mut rec).unwrap());
        assert_eq!(
            rec.facts()["test_engine_fallback"],
            "the test path self-check failed: it failed: cudnnRNNForward returned 3 (CUDNN_STATUS_BAD_PARAM); \
             ran on the slow path"
        );
        let mut other = Recorder::new();
        let key2 = shape("error-fast");
        assert!(PATH.decide(Wanted::Fast, &key2, failed, &mut other).is_err());
        let mut reference = Recorder::new();
        let never = || -> Result<Differences, String> { panic!("the reference is not checked") };
        assert!(!PATH.decide(Wanted::Reference, &key, never, &mut reference).unwrap());
        assert_eq!(reference.facts()["test_engine"], "slow");
        assert!(reference.into_parts().1.is_empty());
    }

    #[test]
    fn a_nan_or_a_loss_out_of_tolerance_is_named() {
        assert_eq!(diffs(0.0, 0.0, 0.0).out_of_tolerance(), None);
        let nan = diffs(0.0, f64::NAN, 0.0).out_of_tolerance().unwrap();
        assert!(nan.starts_with("the outputs differ by NaN"), "{nan}");
        let loss = diffs(1e-3, 2e-4, 0.0).out_of_tolerance().unwrap();
        assert_eq!(loss, "the losses differ by 1.00e-3 (tolerance 1e-5)");
        let forward = Differences {
            loss: None,
            outputs: 1e-6,
            grads: None,
            worst_grad: String::new(),
            tolerances: Tolerances::F32,
        };
        assert_eq!(forward.out_of_tolerance(), None);
        // Bit for bit: any difference is out, and named; none is within.
        let exact = |grads: f64| Differences {
            tolerances: Tolerances::EXACT,
            ..diffs(0.0, 0.0, grads)
        };
        assert_eq!(exact(0.0).out_of_tolerance(), None);
        assert_eq!(
            exact(1e-9).out_of_tolerance().unwrap(),
            "the gradients of `rnn.0.weight_hh` differ by 1.00e-9 (tolerance 0e0)"
        );
    }
}
