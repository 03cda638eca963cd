#!/usr/bin/env python3
"""Reads one stored run's metrics for scripts/gpu-check.sh (the results database is SQLite).

Usage:
  metrics.py DB RUN scalar STAGE NAME     one line per config: `config median n`
  metrics.py DB RUN series STAGE NAME     one line per config and step: `config step median n`
  metrics.py DB RUN error                 the first failed stage's error, if any
RUN is a run id or `latest`. Only measured (non-warm-up), successful trials count.
"""

import sqlite3
import statistics
import sys


def main() -> None:
    db, run, what = sys.argv[1], sys.argv[2], sys.argv[3]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    if run == "latest":
        run = con.execute("SELECT id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    if what == "error":
        row = con.execute(
            "SELECT error FROM stage_results WHERE run_id = ? AND error IS NOT NULL LIMIT 1", (run,)
        ).fetchone()
        print(row[0] if row else "")
        return
    stage, name = sys.argv[4], sys.argv[5]
    step_clause = "m.step IS NULL" if what == "scalar" else "m.step IS NOT NULL"
    rows = con.execute(
        f"""SELECT t.config, m.step, m.value FROM metrics m
            JOIN trials t ON t.run_id = m.run_id AND t.trial_index = m.trial_index
            WHERE m.run_id = ? AND m.stage = ? AND m.name = ? AND {step_clause}
              AND NOT t.warmup AND t.status = 'ok'
            ORDER BY t.config, m.step""",
        (run, stage, name),
    ).fetchall()
    groups: dict[tuple, list[float]] = {}
    for config, step, value in rows:
        groups.setdefault((config, step), []).append(value)
    for (config, step), values in groups.items():
        prefix = config if what == "scalar" else f"{config} {step}"
        print(f"{prefix} {statistics.median(values):.9g} {len(values)}")


if __name__ == "__main__":
    main()
