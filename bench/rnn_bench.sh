#!/usr/bin/env bash
# Recurrent models against PyTorch on the CPU: measured's LSTM and GRU (examples/rnn_bench.rs)
# and PyTorch's nn.LSTM / nn.GRU (bench/torch_rnn.py) at 60 days x 105 features, hidden 128,
# 2 layers, batch 256, training and inference, in alternating rounds. Prints every run, then
# per configuration the medians, the median of the per-round ratios (measured / PyTorch) and
# their range. See docs/benchmarks.md.
#
# Usage: bench/rnn_bench.sh [--smoke] [ROUNDS] [THREADS] [BATCHES]
#   --smoke        one round of one batch at rnn_bench's tiny shape (--tiny), the debug build;
#                  PyTorch only when installed, never downloaded (see bench/lib.sh)
#   RNN_BENCH_BIN  a prebuilt rnn_bench example (default: cargo build --release).
#   TORCH_PYTHON   a Python with torch (default: the benchmark venv, `bench/venv.sh torch`,
#                  which installs the pinned PyTorch the first time).
# Every run's samples/s stays under target/bench/rnn-<time>/runs.tsv.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
read -r rounds threads batches <<<"$(sizes "5 2 8" "1 2 1")"
rounds=${1:-$rounds}
threads=${2:-$threads}
batches=${3:-$batches}
root=$bench_root
read -ra tiny <<<"$(sizes "" "--tiny")"
py=${TORCH_PYTHON:-$(peer_python torch)}
if [ -z "$py" ]; then
  skipped "PyTorch: not installed (bench/venv.sh torch installs it); measured's side runs alone"
elif ! "$py" -c 'import torch' 2>/dev/null; then
  echo "no torch in $py: unset TORCH_PYTHON to use bench/venv.sh torch" >&2
  exit 1
fi
bin=${RNN_BENCH_BIN:-$(built examples/rnn_bench --example rnn_bench)}
work="$root/target/bench/rnn-$(date -u +%Y%m%d-%H%M%S)-$$"
mkdir -p "$work"
tsv="$work/runs.tsv"
echo "# every run: $tsv"

cpu_line
echo "# uptime before: $(uptime)"
for round in $(seq "$rounds"); do
  for kind in lstm gru; do
    for mode in train infer; do
      # Each run warms up once, then times one run; measured first in odd rounds.
      sides=(measured torch)
      [ $((round % 2)) -eq 0 ] && sides=(torch measured)
      for side in "${sides[@]}"; do
        if [ "$side" = measured ]; then
          out=$("$bin" --kind "$kind" --mode "$mode" --reps 1 --threads "$threads" --batches "$batches" "${tiny[@]}")
        elif [ -n "$py" ]; then
          out=$("$py" "$root/bench/torch_rnn.py" --kind "$kind" --mode "$mode" --reps 1 \
            --threads "$threads" --batches "$batches" "${tiny[@]}")
        else
          continue
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
        if not ratios:
            print(f"| {kind.upper()} | {mode} | {statistics.median(m.values()):.0f} | (no PyTorch) | |")
            continue
        print(
            f"| {kind.upper()} | {mode} | {statistics.median(m.values()):.0f} | "
            f"{statistics.median(t.values()):.0f} | **{statistics.median(ratios):.2f}x** "
            f"({min(ratios):.2f}x-{max(ratios):.2f}x) |"
        )
EOF
