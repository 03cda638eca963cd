#!/usr/bin/env bash
# `measured ab` against hyperfine on the everyday question: `sleep 0.100` against `sleep 0.110`
# (10% slower) and against itself (no difference), both tools with their defaults and `-N`,
# in alternating rounds (measured first in odd rounds, hyperfine in even ones). Per pair it
# prints every round (each tool's wall time, means, and measured's verdict with its interval),
# then the medians, how often measured decided what, and whether the true speedup lies in its
# interval: (0.100 + c) / (0.110 + c), c the cost of starting and ending `sleep` (the fastest
# run of `sleep 0.100` less 0.100 s), and also 0.100 / 0.110 and hyperfine's ratio of means in
# the same round. Prints the CPU, the load before every round, and both tools' wall time.
# Files stay under target/bench/ab-vs-hyperfine-<time>/.
# Usage: bash bench/ab_vs_hyperfine.sh [--smoke]   (ROUNDS=n, 10 by default; MEASURED_BIN=path
#        measures another build without building; ANALYSE=folder prints an earlier session's
#        figures again; --smoke: one round of each pair with the debug build, hyperfine only
#        when installed, see bench/lib.sh)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$bench_root"
rounds=${ROUNDS:-10}
# Smoke: one round, and `ab` stopped after 5 s whatever it has decided (its figures mean nothing).
limits=()
if [ "$smoke" = 1 ]; then
  rounds=1
  limits=(--max-time 5s)
fi
if [ -n "${ANALYSE:-}" ]; then
  work=$(realpath "$ANALYSE")
  rounds=$(find "$work" -name 'm-same-*.json' | wc -l)
else
work="$PWD/target/bench/ab-vs-hyperfine-$(date -u +%Y%m%d-%H%M%S)-$$"
mkdir -p "$work"
echo "per-round files: $work"
cpu_line
bin=$(realpath "${MEASURED_BIN:-$(built measured --bin measured)}")
with_hyperfine
now() { date +%s.%N; }
for pair in slower same; do
  b="sleep 0.110"
  [ "$pair" = same ] && b="sleep 0.100"
  measured_side() {
    local t0
    t0=$(now)
    (cd "$work" && "$bin" --quiet --database "$work/$pair.sqlite" ab -N "${limits[@]}" 'sleep 0.100' "$b" \
      --name "$pair" --results-dir "$work/results" --export-json "$work/m-$pair-$1.json" >/dev/null)
    awk -v a="$(now)" -v b="$t0" 'BEGIN { print a - b }' >"$work/m-$pair-$1.wall"
  }
  hyperfine_side() {
    local t0
    if [ "$peer" = 0 ]; then
      # No peer in this smoke run: the measured side alone is checked.
      echo '{"results": []}' >"$work/h-$pair-$1.json"
      echo 0 >"$work/h-$pair-$1.wall"
      return
    fi
    t0=$(now)
    hyperfine -N --style none 'sleep 0.100' "$b" --export-json "$work/h-$pair-$1.json" >/dev/null 2>&1
    awk -v a="$(now)" -v b="$t0" 'BEGIN { print a - b }' >"$work/h-$pair-$1.wall"
  }
  for round in $(seq 1 "$rounds"); do
    cut -d' ' -f1 /proc/loadavg >"$work/load-$pair-$round"
    alternate "$round" measured_side hyperfine_side
  done
done
fi
python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
if not json.load(open(f"{work}/h-same-1.json"))["results"]:
    for pair in ("slower", "same"):
        c = json.load(open(f"{work}/m-{pair}-1.json"))["comparisons"][0]
        print(f"{pair}: measured {c['verdict']} {c['speedup']:.4f}x in {c['blocks']} blocks; no hyperfine figures")
    sys.exit(0)
med = statistics.median
for pair in ("slower", "same"):
    print(f"\n{pair}: sleep 0.100 against {'sleep 0.110' if pair == 'slower' else 'sleep 0.100'}")
    rows = []
    for r in range(1, rounds + 1):
        m = json.load(open(f"{work}/m-{pair}-{r}.json"))
        h = json.load(open(f"{work}/h-{pair}-{r}.json"))
        c = m["comparisons"][0]
        lo, hi = c["speedup_ci"] or (float("nan"), float("nan"))
        hm = [x["mean"] for x in h["results"]]
        row = dict(
            load=float(open(f"{work}/load-{pair}-{r}").read()),
            m_wall=float(open(f"{work}/m-{pair}-{r}.wall").read()),
            h_wall=float(open(f"{work}/h-{pair}-{r}.wall").read()),
            m_means=[x["mean"] for x in m["results"]], h_means=hm,
            verdict=c["verdict"], speedup=c["speedup"], lo=lo, hi=hi, blocks=c["blocks"],
            h_speedup=hm[0] / hm[1], h_runs=[len(x["times"]) for x in h["results"]],
        )
        rows.append(row)
        print(f"round {r} (load {row['load']:.2f}): measured {row['m_wall']:.1f} s, "
              f"means {row['m_means'][0]*1e3:.2f} / {row['m_means'][1]*1e3:.2f} ms, {row['verdict']} "
              f"{row['speedup']:.4f}x ({lo:.4f}x-{hi:.4f}x), {row['blocks']} blocks; "
              f"hyperfine {row['h_wall']:.1f} s, means {hm[0]*1e3:.2f} / {hm[1]*1e3:.2f} ms, "
              f"speedup {row['h_speedup']:.4f}x, {row['h_runs'][0]} runs each")
    nominal = 0.100 / 0.110 if pair == "slower" else 1.0
    # Each run of `sleep S` takes S plus what starting and ending the process costs (c), so the
    # true ratio is (0.100 + c) / (0.110 + c); c is estimated by the fastest run of `sleep 0.100`
    # either tool saw in any round.
    fastest = min(min(t) for r in range(1, rounds + 1) for tool in "mh"
                  for t in [json.load(open(f"{work}/{tool}-{pair}-{r}.json"))["results"][0]["times"]])
    c = fastest - 0.100
    truth = (0.100 + c) / (0.110 + c) if pair == "slower" else 1.0
    verdicts = {v: sum(r["verdict"] == v for r in rows) for v in ("faster", "slower", "no change", "inconclusive")}
    holds = lambda x: sum(r["lo"] <= x <= r["hi"] for r in rows)
    print(f"verdicts: {verdicts}; the interval holds the truth {truth:.4f}x (start-up {c * 1e3:.2f} ms, from the "
          f"fastest run) in {holds(truth)} of {rounds}, {nominal:.4f}x (the sleeps alone) in {holds(nominal)}, "
          f"hyperfine's ratio of means of the same round in {sum(r['lo'] <= r['h_speedup'] <= r['hi'] for r in rows)}")
    for i, name in enumerate(("A", "B")):
        mm, hm = med(r["m_means"][i] for r in rows), med(r["h_means"][i] for r in rows)
        print(f"median mean time of {name}: measured {mm*1e3:.3f} ms, hyperfine {hm*1e3:.3f} ms ({mm / hm:.4f}x)")
    print(f"median wall time: measured {med(r['m_wall'] for r in rows):.1f} s "
          f"({min(r['m_wall'] for r in rows):.1f}-{max(r['m_wall'] for r in rows):.1f}), "
          f"{med(r['blocks'] for r in rows)} blocks; hyperfine {med(r['h_wall'] for r in rows):.1f} s "
          f"({min(r['h_wall'] for r in rows):.1f}-{max(r['h_wall'] for r in rows):.1f}); "
          f"load {min(r['load'] for r in rows):.2f}-{max(r['load'] for r in rows):.2f}")
PY
