#!/usr/bin/env bash
# Load benchmark: synthetic market write time, `load` throughput per strategy, and the
# throughput of psql's own binary COPY of the same query as the ceiling. See README-load.md.
#
# Usage: bench/load_bench.sh [SYMBOLS] [DAYS] [RUNS]
#   MEASURED_TEST_DATABASE_URL  admin URL of a Postgres server (a fresh database is created in
#                               it and dropped afterwards); unset: a throwaway server is started
#                               with scripts/pg-start.sh and stopped afterwards.
#   LOAD_BENCH_BIN              a prebuilt load_bench example (default: cargo build --release).
set -euo pipefail
symbols=${1:-500}
days=${2:-2500}
runs=${3:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
# The throwaway server runs as the postgres user when this runs as root: it must reach $work/pg.
chmod 755 "$work"
started_pg=""
cleanup() {
  if [ -n "${db_url:-}" ]; then
    psql "$admin_url" -qc "DROP DATABASE IF EXISTS $db_name WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  if [ -n "$started_pg" ]; then "$root/scripts/pg-stop.sh" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ -z "${MEASURED_TEST_DATABASE_URL:-}" ]; then
  eval "$("$root/scripts/pg-start.sh" "$work/pg")"
  started_pg=1
fi
admin_url=$MEASURED_TEST_DATABASE_URL
db_name="measured_load_bench_$$"
db_url="${admin_url%/*}/$db_name"
psql "$admin_url" -qc "CREATE DATABASE $db_name"

bin=${LOAD_BENCH_BIN:-}
if [ -z "$bin" ]; then
  (cd "$root" && cargo build --release -q -p measured --example load_bench)
  bin="$root/target/release/examples/load_bench"
fi

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# postgres: $(psql "$admin_url" -Atc 'SHOW server_version')"
echo "# uptime before: $(uptime)"
"$bin" --pg "$db_url" --sqlite "$work/bench.sqlite" \
  --symbols "$symbols" --days "$days" --runs "$runs" | tee "$work/rust.tsv"

# The ceiling: psql's binary COPY of the very statement the `copy` strategy sends with
# connections = 1 (every code, no date bounds, ordered), written to /dev/null.
codes=$(psql "$db_url" -Atc "SELECT string_agg(quote_literal(code), ', ' ORDER BY code) FROM symbols")
rows=$(psql "$db_url" -Atc "SELECT count(*) FROM daily_bars")
query="SELECT symbol, trade_date, open, high, low, close, volume, amount, adj_factor FROM daily_bars WHERE symbol IN ($codes) AND trade_date >= DATE '0001-01-01' AND trade_date <= DATE '9999-12-31' ORDER BY symbol, trade_date"
psql "$db_url" -qc "\\copy ($query) TO '/dev/null' WITH (FORMAT binary)" # warm-up
times=()
for _ in $(seq "$runs"); do
  t0=$(date +%s.%N)
  psql "$db_url" -qc "\\copy ($query) TO '/dev/null' WITH (FORMAT binary)"
  t1=$(date +%s.%N)
  times+=("$(echo "$t1 - $t0" | bc -l)")
done
psql_seconds=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
psql_rate=$(echo "$rows / $psql_seconds" | bc -l)
printf 'psql\tpostgres\tcopy-binary\trows=%s\tseconds=%.3f\trows_per_second=%.0f\truns=%s\n' \
  "$rows" "$psql_seconds" "$psql_rate" "$runs"
echo "# uptime after: $(uptime)"

echo
echo "| backend | strategy | connections | rows/s (median) | vs psql COPY |"
echo "|---|---|---:|---:|---:|"
awk -F'\t' -v ceiling="$psql_rate" '$1 == "load" {
  split($4, c, "="); split($5, r, "=");
  printf "| %s | %s | %s | %.0f | %.0f%% |\n", $2, $3, c[2], r[2], 100 * r[2] / ceiling
}' "$work/rust.tsv"
printf '| postgres | psql \\copy binary | 1 | %.0f | 100%% |\n' "$psql_rate"
