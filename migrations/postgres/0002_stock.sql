-- Stock data read by the `load` stage and written by `measured data synth` / `measured data import`.

CREATE TABLE IF NOT EXISTS symbols (
    -- Exchange code such as `600519.SH`, `000001.SZ` or a ticker such as `AAPL`.
    code      TEXT PRIMARY KEY,
    name      TEXT NOT NULL DEFAULT '',
    exchange  TEXT NOT NULL DEFAULT '',
    currency  TEXT NOT NULL DEFAULT '',
    listed    DATE,
    delisted  DATE,
    sector    TEXT,
    -- `synth` for generated symbols (a new synth run replaces exactly those), `import` otherwise.
    source    TEXT NOT NULL DEFAULT 'import'
);

-- No foreign key to `symbols`: a per-row check would slow COPY bulk loads, and every writer
-- upserts the symbol row in the same transaction as its bars.
CREATE TABLE IF NOT EXISTS daily_bars (
    symbol      TEXT NOT NULL,
    trade_date  DATE NOT NULL,
    open        DOUBLE PRECISION NOT NULL,
    high        DOUBLE PRECISION NOT NULL,
    low         DOUBLE PRECISION NOT NULL,
    close       DOUBLE PRECISION NOT NULL,
    volume      DOUBLE PRECISION NOT NULL,
    amount      DOUBLE PRECISION NOT NULL,
    -- Cumulative split/dividend factor: adjusted price = price * adj_factor / latest adj_factor.
    adj_factor  DOUBLE PRECISION NOT NULL DEFAULT 1,
    -- Also serves range scans of one symbol over a date range.
    PRIMARY KEY (symbol, trade_date)
);

-- Cross-sectional scans (all symbols on a date range).
CREATE INDEX IF NOT EXISTS daily_bars_trade_date_idx ON daily_bars (trade_date);
CREATE INDEX IF NOT EXISTS symbols_source_idx ON symbols (source);
