#!/usr/bin/env bash
# Mixed precision against f32 on the CPU: measured's LSTM and GRU training (examples/rnn_bench.rs)
# at 60 days x 105 features, hidden 128, 2 layers, batch 256, with `precision = "f32"` and
# `"f16"` in alternating rounds (f32 first in odd rounds). Prints every run, then per model the
# medians and the median of the per-round ratios (f16 / f32 samples/s) with their range. The
# MLP's figure comes from experiments/mixed-precision.toml. See docs/benchmarks.md.
#
# Usage: bench/precision_bench.sh [--smoke] [ROUNDS] [THREADS] [BATCHES]
#   --smoke        one round of one batch at rnn_bench's tiny shape (--tiny), the debug build
#   RNN_BENCH_BIN  a prebuilt rnn_bench example (default: cargo build --release).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
read -r rounds threads batches <<<"$(sizes "5 2 8" "1 2 1")"
rounds=${1:-$rounds}
threads=${2:-$threads}
batches=${3:-$batches}
read -ra tiny <<<"$(sizes "" "--tiny")"
bin=${RNN_BENCH_BIN:-$(built examples/rnn_bench --example rnn_bench)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tsv="$work/runs.tsv"

cpu_line
echo "# uptime before: $(uptime)"
for round in $(seq "$rounds"); do
  for kind in lstm gru; do
    sides=(f32 f16)
    [ $((round % 2)) -eq 0 ] && sides=(f16 f32)
    for precision in "${sides[@]}"; do
      out=$("$bin" --kind "$kind" --mode train --reps 1 --threads "$threads" --batches "$batches" \
        --precision "$precision" "${tiny[@]}")
      rate=$(sed -E 's/.*median ([0-9.]+) samples.*/\1/' <<<"$out")
      printf '%s\t%s\t%s\t%s\n' "$round" "$kind" "$precision" "$rate" | tee -a "$tsv"
    done
  done
  echo "# round $round done: $(cut -d, -f3- <<<"$(uptime)" | xargs)" >&2
done
echo "# uptime after: $(uptime)"

python3 - "$tsv" <<'PY'
import statistics, sys
from collections import defaultdict

runs = defaultdict(dict)  # (kind, precision) -> {round: samples/s}
for line in open(sys.argv[1]):
    r, kind, precision, rate = line.split()
    runs[(kind, precision)][int(r)] = float(rate)
print("| model | f32 samples/s | f16 samples/s | f16 / f32 (range) |")
print("|---|---|---|---|")
for kind in ("lstm", "gru"):
    a, b = runs[(kind, "f32")], runs[(kind, "f16")]
    ratios = [b[r] / a[r] for r in sorted(a) if r in b]
    print(
        f"| {kind.upper()} train | {statistics.median(a.values()):.0f} | "
        f"{statistics.median(b.values()):.0f} | **{statistics.median(ratios):.2f}x** "
        f"({min(ratios):.2f}x-{max(ratios):.2f}x) |"
    )
PY
