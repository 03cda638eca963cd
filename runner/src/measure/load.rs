//! How busy the machine was around each trial (exec -> **measure** -> trial record): the
//! 1-minute load average before and after the trial, the CPU time that processes other than
//! this one used while it ran, and the mean CPU clock after it.
//!
//! The load average is what `uptime` shows, but it reacts slowly (a one-minute exponential
//! average: a burst needs tens of seconds to show) and it counts this run's own threads and
//! stage processes. The CPU time of other processes is exact over the trial itself: the busy
//! ticks of the CPUs this process may run on (`/proc/stat`) minus this process's own ticks and
//! those of the stage processes it waited for (`getrusage`), spread over the trial's wall time. It is what decides whether the machine was busy (see [`super::busy`]).
//!
//! Everything here reads Linux `/proc` and `/sys`; elsewhere, or where a file cannot be read,
//! the figure is `None` and nothing is invented.

use serde::{Deserialize, Serialize};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What one trial recorded about the machine's load. Every field is `None` where it could
/// not be read, and for trials stored before it was recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialLoad {
    /// 1-minute load average just before the trial.
    #[serde(default)]
    pub load_before: Option<f64>,
    /// 1-minute load average just after it.
    #[serde(default)]
    pub load_after: Option<f64>,
    /// Cores' worth of CPU that other processes used during the trial (1.5: one and a half
    /// cores busy on average).
    #[serde(default)]
    pub other_cpu: Option<f64>,
    /// Cores available to the run (as in the environment fingerprint).
    #[serde(default)]
    pub cores: Option<u32>,
    /// Mean clock of the CPUs just after the trial, in MHz (read at most every 200 ms: a
    /// shorter trial records the latest reading).
    #[serde(default)]
    pub cpu_mhz: Option<f64>,
    /// The CPU counters' changes over the trial, from which `other_cpu` was computed. A run
    /// sums them over its trials: one short trial sees a tick or none, so only a window of
    /// many ticks says how busy the machine was (`super::busy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticks: Option<TickDelta>,
}

/// How the CPU counters moved over one trial, in clock ticks (usually 100 a second).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickDelta {
    /// Busy ticks of the CPUs the run may use.
    pub busy: u64,
    /// Ticks of this process and the children it waited for.
    pub own: u64,
    /// All ticks of those CPUs, busy or idle (the trial's wall time times `cpus`).
    pub total: u64,
    pub cpus: u32,
}

impl TrialLoad {
    /// The trial's 1-minute load: the mean of the readings before and after it.
    pub fn load(&self) -> Option<f64> {
        match (self.load_before, self.load_after) {
            (Some(a), Some(b)) => Some((a + b) / 2.0),
            (a, b) => a.or(b),
        }
    }

    /// Whether anything was recorded at all.
    pub fn is_empty(&self) -> bool {
        *self == TrialLoad::default()
    }
}

/// CPU tick counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ticks {
    /// Busy ticks of the CPUs this process may run on (steal included: time a hypervisor gave
    /// to someone else is time the run did not get).
    busy: u64,
    /// All ticks of those CPUs, busy or idle.
    total: u64,
    /// How many CPUs the counters cover.
    cpus: usize,
    /// This process's own ticks plus those of the children it waited for.
    own: u64,
}

/// Readings taken when a trial starts; [`LoadProbe::finish`] takes the rest.
#[derive(Debug, Clone)]
pub struct LoadProbe {
    load_before: Option<f64>,
    ticks: Option<Ticks>,
}

impl LoadProbe {
    /// Reads the load average and the CPU counters now.
    pub fn start() -> LoadProbe {
        LoadProbe {
            load_before: read_load1(),
            ticks: read_ticks(),
        }
    }

    /// Reads again and returns the trial's figures.
    pub fn finish(&self) -> TrialLoad {
        let now = read_ticks();
        let other_cpu = match (self.ticks, now) {
            (Some(a), Some(b)) => other_cores(a, b),
            _ => None,
        };
        let ticks = match (self.ticks, now) {
            (Some(a), Some(b)) => delta(a, b),
            _ => None,
        };
        TrialLoad {
            ticks,
            load_before: self.load_before,
            load_after: read_load1(),
            other_cpu,
            cores: cores(),
            cpu_mhz: cpu_mhz(),
        }
    }
}

/// The cores available to this process (affinity and cgroup quota), read once: the standard
/// library reads the cgroup's quota files on every call, and they do not change under a run.
fn cores() -> Option<u32> {
    static CORES: OnceLock<Option<u32>> = OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .ok()
            .and_then(|n| u32::try_from(n.get()).ok())
    })
}

/// How long a reading of the CPU clock serves: generating `/proc/cpuinfo` costs 0.1 ms, as much
/// as the rest of a trial's probes together, and a clock that drops (heat, power) does so over
/// seconds.
const CLOCK_FRESH: Duration = Duration::from_millis(200);

/// The mean CPU clock, read at most every [`CLOCK_FRESH`]: a trial shorter than that records
/// the latest reading.
fn cpu_mhz() -> Option<f64> {
    static LAST: Mutex<Option<(Instant, Option<f64>)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match *last {
        Some((at, mhz)) if at.elapsed() < CLOCK_FRESH => mhz,
        _ => {
            let mhz = read_cpu_mhz();
            *last = Some((Instant::now(), mhz));
            mhz
        }
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn read_load1() -> Option<f64> {
    parse_load1(&read("/proc/loadavg")?)
}

fn read_ticks() -> Option<Ticks> {
    let allowed = allowed_cpus().or_else(|| read("/proc/self/status").and_then(|s| parse_allowed_cpus(&s)));
    let (busy, total, cpus) = parse_stat(&read("/proc/stat")?, allowed.as_deref())?;
    let own = own_ticks().or_else(|| parse_own_ticks(&read("/proc/self/stat")?))?;
    Some(Ticks { busy, total, cpus, own })
}

/// The CPUs this process may run on, from the kernel (the same list `/proc/self/status`
/// prints, without formatting and parsing it).
fn allowed_cpus() -> Option<Vec<usize>> {
    let set = rustix::thread::sched_getaffinity(None).ok()?;
    let cpus: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| set.is_set(c))
        .collect();
    (!cpus.is_empty()).then_some(cpus)
}

/// This process's CPU time plus that of the children it waited for, in clock ticks: what
/// fields 14-17 of `/proc/self/stat` sum, from `getrusage`.
fn own_ticks() -> Option<u64> {
    let seconds = |who| {
        // SAFETY: zeroed rusage is a valid value to be filled by getrusage.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` points to valid memory; `who` is one of the two defined values.
        let r = unsafe { libc::getrusage(who, &mut usage) };
        let of = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        (r == 0).then(|| of(usage.ru_utime) + of(usage.ru_stime))
    };
    let total = seconds(libc::RUSAGE_SELF)? + seconds(libc::RUSAGE_CHILDREN)?;
    Some((total * rustix::param::clock_ticks_per_second() as f64) as u64)
}

fn read_cpu_mhz() -> Option<f64> {
    if let Some(mhz) = read("/proc/cpuinfo").and_then(|s| parse_cpuinfo_mhz(&s)) {
        return Some(mhz);
    }
    // Some architectures name no clock in cpuinfo; cpufreq has it per CPU, in kHz.
    let dir = std::fs::read_dir("/sys/devices/system/cpu").ok()?;
    let mut khz = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name();
        let is_cpu = name
            .to_str()
            .and_then(|n| n.strip_prefix("cpu"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_cpu {
            continue;
        }
        if let Some(v) = std::fs::read_to_string(e.path().join("cpufreq/scaling_cur_freq"))
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
        {
            khz.push(v);
        }
    }
    (!khz.is_empty()).then(|| khz.iter().sum::<f64>() / khz.len() as f64 / 1000.0)
}

/// The counters' change between two readings; `None` when the CPU set changed or a counter
/// went back.
fn delta(a: Ticks, b: Ticks) -> Option<TickDelta> {
    if a.cpus != b.cpus || b.cpus == 0 {
        return None;
    }
    Some(TickDelta {
        busy: b.busy.checked_sub(a.busy)?,
        own: b.own.checked_sub(a.own)?,
        total: b.total.checked_sub(a.total)?,
        cpus: u32::try_from(b.cpus).ok()?,
    })
}

/// Cores' worth of CPU used by other processes between two readings; `None` when no time
/// passed on the counters (they tick 100 times a second) or the CPU set changed.
fn other_cores(a: Ticks, b: Ticks) -> Option<f64> {
    if a.cpus != b.cpus || b.cpus == 0 {
        return None;
    }
    let total = b.total.checked_sub(a.total)?;
    if total == 0 {
        return None;
    }
    let busy = b.busy.saturating_sub(a.busy);
    let own = b.own.saturating_sub(a.own);
    // Ticks are sampled separately for the CPUs and for the process, so over a short trial
    // its own count can exceed the CPUs' busy count by a tick or two: clamp to the range.
    let other = busy.saturating_sub(own) as f64;
    let wall = total as f64 / b.cpus as f64;
    Some((other / wall).min(b.cpus as f64))
}

/// The 1-minute load average: the first field of `/proc/loadavg`
/// (`0.52 0.58 0.59 2/1234 5678`).
pub(crate) fn parse_load1(s: &str) -> Option<f64> {
    s.split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// Busy ticks, all ticks and the number of CPUs summed from the per-CPU lines of `/proc/stat`
/// for the CPUs in `allowed` (all of them when `None`, or when none of the allowed CPUs has
/// a line). Fields: user nice system idle iowait irq softirq steal (guest time is already
/// part of user and nice).
pub(crate) fn parse_stat(s: &str, allowed: Option<&[usize]>) -> Option<(u64, u64, usize)> {
    let sum = |filter: Option<&[usize]>| {
        let mut out = (0u64, 0u64, 0usize);
        for line in s.lines() {
            let mut fields = line.split_whitespace();
            let Some(cpu) = fields.next().and_then(|n| n.strip_prefix("cpu")) else {
                continue;
            };
            let Ok(index) = cpu.parse::<usize>() else {
                continue; // the aggregate `cpu` line
            };
            if filter.is_some_and(|f| !f.contains(&index)) {
                continue;
            }
            let v: Vec<u64> = fields.take(8).map_while(|f| f.parse().ok()).collect();
            if v.len() < 4 {
                continue;
            }
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
            out.0 += busy;
            out.1 += busy + at(3) + at(4);
            out.2 += 1;
        }
        (out.2 > 0).then_some(out)
    };
    sum(allowed).or_else(|| sum(None))
}

/// The CPUs this process may run on, from the `Cpus_allowed_list:` line of
/// `/proc/self/status` (`0-3,8,10-11`).
pub(crate) fn parse_allowed_cpus(status: &str) -> Option<Vec<usize>> {
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let one: usize = part.trim().parse().ok()?;
                (one, one)
            }
        };
        // A list is bounded by the kernel's CPU count; refuse a malformed huge range.
        if hi < lo || hi - lo > 1 << 16 {
            return None;
        }
        out.extend(lo..=hi);
    }
    (!out.is_empty()).then_some(out)
}

/// utime + stime + cutime + cstime (fields 14-17) of `/proc/self/stat`. The command name in
/// field 2 may hold spaces and parentheses, so fields are counted after its last `)`.
pub(crate) fn parse_own_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field n is at index n - 3.
    let mut sum = 0u64;
    for n in 14..=17 {
        // cutime and cstime are signed in the kernel's format; never negative in practice.
        let v: i64 = fields.get(n - 3)?.parse().ok()?;
        sum += v.max(0) as u64;
    }
    Some(sum)
}

/// The mean of the `cpu MHz` lines of `/proc/cpuinfo`.
pub(crate) fn parse_cpuinfo_mhz(s: &str) -> Option<f64> {
    let values: Vec<f64> = s
        .lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(_, v)| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  1000 0 500 8000 100 0 10 5 0 0\n\
                        cpu0 600 0 300 3000 50 0 5 5 0 0\n\
                        cpu1 400 0 200 5000 50 0 5 0 0 0\n\
                        intr 12345 0 0\n\
                        ctxt 999\n";

    #[test]
    fn the_load_average_is_the_first_field() {
        assert_eq!(parse_load1("5.64 4.29 3.31 7/135 2190\n"), Some(5.64));
        assert_eq!(parse_load1("0.00 0.01 0.05 1/80 1"), Some(0.0));
        assert_eq!(parse_load1(""), None);
        assert_eq!(parse_load1("nan 1 1 1/1 1"), None);
        assert_eq!(parse_load1("garbage"), None);
    }

    #[test]
    fn stat_sums_the_allowed_cpus_and_counts_steal_as_busy() {
        // cpu0: busy 600+300+5+5 = 910, total 910+3000+50 = 3960; cpu1: 605, 5655.
        assert_eq!(parse_stat(STAT, None), Some((1515, 9615, 2)));
        assert_eq!(parse_stat(STAT, Some(&[1])), Some((605, 5655, 1)));
        // An affinity naming CPUs without a line falls back to every CPU.
        assert_eq!(parse_stat(STAT, Some(&[7])), Some((1515, 9615, 2)));
        // Old kernels print only four fields.
        assert_eq!(parse_stat("cpu0 1 2 3 4\n", None), Some((6, 10, 1)));
        assert_eq!(parse_stat("cpu  1 2 3 4\nintr 1\n", None), None);
        assert_eq!(parse_stat("", None), None);
    }

    #[test]
    fn allowed_cpu_lists_expand_ranges() {
        let status = "Name:\tmeasured\nCpus_allowed:\tf\nCpus_allowed_list:\t0-2,5,7-8\n";
        assert_eq!(parse_allowed_cpus(status), Some(vec![0, 1, 2, 5, 7, 8]));
        assert_eq!(parse_allowed_cpus("Cpus_allowed_list:\t3\n"), Some(vec![3]));
        assert_eq!(parse_allowed_cpus("Cpus_allowed_list:\t3-1\n"), None);
        assert_eq!(parse_allowed_cpus("Cpus_allowed_list:\t0-99999999\n"), None);
        assert_eq!(parse_allowed_cpus("Name:\tx\n"), None);
    }

    #[test]
    fn own_ticks_count_after_the_last_parenthesis() {
        let stat = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194304 98 0 0 0 \
                    120 30 7 3 20 0 1 0 1198898 3133440 413";
        assert_eq!(parse_own_ticks(stat), Some(160));
        assert_eq!(parse_own_ticks("1 (x) S 1 2"), None);
        assert_eq!(parse_own_ticks("no parenthesis"), None);
    }

    #[test]
    fn cpuinfo_clocks_are_averaged() {
        let s = "processor\t: 0\ncpu MHz\t\t: 2000.000\n\nprocessor\t: 1\ncpu MHz\t\t: 3000.500\n";
        assert_eq!(parse_cpuinfo_mhz(s), Some(2500.25));
        assert_eq!(parse_cpuinfo_mhz("processor\t: 0\nBogoMIPS\t: 50.00\n"), None);
    }

    #[test]
    fn other_processes_get_the_busy_ticks_this_process_did_not_use() {
        let at = |busy, total, own| Ticks {
            busy,
            total,
            cpus: 2,
            own,
        };
        // 200 ticks of wall time on 2 CPUs (400 in all): 300 busy, 100 of them ours.
        assert_eq!(other_cores(at(0, 0, 0), at(300, 400, 100)), Some(1.0));
        // Our ticks can run ahead of the CPUs' by a tick: never negative.
        assert_eq!(other_cores(at(0, 0, 0), at(1, 2, 3)), Some(0.0));
        assert_eq!(other_cores(at(0, 0, 0), at(0, 0, 0)), None);
        let mut fewer = at(10, 10, 0);
        fewer.cpus = 1;
        assert_eq!(other_cores(at(0, 0, 0), fewer), None);
    }

    #[test]
    fn a_probe_reads_this_machine_where_proc_exists() {
        let probe = LoadProbe::start();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let load = probe.finish();
        if std::path::Path::new("/proc/loadavg").exists() {
            assert!(load.load_before.is_some() && load.load_after.is_some(), "{load:?}");
            assert!(load.load().unwrap() >= 0.0);
        }
        assert!(load.cores.unwrap_or(1) >= 1);
        if let Some(o) = load.other_cpu {
            assert!(o >= 0.0, "{load:?}");
        }
    }
}
