#!/usr/bin/env bash
# Builds the CUDA binary (scripts/build-cuda.sh) and proves, on a machine without a GPU, that
# it is one binary for CPU and GPU machines:
#   1. it links no CUDA library (readelf: no NEEDED libcuda, libcublas, libnvrtc);
#   2. `measured check` accepts every committed experiment and the GPU check's manifests;
#   3. the quickstart runs with --smoke, every trial stored;
#   4. a `device = "cuda"` stage fails with the clear error (what was looked for, how to get
#      it) while the CPU stages before it run, and nothing panics;
#   5. scripts/gpu-check.sh runs to its first step that needs a device and exits 0;
#   6. the forwarders count the driver calls that wait for the device (against a stub driver
#      compiled on the spot: tests/it/cuda_calls.rs).
# Run by scripts/test.sh after the tests. It builds into the tests' target folder, with the
# tests' features, so only dfdx, cudarc and measured are compiled again.
# Usage: scripts/cuda-smoke.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
say() { echo "cuda-smoke: $*" >&2; }
fail() { echo "cuda-smoke: FAIL: $*" >&2; exit 1; }

if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
  say "skipped: the pinned CUDA toolkit wheels are x86_64 Linux only"
  exit 0
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpu_here=1
else
  gpu_here=0
fi

# Built the way `cargo test` builds it (`--test it` brings the binary, with the features the
# tests resolved), so only cudarc, dfdx and measured compile again; a plain `cargo build`
# resolves features without the dev-dependencies and rebuilds about 80 crates.
bash scripts/build-cuda.sh --target-dir "$repo/target" -- test --no-run --locked --features cuda -p measured --test it
work=$(mktemp -d /tmp/measured-cuda-smoke.XXXXXX)
trap 'rm -rf "$work"' EXIT
bin="$work/measured"
# Copied out: the next `cargo test` puts the CPU build back at target/debug/measured.
cp "$repo/target/debug/measured" "$bin"

say "1. no CUDA library linked"
needed=$(readelf -d "$bin" | awk '/NEEDED/ { print $NF }' | tr -d '[]')
if grep -Eq 'libcuda|libcublas|libnvrtc|libcudart' <<<"$needed"; then
  fail "the binary needs CUDA libraries at load time: $(tr '\n' ' ' <<<"$needed")"
fi
say "   NEEDED: $(tr '\n' ' ' <<<"$needed")"

say "2. measured check experiments/*.toml, and the GPU check's manifests"
"$bin" check experiments/*.toml bench/gpu/*.toml runner/tests/fixtures/cuda/*.toml >"$work/check.log" 2>&1 ||
  { cat "$work/check.log" >&2; fail "check"; }

say "3. quickstart --smoke"
cp -r experiments "$work/experiments"
(cd "$work" && "$bin" run experiments/quickstart.toml --smoke) >"$work/quick.log" 2>&1 ||
  { tail -40 "$work/quick.log" >&2; fail "the quickstart smoke run"; }
grep -Eq 'finished: ([0-9]+) of \1 trials stored, 0 failed' "$work/quick.log" ||
  { tail -20 "$work/quick.log" >&2; fail "the quickstart stored fewer trials than it ran"; }

say "4. a device = \"cuda\" stage"
if [ "$gpu_here" = 1 ]; then
  say "   skipped: this machine has a GPU (scripts/gpu-check.sh covers it)"
else
  cp runner/tests/fixtures/cuda/train_on_cuda.toml "$work/experiments/"
  set +e
  (cd "$work" && "$bin" run experiments/train_on_cuda.toml) >"$work/cuda.log" 2>&1
  rc=$?
  set -e
  grep -q 'panicked' "$work/cuda.log" && { cat "$work/cuda.log" >&2; fail "a panic"; }
  [ "$rc" -ne 0 ] || fail "a run whose only trial failed exited 0"
  grep -q 'finished: 1 of 1 trials stored, 1 failed' "$work/cuda.log" ||
    { cat "$work/cuda.log" >&2; fail "the failed trial was not stored"; }
  # The stage error on the console and in the stored report: what was looked for, why, the fix.
  report=$(ls "$work"/results/train-on-cuda/*/report.md)
  for want in 'the CUDA driver library not found: looked for libcuda.so.1, libcuda.so (libcuda.so.1: cannot open shared object file' \
    'install the NVIDIA driver (it provides libcuda.so.1), or use `device = "cpu"`'; do
    grep -qF "$want" "$work/cuda.log" || { cat "$work/cuda.log" >&2; fail "the console lacks: $want"; }
  done
  grep -qF 'stage `train` failed: device error: cuda: the CUDA driver library not found' "$report" ||
    fail "the report does not show the stage failure"
  say "   $(grep -o 'cuda: the CUDA driver library not found.*' "$work/cuda.log" | head -n1 | cut -c1-120)..."
fi

say "5. scripts/gpu-check.sh, to its first step that needs a device"
if [ "$gpu_here" = 1 ]; then
  say "   skipped: this machine has a GPU; run scripts/gpu-check.sh itself"
else
  bash scripts/gpu-check.sh --bin "$bin" --out "$work/gpu-check" >"$work/gpu.log" 2>&1 ||
    { cat "$work/gpu.log" >&2; fail "gpu-check.sh exited non-zero without a GPU"; }
  grep -q 'needs an NVIDIA GPU' "$work/gpu.log" || { cat "$work/gpu.log" >&2; fail "gpu-check.sh did not stop at its first GPU step"; }
fi

say "6. the forwarders count the driver calls that wait (stub driver)"
bash scripts/build-cuda.sh --target-dir "$repo/target" -- test --locked --features cuda -p measured --test it cuda_calls \
  >"$work/calls.log" 2>&1 || { cat "$work/calls.log" >&2; fail "counting driver calls"; }
grep -q 'test cuda_calls::forwarded_driver_calls_are_counted_by_kind ... ok' "$work/calls.log" ||
  { cat "$work/calls.log" >&2; fail "the driver-call test did not run"; }
say "ok"
