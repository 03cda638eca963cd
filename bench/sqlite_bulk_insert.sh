#!/usr/bin/env bash
# SQLite bulk write: `measured data synth` into a fresh SQLite file against the standard-library
# Python script `sqlite_bulk_insert.py` writing the very same rows into a fresh file with the
# same schema (one transaction, executemany, indexes after the insert). Each round also times
# the script on a file set up as measured's are (WAL, synchronous=NORMAL). The two sides
# alternate which runs first, round by round (measured first in odd rounds).
#
# Usage: bench/sqlite_bulk_insert.sh [--smoke] [SYMBOLS=500] [DAYS=2500] [ROUNDS=5]
#   --smoke       5 symbols x 60 days, one round, the debug build (see bench/lib.sh)
#   MEASURED_BIN  a prebuilt binary (default: cargo build --release, then target/release/measured)
#   BENCH_DIR     where the SQLite files go (default: a temporary folder, removed afterwards)
#
# measured's figure is the wall time of the whole `data synth` process (start-up, migrations,
# generation, write, index, commit, close); the script's is its insert + index + commit + close.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
read -r symbols days rounds <<<"$(sizes "500 2500 5" "5 60 1")"
symbols=${1:-$symbols}
days=${2:-$days}
rounds=${3:-$rounds}
work=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$work"
# The files are over 100 MB each: none is kept.
cleanup() {
  rm -f "$work"/m.sqlite* "$work"/p.sqlite* "$work"/source.sqlite* "$work"/peer.err
  if [ -z "${BENCH_DIR:-}" ]; then rmdir "$work"; fi
}
trap cleanup EXIT

for tool in python3 bc; do
  command -v "$tool" >/dev/null || {
    echo "$tool is missing: apt-get install $tool" >&2
    exit 1
  }
done
bin=${MEASURED_BIN:-$(built measured --bin measured)}
synth() { "$bin" --quiet --stock-database "sqlite:$1" data synth --symbols "$symbols" --days "$days" >/dev/null; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# The peer's seconds on stdout; its errors are shown, and stop the benchmark.
peer() {
  if ! python3 "$bench_root/bench/sqlite_bulk_insert.py" "$@" "$work/source.sqlite" "$work/p.sqlite" 2>"$work/peer.err"; then
    echo "sqlite_bulk_insert.py $* failed:" >&2
    cat "$work/peer.err" >&2
    exit 1
  fi
  rm -f "$work"/p.sqlite*
}

cpu_line
echo "# python $(python3 -c 'import sqlite3, sys; print(sys.version.split()[0], "with sqlite", sqlite3.sqlite_version)')"
echo "# loadavg before: $(cat /proc/loadavg)"
# The rows the script re-inserts: one synth run's output, written once up front.
synth "$work/source.sqlite"
rows=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM daily_bars').fetchone()[0])" "$work/source.sqlite")
echo "# rows: $rows"

m_times=()
p_times=()
w_times=()
measured_side() {
  rm -f "$work"/m.sqlite*
  local t0 t1
  t0=$(date +%s.%N)
  synth "$work/m.sqlite"
  t1=$(date +%s.%N)
  rm -f "$work"/m.sqlite*
  m_times+=("$(echo "$t1 - $t0" | bc -l)")
}
python_side() {
  local p w
  p=$(peer) || exit 1
  w=$(peer --wal) || exit 1
  p_times+=("$p")
  w_times+=("$w")
}
for round in $(seq 1 "$rounds"); do
  alternate "$round" measured_side python_side
  first=measured
  [ $((round % 2)) -eq 0 ] && first=python
  printf 'round %d (%s first): measured %.3f s, python %.3f s, python (WAL) %.3f s  (load %s)\n' \
    "$round" "$first" "${m_times[-1]}" "${p_times[-1]}" "${w_times[-1]}" "$(cut -d' ' -f1 /proc/loadavg)"
done

m_med=$(median "${m_times[@]}")
p_med=$(median "${p_times[@]}")
w_med=$(median "${w_times[@]}")
rate() { printf '%.0f' "$(echo "$rows / $1" | bc -l)"; }
printf 'median: measured %.3f s (%s rows/s), python %.3f s (%s rows/s), python (WAL) %.3f s (%s rows/s)\n' \
  "$m_med" "$(rate "$m_med")" "$p_med" "$(rate "$p_med")" "$w_med" "$(rate "$w_med")"
ratios=()
for i in "${!m_times[@]}"; do ratios+=("$(echo "${p_times[$i]} / ${m_times[$i]}" | bc -l)"); done
printf 'per-round ratio python / measured: median %.2fx (%.2fx-%.2fx); of medians %.2fx (python (WAL) / measured: %.2fx)\n' \
  "$(median "${ratios[@]}")" "$(printf '%s\n' "${ratios[@]}" | sort -g | head -1)" \
  "$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)" \
  "$(echo "$p_med / $m_med" | bc -l)" "$(echo "$w_med / $m_med" | bc -l)"
echo "# loadavg after: $(cat /proc/loadavg)"
