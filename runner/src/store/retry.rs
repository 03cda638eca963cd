//! The one retry policy for the results database (sink and queue -> **retry** -> db): how long
//! one attempt may take, how long a probe of a database that went away may take, and how the
//! wait between attempts grows. A local run's trial sink and a queue worker's statements both
//! retry by it.

use crate::db;
use std::time::{Duration, Instant};

/// How long one attempt to write to the database may take before it counts as a failure
/// (a database that went away can otherwise hold a write for the pool's whole timeout).
pub const ATTEMPT: Duration = Duration::from_secs(10);
/// While the database is down, a retry first asks it this long for `SELECT 1`, so a retry
/// holds the run up for no longer than that.
pub const PROBE: Duration = Duration::from_secs(1);
/// Retries back off from `FIRST_BACKOFF`, doubling up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(15);

/// The wait before the next attempt: [`FIRST_BACKOFF`], doubling up to [`MAX_BACKOFF`].
#[derive(Debug, Clone, Copy)]
pub struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Backoff(FIRST_BACKOFF)
    }
}

impl Backoff {
    /// The wait now.
    pub fn wait(self) -> Duration {
        self.0
    }

    /// The wait after one more failure.
    pub fn next(self) -> Backoff {
        Backoff((self.0 * 2).min(MAX_BACKOFF))
    }
}

/// Why a database call gave no result within its limit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unanswered {
    /// The database answered with an error (its text, any password redacted).
    #[error("{0}")]
    Failed(String),
    #[error("no answer within {} s", .0.as_secs())]
    Silent(Duration),
}

/// Runs database work for at most `limit`; an error (its password redacted) or no answer
/// becomes an [`Unanswered`].
pub fn answer<T, E: std::fmt::Display>(
    url: &str,
    limit: Duration,
    work: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, Unanswered> {
    match db::wait(async { tokio::time::timeout(limit, work).await }) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Unanswered::Failed(db::redact_text(&e.to_string(), url))),
        Err(_) => Err(Unanswered::Silent(limit)),
    }
}

/// What [`retry`] tells its caller as it goes.
pub enum Progress<'a> {
    /// The first failure (the error's text); later ones are not told.
    Failing(&'a str),
    /// The database answered after failing.
    Answers,
}

/// How a retried call ended without a result.
pub enum GaveUp<E> {
    /// An error that retrying cannot fix.
    Fatal(E),
    /// Still failing when the wait ran out: the last error.
    Waited(String),
}

/// Runs `f`, retrying by the policy while it fails with a `retryable` error or gets no answer
/// within [`ATTEMPT`], for up to `wait`.
pub fn retry<T, E, Fut>(
    url: &str,
    wait: Duration,
    retryable: impl Fn(&E) -> bool,
    mut told: impl FnMut(Progress<'_>),
    mut f: impl FnMut() -> Fut,
) -> Result<T, GaveUp<E>>
where
    E: std::fmt::Display,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let deadline = Instant::now() + wait;
    let mut backoff = Backoff::default();
    let mut failed = false;
    loop {
        let error = match db::wait(async { tokio::time::timeout(ATTEMPT, f()).await }) {
            Ok(Ok(v)) => {
                if failed {
                    told(Progress::Answers);
                }
                return Ok(v);
            }
            Ok(Err(e)) if !retryable(&e) => return Err(GaveUp::Fatal(e)),
            Ok(Err(e)) => db::redact_text(&e.to_string(), url),
            Err(_) => Unanswered::Silent(ATTEMPT).to_string(),
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(GaveUp::Waited(error));
        }
        if !failed {
            told(Progress::Failing(&error));
            failed = true;
        }
        std::thread::sleep(backoff.wait().min(deadline - now));
        backoff = backoff.next();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_ceiling() {
        let waits: Vec<u128> = std::iter::successors(Some(Backoff::default()), |b| Some(b.next()))
            .take(9)
            .map(|b| b.wait().as_millis())
            .collect();
        assert_eq!(waits, [250, 500, 1000, 2000, 4000, 8000, 15000, 15000, 15000]);
    }

    #[test]
    fn a_retry_tells_the_first_failure_once_and_then_the_answer() {
        let mut calls = 0;
        let mut told = Vec::new();
        let got = retry(
            "postgres://u:secret@h/db",
            Duration::from_secs(5),
            |_: &String| true,
            |p| {
                told.push(match p {
                    Progress::Failing(e) => format!("failing: {e}"),
                    Progress::Answers => "answers".to_owned(),
                })
            },
            || {
                calls += 1;
                let n = calls;
                async move {
                    if n < 3 {
                        Err(format!("refused by postgres://u:secret@h/db (try {n})"))
                    } else {
                        Ok(n)
                    }
                }
            },
        );
        assert!(matches!(got, Ok(3)));
        assert_eq!(told.len(), 2, "{told:?}");
        assert!(
            told[0].starts_with("failing: refused by") && !told[0].contains("secret"),
            "{told:?}"
        );
        assert_eq!(told[1], "answers");
    }

    #[test]
    fn a_fatal_error_is_not_retried_and_a_lasting_one_gives_up() {
        let mut calls = 0;
        let fatal = retry(
            "",
            Duration::from_secs(5),
            |_: &String| false,
            |_| {},
            || {
                calls += 1;
                async { Err::<(), _>("bad SQL".to_owned()) }
            },
        );
        assert!(matches!(fatal, Err(GaveUp::Fatal(e)) if e == "bad SQL"));
        assert_eq!(calls, 1);
        let lasting = retry(
            "",
            Duration::from_millis(600),
            |_: &String| true,
            |_| {},
            || async { Err::<(), _>("down".to_owned()) },
        );
        assert!(matches!(lasting, Err(GaveUp::Waited(e)) if e == "down"));
    }
}
