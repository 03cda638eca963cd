#!/usr/bin/env bash
# Runner overhead: 200 trials of a `command` stage running `true` (TRIALS=n for another count),
# measured end to end (including the SQLite write of every trial), against
# `hyperfine --runs 200 -N true` in the same session, in alternating rounds (measured first in
# odd rounds, hyperfine in even ones). Prints the CPU, every round with the 1-minute load
# average before it and its ratio, the medians, the per-trial overhead, and the median and range
# of the per-round ratios; each round's files stay under target/bench/runner-overhead-<time>/.
# Usage: bash bench/runner_overhead.sh [--smoke]   (builds the release binary first, and
#        hyperfine when it is missing; MEASURED_BIN=path measures another build, ROUNDS=n sets
#        the rounds, 7 by default; --smoke: 20 trials, one round, the debug build, hyperfine
#        only when installed, see bench/lib.sh)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$bench_root"
trials=${TRIALS:-200}
rounds=${ROUNDS:-7}
if [ "$smoke" = 1 ]; then
  trials=20
  rounds=1
fi
bin=${MEASURED_BIN:-$(built measured --bin measured)}
with_hyperfine
work="$PWD/target/bench/runner-overhead-$(date -u +%Y%m%d-%H%M%S)-$$"
mkdir -p "$work"
echo "per-round files: $work"
cat >"$work/overhead.toml" <<TOML
[experiment]
name = "runner-overhead"
[schedule]
warmup = 0
repetitions = $trials
seed = 1
[stages.noop]
kind = "command"
argv = ["true"]
TOML
cpu_line
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/rounds.txt"
# Alternate the two sides round by round so both see the same background load; quote medians.
measured_side() {
  start=$(date +%s.%N)
  "$bin" --quiet --database "$work/r$1.sqlite" run --no-report --results-dir "$work/results" "$work/overhead.toml" >/dev/null
  end=$(date +%s.%N)
}
hyperfine_side() {
  if [ "$peer" = 1 ]; then
    hyperfine --runs "$trials" --warmup 3 -N --export-json "$work/h$1.json" true >/dev/null 2>&1
  else
    # No peer in this smoke run: nothing to divide by, and the ratios below are left out.
    echo '{"results": [{"times": []}]}' >"$work/h$1.json"
  fi
}
for round in $(seq 1 "$rounds"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  alternate "$round" measured_side hyperfine_side
  python3 - "$start" "$end" "$work/h$round.json" "$work/r$round.sqlite" "$load" >>"$work/rounds.txt" <<'PY'
import json, sqlite3, sys
from datetime import datetime
m = float(sys.argv[2]) - float(sys.argv[1])
h = sum(json.load(open(sys.argv[3]))["results"][0]["times"])
# Steady state: from the first trial's start to the last trial's end, as stored.
first, last = sqlite3.connect(sys.argv[4]).execute("SELECT MIN(started_at), MAX(finished_at) FROM trials").fetchone()
ts = lambda s: datetime.fromisoformat(s[:26] + s[-6:])
span = (ts(last) - ts(first)).total_seconds()
print(m, h, span, sys.argv[5])
PY
done
python3 - "$work/rounds.txt" "$trials" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
trials = int(sys.argv[2])
for i, (m, h, s, load) in enumerate(rows, 1):
    ratio = f"; steady ratio {s / h:.2f}x" if h > 0 else ""
    print(f"round {i} (load {load:.2f}): measured {m:.3f} s end to end, {s:.3f} s from first to last trial; "
          f"hyperfine {h:.3f} s{ratio}")
if any(r[1] == 0 for r in rows):
    print("no hyperfine figures: the ratios are left out")
    sys.exit(0)
med = lambda k: statistics.median(k(r) for r in rows)
m, h, s = med(lambda r: r[0]), med(lambda r: r[1]), med(lambda r: r[2])
# Ratios per round (both sides saw that round's load), then their median and range.
steady = [r[2] / r[1] for r in rows]
whole = [r[0] / r[1] for r in rows]
print(f"median of {len(rows)} rounds: hyperfine {trials} runs {h:.3f} s; measured {trials} trials {s:.3f} s steady state "
      f"(overhead {med(lambda r: (r[2] - r[1]) / trials * 1e3):.3f} ms/trial), "
      f"{m:.3f} s end to end incl. start-up, migrations and summary "
      f"(overhead {med(lambda r: (r[0] - r[1]) / trials * 1e3):.3f} ms/trial)")
print(f"per-round ratio measured / hyperfine: steady state median {statistics.median(steady):.2f}x "
      f"({min(steady):.2f}x-{max(steady):.2f}x), end to end median {statistics.median(whole):.2f}x "
      f"({min(whole):.2f}x-{max(whole):.2f}x)")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
