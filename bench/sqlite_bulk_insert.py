#!/usr/bin/env python3
"""Peer of `measured data synth` into SQLite: the plain standard-library way to bulk insert.

Reads every row of the stock tables (`dataset_versions`, `symbols`, `daily_bars`) from SOURCE,
a stock database `measured data synth` wrote, and writes them into a fresh DEST file with the
very schema SOURCE has (its own CREATE statements, read from its sqlite_master, so the peer
follows every migration): one transaction, `executemany`, the secondary indexes created after
the insert, rows in the order SOURCE stores them. Only the insert + index + commit + close is
timed; the seconds go to stdout.

With --wal, DEST is set up the way measured opens its databases (journal_mode=WAL,
synchronous=NORMAL) instead of SQLite's defaults (rollback journal, synchronous=FULL); the WAL
is checkpointed into the file at commit and on close.

Usage: sqlite_bulk_insert.py [--wal] SOURCE DEST
"""

import os
import sqlite3
import sys
import time

# The tables `data synth` fills, in the order their rows must go in (a version before the
# symbols and bars that name it).
TABLES = ("dataset_versions", "symbols", "daily_bars")


def schema(src):
    """The CREATE TABLE statements of TABLES and the CREATE INDEX statements on them, as
    SOURCE has them (indexes SQLite makes for keys have no SQL and come with their table)."""
    tables, indexes = [], []
    for table in TABLES:
        row = src.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        if row is None:
            sys.exit(f"{SOURCE_NAME}: no table `{table}`: not a stock database written by `measured data synth`")
        tables.append(row[0])
        indexes += [
            sql
            for (sql,) in src.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL", (table,)
            )
        ]
    return tables, indexes


def main(source, dest, wal):
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    tables, indexes = schema(src)
    rows = {}
    columns = {}
    for table in TABLES:
        columns[table] = [c[1] for c in src.execute(f'PRAGMA table_info("{table}")')]
        names = ", ".join(f'"{c}"' for c in columns[table])
        # A plain scan: the primary key's order for WITHOUT ROWID tables, as measured writes them.
        rows[table] = src.execute(f'SELECT {names} FROM "{table}"').fetchall()
    src.close()

    for suffix in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(dest + suffix):
            os.remove(dest + suffix)
    db = sqlite3.connect(dest, isolation_level=None)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    for sql in tables:
        db.execute(sql)

    started = time.perf_counter()
    db.execute("BEGIN")
    for table in TABLES:
        names = ", ".join(f'"{c}"' for c in columns[table])
        marks = ", ".join("?" for _ in columns[table])
        db.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', rows[table])
    for sql in indexes:
        db.execute(sql)
    db.execute("COMMIT")
    db.close()
    seconds = time.perf_counter() - started
    print(f"{seconds:.3f}")
    print(
        f"# {len(rows['daily_bars'])} rows, {len(rows['symbols'])} symbols, "
        f"{len(rows['dataset_versions'])} dataset version(s), sqlite {sqlite3.sqlite_version}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    wal = args[:1] == ["--wal"]
    if wal:
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    SOURCE_NAME = args[0]
    main(args[0], args[1], wal)
