-- Results store: runs, their trials, stage results and metrics (Postgres).
CREATE TABLE environments (
    hash             TEXT PRIMARY KEY,
    host             TEXT NOT NULL,
    cpu              TEXT NOT NULL,
    cores            BIGINT NOT NULL,
    os               TEXT NOT NULL,
    gpu              TEXT NOT NULL,
    measured_version TEXT NOT NULL,
    rustc            TEXT NOT NULL,
    details          TEXT NOT NULL
);

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    experiment       TEXT NOT NULL,
    description      TEXT NOT NULL,
    manifest_path    TEXT NOT NULL,
    manifest_text    TEXT NOT NULL,
    manifest_hash    TEXT NOT NULL,
    smoke            BOOLEAN NOT NULL,
    seed             TEXT NOT NULL,
    status           TEXT NOT NULL,
    planned_trials   BIGINT NOT NULL,
    started_at       TIMESTAMPTZ NOT NULL,
    finished_at      TIMESTAMPTZ,
    git_commit       TEXT NOT NULL,
    git_dirty        BOOLEAN NOT NULL,
    environment_hash TEXT NOT NULL REFERENCES environments (hash),
    command          TEXT NOT NULL
);
CREATE INDEX runs_by_experiment ON runs (experiment, started_at);

CREATE TABLE trials (
    run_id           TEXT NOT NULL REFERENCES runs (id),
    trial_index      BIGINT NOT NULL,
    config           TEXT NOT NULL,
    variant          TEXT NOT NULL,
    sweep            TEXT NOT NULL,
    repetition       BIGINT NOT NULL,
    block            BIGINT NOT NULL,
    warmup           BOOLEAN NOT NULL,
    status           TEXT NOT NULL,
    error            TEXT,
    seconds          DOUBLE PRECISION NOT NULL,
    started_at       TIMESTAMPTZ NOT NULL,
    finished_at      TIMESTAMPTZ NOT NULL,
    environment_hash TEXT NOT NULL REFERENCES environments (hash),
    worker           TEXT NOT NULL,
    PRIMARY KEY (run_id, trial_index)
);

CREATE TABLE stage_results (
    run_id         TEXT NOT NULL,
    trial_index    BIGINT NOT NULL,
    position       BIGINT NOT NULL,
    stage          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    status         TEXT NOT NULL,
    cache_hit      BOOLEAN NOT NULL,
    seconds        DOUBLE PRECISION NOT NULL,
    peak_rss_bytes BIGINT,
    error          TEXT,
    content_hash   TEXT,
    PRIMARY KEY (run_id, trial_index, stage),
    FOREIGN KEY (run_id, trial_index) REFERENCES trials (run_id, trial_index)
);

CREATE TABLE metrics (
    run_id      TEXT NOT NULL,
    trial_index BIGINT NOT NULL,
    stage       TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    name        TEXT NOT NULL,
    value       DOUBLE PRECISION NOT NULL,
    unit        TEXT NOT NULL,
    step        BIGINT,
    PRIMARY KEY (run_id, trial_index, stage, seq),
    FOREIGN KEY (run_id, trial_index) REFERENCES trials (run_id, trial_index)
);
