#!/usr/bin/env bash
# Trial-queue throughput: W concurrent `measured worker` processes drain one submitted run of
# trials whose only stage is a `command` running `true`, against a local PostgreSQL.
# Prints, per round: trials per second in total (end to end, process start to last exit, and
# steady state from the stored trial timestamps) and the queue's overhead per trial (claiming,
# completing and heartbeating, summed over workers) next to the time spent running and storing.
# Usage: bash bench/queue_bench.sh [--smoke] [VARIANTS=4] [REPETITIONS=250] [WORKERS=8] [ROUNDS=3]
#   --smoke  2 variants x 5 repetitions, 2 workers, one round, the debug build (see bench/lib.sh)
# Uses MEASURED_TEST_DATABASE_URL when set (an admin URL), else starts a throwaway server.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$bench_root"
read -r variants reps workers rounds <<<"$(sizes "4 250 8 3" "2 5 2 1")"
variants=${1:-$variants}
reps=${2:-$reps}
workers=${3:-$workers}
rounds=${4:-$rounds}
bin=$(built measured --bin measured)
work=$(mktemp -d)
# The throwaway server runs as the postgres user when this runs as root: it must reach $work/pg.
chmod 755 "$work"
cleanup() {
  [ -n "${MEASURED_PG_DIR:-}" ] && [ "${started_pg:-0}" = 1 ] && scripts/pg-stop.sh
  rm -rf "$work"
}
trap cleanup EXIT
if [ -z "${MEASURED_TEST_DATABASE_URL:-}" ]; then
  chmod 755 "$work"
  eval "$(scripts/pg-start.sh "$work/pg")"
  started_pg=1
fi
admin=$MEASURED_TEST_DATABASE_URL
{
  printf '[experiment]\nname = "queue-bench"\n[schedule]\nwarmup = 0\nrepetitions = %d\nseed = 1\n' "$reps"
  printf '[stages.noop]\nkind = "command"\nargv = ["true"]\n'
  # Identical variants on purpose: an A/A run whose only job is to fill the queue.
  printf '[compare]\nallow_identical = true\n'
  for v in $(seq 1 "$variants"); do printf '[variants.v%d]\n' "$v"; done
} >"$work/bench.toml"
trials=$((variants * reps))
cpu_line
echo "setup: $workers workers, $variants variants x $reps repetitions = $trials trials in $reps units of $variants"
for round in $(seq 1 "$rounds"); do
  db="qbench_$$_$round"
  psql "$admin" -qc "CREATE DATABASE $db" >/dev/null
  url="${admin%/*}/$db"
  run=$(DATABASE_URL=$url "$bin" --quiet submit "$work/bench.toml" | sed -n 's/^run: //p')
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  start=$(date +%s.%N)
  for w in $(seq 1 "$workers"); do
    DATABASE_URL=$url "$bin" --quiet worker --run "$run" 2>"$work/w$round.$w.log" &
  done
  wait
  end=$(date +%s.%N)
  load_after=$(cut -d' ' -f1 /proc/loadavg)
  stored=$(psql "$url" -Atc "SELECT COUNT(*) FROM trials WHERE run_id = '$run'")
  dup=$(psql "$url" -Atc "SELECT COUNT(*) - COUNT(DISTINCT trial_index) FROM trials WHERE run_id = '$run'")
  steady=$(psql "$url" -Atc "SELECT EXTRACT(EPOCH FROM MAX(finished_at) - MIN(started_at)) FROM trials WHERE run_id = '$run'")
  python3 - "$work" "$round" "$trials" "$stored" "$dup" "$start" "$end" "$steady" "$load_before" "$load_after" <<'PY'
import glob, re, sys
work, rnd, planned, stored, dup, start, end, steady, lb, la = sys.argv[1:]
tot = {}
for f in glob.glob(f"{work}/w{rnd}.*.log"):
    for line in open(f):
        for k, v in re.findall(r"(\w+)=([\d.]+)", line):
            tot[k] = tot.get(k, 0.0) + float(v)
n = tot.get("trials", 0)
wall = float(end) - float(start)
q = tot.get("claim_s", 0) + tot.get("heartbeat_s", 0)
print(f"round {rnd}: {int(n)} trials run, {stored}/{planned} stored, {dup} duplicates; "
      f"{int(stored)/wall:.0f} trials/s end to end ({wall:.2f} s), {int(stored)/float(steady):.0f} trials/s steady state; "
      f"per trial: queue {q*1e3/n:.2f} ms (claim+complete {tot.get('claim_s',0)*1e3/n:.2f}, heartbeat {tot.get('heartbeat_s',0)*1e3/n:.2f}), "
      f"run {tot.get('run_s',0)*1e3/n:.2f} ms, store {tot.get('store_s',0)*1e3/n:.2f} ms; load {lb} -> {la}")
PY
  psql "$admin" -qc "DROP DATABASE $db" >/dev/null
done
