//! The command's processes: the guard that ends them with measured, the pid window they fall
//! in, and cleanup that kills the whole process tree (its group, and descendants marked with the
//! stage's token) when the stage ends or is cancelled.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

pub(super) enum Killed {
    Timeout,
    Cancelled,
}

/// What ends this process's stages when it dies, even by `kill -9`: a shell started once per
/// process, in its own process group, that reads a pipe from it. Before each spawn measured
/// writes `+`, after the stage's processes are gone `-`. When the pipe closes (measured
/// exited or was killed) with stages still counted, the guard kills every process marked
/// with this process's stage tokens (`MEASURED_STAGE_TOKEN=<pid>-...`), for up to a second.
/// It lets stages be spawned with `posix_spawn`: `PR_SET_PDEATHSIG` has to be set in the child
/// before `exec`, which makes the spawn a `fork` (0.35 ms per `true` trial).
pub(super) struct Guard {
    pipe: std::sync::Mutex<std::process::ChildStdin>,
}

const GUARD_SCRIPT: &str = r#"n=0
while IFS= read -r line; do
  case $line in
    +) n=$((n + 1)) ;;
    -) n=$((n - 1)) ;;
  esac
done
[ "$n" -gt 0 ] || exit 0
for round in 1 2 3 4 5 6 7 8 9 10; do
  found=
  for d in /proc/[0-9]*; do
    if tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -q "^MEASURED_STAGE_TOKEN=$1-"; then
      kill -9 "${d#/proc/}" 2>/dev/null && found=1
    fi
  done
  [ -n "$found" ] || exit 0
  sleep 0.1
done
"#;

impl Guard {
    /// The guard of this process, started on first use; `None` when it cannot start or has
    /// died (then each stage gets `PR_SET_PDEATHSIG` instead).
    pub(super) fn get() -> Option<&'static Guard> {
        static GUARD: std::sync::OnceLock<Option<Guard>> = std::sync::OnceLock::new();
        GUARD
            .get_or_init(|| {
                let mut child = Command::new("sh")
                    .arg("-c")
                    .arg(GUARD_SCRIPT)
                    .arg("measured-guard")
                    .arg(std::process::id().to_string())
                    .env_remove(TOKEN_VAR)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    // Out of the terminal's process group: Ctrl-C is for measured, which then
                    // ends its stages itself.
                    .process_group(0)
                    .spawn()
                    .ok()?;
                let pipe = child.stdin.take()?;
                Some(Guard {
                    pipe: std::sync::Mutex::new(pipe),
                })
            })
            .as_ref()
    }

    pub(super) fn say(&self, line: &[u8]) -> bool {
        use std::io::Write;
        self.pipe.lock().is_ok_and(|mut p| p.write_all(line).is_ok())
    }
}

/// One stage counted by the guard, from before its spawn until it is dropped, after its
/// processes are gone (or its spawn failed).
pub(super) struct GuardedStage(&'static Guard);

impl GuardedStage {
    pub(super) fn begin() -> Option<GuardedStage> {
        let guard = Guard::get()?;
        guard.say(b"+\n").then_some(GuardedStage(guard))
    }
}

impl Drop for GuardedStage {
    fn drop(&mut self) {
        self.0.say(b"-\n");
    }
}

/// The pids a stage's processes can have, from the namespace's pid counter
/// (`/proc/sys/kernel/ns_last_pid`), so that the check after the program exits reads the
/// environment of the processes started since, not of every process on the machine (0.26 ms
/// per trial with 65 processes; a workstation has hundreds).
///
/// Linux hands out pids in increasing order until it wraps at `pid_max`: while the counter
/// has not wrapped, every process the stage started has a pid above the counter's value just
/// before the spawn. The stage reads the counter every tick (20 ms) while its program runs, and a wrap shows as a
/// value lower than the one before (a whole cycle in 20 ms would take at least 32,768 forks).
/// After a wrap, or where the counter cannot be read, every process is read.
pub(super) struct PidWindow {
    first: Option<i64>,
    last: std::sync::atomic::AtomicI64,
    wrapped: std::sync::atomic::AtomicBool,
}

impl PidWindow {
    pub(super) fn open() -> Self {
        Self::starting_at(last_pid())
    }

    pub(super) fn starting_at(first: Option<i64>) -> Self {
        Self {
            first,
            last: std::sync::atomic::AtomicI64::new(first.unwrap_or(0)),
            wrapped: std::sync::atomic::AtomicBool::new(first.is_none()),
        }
    }

    pub(super) fn observe(&self) {
        self.saw(last_pid());
    }

    pub(super) fn saw(&self, value: Option<i64>) {
        match value {
            Some(v) if v >= self.last.swap(v, Ordering::SeqCst) => {}
            _ => self.wrapped.store(true, Ordering::SeqCst),
        }
    }

    /// The lowest pid a process of the stage can have; `None`: any.
    pub(super) fn floor(&self) -> Option<libc::pid_t> {
        self.floor_now(last_pid())
    }

    /// [`PidWindow::floor`] with the counter reading `now`.
    pub(super) fn floor_now(&self, now: Option<i64>) -> Option<libc::pid_t> {
        self.saw(now);
        if self.wrapped.load(Ordering::SeqCst) {
            return None;
        }
        self.first.and_then(|f| libc::pid_t::try_from(f + 1).ok())
    }
}

/// The last pid handed out in this pid namespace.
fn last_pid() -> Option<i64> {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The environment variable that marks a stage's processes.
pub(super) const TOKEN_VAR: &str = "MEASURED_STAGE_TOKEN";

/// A mark unique to one stage run of this process.
pub(super) fn stage_token() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Processes of this user whose environment carries `TOKEN_VAR=token`: a stage's program and
/// everything it started, whichever process group or session they moved to. From pid `floor`
/// up only (`None`: every process).
fn marked(token: &str, floor: Option<libc::pid_t>) -> Vec<libc::pid_t> {
    let needle = format!("{TOKEN_VAR}={token}");
    let carries = |pid: &libc::pid_t| {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
    };
    let last = last_pid();
    // A counter below the floor has wrapped since: any pid may be the stage's.
    let floor = floor.filter(|&f| last.is_none_or(|l| l + 1 >= i64::from(f)));
    if let Some(pids) = floor.zip(last).and_then(|(f, l)| window_pids(f, l)) {
        return pids.filter(carries).collect();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&pid| floor.is_none_or(|f| pid >= f))
        .filter(carries)
        .collect()
}

/// Most pids tried one by one rather than listing `/proc`.
const WINDOW_PROBES: i64 = 256;

/// The pids from `floor` to the counter's value `last`, when there are few: a stage's
/// processes are among them, and trying each (most are gone, or threads) is cheaper than
/// listing every process of the machine. `None` when there are too many, or the counter went
/// below `floor` (it wrapped).
pub(super) fn window_pids(floor: libc::pid_t, last: i64) -> Option<std::ops::RangeInclusive<libc::pid_t>> {
    let count = last - i64::from(floor) + 1;
    if !(0..=WINDOW_PROBES).contains(&count) {
        return None;
    }
    let last = libc::pid_t::try_from(last).ok()?;
    Some(floor..=last)
}

/// Ends a stage's whole tree: its process group (when `group` is given and not yet reaped),
/// then every process marked with its token, until none is left (at most about 2 s). Only
/// processes from pid `floor` up are read (`None`: all of them; see [`PidWindow`]).
pub(super) fn kill_tree(group: Option<libc::pid_t>, token: &str, floor: Option<libc::pid_t>) {
    if let Some(pid) = group {
        // SAFETY: plain syscall; a negative pid signals the whole process group.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    for _ in 0..100 {
        let left = marked(token, floor);
        if left.is_empty() {
            return;
        }
        for p in left {
            // SAFETY: plain syscall on a process of ours, found by its mark.
            unsafe {
                libc::kill(p, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `pid`, returning its exit code (or the signal that ended it) and peak RSS in KiB.
pub(super) fn wait_with_rusage(pid: libc::pid_t) -> (Result<i32, i32>, Option<u64>) {
    wait4(pid, 0).unwrap_or((Err(0), None))
}

/// [`wait_with_rusage`] if `pid` has exited; `None` while it runs.
pub(super) fn try_wait_with_rusage(pid: libc::pid_t) -> Option<(Result<i32, i32>, Option<u64>)> {
    wait4(pid, libc::WNOHANG)
}

/// `wait4` on our child `pid`: `None` while it runs (with `WNOHANG`); `(Err(0), None)` when it
/// cannot be waited for.
fn wait4(pid: libc::pid_t, options: libc::c_int) -> Option<(Result<i32, i32>, Option<u64>)> {
    let mut status: libc::c_int = 0;
    // SAFETY: zeroed rusage is a valid value to be filled by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our own child, status and usage point to valid memory.
        let r = unsafe { libc::wait4(pid, &mut status, options, &mut usage) };
        if r == pid {
            break;
        }
        if r == 0 {
            return None;
        }
        if r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return Some((Err(0), None));
    }
    let code = if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Err(libc::WTERMSIG(status))
    };
    Some((code, Some(usage.ru_maxrss.max(0) as u64)))
}
