-- Stock data read by the `load` stage and written by `measured data synth` / `measured data import`.
-- Dates are ISO-8601 TEXT (`YYYY-MM-DD`), so text comparison is date comparison.

CREATE TABLE IF NOT EXISTS symbols (
    -- Exchange code such as `600519.SH`, `000001.SZ` or a ticker such as `AAPL`.
    code      TEXT PRIMARY KEY NOT NULL,
    name      TEXT NOT NULL DEFAULT '',
    exchange  TEXT NOT NULL DEFAULT '',
    currency  TEXT NOT NULL DEFAULT '',
    listed    TEXT,
    delisted  TEXT,
    sector    TEXT,
    -- `synth` for generated symbols (a new synth run replaces exactly those), `import` otherwise.
    source    TEXT NOT NULL DEFAULT 'import'
);

-- WITHOUT ROWID clusters rows by (symbol, trade_date): a symbol's date range is one
-- contiguous B-tree range. Every writer upserts the symbol row in the same transaction.
CREATE TABLE IF NOT EXISTS daily_bars (
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
    PRIMARY KEY (symbol, trade_date)
) WITHOUT ROWID;

-- Cross-sectional scans (all symbols on a date range).
CREATE INDEX IF NOT EXISTS daily_bars_trade_date_idx ON daily_bars (trade_date);
CREATE INDEX IF NOT EXISTS symbols_source_idx ON symbols (source);
