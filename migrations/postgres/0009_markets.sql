-- What the stock tables hold, so that a run can tell whether they are the data its manifest
-- declares (`[data]`) without reading every bar, and never mistake one market for another.

-- The synthetic market (`symbols.source = 'synth'`) as `measured data synth` or a run's data
-- preparation generated it: at most one row, deleted before a new market is written and
-- written after it, so a row always describes the market in the tables. Dates are DATEs.
CREATE TABLE IF NOT EXISTS synth_market (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    symbols     BIGINT NOT NULL,
    days        BIGINT NOT NULL,
    start_date  DATE NOT NULL,
    -- A u64, which does not fit a BIGINT.
    seed        TEXT NOT NULL,
    style       TEXT NOT NULL,
    bar_rows    BIGINT NOT NULL,
    first_date  DATE NOT NULL,
    last_date   DATE NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

-- Every CSV file imported (`measured data import`, or a run's `[data] import`), by content:
-- the same bytes imported again are one row. `codes` is the JSON list of its symbols.
CREATE TABLE IF NOT EXISTS imported_files (
    sha256      TEXT PRIMARY KEY,
    file        TEXT NOT NULL,
    codes       TEXT NOT NULL,
    bar_rows    BIGINT NOT NULL,
    first_date  DATE,
    last_date   DATE,
    imported_at TIMESTAMPTZ NOT NULL
);

-- The stock data a run read, as JSON (symbols, rows, date range, and where it came from: a
-- synthetic market's parameters, imported files with their sha256, or unknown). NULL for runs
-- stored before it was recorded and for runs without a load stage.
ALTER TABLE runs ADD COLUMN stock_data TEXT;
