#!/usr/bin/env python3
"""Peer of `measured data synth` into SQLite: the plain standard-library way to bulk insert.

Reads every row of `symbols` and `daily_bars` from SOURCE (a stock database written by
`measured data synth`), then writes them into a fresh DEST file with the project's schema
(migrations/sqlite/0002_stock.sql): one transaction, `executemany`, the secondary indexes
created after the insert, rows in the order SOURCE stores them (sorted by symbol and date).
Only the insert + index + commit + close is timed; the seconds go to stdout.

With --wal, DEST is set up the way measured opens its databases (journal_mode=WAL,
synchronous=NORMAL) instead of SQLite's defaults (rollback journal, synchronous=FULL); the WAL
is checkpointed into the file at commit and on close.

Usage: sqlite_bulk_insert.py [--wal] SOURCE DEST
"""

import os
import re
import sqlite3
import sys
import time

SCHEMA = os.path.join(os.path.dirname(__file__), "..", "migrations", "sqlite", "0002_stock.sql")
BAR_COLUMNS = "symbol, trade_date, open, high, low, close, volume, amount, adj_factor"
SYMBOL_COLUMNS = "code, name, exchange, currency, listed, delisted, sector, source"


def main(source, dest, wal):
    with open(SCHEMA) as f:
        sql = "\n".join(l for l in f.read().splitlines() if not l.lstrip().startswith("--"))
    statements = [s.strip() for s in sql.split(";") if s.strip()]
    # The indexes are built after the rows are in.
    tables = [s for s in statements if re.match(r"CREATE TABLE", s)]
    indexes = [s for s in statements if re.match(r"CREATE INDEX", s)]

    src = sqlite3.connect(source)
    symbols = src.execute(f"SELECT {SYMBOL_COLUMNS} FROM symbols").fetchall()
    bars = src.execute(f"SELECT {BAR_COLUMNS} FROM daily_bars").fetchall()
    src.close()

    for suffix in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(dest + suffix):
            os.remove(dest + suffix)
    db = sqlite3.connect(dest, isolation_level=None)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    for s in tables:
        db.execute(s)

    started = time.perf_counter()
    db.execute("BEGIN")
    db.executemany(f"INSERT INTO symbols ({SYMBOL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", symbols)
    db.executemany(f"INSERT INTO daily_bars ({BAR_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", bars)
    for s in indexes:
        db.execute(s)
    db.execute("COMMIT")
    db.close()
    seconds = time.perf_counter() - started
    print(f"{seconds:.3f}")
    print(f"# {len(bars)} rows, {len(symbols)} symbols, sqlite {sqlite3.sqlite_version}", file=sys.stderr)


if __name__ == "__main__":
    args = sys.argv[1:]
    wal = args[:1] == ["--wal"]
    if wal:
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    main(args[0], args[1], wal)
