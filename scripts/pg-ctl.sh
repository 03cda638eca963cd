#!/usr/bin/env bash
# Stops or starts again a server made by pg-start.sh, on the same port and data.
# Usage: scripts/pg-ctl.sh DIR stop-immediate|start    (DIR as given to pg-start.sh)
set -euo pipefail
dir=${1:?usage: pg-ctl.sh DIR stop-immediate|start}
action=${2:?usage: pg-ctl.sh DIR stop-immediate|start}
bin=
for b in /usr/lib/postgresql/*/bin; do [ -x "$b/pg_ctl" ] && bin=$b; done
[ -n "$bin" ] || { echo "pg_ctl not found" >&2; exit 1; }
run=()
[ "$(id -u)" -eq 0 ] && run=(runuser -u postgres --)
case $action in
  stop-immediate) "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 ;;
  start) "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$(cat "$dir/options")" start >&2 ;;
  *) echo "unknown action $action" >&2; exit 2 ;;
esac
