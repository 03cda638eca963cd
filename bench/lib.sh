# Sourced by the benchmark scripts, first thing after `set -euo pipefail`: what they share.
#
# Smoke mode: a script given `--smoke` as its first argument runs at tiny sizes for one
# round, with the debug build that `cargo test` leaves in target/debug (built when missing),
# and with only the peers already installed: a peer that is missing (polars, ConnectorX,
# PyTorch, hyperfine, the sqlite3 shell, a GPU) is skipped with a line saying so, never
# downloaded. It checks that the script still runs against this checkout (its flags, the
# schema, the output it parses); its figures mean nothing. bench/smoke.sh runs every script
# that way, and scripts/test.sh (CI) runs bench/smoke.sh.
bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/alternate.sh
source "$bench_root/bench/alternate.sh"
# Sourced without arguments, this file sees the script's own: `--smoke` is taken off them here.
smoke=${smoke:-0}
if [ "${1:-}" = "--smoke" ]; then
  smoke=1
  shift
fi

# The default arguments of a script: `full` normally, `tiny` in smoke mode (each a string of
# words, read into the script's variables with `read -r`).
sizes() {
  if [ "$smoke" = 1 ]; then echo "$2"; else echo "$1"; fi
}

# The path of a binary of this checkout, built first: `measured` or `examples/<name>`, from the
# release profile, or the dev profile in smoke mode. The rest are cargo's target flags.
built() {
  local name=$1
  shift
  local profile=release flags=(--release)
  if [ "$smoke" = 1 ]; then
    profile=debug
    # With the test targets, so that dependencies get the features `cargo test` gave them
    # (dev-dependencies included) and what it built is reused: without them cargo resolves
    # other features and compiles much of the dependency tree again.
    flags=(--tests)
  fi
  (cd "$bench_root" && cargo build -q --locked "${flags[@]}" -p measured "$@") >&2
  echo "${CARGO_TARGET_DIR:-$bench_root/target}/$profile/$name"
}

# One line naming the CPU every figure of the run comes from: its model name as the kernel
# reports it, family/model/stepping (a VM may report only "AMD EPYC"), whether it has
# AVX-512, and the cores this process may use.
cpu_line() {
  local info=/proc/cpuinfo field
  field() { grep -m1 "^$1[[:space:]]*:" "$info" | cut -d: -f2- | xargs; }
  local avx=no
  grep -m1 '^flags' "$info" | grep -qw avx512f && avx=yes
  echo "# cpu: $(field 'model name') (family $(field 'cpu family'), model $(field 'model'), stepping $(field 'stepping'); AVX-512 $avx), $(nproc) cores"
}

# A Python that imports every module named, without installing anything: the benchmark venv
# (.venv-bench) or the system's python3; empty when neither has them.
python_with() {
  local py
  for py in "$bench_root/.venv-bench/bin/python" python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c "import ${*// /, }" 2>/dev/null; then
      echo "$py"
      return
    fi
  done
}

# The Python that runs the peers needing these modules: the benchmark venv (installed by
# bench/venv.sh when missing); in smoke mode only one that has them already, else empty.
peer_python() {
  if [ "$smoke" = 1 ]; then
    python_with "$@"
  elif [ "$*" = torch ] || [[ " $* " == *" torch "* ]]; then
    "$bench_root/bench/venv.sh" torch
  else
    "$bench_root/bench/venv.sh"
  fi
}

# Says that a peer is skipped in smoke mode, and why.
skipped() {
  echo "# smoke: skipped $1" >&2
}

# Puts hyperfine, the peer of the benchmarks against it, on PATH and sets `peer`: 1 when it is
# there (installed, or 1.20.0 from its registry into target/bench-tools outside smoke mode),
# 0 in a smoke run without it (skipped with a line saying so). Prints its version.
with_hyperfine() {
  peer=1
  if ! command -v hyperfine >/dev/null; then
    if [ -x "$bench_root/target/bench-tools/bin/hyperfine" ]; then
      export PATH="$bench_root/target/bench-tools/bin:$PATH"
    elif [ "$smoke" = 1 ]; then
      peer=0
      skipped "hyperfine: not installed (this script installs it from crates.io outside smoke mode)"
      return
    else
      (cd "$bench_root" && cargo install -q --locked --root target/bench-tools hyperfine@1.20.0)
      export PATH="$bench_root/target/bench-tools/bin:$PATH"
    fi
  fi
  echo "# peer: $(hyperfine --version)"
}
