#!/usr/bin/env bash
# Runner overhead: 200 trials of a `command` stage running `true`, measured end to end
# (including the SQLite write of every trial), against `hyperfine --runs 200 true` in the
# same session. Prints both wall times, the per-trial overhead and the ratio.
# Usage: bash bench/runner_overhead.sh   (builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/measured
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/overhead.toml" <<'TOML'
[experiment]
name = "runner-overhead"
[schedule]
warmup = 0
repetitions = 200
seed = 1
[stages.noop]
kind = "command"
argv = ["true"]
TOML
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in 1 2 3; do
  start=$(date +%s.%N)
  "$bin" --quiet --database "$work/r$round.sqlite" run --no-report "$work/overhead.toml" >/dev/null
  end=$(date +%s.%N)
  m=$(echo "$end - $start" | bc -l)
  hyperfine --runs 200 --warmup 3 -N --export-json "$work/h$round.json" true >/dev/null 2>&1
  h=$(python3 -c "import json,sys; r=json.load(open('$work/h$round.json'))['results'][0]; print(sum(r['times']))")
  hmean=$(python3 -c "import json; r=json.load(open('$work/h$round.json'))['results'][0]; print(r['mean'])")
  printf 'round %d: measured 200 trials %.3f s; hyperfine 200 runs %.3f s (mean %.3f ms); per-trial overhead %.3f ms; ratio %.2f\n' \
    "$round" "$m" "$h" "$(echo "$hmean*1000" | bc -l)" "$(echo "($m - $h) / 200 * 1000" | bc -l)" "$(echo "$m / $h" | bc -l)"
done
