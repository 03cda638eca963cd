//! The hardware a value claim was made on (`made_on` in a manifest claim). An absolute figure
//! ("~2-10ms per copy") holds for the machine it was stated for: a faster link that copies in
//! 0.8 ms has not refuted it. Such a claim is judged only on that hardware; elsewhere its
//! measurement is context, scaled to the claim's link where a fair scale exists (a time spent
//! moving bytes over a link, in proportion to the link's rate).

use serde::{Deserialize, Serialize};

/// Where a value claim's figure was measured or expected, as its source says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MadeOn {
    /// In words, for reports: "a V100 on a PCIe 3.0 x16 link".
    pub hardware: String,
    /// A part of the GPU's name that identifies the hardware (`V100`, matched without regard
    /// to case); `None` where the source names none, so no machine is known to be it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// The claim's link rate, GB/s per direction (PCIe 3.0 x16: 15.75).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_gbps: Option<f64>,
    /// The metric that gives this run's rate of the same link (`copy.link_theoretical_gbps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_metric: Option<String>,
}

impl MadeOn {
    /// Whether a machine whose GPU is named `gpu` is the claim's hardware.
    pub fn is(&self, gpu: &str) -> bool {
        self.gpu
            .as_deref()
            .is_some_and(|want| !want.is_empty() && gpu.to_lowercase().contains(&want.to_lowercase()))
    }

    /// A time measured over a link of `ours` GB/s, scaled to the claim's link: the same bytes
    /// at the claim's rate take `value * ours / theirs`. `None` without a claim rate, or for a
    /// rate that is not a positive number.
    pub fn scaled(&self, value: f64, ours: f64) -> Option<f64> {
        let theirs = self.link_gbps?;
        let fine = |x: f64| x.is_finite() && x > 0.0;
        (fine(theirs) && fine(ours) && value.is_finite()).then(|| value * ours / theirs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v100() -> MadeOn {
        MadeOn {
            hardware: "a V100 on a PCIe 3.0 x16 link".into(),
            gpu: Some("V100".into()),
            link_gbps: Some(15.75),
            link_metric: Some("copy.link_theoretical_gbps".into()),
        }
    }

    #[test]
    fn the_claims_hardware_is_found_in_the_gpus_name() {
        assert!(v100().is("Tesla V100-SXM2-16GB"));
        assert!(v100().is("tesla v100-pcie-32gb"));
        assert!(!v100().is("NVIDIA H200"));
        assert!(!v100().is("none (CPU build)"));
        let unnamed = MadeOn { gpu: None, ..v100() };
        assert!(!unnamed.is("Tesla V100-SXM2-16GB"), "an unnamed GPU is no machine");
        let empty = MadeOn {
            gpu: Some(String::new()),
            ..v100()
        };
        assert!(!empty.is("NVIDIA H200"));
    }

    /// 0.8 ms over a 63 GB/s link (PCIe 5.0 x16) is 3.2 ms over a 15.75 GB/s one.
    #[test]
    fn a_link_time_scales_by_the_ratio_of_the_rates() {
        let scaled = v100().scaled(0.8e-3, 63.0).unwrap();
        assert!((scaled - 3.2e-3).abs() < 1e-12, "{scaled}");
        assert_eq!(v100().scaled(0.8e-3, 0.0), None);
        assert_eq!(v100().scaled(0.8e-3, f64::NAN), None);
        let no_rate = MadeOn {
            link_gbps: None,
            ..v100()
        };
        assert_eq!(no_rate.scaled(0.8e-3, 63.0), None);
    }
}
