#!/usr/bin/env bash
# Long fuzz run (see docs/fuzzing.md): builds the integration tests in release and runs every
# test of runner/tests/it/fuzz.rs with MEASURED_FUZZ_CASES cases per property target: the
# manifest parser and validator (arbitrary text, mutated corpus), the CSV import and the
# command stage's stdout parsing. Default 1,000,000 cases per target; the first argument
# overrides it. Each target prints its case count, failures, accepted inputs and time; the
# script prints the total time at the end. Extra arguments go to the test binary (e.g.
# `--test-threads 1`).
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-1000000}
case $cases in
  '' | *[!0-9]*)
    echo "usage: scripts/fuzz.sh [CASES_PER_TARGET] [TEST-BINARY-ARGS...]" >&2
    exit 2
    ;;
esac
shift || true
cargo build --release --locked -p measured --test it
echo "fuzzing with $cases cases per target, started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
start=$(date +%s)
MEASURED_FUZZ_CASES=$cases cargo test --release --locked -p measured --test it fuzz:: -- --nocapture "$@"
end=$(date +%s)
echo "fuzzing done: $cases cases per target in $((end - start)) s, finished $(date -u +%Y-%m-%dT%H:%M:%SZ)"
