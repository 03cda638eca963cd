#!/usr/bin/env bash
# Publish benchmark: stores 10,000 synthetic runs (10 experiments x 1,000 commits) in a SQLite
# file, times `measured publish` on it (first publish, nothing new, one new run), then opens an
# experiment page with 1,000 points per chart in headless Chromium and reads how long it took to
# become interactive. Usage: bench/publish_bench.sh [RUNS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10000}
rounds=${2:-3}
dir=$(mktemp -d /tmp/measured-publish-bench.XXXXXX)
cargo build --release --locked --bin measured --example publish_bench
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
target/release/examples/publish_bench --bin target/release/measured --dir "$dir" --runs "$runs" --experiments 10 --rounds "$rounds"
MEASURED_BENCH_PAGE="$dir/site-0/experiments/bench-00.html" MEASURED_BENCH_POINTS=$((runs / 10)) \
  cargo test --locked --test it -- --ignored --exact publish::bench_a_thousand_point_page_in_chromium --nocapture 2>&1 \
  | grep -E "points per series|test result"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$dir"
