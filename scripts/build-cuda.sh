#!/usr/bin/env bash
# Builds `measured` with `--features cuda` on a machine that has no GPU and no CUDA install.
#
# Usage: scripts/build-cuda.sh [--manifest-path PATH] [--target-dir DIR] [-- CARGO ARGS...]
#   --manifest-path  Cargo.toml to build (default: runner/Cargo.toml)
#   --target-dir     cargo target folder (default: target/cuda, so the normal build is untouched)
#   -- CARGO ARGS    replaces the default cargo command `build --release --features cuda`,
#                    e.g. `-- clippy --all-targets --features cuda -- -D warnings`
# Environment: CUDA_COMPUTE_CAP (default 90 = sm_90, H100/H200), PYTHON (default python3).
#
# What it does, and why (each step is skipped when its result is already in place):
#   1. Downloads the pinned CUDA 13.0 toolkit wheels from PyPI into .cuda/ (gitignored).
#      13.0 because the GPU machines' driver (580) supports CUDA 13.0; a newer nvcc emits PTX
#      that driver may refuse. cccl is needed for the headers cuda_fp16.h includes.
#   2. Finds the source of the cudarc version cargo resolves: runner/build.rs reads its
#      bindings to generate the run-time loader (src/cuda_dl.rs), so the binary links no CUDA
#      library and starts on machines without one.
#   3. Puts a fake `nvidia-smi` first on PATH: dfdx's build script queries the compute
#      capability unconditionally and panics without it.
#   4. Runs cargo with CUDA_ROOT and CUDA_COMPUTE_CAP set.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
manifest="$repo/runner/Cargo.toml"
target_dir="$repo/target/cuda"
cargo_args=(build --release --features cuda)
python=${PYTHON:-python3}
cap=${CUDA_COMPUTE_CAP:-90}

die() { echo "build-cuda: error: $*" >&2; exit 1; }
say() { echo "build-cuda: $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --manifest-path) [ $# -ge 2 ] || die "--manifest-path needs a value"; manifest=$2; shift 2 ;;
    --target-dir) [ $# -ge 2 ] || die "--target-dir needs a value"; target_dir=$2; shift 2 ;;
    --) shift; [ $# -gt 0 ] || die "nothing after --"; cargo_args=("$@"); break ;;
    -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -f "$manifest" ] || die "no Cargo.toml at '$manifest'"
# Relative to where the script was called from (cargo runs from the manifest's folder below).
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
manifest=$(cd "$(dirname "$manifest")" && pwd)/$(basename "$manifest")
[[ "$cap" =~ ^[0-9]+$ ]] || die "CUDA_COMPUTE_CAP must be digits like 90, got '$cap'"

# The pinned wheels and the stubs are x86_64 Linux binaries.
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || die "only x86_64 Linux is supported, this is $(uname -sm)"
for tool in cargo gcc "$python"; do
  command -v "$tool" >/dev/null || die "'$tool' not found on PATH"
done
"$python" -m pip --version >/dev/null 2>&1 || die "'$python -m pip' does not work; install pip"

cache="$repo/.cuda"
wheels="$cache/wheels"
toolkit="$cache/toolkit"
cuda_root="$toolkit/nvidia/cu13"
fakebin="$cache/bin"
pins=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88
  nvidia-cuda-cccl==13.0.85 nvidia-cuda-runtime==13.0.96)
pin_id=$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-16)

# 1. Toolkit wheels.
if [ ! -f "$toolkit/.complete-$pin_id" ]; then
  mkdir -p "$wheels"
  say "downloading CUDA 13.0 wheels (about 104 MB) into $wheels"
  "$python" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 --python-version 3.11 \
    -d "$wheels" "${pins[@]}" || die "pip download failed (is PyPI reachable?)"
  rm -rf "$toolkit"
  mkdir -p "$toolkit"
  for pin in "${pins[@]}"; do
    name=${pin%%==*}
    version=${pin##*==}
    whl=$(ls "$wheels/${name//-/_}-$version"-*.whl 2>/dev/null | head -n1 || true)
    [ -n "$whl" ] || die "wheel for $pin missing in $wheels"
    "$python" -m zipfile -e "$whl" "$toolkit" || die "could not unpack $whl"
  done
  [ -f "$cuda_root/include/cuda.h" ] || die "unexpected wheel layout: no $cuda_root/include/cuda.h"
  # Python's zipfile drops the executable bits.
  chmod +x "$cuda_root"/bin/* "$cuda_root"/nvvm/bin/* 2>/dev/null || true
  touch "$toolkit/.complete-$pin_id"
fi
[ -x "$cuda_root/bin/nvcc" ] || die "nvcc missing in $cuda_root/bin; delete $toolkit and rerun"

# 2. The source of the cudarc version cargo resolves for this manifest.
cudarc_src=$(cargo metadata --format-version 1 --manifest-path "$manifest" --features cuda 2>/dev/null |
  "$python" -c '
import json, os, sys
pkgs = [p for p in json.load(sys.stdin)["packages"] if p["name"] == "cudarc"]
if pkgs:
    print(os.path.dirname(max(pkgs, key=lambda p: p["version"])["manifest_path"]))
' || true)
if [ -z "$cudarc_src" ]; then
  # Offline or metadata failed: fall back to the version dfdx 0.13 resolves to here.
  cudarc_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.9.15 2>/dev/null | head -n1 || true)
fi
[ -n "$cudarc_src" ] && [ -f "$cudarc_src/src/driver/sys.rs" ] ||
  die "cudarc source not found; run 'cargo fetch --manifest-path $manifest' first"
# 3. A fake nvidia-smi answering dfdx's compute-capability query.
mkdir -p "$fakebin"
printf '#!/bin/sh\n# Build-time stand-in: answers only the compute-capability query.\necho compute_cap\necho %s.%s\n' \
  "${cap%?}" "${cap: -1}" >"$fakebin/nvidia-smi"
chmod +x "$fakebin/nvidia-smi"

# 4. Build. Other CUDA location variables would take precedence over CUDA_ROOT in cudarc.
say "cargo ${cargo_args[*]} (target dir $target_dir, sm_$cap)"
(
  unset CUDA_PATH CUDA_TOOLKIT_ROOT_DIR CUDNN_LIB
  export CUDA_ROOT="$cuda_root" CUDA_COMPUTE_CAP="$cap" MEASURED_CUDARC_SRC="$cudarc_src"
  export PATH="$fakebin:$cuda_root/bin:$PATH"
  cd "$(dirname "$manifest")"
  # Right after the subcommand, so arguments after a second `--` (e.g. clippy's) stay last.
  cargo "${cargo_args[0]}" --manifest-path "$manifest" --target-dir "$target_dir" "${cargo_args[@]:1}"
) || die "cargo failed"

profile=debug
for a in "${cargo_args[@]}"; do [ "$a" = --release ] && profile=release; done
bin="$target_dir/$profile/measured"
if { [ "${cargo_args[0]}" = build ] || [ "${cargo_args[0]}" = test ]; } && [ -x "$bin" ]; then
  cat >&2 <<EOF
build-cuda: built $bin
  One binary for CPU and GPU machines: it links no CUDA library and loads libcuda.so.1 (from
  the NVIDIA driver), cuBLAS and NVRTC (CUDA 13 or 12) only when a stage runs on CUDA. Where
  they are missing, CPU stages run and CUDA stages fail saying what was looked for.
  On a GPU machine with a PyTorch (CUDA 13) venv, cuBLAS and NVRTC come from the venv:
    export LD_LIBRARY_PATH="\$(python3 -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13", "lib"))'):\$LD_LIBRARY_PATH"
    ./measured run experiments/<name>.toml      # a stage with device = "cuda" or "auto"
EOF
fi
