#!/usr/bin/env bash
# Runs every benchmark script in smoke mode (`--smoke`: tiny sizes, one round, the debug build,
# only the peers already installed; see bench/lib.sh), so that a schema, flag or output change
# cannot break one unnoticed; then checks the revisions example's manifest and that every
# Python peer parses. scripts/test.sh (and so CI) runs it after `cargo test`, whose debug build
# it uses.
# Prints each script's time and one closing line; fails when any script failed.
#
# Usage: bench/smoke.sh [SCRIPT...]   (default: every bench/*.sh that benchmarks something)
#   MEASURED_TEST_DATABASE_URL  the Postgres server load_bench.sh and queue_bench.sh use (an
#                               admin URL); unset, each starts a throwaway one (root only)
set -uo pipefail
smoke=1
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$bench_root"
scripts=("$@")
if [ ${#scripts[@]} -eq 0 ]; then
  for s in bench/*.sh; do
    case "$(basename "$s")" in
      alternate.sh | lib.sh | smoke.sh | venv.sh) ;;
      *) scripts+=("$s") ;;
    esac
  done
fi
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
failed=()
started=$(date +%s.%N)
for s in "${scripts[@]}"; do
  name=$(basename "$s" .sh)
  t0=$(date +%s.%N)
  bash "$s" --smoke >"$log/$name.log" 2>&1
  status=$?
  seconds=$(echo "$(date +%s.%N) - $t0" | bc -l)
  skips=$(grep -c '^# smoke: skipped' "$log/$name.log")
  if [ "$status" -eq 0 ]; then
    note=""
    [ "$skips" -gt 0 ] && note=" ($skips peer(s) skipped)"
    printf 'bench smoke: %-20s ok      %5.1f s%s\n' "$name" "$seconds" "$note"
  else
    printf 'bench smoke: %-20s FAILED  %5.1f s (exit %d); its output:\n' "$name" "$seconds" "$status"
    sed 's/^/    /' "$log/$name.log"
    failed+=("$name")
  fi
  grep '^# smoke: skipped' "$log/$name.log" | sed 's/^# smoke: /    /'
done
# The revisions example's manifest (bench/gpu's need the CUDA build: scripts/cuda-smoke.sh
# checks them).
bin=$(built measured --bin measured)
if "$bin" check bench/revisions.toml >"$log/manifests.log" 2>&1; then
  echo "bench smoke: manifests            ok"
else
  echo "bench smoke: manifests            FAILED:"
  sed 's/^/    /' "$log/manifests.log"
  failed+=(manifests)
fi
# Every Python peer at least parses (those whose modules are missing cannot run here); parsed,
# not compiled to files, so nothing is left in the tree.
if python3 -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' bench/*.py bench/gpu/*.py 2>"$log/py.log"; then
  echo "bench smoke: python peers compile ok"
else
  echo "bench smoke: python peers         FAILED:"
  sed 's/^/    /' "$log/py.log"
  failed+=(python)
fi
printf 'bench smoke: %d scripts in %.1f s; %s\n' "${#scripts[@]}" "$(echo "$(date +%s.%N) - $started" | bc -l)" \
  "$([ ${#failed[@]} -eq 0 ] && echo "all passed" || echo "failed: ${failed[*]}")"
[ ${#failed[@]} -eq 0 ]
