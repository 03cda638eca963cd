//! A running command watched from the stage's own thread (command stage -> **supervise**): its
//! stdout and stderr, its exit, its time limit and Ctrl-C, all in one `poll` loop. No thread
//! is started per trial: creating and ending helper threads was a tenth of the cost of a short
//! trial.
//!
//! The program's exit is seen at once through a pidfd (Linux 5.3 and later). Where one cannot
//! be opened, the loop asks for the exit at every wake-up without waiting (`WNOHANG`), waking
//! every millisecond once the output has ended.

use super::output::{Lines, Tail};
use super::process::{kill_tree, try_wait_with_rusage, wait_with_rusage, Killed, PidWindow};
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{ChildStderr, ChildStdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the time limit, Ctrl-C and the pid counter are checked while the program runs.
const TICK: Duration = Duration::from_millis(20);

/// How often the loop asks for the exit without a pidfd, once the output has ended.
const EXIT_TICK: Duration = Duration::from_millis(1);

/// What to watch: the program, the mark of its processes, and when to end it.
pub(super) struct Watch<'a> {
    pub pid: libc::pid_t,
    pub token: &'a str,
    pub window: &'a PidWindow,
    pub deadline: Option<Instant>,
    pub cancel: &'a AtomicBool,
}

/// How the program ended.
pub(super) struct Watched {
    /// Its exit code, or the signal that ended it.
    pub status: Result<i32, i32>,
    /// Its peak resident memory, in KiB.
    pub maxrss_kib: Option<u64>,
    /// Ended by the time limit or by Ctrl-C.
    pub killed: Option<Killed>,
    /// The last `tail` lines of its stderr.
    pub stderr_tail: String,
}

/// One output pipe, read as it fills until its end.
struct Pipe<R> {
    reader: Option<R>,
    /// `read` may wait (the pipe could not be made non-blocking): read once per wake-up.
    blocking: bool,
    lines: Lines,
}

impl<R: Read + AsFd> Pipe<R> {
    fn new(reader: R) -> Self {
        // Read only when `poll` says there is something, and never wait in `read`.
        let blocking = rustix::io::ioctl_fionbio(&reader, true).is_err();
        Self {
            reader: Some(reader),
            blocking,
            lines: Lines::default(),
        }
    }

    /// Reads what is there; at the end (or on an error) closes the pipe.
    fn drain(&mut self, buf: &mut [u8], f: &mut impl FnMut(usize, &str)) {
        let Some(r) = self.reader.as_mut() else { return };
        loop {
            match r.read(buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.lines.feed(&buf[..n], f);
                    if self.blocking {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        self.reader = None;
        self.lines.finish(f);
    }

    fn open(&self) -> bool {
        self.reader.is_some()
    }
}

/// Watches the program until it has exited and both its outputs have ended, calling
/// `on_stdout` with each stdout line. Whatever it left running when it exited is ended too,
/// so that the pipes close and nothing of it outlives the stage.
pub(super) fn supervise(
    w: &Watch<'_>,
    stdout: ChildStdout,
    stderr: ChildStderr,
    tail: usize,
    mut on_stdout: impl FnMut(usize, &str),
) -> Watched {
    let mut out = Pipe::new(stdout);
    let mut err = Pipe::new(stderr);
    let mut stderr_tail = Tail::new(tail);
    let mut on_stderr = |_: usize, line: &str| stderr_tail.push(line);
    let mut pidfd: Option<OwnedFd> = rustix::process::Pid::from_raw(w.pid)
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    let has_pidfd = pidfd.is_some();
    let mut exit: Option<(Result<i32, i32>, Option<u64>)> = None;
    let mut killed: Option<Killed> = None;
    let mut next_tick = Instant::now() + TICK;
    let mut buf = [0u8; 16 * 1024];
    while exit.is_none() || out.open() || err.open() {
        let wait = if exit.is_none() && !out.open() && !err.open() && !has_pidfd {
            EXIT_TICK
        } else {
            next_tick.saturating_duration_since(Instant::now())
        };
        let [out_ready, err_ready, exited] = ready(&out, &err, pidfd.as_ref(), wait);
        if out_ready {
            out.drain(&mut buf, &mut on_stdout);
        }
        if err_ready {
            err.drain(&mut buf, &mut on_stderr);
        }
        if exit.is_none() {
            let reaped = if exited {
                Some(wait_with_rusage(w.pid))
            } else if !has_pidfd {
                try_wait_with_rusage(w.pid)
            } else {
                None
            };
            if let Some(reaped) = reaped {
                exit = Some(reaped);
                pidfd = None;
                kill_tree(None, w.token, w.window.floor());
            }
        }
        if Instant::now() >= next_tick {
            next_tick = Instant::now() + TICK;
            if w.tick(exit.is_some(), &mut killed) {
                break;
            }
        }
    }
    let (status, maxrss_kib) = exit.unwrap_or((Err(0), None));
    Watched {
        status,
        maxrss_kib,
        killed,
        stderr_tail: stderr_tail.text(),
    }
}

/// Waits up to `wait` for output on either pipe still open or for the program's exit; says
/// which of the three is ready.
fn ready<O: AsFd, E: AsFd>(out: &Pipe<O>, err: &Pipe<E>, pidfd: Option<&OwnedFd>, wait: Duration) -> [bool; 3] {
    let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(3);
    let mut slots = [None; 3];
    let watched = [
        out.reader.as_ref().map(AsFd::as_fd),
        err.reader.as_ref().map(AsFd::as_fd),
        pidfd.map(AsFd::as_fd),
    ];
    for (slot, fd) in slots.iter_mut().zip(&watched) {
        if let Some(fd) = fd {
            *slot = Some(fds.len());
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
    }
    let timeout = Timespec::try_from(wait).unwrap_or(Timespec { tv_sec: 0, tv_nsec: 0 });
    // An interrupted poll only wakes the loop early.
    let _ = poll(&mut fds, Some(&timeout));
    slots.map(|slot| slot.is_some_and(|i| !fds[i].revents().is_empty()))
}

impl Watch<'_> {
    /// The checks of every tick: while the program runs, the pid counter, the time limit and
    /// Ctrl-C (which end its whole tree); once it has exited, only the last two. `true`: stop
    /// reading (it exited, but something holds its output open past the limit or Ctrl-C).
    fn tick(&self, exited: bool, killed: &mut Option<Killed>) -> bool {
        let reason = if self.cancel.load(Ordering::SeqCst) {
            Some(Killed::Cancelled)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Killed::Timeout)
        } else {
            None
        };
        match (exited, reason) {
            (false, None) => self.window.observe(),
            (false, Some(reason)) if killed.is_none() => {
                // The program is not reaped yet, so its process group id cannot have been
                // reused.
                kill_tree(Some(self.pid), self.token, None);
                *killed = Some(reason);
            }
            (true, Some(reason)) => {
                killed.get_or_insert(reason);
                return true;
            }
            _ => {}
        }
        false
    }
}
