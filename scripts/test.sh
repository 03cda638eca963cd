#!/usr/bin/env bash
# Runs the whole test suite, including the tests against a real PostgreSQL server: starts a
# throwaway PostgreSQL (installed with apt-get when missing), runs `cargo test`, stops it.
# The browser tests of `measured publish` (tests/it/publish.rs) drive Debian's headless
# Chromium through chromedriver: both are installed with apt-get when missing (root), and the
# tests fail rather than skip without them.
# The Slurm tests (tests/it/queue.rs) start their own single-node cluster with
# scripts/slurm-start.sh (root; installs slurm-wlm and munge when missing); under CI=true they
# fail rather than skip when it cannot start. Then scripts/cuda-smoke.sh builds the CUDA binary
# (the toolkit wheels are cached in .cuda/) and smoke-tests it without a GPU. Extra arguments go
# to `cargo test`.
# Lint gates: `cargo fmt --check`, and Clippy with `-D warnings` (the workspace denies
# `undocumented_unsafe_blocks`). Clippy runs inside the builds: every cargo command here
# compiles the workspace's crates with clippy-driver (scripts/lint-rustc.sh), so the test build
# is the CPU lint pass, and a build of the CUDA binary, examples and integration tests after the
# smoke is the CUDA one;
# the dependencies are compiled once instead of checked again by `cargo clippy`. After the
# tests, bench/smoke.sh runs every benchmark script in smoke mode. Every step runs (the tests
# only when their build passed); the script fails when any of them failed.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt_status=0
cargo fmt --all --check || { fmt_status=$?; echo "fmt: FAILED: run cargo fmt" >&2; }
if ! command -v chromedriver >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "installing chromium and chromium-driver with apt-get ..." >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >&2
  else
    echo "chromium or chromedriver not found and not root: the browser tests will fail" >&2
  fi
fi
# The build embeds `git describe --dirty` (the git-version crate), which also makes the crate
# depend on .git/index. In a fresh clone the first git command rewrites the index (its entries
# are racily clean), so the build's own `git describe` would change it and the next cargo
# command would compile the crate again (80 s on two cores). Refreshing the index first keeps it
# as it is from here on.
git update-index -q --refresh >/dev/null 2>&1 || true
pgdir=$(mktemp -d /tmp/measured-pg.XXXXXX)
chmod 755 "$pgdir"
eval "$(scripts/pg-start.sh "$pgdir")"
trap 'scripts/pg-stop.sh' EXIT
echo "PostgreSQL for tests: ${MEASURED_TEST_DATABASE_URL%%:*}://measured:***@${MEASURED_TEST_DATABASE_URL##*@}" >&2
log=$(mktemp)
# took NAME: appends NAME and the seconds since the last call to the closing timing line.
timings=""
mark=0
took() { timings+="$1 $((SECONDS - mark)) s, "; mark=$SECONDS; }
took setup
# CI builds once from a clean clone: incremental compilation's bookkeeping would only cost time.
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL=0
fi
set +e
# A lint is a build error from here on (scripts/lint-rustc.sh).
export RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/lint-rustc.sh"
cargo test --workspace --locked --no-run "$@"
clippy_status=$?
took "build and lints"
if [ "$clippy_status" -eq 0 ]; then
  cargo test --workspace --locked "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
else
  echo "tests: not run: the build or its lints failed" | tee "$log"
  status=$clippy_status
fi
took tests
# Every benchmark script in smoke mode (tiny sizes, one round, the debug build just tested,
# the Postgres above, only the peers already installed), so none breaks unnoticed.
bash bench/smoke.sh
bench_status=$?
took "bench smoke"
# The CUDA build: compiled here (no GPU needed) and smoke-tested as one binary for CPU and GPU
# machines (scripts/cuda-smoke.sh says what it checks).
bash scripts/cuda-smoke.sh
cuda_status=$?
took "cuda smoke"
# The CUDA build's lints: the binary, the examples and the integration tests, built with the
# features the smoke just built, in its target folder (a `cargo clippy` would check every
# dependency again). The library and the integration tests were built (and linted) by the smoke;
# the unit tests' CUDA build, which nothing runs, is left out (75 s on two cores).
bash scripts/build-cuda.sh --target-dir "$PWD/target" -- test --no-run --bins --examples --test it --locked --features cuda -p measured
cuda_clippy_status=$?
took "lints --features cuda"
set -e
# One closing line over every test binary (cargo's own last line is the doc-test summary).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
echo "time: ${timings}total ${SECONDS} s"
if [ "$cuda_status" -ne 0 ]; then
  echo "cuda smoke: FAILED (exit $cuda_status)"
  [ "$status" -ne 0 ] || status=$cuda_status
else
  echo "cuda smoke: ok"
fi
for gate in "fmt:$fmt_status" "build and lints:$clippy_status" "bench smoke:$bench_status" "lints --features cuda:$cuda_clippy_status"; do
  if [ "${gate##*:}" -ne 0 ]; then
    echo "${gate%:*}: FAILED (exit ${gate##*:})"
    [ "$status" -ne 0 ] || status=${gate##*:}
  else
    echo "${gate%:*}: ok"
  fi
done
exit "$status"
