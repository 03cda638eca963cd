#!/usr/bin/env bash
# SQLite bulk write: `measured data synth` into a fresh SQLite file against the standard-library
# Python script `sqlite_bulk_insert.py` writing the very same rows into a fresh file (one
# transaction, executemany, indexes after the insert), alternating round by round. Each round
# also times the script on a file set up as measured's are (WAL, synchronous=NORMAL).
#
# Usage: bench/sqlite_bulk_insert.sh [SYMBOLS=500] [DAYS=2500] [ROUNDS=5]
#   MEASURED_BIN  a prebuilt binary (default: cargo build --release, then target/release/measured)
#   BENCH_DIR     where the SQLite files go (default: a temporary folder, removed afterwards)
#
# measured's figure is the wall time of the whole `data synth` process (start-up, migrations,
# generation, write, index, commit, close); the script's is its insert + index + commit + close.
set -euo pipefail
symbols=${1:-500}
days=${2:-2500}
rounds=${3:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$work"
# The files are over 100 MB each: none is kept.
cleanup() {
  rm -f "$work"/m.sqlite* "$work"/p.sqlite* "$work"/source.sqlite*
  if [ -z "${BENCH_DIR:-}" ]; then rmdir "$work"; fi
}
trap cleanup EXIT

bin=${MEASURED_BIN:-}
if [ -z "$bin" ]; then
  (cd "$root" && cargo build --release -q -p measured --bin measured)
  bin="${CARGO_TARGET_DIR:-$root/target}/release/measured"
fi
synth() { "$bin" --quiet --stock-database "sqlite:$1" data synth --symbols "$symbols" --days "$days" >/dev/null; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# python $(python3 -c 'import sqlite3, sys; print(sys.version.split()[0], "with sqlite", sqlite3.sqlite_version)')"
echo "# loadavg before: $(cat /proc/loadavg)"
# The rows the script re-inserts: one synth run's output, written once up front.
synth "$work/source.sqlite"
rows=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM daily_bars').fetchone()[0])" "$work/source.sqlite")
echo "# rows: $rows"

m_times=()
p_times=()
w_times=()
for round in $(seq 1 "$rounds"); do
  rm -f "$work"/m.sqlite*
  t0=$(date +%s.%N)
  synth "$work/m.sqlite"
  t1=$(date +%s.%N)
  m=$(echo "$t1 - $t0" | bc -l)
  rm -f "$work"/m.sqlite*
  p=$(python3 "$root/bench/sqlite_bulk_insert.py" "$work/source.sqlite" "$work/p.sqlite" 2>/dev/null)
  rm -f "$work"/p.sqlite*
  w=$(python3 "$root/bench/sqlite_bulk_insert.py" --wal "$work/source.sqlite" "$work/p.sqlite" 2>/dev/null)
  rm -f "$work"/p.sqlite*
  m_times+=("$m")
  p_times+=("$p")
  w_times+=("$w")
  printf 'round %d: measured %.3f s, python %.3f s, python (WAL) %.3f s  (load %s)\n' \
    "$round" "$m" "$p" "$w" "$(cut -d' ' -f1 /proc/loadavg)"
done

m_med=$(median "${m_times[@]}")
p_med=$(median "${p_times[@]}")
w_med=$(median "${w_times[@]}")
rate() { printf '%.0f' "$(echo "$rows / $1" | bc -l)"; }
printf 'median: measured %.3f s (%s rows/s), python %.3f s (%s rows/s), python (WAL) %.3f s (%s rows/s)\n' \
  "$m_med" "$(rate "$m_med")" "$p_med" "$(rate "$p_med")" "$w_med" "$(rate "$w_med")"
printf 'ratio python / measured: %.2fx (python (WAL) / measured: %.2fx)\n' \
  "$(echo "$p_med / $m_med" | bc -l)" "$(echo "$w_med / $m_med" | bc -l)"
echo "# loadavg after: $(cat /proc/loadavg)"
