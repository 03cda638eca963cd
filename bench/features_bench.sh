#!/usr/bin/env bash
# Features benchmark: the `normalize` stage's 20 default-preset features against idiomatic
# polars (bench/normalize_polars.py) on the same synthetic bars, 1 and 2 threads, in
# alternating rounds, with the values checked against each other first; and the whole stage
# against the machine's streaming roofline (normalize_bench --roofline). See
# README-normalize.md. The side that runs first alternates round by round (measured first in
# odd rounds, polars in even ones), and the per-round timings stay under
# target/bench/features-<time>/ (rounds.tsv; the generated bars are deleted at the end).
#
# Usage: bench/features_bench.sh [--smoke] [ROUNDS] [SYMBOLS] [DAYS]
#   --smoke              1 round of 5 symbols x 600 days, the debug build, no roofline (its
#                        768 MB of arrays), polars only when installed (see bench/lib.sh)
#   NORMALIZE_BENCH_BIN  a prebuilt normalize_bench example (default: cargo build --release).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
read -r rounds symbols days <<<"$(sizes "5 500 2500" "1 5 600")"
rounds=${1:-$rounds}
symbols=${2:-$symbols}
days=${3:-$days}
root=$bench_root
work="$root/target/bench/features-$(date -u +%Y%m%d-%H%M%S)-$$"
mkdir -p "$work"
trap 'rm -f "$work/bars.csv"' EXIT
py=$(peer_python polars)
[ -n "$py" ] || skipped "polars: not installed (bench/venv.sh installs it); measured's side runs alone"
bin=${NORMALIZE_BENCH_BIN:-$(built examples/normalize_bench --example normalize_bench)}
roofline=--roofline
[ "$smoke" = 1 ] && roofline=

cpu_line
echo "# uptime before: $(uptime)"
"$bin" --synth --symbols "$symbols" --days "$days" --write "$work/bars.csv" \
  --dump "$((symbols < 20 ? symbols : 20))" "$work/rust_features.csv" --runs 1 >/dev/null
# The value check: polars' columns against measured's raw features of the first 20 symbols.
if [ -n "$py" ]; then
  "$py" "$root/bench/normalize_polars.py" --csv "$work/bars.csv" --runs 1 --threads 1 \
    --check "$work/rust_features.csv" | grep -v '^polars'
fi

tsv="$work/rounds.tsv"
: >"$tsv"
echo "# per-round timings: $tsv"
measured_side() {
  "$bin" --csv "$work/bars.csv" --runs 1 $roofline |
    awk -F'\t' -v r="$1" '$1 == "measured" || $1 == "roofline" { print r "\t" $0 }' >>"$tsv"
}
polars_side() {
  [ -n "$py" ] || return 0
  for threads in 1 2; do
    "$py" "$root/bench/normalize_polars.py" --csv "$work/bars.csv" --runs 1 --threads "$threads" |
      awk -F'\t' -v r="$1" '$1 == "polars" && $3 ~ /^run=/ { print r "\t" $0 }' >>"$tsv"
  done
}
for round in $(seq "$rounds"); do
  alternate "$round" measured_side polars_side
  echo "# round $round done: $(cut -d, -f3- <<<"$(uptime)" | xargs)" >&2
done
echo "# uptime after: $(uptime)"

python3 - "$tsv" <<'EOF'
import statistics, sys
from collections import defaultdict

rows = defaultdict(dict)  # name -> {round: value}
for line in open(sys.argv[1]):
    r, tool, *fields = line.rstrip("\n").split("\t")
    kv = dict(f.split("=", 1) for f in fields)
    r = int(r)
    if tool == "measured":
        rows[f"measured {kv['mode']} features"][r] = float(kv["features_seconds"])
        rows[f"measured {kv['mode']} stage"][r] = float(kv["total_seconds"])
    elif tool == "polars":
        rows[f"polars {kv['threads']} thread(s) features"][r] = float(kv["features_seconds"])
    elif tool == "roofline":
        for k in ("triad_gbs", "memcpy_gbs", "sha256_gbs", "bound_seconds", "fraction"):
            rows[f"roofline {k}"][r] = float(kv[k])

def show(v, unit=""):
    return f"{statistics.median(v):.4f}{unit} ({min(v):.4f}-{max(v):.4f})"

print("\n| measurement | median (range over rounds) |")
print("|---|---|")
for name in sorted(rows):
    print(f"| {name} | {show(list(rows[name].values()))} |")

def ratio(label, num, den):
    per = [rows[num][r] / rows[den][r] for r in rows[den] if r in rows[num]]
    if not per:
        print(f"| {label} | (no peer figures) | |")
        return
    print(f"| {label} | {statistics.median(per):.2f}x | {min(per):.2f}x-{max(per):.2f}x |")

print("\n| per-round ratio (polars time / measured time) | median | range |")
print("|---|---:|---|")
ratio("features, 1 thread (measured `parallel = false`)", "polars 1 thread(s) features",
      "measured sequential features")
ratio("features, 2 threads", "polars 2 thread(s) features", "measured parallel-2-threads features")
EOF
