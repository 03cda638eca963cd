#!/usr/bin/env bash
# The RUSTC_WORKSPACE_WRAPPER scripts/test.sh builds with: the workspace's own crates are
# compiled by clippy-driver, which is rustc plus Clippy's lints, with warnings denied. So the
# test build is also the lint pass, and the dependencies are compiled once: a separate
# `cargo clippy` checks every dependency again in check mode (9 minutes on 2 cores).
# Cargo calls it as `lint-rustc.sh RUSTC ARGS...`; clippy-driver takes the same arguments.
# Cargo's queries (`-vV`, `--print`) pass through unchanged; a compilation gets `-D warnings`,
# as `cargo clippy -- -D warnings` gives it.
set -euo pipefail
driver=${CLIPPY_DRIVER:-clippy-driver}
for arg in "$@"; do
  if [ "$arg" = --crate-name ]; then
    exec "$driver" "$@" -D warnings
  fi
done
exec "$driver" "$@"
