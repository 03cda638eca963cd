//! A run's status (store -> **status** -> commands, rundata, publish, queue): one enum for the
//! whole crate, turned into text only where a run row or a journal line is written or read.
//! The text is the one every earlier version stored, so existing databases and journals read.
//! A queue unit's status (`queue_units.status`) is its own enum here too, for the same reason.

use std::fmt;

/// How far a stored run got. Read from the `runs.status` column and a journal's status line
/// with [`RunStatus::parse`], written back with [`RunStatus::as_str`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// Its trials are being run (by `measured run` or by queue workers), or its process died
    /// without saying so (see [`super::RunRow::abandoned`]).
    Running,
    /// Every planned trial is stored.
    Finished,
    /// Stopped by Ctrl-C, or its queue workers are gone with units left; `--resume` (or
    /// `measured worker --run`) continues it.
    Interrupted,
    /// Ended before its plan: every config's first trial failed alike, its primary metric was
    /// never produced, or its process stopped on an error (recorded with the run).
    Stopped,
    /// Ran every trial, but the database holds fewer than planned; never `finished`.
    Incomplete,
    /// A queued run whose every unit ended, some of them failed.
    Failed,
    /// A status this version does not know (written by a newer one), kept as it reads.
    Other(String),
}

impl RunStatus {
    /// The text stored in the database and the journal (and shown).
    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Finished => "finished",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Stopped => "stopped",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Failed => "failed",
            RunStatus::Other(text) => text,
        }
    }

    /// The status a stored text names.
    pub fn parse(text: &str) -> RunStatus {
        match text {
            "running" => RunStatus::Running,
            "finished" => RunStatus::Finished,
            "interrupted" => RunStatus::Interrupted,
            "stopped" => RunStatus::Stopped,
            "incomplete" => RunStatus::Incomplete,
            "failed" => RunStatus::Failed,
            other => RunStatus::Other(other.to_owned()),
        }
    }

    /// Whether a run that ends with this status records when it ended (`finished_at`): one
    /// that cannot go on by itself. An interrupted or incomplete run is resumed instead.
    pub fn is_final(&self) -> bool {
        matches!(self, RunStatus::Finished | RunStatus::Stopped)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for RunStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for RunStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(RunStatus::parse(&text))
    }
}

/// Where one unit of a queued run stands (`queue_units.status`). Read with
/// [`UnitStatus::parse`], bound into the queue's SQL and shown with [`UnitStatus::as_str`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitStatus {
    /// Waiting for a worker to claim it.
    Queued,
    /// A worker holds its lease (or did, until the lease expired).
    Running,
    /// Every trial of it is stored.
    Done,
    /// It used up its attempts, or its trials stopped on an error common to every config.
    Failed,
    /// A status this version does not know (written by a newer one), kept as it reads.
    Other(String),
}

impl UnitStatus {
    /// The text stored in `queue_units.status` (and shown).
    pub fn as_str(&self) -> &str {
        match self {
            UnitStatus::Queued => "queued",
            UnitStatus::Running => "running",
            UnitStatus::Done => "done",
            UnitStatus::Failed => "failed",
            UnitStatus::Other(text) => text,
        }
    }

    /// The status a stored text names.
    pub fn parse(text: &str) -> UnitStatus {
        match text {
            "queued" => UnitStatus::Queued,
            "running" => UnitStatus::Running,
            "done" => UnitStatus::Done,
            "failed" => UnitStatus::Failed,
            other => UnitStatus::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for UnitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a stored run has nothing to compare: it stopped (every config's first trial failed
/// alike, or its primary metric was never produced), or no measured trial of it succeeded.
/// Comparisons, `history` and the site's verdicts leave such a run out and say so.
pub fn measured_nothing(status: &RunStatus, trials: &[crate::record::TrialRecord]) -> bool {
    *status == RunStatus::Stopped || !trials.iter().any(|t| t.ok && !t.warmup)
}

/// The status shown for a running run whose heartbeat is older than its lease (never stored).
pub(super) const ABANDONED: &str = "abandoned";

#[cfg(test)]
mod tests {
    use super::{RunStatus, UnitStatus};

    /// Every status reads back as the text it was stored as, unknown ones included.
    #[test]
    fn statuses_read_back_as_stored() {
        for text in [
            "running",
            "finished",
            "interrupted",
            "stopped",
            "incomplete",
            "failed",
            "paused",
        ] {
            assert_eq!(RunStatus::parse(text).as_str(), text);
        }
        assert_eq!(RunStatus::parse("paused"), RunStatus::Other("paused".into()));
        let json = serde_json::to_string(&RunStatus::Stopped).unwrap();
        assert_eq!(json, "\"stopped\"");
        assert_eq!(serde_json::from_str::<RunStatus>(&json).unwrap(), RunStatus::Stopped);
    }

    /// Every unit status reads back as the text it was stored as, unknown ones included.
    #[test]
    fn unit_statuses_read_back_as_stored() {
        for text in ["queued", "running", "done", "failed", "paused"] {
            assert_eq!(UnitStatus::parse(text).as_str(), text);
        }
        assert_eq!(UnitStatus::parse("done"), UnitStatus::Done);
    }
}
