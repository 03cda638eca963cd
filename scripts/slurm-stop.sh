#!/usr/bin/env bash
# Stops the cluster started by slurm-start.sh DIR (its slurmctld and slurmd, and munged when
# that script started it) and removes DIR.
set -u
dir=${1:-${MEASURED_SLURM_DIR:-}}
[ -n "$dir" ] && [ -d "$dir" ] || exit 0
for f in ctld.pid d.pid; do
  [ -s "$dir/$f" ] && kill "$(cat "$dir/$f")" 2>/dev/null
done
for _ in $(seq 50); do
  alive=0
  for f in ctld.pid d.pid; do [ -s "$dir/$f" ] && kill -0 "$(cat "$dir/$f")" 2>/dev/null && alive=1; done
  [ $alive -eq 0 ] && break
  sleep 0.1
done
for f in ctld.pid d.pid; do
  [ -s "$dir/$f" ] && kill -9 "$(cat "$dir/$f")" 2>/dev/null
done
if [ -e "$dir/munged.ours" ] && [ -s /run/munge/munged.pid ]; then
  kill "$(cat /run/munge/munged.pid)" 2>/dev/null
fi
rm -rf "$dir"
