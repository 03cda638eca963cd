-- Results store: runs, their trials, stage results and metrics (SQLite).
CREATE TABLE environments (
    hash             TEXT PRIMARY KEY,
    host             TEXT NOT NULL,
    cpu              TEXT NOT NULL,
    cores            INTEGER NOT NULL,
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
    planned_trials   INTEGER NOT NULL,
    started_at       TEXT NOT NULL,
    finished_at      TEXT,
    git_commit       TEXT NOT NULL,
    git_dirty        BOOLEAN NOT NULL,
    environment_hash TEXT NOT NULL REFERENCES environments (hash),
    command          TEXT NOT NULL
);
CREATE INDEX runs_by_experiment ON runs (experiment, started_at);

CREATE TABLE trials (
    run_id           TEXT NOT NULL REFERENCES runs (id),
    trial_index      INTEGER NOT NULL,
    config           TEXT NOT NULL,
    variant          TEXT NOT NULL,
    sweep            TEXT NOT NULL,
    repetition       INTEGER NOT NULL,
    block            INTEGER NOT NULL,
    warmup           BOOLEAN NOT NULL,
    status           TEXT NOT NULL,
    error            TEXT,
    seconds          REAL NOT NULL,
    started_at       TEXT NOT NULL,
    finished_at      TEXT NOT NULL,
    environment_hash TEXT NOT NULL REFERENCES environments (hash),
    worker           TEXT NOT NULL,
    PRIMARY KEY (run_id, trial_index)
);

CREATE TABLE stage_results (
    run_id         TEXT NOT NULL,
    trial_index    INTEGER NOT NULL,
    position       INTEGER NOT NULL,
    stage          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    status         TEXT NOT NULL,
    cache_hit      BOOLEAN NOT NULL,
    seconds        REAL NOT NULL,
    peak_rss_bytes INTEGER,
    error          TEXT,
    content_hash   TEXT,
    PRIMARY KEY (run_id, trial_index, stage),
    FOREIGN KEY (run_id, trial_index) REFERENCES trials (run_id, trial_index)
);

CREATE TABLE metrics (
    run_id      TEXT NOT NULL,
    trial_index INTEGER NOT NULL,
    stage       TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    name        TEXT NOT NULL,
    value       REAL NOT NULL,
    unit        TEXT NOT NULL,
    step        INTEGER,
    PRIMARY KEY (run_id, trial_index, stage, seq),
    FOREIGN KEY (run_id, trial_index) REFERENCES trials (run_id, trial_index)
);
