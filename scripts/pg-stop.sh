#!/usr/bin/env bash
# Stops the server started by pg-start.sh (reads MEASURED_PG_DIR and MEASURED_PG_BIN).
set -u
[ -n "${MEASURED_PG_DIR:-}" ] || exit 0
if [ "$(id -u)" -eq 0 ]; then
  runuser -u postgres -- "$MEASURED_PG_BIN/pg_ctl" -D "$MEASURED_PG_DIR/data" -m fast stop >/dev/null 2>&1
else
  "$MEASURED_PG_BIN/pg_ctl" -D "$MEASURED_PG_DIR/data" -m fast stop >/dev/null 2>&1
fi
rm -rf "$MEASURED_PG_DIR"
