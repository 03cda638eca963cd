#!/usr/bin/env bash
# Publish benchmark: stores 10,000 synthetic runs (10 experiments x 1,000 commits) in a SQLite
# file, times `measured publish` on it (first publish, nothing new, one new run), then opens an
# experiment page with 1,000 points per chart in headless Chromium and reads how long it took to
# become interactive.
# Usage: bench/publish_bench.sh [--smoke] [RUNS] [ROUNDS]
#   --smoke  10 runs (one per experiment), one round, the debug build; the page in Chromium
#            only when chromium and chromedriver are installed (see bench/lib.sh)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$bench_root"
read -r runs rounds <<<"$(sizes "10000 3" "10 1")"
runs=${1:-$runs}
rounds=${2:-$rounds}
dir=$(mktemp -d /tmp/measured-publish-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
bin=$(built measured --bin measured)
bench=$(built examples/publish_bench --example publish_bench)
profile=(--release)
[ "$smoke" = 1 ] && profile=()
cpu_line
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bench" --bin "$bin" --dir "$dir" --runs "$runs" --experiments 10 --rounds "$rounds"
if [ "$smoke" = 1 ] && ! { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }; then
  skipped "the page in headless Chromium: chromium or chromedriver is not installed"
else
  MEASURED_BENCH_PAGE="$dir/site-0/experiments/bench-00.html" MEASURED_BENCH_POINTS=$((runs / 10)) \
    cargo test "${profile[@]}" --locked --test it -- --ignored --exact publish::bench_a_thousand_point_page_in_chromium --nocapture 2>&1 \
    | grep -E "points per series|test result"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
