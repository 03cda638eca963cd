# Sourced by the benchmarks against hyperfine, from the repository root: `with_hyperfine`
# builds measured's release binary unless MEASURED_BIN names a build, puts hyperfine on PATH
# (1.20.0 from its registry into target/bench-tools when none is installed), and prints the
# CPU and the hyperfine version, which every result quoted from these benchmarks names.
with_hyperfine() {
  [ -n "${MEASURED_BIN:-}" ] || cargo build --release -q
  if ! command -v hyperfine >/dev/null; then
    [ -x target/bench-tools/bin/hyperfine ] ||
      cargo install -q --locked --root target/bench-tools hyperfine@1.20.0
    export PATH="$PWD/target/bench-tools/bin:$PATH"
  fi
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $(hyperfine --version)"
}
