-- A running run beats: `heartbeat_at` is refreshed while its process lives; a `running` run
-- whose heartbeat is older than `lease_seconds` is shown as abandoned.
ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
ALTER TABLE runs ADD COLUMN lease_seconds REAL NOT NULL DEFAULT 60;
