//! What each chart of a run draws, as data (`assemble::charts` fills it while it plans the charts;
//! `render::charts` draws it). Not part of `report.json`: every chart reference carries its plot
//! beside the kind, title and file the report links to.

/// Whether a scaling parameter is a thread count or a problem size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisKind {
    Threads,
    Size,
}

/// The data one chart draws, computed once from the run when the report is assembled.
#[derive(Debug, Clone, PartialEq)]
pub enum Plot {
    /// Seconds per stage, stacked per config.
    StageBreakdown(StageBreakdownPlot),
    /// Every trial's value of the primary metric per config, beside the median and its
    /// interval from the report's results rows.
    Distribution(DistributionPlot),
    /// The primary metric in the order the trials ran.
    Run(RunPlot),
    /// Each variant's median and interval at every sweep point.
    Sweep(SweepPlot),
    /// A stage's per-step series, averaged over successful trials.
    Loss(LossPlot),
    /// A stage's bandwidth by copy size.
    Bandwidth(BandwidthPlot),
    /// Efficiency or time against a scaling parameter, drawn from the report's Scaling section.
    Scaling { axis: AxisKind, parameter: String },
}

/// Per config, the median seconds of every stage over successful trials.
#[derive(Debug, Clone, PartialEq)]
pub struct StageBreakdownPlot {
    /// Stage names in order of first appearance.
    pub stages: Vec<String>,
    /// Config names in plan order.
    pub configs: Vec<String>,
    /// `medians[config][stage]`, 0 where a stage never succeeded so that the bar still stacks.
    pub medians: Vec<Vec<f64>>,
}

/// The primary metric's samples per config.
#[derive(Debug, Clone, PartialEq)]
pub struct DistributionPlot {
    pub metric: String,
    /// The metric's unit (empty when no sample recorded one).
    pub unit: String,
    /// Config names in plan order.
    pub configs: Vec<String>,
    /// Each config's samples, as the comparisons read them.
    pub values: Vec<Vec<f64>>,
}

/// One measured, successful trial of the run chart: its time-order index, block and value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialPoint {
    pub index: u32,
    pub block: u32,
    pub value: f64,
}

/// The primary metric of every successful trial, per config.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlot {
    pub metric: String,
    /// The metric's unit (empty when no trial recorded one).
    pub unit: String,
    /// Config names in plan order.
    pub configs: Vec<String>,
    /// Each config's points, in plan order.
    pub points: Vec<Vec<TrialPoint>>,
}

/// The primary metric's medians across the sweep, per variant.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPlot {
    pub metric: String,
    /// The metric's unit (empty when no sample recorded one).
    pub unit: String,
    /// What the sweep varies, for the x axis.
    pub axis: String,
    /// The sweep points' labels, in order of first appearance.
    pub points: Vec<String>,
    /// Variant names, in order of first appearance.
    pub variants: Vec<String>,
    /// Per variant: `(point index, median, interval low, interval high)`.
    pub curves: Vec<Vec<(i32, f64, f64, f64)>>,
}

/// A stage's per-step series: per config, the mean over successful trials at every step.
#[derive(Debug, Clone, PartialEq)]
pub struct LossPlot {
    pub stage: String,
    pub metric: String,
    /// What a step counts (`epoch` for training stages, else `step`).
    pub step_unit: String,
    /// The series' unit.
    pub value_unit: String,
    /// Per config in plan order: its name and `(step, mean value)` by step.
    pub curves: Vec<(String, Vec<(f64, f64)>)>,
}

/// One line of a bandwidth chart: a config's stepped metric.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthLine {
    /// `config · mode`.
    pub label: String,
    /// The config's position in plan order, which picks the line's marker.
    pub shape: usize,
    /// `(size in bytes, median over successful trials)`, by size.
    pub points: Vec<(i64, f64)>,
}

/// A stage's bandwidth by copy size.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthPlot {
    /// The bandwidth unit, `GB/s`.
    pub unit: String,
    pub lines: Vec<BandwidthLine>,
    /// Every size any series of the stage has a point at, ascending.
    pub sizes: Vec<i64>,
}
