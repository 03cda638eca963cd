//! `repeat = N`: the metric lines of N runs of one command, reduced to their mean per run
//! (stage -> **repeat** -> recorder), the way criterion and asv report batched iterations.

use super::MetricLine;
use crate::metrics::Recorder;
use indexmap::IndexMap;
use std::collections::HashMap;

/// Sums of the metric lines of several runs, keyed by name, step and the line's place among
/// the run's lines of that name and step (a program that prints `loss` three times without a
/// step gives three series of runs, each averaged on its own).
#[derive(Debug, Default)]
pub(super) struct MeanMetrics {
    sums: IndexMap<Key, Sum>,
}

/// A metric's name, its step, and its place among the run's lines of that name and step.
type Key = (String, Option<i64>, usize);

/// The values summed, how many, and the unit.
type Sum = (f64, u32, String);

impl MeanMetrics {
    /// Adds the lines one run printed, in the order it printed them.
    pub(super) fn add_run(&mut self, lines: Vec<MetricLine>) {
        let mut seen: HashMap<(String, Option<i64>), usize> = HashMap::new();
        for m in lines {
            let nth = seen.entry((m.metric.clone(), m.step)).or_default();
            let key = (m.metric, m.step, *nth);
            *nth += 1;
            if !self.sums.contains_key(&key) && self.sums.len() >= crate::metrics::MAX_METRICS {
                continue;
            }
            let slot = self.sums.entry(key).or_insert((0.0, 0, m.unit));
            slot.0 += m.value;
            slot.1 += 1;
        }
    }

    /// Records each metric's mean over the runs that printed it, in first-printed order.
    pub(super) fn record(self, rec: &mut Recorder) {
        for ((name, step, _), (sum, n, unit)) in self.sums {
            let mean = sum / f64::from(n.max(1));
            match step {
                Some(step) => rec.record_step(name, step, mean, &unit),
                None => rec.record(name, mean, &unit),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(metric: &str, value: f64, step: Option<i64>) -> MetricLine {
        MetricLine {
            metric: metric.into(),
            value,
            unit: "s".into(),
            step,
        }
    }

    #[test]
    fn each_metric_is_the_mean_of_the_runs_that_printed_it() {
        let mut means = MeanMetrics::default();
        means.add_run(vec![
            line("parse", 1.0, None),
            line("loss", 4.0, Some(1)),
            line("parse", 10.0, None),
        ]);
        means.add_run(vec![line("parse", 3.0, None), line("loss", 6.0, Some(1))]);
        means.add_run(vec![line("parse", 5.0, None), line("only", 7.0, None)]);
        let mut rec = Recorder::new();
        means.record(&mut rec);
        let (metrics, _) = rec.into_parts();
        let got: Vec<(String, f64, Option<i64>)> = metrics.iter().map(|m| (m.name.clone(), m.value, m.step)).collect();
        assert_eq!(
            got,
            vec![
                ("parse".to_owned(), 3.0, None),
                ("loss".to_owned(), 5.0, Some(1)),
                // The second `parse` line of a run is its own series: only the first run had one.
                ("parse".to_owned(), 10.0, None),
                ("only".to_owned(), 7.0, None),
            ]
        );
    }
}
