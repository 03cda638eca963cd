#!/usr/bin/env bash
# Recurrent models against PyTorch on the CPU: measured's LSTM and GRU (examples/rnn_bench.rs)
# and PyTorch's nn.LSTM / nn.GRU (bench/torch_rnn.py) at 60 days x 105 features, hidden 128,
# 2 layers, batch 256, training and inference, in alternating rounds. Prints every run, then
# per configuration the medians, the median of the per-round ratios (measured / PyTorch) and
# their range. See docs/benchmarks.md.
#
# Usage: bench/rnn_bench.sh [ROUNDS] [THREADS] [BATCHES]
#   RNN_BENCH_BIN  a prebuilt rnn_bench example (default: cargo build --release).
#   TORCH_PYTHON   a Python with torch (default: the benchmark venv, `bench/venv.sh torch`,
#                  which installs the pinned PyTorch the first time).
# Every run's samples/s stays under target/bench/rnn-<time>/runs.tsv.
set -euo pipefail
rounds=${1:-5}
threads=${2:-2}
batches=${3:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
py=${TORCH_PYTHON:-$("$root/bench/venv.sh" torch)}
"$py" -c 'import torch' 2>/dev/null || {
  echo "no torch in $py: unset TORCH_PYTHON to use bench/venv.sh torch" >&2
  exit 1
}
bin=${RNN_BENCH_BIN:-}
if [ -z "$bin" ]; then
  (cd "$root" && cargo build --release -q -p measured --example rnn_bench)
  bin="$root/target/release/examples/rnn_bench"
fi
work="$root/target/bench/rnn-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$work"
tsv="$work/runs.tsv"
echo "# every run: $tsv"

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# uptime before: $(uptime)"
for round in $(seq "$rounds"); do
  for kind in lstm gru; do
    for mode in train infer; do
      # Each run warms up once, then times one run; measured first in odd rounds.
      sides=(measured torch)
      [ $((round % 2)) -eq 0 ] && sides=(torch measured)
      for side in "${sides[@]}"; do
        if [ "$side" = measured ]; then
          out=$("$bin" --kind "$kind" --mode "$mode" --reps 1 --threads "$threads" --batches "$batches")
        else
          out=$("$py" "$root/bench/torch_rnn.py" --kind "$kind" --mode "$mode" --reps 1 \
            --threads "$threads" --batches "$batches")
        fi
        rate=$(sed -E 's/.*median ([0-9.]+) samples.*/\1/' <<<"$out")
        printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$kind" "$mode" "$side" "$rate" | tee -a "$tsv"
      done
    done
  done
  echo "# round $round done: $(cut -d, -f3- <<<"$(uptime)" | xargs)" >&2
done
echo "# uptime after: $(uptime)"

python3 - "$tsv" <<'EOF'
import statistics, sys
from collections import defaultdict

runs = defaultdict(dict)  # (kind, mode, side) -> {round: samples/s}
for line in open(sys.argv[1]):
    r, kind, mode, side, rate = line.split()
    runs[(kind, mode, side)][int(r)] = float(rate)
print("| model | mode | measured samples/s | PyTorch samples/s | measured / PyTorch (range) |")
print("|---|---|---|---|---|")
for kind in ("lstm", "gru"):
    for mode in ("train", "infer"):
        m, t = runs[(kind, mode, "measured")], runs[(kind, mode, "torch")]
        ratios = [m[r] / t[r] for r in sorted(m) if r in t]
        print(
            f"| {kind.upper()} | {mode} | {statistics.median(m.values()):.0f} | "
            f"{statistics.median(t.values()):.0f} | **{statistics.median(ratios):.2f}x** "
            f"({min(ratios):.2f}x-{max(ratios):.2f}x) |"
        )
EOF
