-- Trial queue for runs spread over many workers (Postgres only: SQLite cannot be shared
-- across machines). One row per claimable unit: one block of the run's trial schedule.
CREATE TABLE queue_runs (
    run_id        TEXT PRIMARY KEY REFERENCES runs (id),
    lease_seconds DOUBLE PRECISION NOT NULL,
    slurm_job_id  TEXT,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE queue_units (
    run_id           TEXT NOT NULL REFERENCES queue_runs (run_id),
    unit             BIGINT NOT NULL,
    trials           BIGINT NOT NULL,
    -- queued -> running (leased) -> done | failed; an expired lease is claimable again.
    status           TEXT NOT NULL DEFAULT 'queued',
    worker           TEXT,
    lease_expires_at TIMESTAMPTZ,
    attempts         BIGINT NOT NULL DEFAULT 0,
    claimed_at       TIMESTAMPTZ,
    finished_at      TIMESTAMPTZ,
    error            TEXT,
    PRIMARY KEY (run_id, unit)
);
CREATE INDEX queue_units_claimable ON queue_units (status, run_id, unit);
