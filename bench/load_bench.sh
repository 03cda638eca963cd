#!/usr/bin/env bash
# Load benchmark: the `load` stage's throughput per strategy and connection count, on
# Postgres and on SQLite, against the tools a user would pick instead, in alternating rounds
# on the same data:
#   - ConnectorX (what polars.read_database_uri uses) reading the same rows into Arrow,
#     with 1 and 2 connections;
#   - psql's binary COPY of the very statement `copy` sends, to /dev/null (one backend's
#     dump rate: the ceiling for one connection);
#   - the sqlite3 shell scanning the same ordered query on the SQLite file and aggregating
#     every column, printing nothing (SQLite's own scan rate).
# Each round runs every side once (measured after one warm-up per configuration), measured first
# in odd rounds and last in even ones; the summary gives medians over rounds, the range, and the
# per-round ratios. Every round's lines stay in target/bench/load-<time>/rounds.tsv (the
# databases are removed at the end). See README-load.md.
#
# Usage: bench/load_bench.sh [--smoke] [SYMBOLS] [DAYS] [ROUNDS]
#   --smoke                     5 symbols x 100 days, one round, the debug build; ConnectorX and
#                               the sqlite3 shell only when installed (see bench/lib.sh)
#   MEASURED_TEST_DATABASE_URL  admin URL of a Postgres server (a fresh database is created in
#                               it and dropped afterwards); unset: a throwaway server is started
#                               with scripts/pg-start.sh and stopped afterwards.
#   LOAD_BENCH_BIN              a prebuilt load_bench example (default: cargo build --release).
#   LOAD_BENCH_OUT              also keep every round's lines in this TSV file.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
read -r symbols days rounds <<<"$(sizes "500 2500 5" "5 100 1")"
symbols=${1:-$symbols}
days=${2:-$days}
rounds=${3:-$rounds}
root=$bench_root
work=$(mktemp -d)
keep="$root/target/bench/load-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$keep"
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

needed=(bc psql)
[ "$smoke" = 1 ] || needed+=(sqlite3)
for tool in "${needed[@]}"; do
  command -v "$tool" >/dev/null || {
    echo "$tool is missing: apt-get install $tool" >&2
    exit 1
  }
done
sqlite_shell=sqlite3
if ! command -v sqlite3 >/dev/null; then
  sqlite_shell=""
  skipped "the sqlite3 shell: not installed (apt-get install sqlite3); its scan is left out"
fi
py=$(peer_python connectorx polars)
[ -n "$py" ] || skipped "ConnectorX: not installed (bench/venv.sh installs it); its side is left out"

if [ -z "${MEASURED_TEST_DATABASE_URL:-}" ]; then
  eval "$("$root/scripts/pg-start.sh" "$work/pg")"
  started_pg=1
fi
admin_url=$MEASURED_TEST_DATABASE_URL
db_name="measured_load_bench_$$"
db_url="${admin_url%/*}/$db_name"
psql "$admin_url" -qc "CREATE DATABASE $db_name"
sqlite_file="$work/bench.sqlite"

bin=${LOAD_BENCH_BIN:-$(built examples/load_bench --example load_bench)}

cpu_line
echo "# postgres: $(psql "$admin_url" -Atc 'SHOW server_version'); sqlite3: ${sqlite_shell:+$(sqlite3 --version | cut -d' ' -f1)}"
[ -z "$py" ] || echo "# peers: $("$py" -c 'import connectorx, polars; print("connectorx", connectorx.__version__, "polars", polars.__version__)')"
echo "# uptime before: $(uptime)"
# Writes the market into both databases and loads it once per configuration (warm-up); every
# strategy on both backends must load the very same bars (one content hash).
"$bin" --pg "$db_url" --sqlite "$sqlite_file" --symbols "$symbols" --days "$days" --runs 1 >"$keep/warmup.tsv"
hashes=$(awk -F'\t' '$1 == "hash" { print $3 }' "$keep/warmup.tsv" | sort -u)
if [ "$(grep -c . <<<"$hashes")" != 1 ] || grep -q 'identical_across_strategies=false' "$keep/warmup.tsv"; then
  echo "the backends or strategies loaded different bars:" >&2
  grep '^hash' "$keep/warmup.tsv" >&2
  exit 1
fi
echo "# content hash of the loaded bars, every strategy and both backends: $hashes"

# The statements the peers run: what `copy` sends with connections = 1 (every code, no date
# bounds, ordered), and the same query on SQLite with every column aggregated.
# The one dataset version both databases hold: every peer reads it as `load` does (the
# version leads the primary key, so a query without it would sort every row).
version=$(psql "$db_url" -Atc "SELECT min(id) FROM dataset_versions HAVING count(*) = 1")
sqlite_q() { python3 -c 'import sqlite3, sys; print("\n".join("|".join(map(str, r)) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))' "$@"; }
sqlite_version=$(sqlite_q "$sqlite_file" "SELECT min(id) FROM dataset_versions HAVING count(*) = 1")
[ -n "$version" ] && [ -n "$sqlite_version" ] || {
  echo "the benchmark databases must hold exactly one dataset version each" >&2
  exit 1
}
codes=$(psql "$db_url" -Atc "SELECT string_agg(quote_literal(code), ', ' ORDER BY code) FROM symbols WHERE version = $version")
rows=$(psql "$db_url" -Atc "SELECT count(*) FROM daily_bars WHERE version = $version")
columns="symbol, trade_date, open, high, low, close, volume, amount, adj_factor"
pg_query="SELECT $columns FROM daily_bars WHERE version = $version AND symbol IN ($codes) AND trade_date >= DATE '0001-01-01' AND trade_date <= DATE '9999-12-31' ORDER BY symbol, trade_date"
sqlite_query="SELECT count(*), sum(length(symbol)), sum(length(trade_date)), sum(open), sum(high), sum(low), sum(close), sum(volume), sum(amount), sum(adj_factor) FROM (SELECT $columns FROM daily_bars WHERE version = $sqlite_version AND symbol IN ($codes) AND trade_date >= '0001-01-01' AND trade_date <= '9999-12-31' ORDER BY symbol, trade_date)"
[ "$(sqlite_q "$sqlite_file" "SELECT count(*) FROM daily_bars WHERE version = $sqlite_version")" = "$rows" ] || {
  echo "the SQLite file and Postgres hold different row counts" >&2
  exit 1
}
psql "$db_url" -qc "\\copy ($pg_query) TO '/dev/null' WITH (FORMAT binary)" # warm-up
[ -z "$sqlite_shell" ] || sqlite3 "$sqlite_file" "$sqlite_query" >/dev/null # warm-up

rate() { echo "$rows / ($2 - $1)" | bc -l; }
tsv="$keep/rounds.tsv"
echo "# every round: $tsv"
measured_side() {
  "$bin" --pg "$db_url" --sqlite "$sqlite_file" --reuse --runs 1 |
    awk -F'\t' -v r="$1" '$1 == "load" {
      split($4, c, "="); split($5, x, "=");
      printf "%s\tmeasured\t%s\t%s\t%s\t%s\n", r, $2, $3, c[2], x[2] }' >>"$tsv"
}
peers_side() {
  for connections in 1 2; do
    [ -n "$py" ] || break
    "$py" "$root/bench/load_connectorx.py" --url "$db_url" --connections "$connections" --runs 1 |
      awk -F'\t' -v r="$1" '$1 == "connectorx" && $3 ~ /^run=/ {
        split($2, c, "="); split($6, x, "=");
        printf "%s\tconnectorx\tpostgres\tarrow\t%s\t%s\n", r, c[2], x[2] }' >>"$tsv"
  done
  t0=$(date +%s.%N)
  psql "$db_url" -qc "\\copy ($pg_query) TO '/dev/null' WITH (FORMAT binary)"
  t1=$(date +%s.%N)
  printf '%s\tpsql\tpostgres\tcopy-binary\t1\t%.0f\n' "$1" "$(rate "$t0" "$t1")" >>"$tsv"
  [ -n "$sqlite_shell" ] || return 0
  t0=$(date +%s.%N)
  sqlite3 "$sqlite_file" "$sqlite_query" >/dev/null
  t1=$(date +%s.%N)
  printf '%s\tsqlite3\tsqlite\tscan\t1\t%.0f\n' "$1" "$(rate "$t0" "$t1")" >>"$tsv"
}
for round in $(seq "$rounds"); do
  alternate "$round" measured_side peers_side
  echo "# round $round done: $(cut -d, -f3- <<<"$(uptime)" | xargs)" >&2
done
echo "# uptime after: $(uptime)"
[ -n "${LOAD_BENCH_OUT:-}" ] && cp "$tsv" "$LOAD_BENCH_OUT"

python3 - "$tsv" "$rows" <<'EOF'
import statistics, sys
from collections import defaultdict

path, rows = sys.argv[1], int(sys.argv[2])
by = defaultdict(dict)  # (tool, backend, strategy, connections) -> {round: rows/s}
for line in open(path):
    r, tool, backend, strategy, conns, rate = line.rstrip("\n").split("\t")
    by[(tool, backend, strategy, int(conns))][int(r)] = float(rate)
rounds = sorted({r for v in by.values() for r in v})
print(f"\n{rows:,} rows, {len(rounds)} alternating rounds\n")
print("| tool | backend | strategy | connections | rows/s, median | range over rounds |")
print("|---|---|---|---:|---:|---|")
for key in sorted(by, key=lambda k: (k[1], k[0] != "measured", k[2], k[3])):
    v = [by[key][r] for r in rounds if r in by[key]]
    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {statistics.median(v):,.0f} | "
          f"{min(v):,.0f}-{max(v):,.0f} |")

def ratio(label, num, den, goal):
    if num not in by or den not in by:
        return
    per = [by[num][r] / by[den][r] for r in rounds if r in by[num] and r in by[den]]
    held = "every round" if min(per) >= goal else f"{sum(p >= goal for p in per)} of {len(per)} rounds"
    print(f"| {label} | {statistics.median(per):.2f}x | {min(per):.2f}x-{max(per):.2f}x | "
          f">= {goal}x: {held} |")

print("\n| per-round ratio | median | range | goal |")
print("|---|---:|---|---|")
ratio("`copy`, 1 connection / ConnectorX, 1", ("measured", "postgres", "copy", 1),
      ("connectorx", "postgres", "arrow", 1), 1.0)
ratio("`copy`, 2 connections / ConnectorX, 2", ("measured", "postgres", "copy", 2),
      ("connectorx", "postgres", "arrow", 2), 1.0)
ratio("`copy`, 1 connection / psql binary COPY", ("measured", "postgres", "copy", 1),
      ("psql", "postgres", "copy-binary", 1), 0.95)
for strategy in ("batched", "stream"):
    ratio(f"SQLite `{strategy}`, 1 connection / sqlite3 scan", ("measured", "sqlite", strategy, 1),
          ("sqlite3", "sqlite", "scan", 1), 0.8)
EOF
