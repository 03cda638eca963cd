//! GPU telemetry around a stage (exec -> measure::gpu -> the stage's metrics): while a CUDA
//! stage, or a `command` stage with `gpu_monitor = true`, runs, a thread samples the GPU's
//! utilization, memory used, SM clock, power and temperature at a fixed rate (default 20 Hz),
//! and the stage records them as series and summaries.
//!
//! The source is NVML, loaded at run time by `nvml-wrapper` (`libnvidia-ml.so.1`, which the
//! NVIDIA driver installs), so a machine without a driver runs everything else and gets one
//! note instead of telemetry. A trial is flagged as throttled when any sample's SM clock is
//! below 75% of the GPU's maximum SM clock, the threshold nvbench uses.
//!
//! Metrics, on the monitored stage (`<stage>.gpu_*`):
//! - series (one point per bucket of samples, at most [`MAX_SERIES_POINTS`]): `gpu_util` (%),
//!   `gpu_mem_used` (B), `gpu_sm_clock` (MHz), `gpu_power` (W), `gpu_temp` (C);
//! - summaries: `gpu_samples` (count), `gpu_util_mean`, `gpu_util_max` (%), `gpu_mem_peak` (B),
//!   `gpu_sm_clock_min`, `gpu_sm_clock_max` (MHz; the maximum is the GPU's rated one),
//!   `gpu_power_mean` (W, when the GPU reports power), `gpu_temp_max` (C),
//!   `gpu_throttled_share` (ratio of samples below the threshold) and `gpu_throttled` (count: 1
//!   for a throttled trial, else 0).

use crate::metrics::Recorder;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Samples per second when a stage does not say.
pub const DEFAULT_HZ: f64 = 20.0;
/// The fastest sampling a stage may ask for.
pub const MAX_HZ: f64 = 1000.0;
/// A sample whose SM clock is below this share of the maximum is throttled (nvbench's rule).
pub const THROTTLE_SHARE: f64 = 0.75;
/// Points per stored series: longer stages are averaged into this many buckets.
pub const MAX_SERIES_POINTS: usize = 240;
/// Samples kept per stage (about 14 hours at 20 Hz); later ones are counted, not kept.
const MAX_SAMPLES: usize = 1 << 20;

/// One reading of the GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuSample {
    /// Share of the last sample period the GPU was busy, in percent.
    pub util_percent: f64,
    pub mem_used_bytes: f64,
    pub sm_clock_mhz: f64,
    /// Board power; `None` where the GPU does not report it.
    pub power_watts: Option<f64>,
    pub temp_c: f64,
}

/// Where samples come from: NVML on a real machine, a scripted source in tests.
pub trait GpuSource: Send {
    /// The GPU's maximum SM clock, the reference for throttling.
    fn max_sm_clock_mhz(&self) -> f64;
    fn sample(&mut self) -> Result<GpuSample, String>;
}

/// NVML, loaded at run time, or why it could not be (no NVIDIA driver).
fn init_nvml() -> Result<nvml_wrapper::Nvml, String> {
    nvml_wrapper::Nvml::init().map_err(|e| format!("NVML could not be loaded: {e}"))
}

/// NVML's view of one GPU (by NVML index).
pub struct NvmlSource {
    nvml: nvml_wrapper::Nvml,
    index: u32,
    max_sm_clock_mhz: f64,
}

impl NvmlSource {
    /// Loads NVML and finds GPU `index`, or says why not (no driver, no such GPU).
    pub fn open(index: u32) -> Result<Self, String> {
        use nvml_wrapper::enum_wrappers::device::Clock;
        let nvml = init_nvml()?;
        let max = nvml
            .device_by_index(index)
            .and_then(|d| d.max_clock_info(Clock::SM))
            .map_err(|e| format!("NVML has no GPU {index} with a maximum SM clock: {e}"))?;
        Ok(Self {
            nvml,
            index,
            max_sm_clock_mhz: f64::from(max),
        })
    }
}

impl GpuSource for NvmlSource {
    fn max_sm_clock_mhz(&self) -> f64 {
        self.max_sm_clock_mhz
    }

    fn sample(&mut self) -> Result<GpuSample, String> {
        use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
        let read = || -> Result<GpuSample, nvml_wrapper::error::NvmlError> {
            let d = self.nvml.device_by_index(self.index)?;
            Ok(GpuSample {
                util_percent: f64::from(d.utilization_rates()?.gpu),
                mem_used_bytes: d.memory_info()?.used as f64,
                sm_clock_mhz: f64::from(d.clock_info(Clock::SM)?),
                power_watts: d.power_usage().ok().map(|mw| f64::from(mw) / 1000.0),
                temp_c: f64::from(d.temperature(TemperatureSensor::Gpu)?),
            })
        };
        read().map_err(|e| e.to_string())
    }
}

/// A GPU's PCIe link as NVML reports it: generation and lane count, maximum and current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcieLink {
    pub max_gen: u32,
    pub max_width: u32,
    pub current_gen: u32,
    pub current_width: u32,
}

impl PcieLink {
    /// GPU `index`'s link, or why it cannot be read (no NVML, no such GPU).
    pub fn read(index: u32) -> Result<Self, String> {
        let nvml = init_nvml()?;
        let read = || -> Result<Self, nvml_wrapper::error::NvmlError> {
            let d = nvml.device_by_index(index)?;
            Ok(Self {
                max_gen: d.max_pcie_link_gen()?,
                max_width: d.max_pcie_link_width()?,
                current_gen: d.current_pcie_link_gen()?,
                current_width: d.current_pcie_link_width()?,
            })
        };
        read().map_err(|e| format!("NVML has no PCIe link for GPU {index}: {e}"))
    }

    /// The link's theoretical rate per direction at its maximum generation and width, in
    /// GB/s (10^9 bytes/s): the transfer rate per lane (8, 16, 32, 64 GT/s for generations
    /// 3-6) times the lanes, less line coding (128b/130b; generation 6's FLIT mode is
    /// counted the same, close enough for a ceiling), over 8 bits. `None` for a generation
    /// before 3 or unknown.
    pub fn theoretical_gbps(&self) -> Option<f64> {
        let gts = match self.max_gen {
            3 => 8.0,
            4 => 16.0,
            5 => 32.0,
            6 => 64.0,
            _ => return None,
        };
        (self.max_width > 0).then(|| gts * f64::from(self.max_width) * (128.0 / 130.0) / 8.0)
    }

    /// E.g. "PCIe gen 5 x16 (now gen 5 x16): 63.02 GB/s per direction in theory".
    pub fn describe(&self) -> String {
        let rate = self.theoretical_gbps().map_or_else(
            || "theoretical rate unknown".to_owned(),
            |r| format!("{r:.2} GB/s per direction in theory"),
        );
        format!(
            "PCIe gen {} x{} (now gen {} x{}): {rate}",
            self.max_gen, self.max_width, self.current_gen, self.current_width
        )
    }
}

/// A sampler running on its own thread until [`Monitor::stop`].
pub struct Monitor {
    stop: mpsc::Sender<()>,
    handle: JoinHandle<Telemetry>,
}

impl Monitor {
    /// Starts sampling `source` `hz` times a second: once at once, then on a fixed schedule.
    pub fn start(mut source: Box<dyn GpuSource>, hz: f64) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let period = Duration::from_secs_f64(1.0 / hz.clamp(f64::MIN_POSITIVE, MAX_HZ));
        let handle = std::thread::spawn(move || {
            let mut t = Telemetry::new(source.max_sm_clock_mhz());
            let mut next = Instant::now();
            loop {
                t.push(source.sample());
                next += period;
                let wait = next.saturating_duration_since(Instant::now());
                match stopped.recv_timeout(wait) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            // A last reading at the stage's end, so even a stage shorter than one period has
            // its start and its end.
            t.push(source.sample());
            t
        });
        Self { stop, handle }
    }

    /// Stops sampling and returns what was read.
    pub fn stop(self) -> Telemetry {
        let _ = self.stop.send(());
        self.handle.join().unwrap_or_else(|_| {
            let mut t = Telemetry::new(f64::NAN);
            t.errors = 1;
            t.last_error = Some("the GPU sampler thread panicked".into());
            t
        })
    }
}

/// What a monitor read during one stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Telemetry {
    pub max_sm_clock_mhz: f64,
    pub samples: Vec<GpuSample>,
    /// Samples past [`MAX_SAMPLES`], counted but not kept.
    pub dropped: usize,
    pub errors: usize,
    pub last_error: Option<String>,
}

impl Telemetry {
    pub fn new(max_sm_clock_mhz: f64) -> Self {
        Self {
            max_sm_clock_mhz,
            samples: Vec::new(),
            dropped: 0,
            errors: 0,
            last_error: None,
        }
    }

    fn push(&mut self, sample: Result<GpuSample, String>) {
        match sample {
            Ok(_) if self.samples.len() >= MAX_SAMPLES => self.dropped += 1,
            Ok(s) => self.samples.push(s),
            Err(e) => {
                self.errors += 1;
                self.last_error = Some(e);
            }
        }
    }

    /// Whether a sample is below the throttle threshold.
    fn throttled(&self, s: &GpuSample) -> bool {
        self.max_sm_clock_mhz.is_finite()
            && self.max_sm_clock_mhz > 0.0
            && s.sm_clock_mhz < THROTTLE_SHARE * self.max_sm_clock_mhz
    }

    /// Records the series and summaries (module docs) into `rec`, or a note when there are no
    /// samples.
    pub fn record(&self, rec: &mut Recorder) {
        if self.errors > 0 {
            rec.note(format!(
                "GPU telemetry: {} of {} readings failed (last: {})",
                self.errors,
                self.errors + self.samples.len() + self.dropped,
                self.last_error.as_deref().unwrap_or("unknown")
            ));
        }
        if self.dropped > 0 {
            rec.note(format!(
                "GPU telemetry: {} readings past the first {MAX_SAMPLES} were not kept",
                self.dropped
            ));
        }
        let s = &self.samples;
        if s.is_empty() {
            return;
        }
        let n = s.len() as f64;
        let series: [(&str, &str, Reading); 5] = [
            ("gpu_util", "%", |x| Some(x.util_percent)),
            ("gpu_mem_used", "B", |x| Some(x.mem_used_bytes)),
            ("gpu_sm_clock", "MHz", |x| Some(x.sm_clock_mhz)),
            ("gpu_power", "W", |x| x.power_watts),
            ("gpu_temp", "C", |x| Some(x.temp_c)),
        ];
        for (name, unit, get) in series {
            for (step, value) in buckets(s, get).into_iter().enumerate() {
                rec.record_step(name, step as i64, value, unit);
            }
        }
        let max = |get: fn(&GpuSample) -> f64| s.iter().map(get).fold(f64::NEG_INFINITY, f64::max);
        let min = |get: fn(&GpuSample) -> f64| s.iter().map(get).fold(f64::INFINITY, f64::min);
        let throttled = s.iter().filter(|x| self.throttled(x)).count();
        rec.record("gpu_samples", n, "count");
        rec.record("gpu_util_mean", s.iter().map(|x| x.util_percent).sum::<f64>() / n, "%");
        rec.record("gpu_util_max", max(|x| x.util_percent), "%");
        rec.record("gpu_mem_peak", max(|x| x.mem_used_bytes), "B");
        rec.record("gpu_sm_clock_min", min(|x| x.sm_clock_mhz), "MHz");
        if self.max_sm_clock_mhz.is_finite() {
            rec.record("gpu_sm_clock_max", self.max_sm_clock_mhz, "MHz");
        }
        let powers: Vec<f64> = s.iter().filter_map(|x| x.power_watts).collect();
        if !powers.is_empty() {
            rec.record("gpu_power_mean", powers.iter().sum::<f64>() / powers.len() as f64, "W");
        }
        rec.record("gpu_temp_max", max(|x| x.temp_c), "C");
        rec.record("gpu_throttled_share", throttled as f64 / n, "ratio");
        rec.record("gpu_throttled", f64::from(u8::from(throttled > 0)), "count");
    }
}

/// One field of a sample (`None` where the GPU does not report it).
type Reading = fn(&GpuSample) -> Option<f64>;

/// The values of `get` averaged into at most [`MAX_SERIES_POINTS`] consecutive buckets of equal
/// size (the last one may be shorter); samples without a value are left out of their bucket.
fn buckets(samples: &[GpuSample], get: Reading) -> Vec<f64> {
    let size = samples.len().div_ceil(MAX_SERIES_POINTS).max(1);
    samples
        .chunks(size)
        .filter_map(|chunk| {
            let values: Vec<f64> = chunk.iter().filter_map(get).collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        })
        .collect()
}

/// Starts monitoring GPU `index` at `hz`, or returns why it cannot (recorded as a note by the
/// caller; never an error).
pub fn monitor_gpu(index: u32, hz: f64) -> Result<Monitor, String> {
    let source = NvmlSource::open(index)?;
    Ok(Monitor::start(Box::new(source), hz))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays a script of samples, cycling; `fail_every` makes every k-th reading an error.
    struct Scripted {
        max: f64,
        script: Vec<GpuSample>,
        at: usize,
        fail_every: Option<usize>,
    }

    impl GpuSource for Scripted {
        fn max_sm_clock_mhz(&self) -> f64 {
            self.max
        }
        fn sample(&mut self) -> Result<GpuSample, String> {
            self.at += 1;
            if self.fail_every.is_some_and(|k| self.at.is_multiple_of(k)) {
                return Err("NVML_ERROR_TIMEOUT".into());
            }
            Ok(self.script[(self.at - 1) % self.script.len()])
        }
    }

    fn sample(util: f64, clock: f64, power: Option<f64>) -> GpuSample {
        GpuSample {
            util_percent: util,
            mem_used_bytes: util * 1e7,
            sm_clock_mhz: clock,
            power_watts: power,
            temp_c: 40.0 + util / 10.0,
        }
    }

    /// The summaries of known samples, and the throttle flag on either side of 75% of the
    /// maximum clock.
    #[test]
    fn summaries_and_the_throttle_flag() {
        let mut t = Telemetry::new(2000.0);
        for s in [
            sample(20.0, 1980.0, Some(100.0)),
            sample(90.0, 1500.0, None),
            sample(70.0, 1600.0, Some(300.0)),
        ] {
            t.push(Ok(s));
        }
        let mut rec = Recorder::new();
        t.record(&mut rec);
        assert_eq!(rec.single("gpu_samples"), Some(3.0));
        assert_eq!(rec.single("gpu_util_mean"), Some(60.0));
        assert_eq!(rec.single("gpu_util_max"), Some(90.0));
        assert_eq!(rec.single("gpu_mem_peak"), Some(9e8));
        assert_eq!(rec.single("gpu_sm_clock_min"), Some(1500.0));
        assert_eq!(rec.single("gpu_sm_clock_max"), Some(2000.0));
        assert_eq!(
            rec.single("gpu_power_mean"),
            Some(200.0),
            "samples without power left out"
        );
        assert_eq!(rec.single("gpu_temp_max"), Some(49.0));
        // 1500 MHz is exactly 75% of 2000: not below it, so nothing is throttled.
        assert_eq!(rec.single("gpu_throttled_share"), Some(0.0));
        assert_eq!(rec.single("gpu_throttled"), Some(0.0));

        t.push(Ok(sample(95.0, 1499.0, Some(310.0))));
        let mut rec = Recorder::new();
        t.record(&mut rec);
        assert_eq!(rec.single("gpu_throttled_share"), Some(0.25));
        assert_eq!(rec.single("gpu_throttled"), Some(1.0));
        assert!(rec.notes().is_empty(), "{:?}", rec.notes());
    }

    /// Long stages are stored as at most `MAX_SERIES_POINTS` bucket means per series.
    #[test]
    fn series_are_bucketed_to_a_bounded_length() {
        let mut t = Telemetry::new(2000.0);
        for i in 0..1000 {
            t.push(Ok(sample(f64::from(i % 100), 1900.0, Some(250.0))));
        }
        let mut rec = Recorder::new();
        t.record(&mut rec);
        let util: Vec<f64> = rec
            .metrics()
            .iter()
            .filter(|m| m.name == "gpu_util" && m.step.is_some())
            .map(|m| m.value)
            .collect();
        // 1000 samples in buckets of ceil(1000 / 240) = 5.
        assert_eq!(util.len(), 200);
        assert_eq!(util[0], 2.0, "mean of 0..5");
        assert!(util.len() <= MAX_SERIES_POINTS);
    }

    /// The sampler thread reads at start and at stop whatever the rate and however the threads
    /// are scheduled, keeps the good readings when others fail, and counts the failures into
    /// one note. (What it reads between depends on scheduling, so only the two ends are
    /// asserted; the summaries are tested on fixed samples above.)
    #[test]
    fn the_sampler_reads_until_stopped_and_notes_failures() {
        let source = Scripted {
            max: 2000.0,
            script: vec![sample(50.0, 1000.0, Some(200.0))],
            at: 0,
            fail_every: Some(2),
        };
        let monitor = Monitor::start(Box::new(source), 500.0);
        std::thread::sleep(Duration::from_millis(30));
        let t = monitor.stop();
        let readings = t.samples.len() + t.errors;
        assert!(readings >= 2, "{readings} readings");
        assert_eq!(t.errors, readings / 2, "every second reading fails");
        assert_eq!(t.max_sm_clock_mhz, 2000.0);
        let mut rec = Recorder::new();
        t.record(&mut rec);
        assert_eq!(rec.single("gpu_throttled"), Some(1.0), "1000 MHz is below 1500");
        assert_eq!(rec.notes().len(), 1);
        assert!(rec.notes()[0].contains("NVML_ERROR_TIMEOUT"), "{:?}", rec.notes());

        // Stopped before its first period is up: exactly the start and the end.
        let source = Scripted {
            max: 2000.0,
            script: vec![sample(10.0, 1900.0, None)],
            at: 0,
            fail_every: None,
        };
        let t = Monitor::start(Box::new(source), 0.5).stop();
        assert_eq!(t.samples.len(), 2);
    }

    /// No samples at all records nothing but the reason.
    #[test]
    fn no_samples_records_only_the_note() {
        let mut t = Telemetry::new(2000.0);
        t.push(Err("GPU is lost".into()));
        let mut rec = Recorder::new();
        t.record(&mut rec);
        assert!(rec.metrics().is_empty());
        assert_eq!(rec.notes().len(), 1);
    }

    #[test]
    fn the_link_rate_is_lanes_times_the_generation_rate_less_coding() {
        let link = |max_gen, max_width| PcieLink {
            max_gen,
            max_width,
            current_gen: 1,
            current_width: max_width,
        };
        // Gen 4 x16: 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s; gen 5 doubles it.
        assert!((link(4, 16).theoretical_gbps().unwrap() - 31.507_692).abs() < 1e-5);
        assert!((link(5, 16).theoretical_gbps().unwrap() - 63.015_385).abs() < 1e-5);
        assert!((link(3, 8).theoretical_gbps().unwrap() - 7.876_923).abs() < 1e-5);
        assert_eq!(link(2, 16).theoretical_gbps(), None);
        assert_eq!(link(5, 0).theoretical_gbps(), None);
        assert_eq!(
            link(5, 16).describe(),
            "PCIe gen 5 x16 (now gen 1 x16): 63.02 GB/s per direction in theory"
        );
    }
}
