-- Stock data in immutable dataset versions. Every symbol and bar belongs to one version; a
-- version is written in one transaction and never changed after (a new import or a newer
-- generator makes a new version beside it), and runs name the versions they read.

CREATE TABLE dataset_versions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    -- Letters, digits, `_`, `-` and `.`: `synth-500x2500-2015-01-01-s42-mixed`, `prices`.
    dataset     TEXT NOT NULL,
    -- 1, 2, ... within the dataset; `dataset@number` names the version.
    number      INTEGER NOT NULL,
    -- JSON: where the bars came from (a synthetic market's options and generator, imported
    -- files with their sha256, the version an import extended), as `market::Origin` reads it.
    origin      TEXT NOT NULL,
    -- The origin in one comparable string: a version with the same key holds the same bars,
    -- so it is reused rather than written again (unique).
    origin_key  TEXT NOT NULL,
    -- The version this one extends (`data import --into`), if any.
    parent      INTEGER REFERENCES dataset_versions (id),
    symbols     INTEGER NOT NULL DEFAULT 0,
    bar_rows    INTEGER NOT NULL DEFAULT 0,
    first_date  TEXT,
    last_date   TEXT,
    created_at  TEXT NOT NULL,
    -- `measured <version> (<commit>)` that wrote it; `migrated` for bars stored before versions.
    created_by  TEXT NOT NULL,
    UNIQUE (dataset, number)
);
CREATE UNIQUE INDEX dataset_versions_origin_idx ON dataset_versions (origin_key);

-- Bars stored before versions become one version per origin, found through the records of
-- that time: the recorded synthetic market, and each imported file for the symbols only it
-- listed. Everything else (an unrecorded market, symbols that two files listed, bars written
-- by hand) goes into one version of the dataset `pre-version`, whose origin says so.
INSERT INTO dataset_versions (id, dataset, number, origin, origin_key, created_at, created_by)
SELECT 1,
       'synth-' || symbols || 'x' || days || '-' || start_date || '-s' || seed || '-' || style,
       1,
       json_object('kind', 'synth', 'symbols', symbols, 'days', days, 'start', start_date,
                   'seed', seed, 'style', style, 'generator', generator),
       'synth:' || symbols || ':' || days || ':' || start_date || ':' || seed || ':' || style || ':' || generator,
       created_at,
       'migrated'
FROM synth_market
WHERE id = 1 AND EXISTS (SELECT 1 FROM symbols WHERE source = 'synth');

CREATE TEMP TABLE migrated_file_codes AS
SELECT f.sha256 AS sha256, j.value AS code
FROM imported_files f, json_each(f.codes) j;

CREATE TEMP TABLE migrated_sole_codes AS
SELECT code, MIN(sha256) AS sha256 FROM migrated_file_codes GROUP BY code HAVING COUNT(*) = 1;

INSERT INTO dataset_versions (id, dataset, number, origin, origin_key, created_at, created_by)
SELECT (SELECT COALESCE(MAX(id), 0) FROM dataset_versions) + ROW_NUMBER() OVER (ORDER BY f.imported_at, f.sha256),
       'import-' || substr(f.sha256, 1, 12),
       1,
       json_object('kind', 'import', 'files', json_array(json_object('file', f.file, 'sha256', f.sha256))),
       'import:' || f.sha256,
       f.imported_at,
       'migrated'
FROM imported_files f
WHERE EXISTS (
    SELECT 1 FROM migrated_sole_codes c JOIN symbols s ON s.code = c.code
    WHERE c.sha256 = f.sha256 AND s.source <> 'synth'
);

CREATE TEMP TABLE migrated_symbol_version AS
SELECT s.code AS code,
       CASE
           WHEN s.source = 'synth' THEN (SELECT id FROM dataset_versions WHERE origin_key LIKE 'synth:%')
           ELSE (SELECT v.id FROM migrated_sole_codes c JOIN dataset_versions v ON v.origin_key = 'import:' || c.sha256
                 WHERE c.code = s.code)
       END AS version
FROM symbols s;

-- Bars whose symbol has no row in `symbols` (written by hand) have no origin either.
INSERT INTO migrated_symbol_version (code, version)
SELECT DISTINCT b.symbol, NULL FROM daily_bars b WHERE NOT EXISTS (SELECT 1 FROM symbols s WHERE s.code = b.symbol);

INSERT INTO dataset_versions (id, dataset, number, origin, origin_key, created_at, created_by)
SELECT (SELECT COALESCE(MAX(id), 0) FROM dataset_versions) + 1,
       'pre-version',
       1,
       json_object('kind', 'pre_version',
                   'files', (SELECT json_group_array(json_object('file', file, 'sha256', sha256)) FROM imported_files)),
       'pre-version',
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       'migrated'
WHERE EXISTS (SELECT 1 FROM migrated_symbol_version WHERE version IS NULL);

UPDATE migrated_symbol_version
SET version = (SELECT id FROM dataset_versions WHERE origin_key = 'pre-version')
WHERE version IS NULL;

CREATE TABLE symbols_versioned (
    version   INTEGER NOT NULL REFERENCES dataset_versions (id),
    -- Exchange code such as `600519.SH`, `000001.SZ` or a ticker such as `AAPL`.
    code      TEXT NOT NULL,
    name      TEXT NOT NULL DEFAULT '',
    exchange  TEXT NOT NULL DEFAULT '',
    currency  TEXT NOT NULL DEFAULT '',
    listed    TEXT,
    delisted  TEXT,
    sector    TEXT,
    PRIMARY KEY (version, code)
) WITHOUT ROWID;

INSERT INTO symbols_versioned (version, code, name, exchange, currency, listed, delisted, sector)
SELECT m.version, s.code, s.name, s.exchange, s.currency, s.listed, s.delisted, s.sector
FROM symbols s JOIN migrated_symbol_version m ON m.code = s.code;

INSERT INTO symbols_versioned (version, code)
SELECT m.version, m.code FROM migrated_symbol_version m WHERE NOT EXISTS (SELECT 1 FROM symbols s WHERE s.code = m.code);

-- WITHOUT ROWID clusters rows by (version, symbol, trade_date): a symbol's dates in one
-- version are one contiguous B-tree range.
CREATE TABLE daily_bars_versioned (
    version     INTEGER NOT NULL,
    symbol      TEXT NOT NULL,
    trade_date  TEXT NOT NULL,
    open        REAL NOT NULL,
    high        REAL NOT NULL,
    low         REAL NOT NULL,
    close       REAL NOT NULL,
    volume      REAL NOT NULL,
    amount      REAL NOT NULL,
    -- Cumulative split/dividend factor: adjusted price = price * adj_factor / latest adj_factor.
    adj_factor  REAL NOT NULL DEFAULT 1,
    PRIMARY KEY (version, symbol, trade_date)
) WITHOUT ROWID;

INSERT INTO daily_bars_versioned (version, symbol, trade_date, open, high, low, close, volume, amount, adj_factor)
SELECT m.version, b.symbol, b.trade_date, b.open, b.high, b.low, b.close, b.volume, b.amount, b.adj_factor
FROM daily_bars b JOIN migrated_symbol_version m ON m.code = b.symbol
ORDER BY m.version, b.symbol, b.trade_date;

DROP TABLE daily_bars;
DROP TABLE symbols;
ALTER TABLE daily_bars_versioned RENAME TO daily_bars;
ALTER TABLE symbols_versioned RENAME TO symbols;
-- Cross-sectional scans (all symbols of a version on a date range).
CREATE INDEX daily_bars_trade_date_idx ON daily_bars (version, trade_date);

UPDATE dataset_versions SET
    symbols = (SELECT COUNT(*) FROM symbols s WHERE s.version = dataset_versions.id),
    bar_rows = (SELECT COUNT(*) FROM daily_bars b WHERE b.version = dataset_versions.id),
    first_date = (SELECT MIN(trade_date) FROM daily_bars b WHERE b.version = dataset_versions.id),
    last_date = (SELECT MAX(trade_date) FROM daily_bars b WHERE b.version = dataset_versions.id);

DROP TABLE migrated_file_codes;
DROP TABLE migrated_sole_codes;
DROP TABLE migrated_symbol_version;
DROP TABLE synth_market;
DROP TABLE imported_files;
