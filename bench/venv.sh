#!/usr/bin/env bash
# Prints the Python of the benchmark venv (.venv-bench, ignored by git), creating it and
# installing the pinned peers from PyPI first when they are missing: bench/requirements.txt
# (polars, ConnectorX, pandas, ...) always, and with `torch` also bench/requirements-torch.txt
# (PyTorch, for rnn_bench.sh and the torch_*.py scripts; a large download, so only on request).
#
# Usage: py=$(bench/venv.sh)   or   py=$(bench/venv.sh torch)
# The test suite never needs any of this: only the scripts under bench/ do.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv-bench"
# A venv without pip is what a failed creation leaves (no python3-venv): made again.
if [ ! -x "$venv/bin/pip" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || {
    rm -rf "$venv"
    echo "cannot create $venv: install python3-venv (apt-get install python3-venv)" >&2
    exit 1
  }
  echo '*' >"$venv/.gitignore"
fi
# pip answers from the venv when every pin is already installed, without the network.
"$venv/bin/pip" install -q --disable-pip-version-check -r "$root/bench/requirements.txt" >&2
for extra in "$@"; do
  case "$extra" in
    torch) "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/bench/requirements-torch.txt" >&2 ;;
    *) echo "bench/venv.sh: unknown extra '$extra' (known: torch)" >&2; exit 2 ;;
  esac
done
echo "$venv/bin/python"
