#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU, its driver and a PyTorch CUDA venv (no Rust
# needed: it takes a binary built by scripts/build-cuda.sh). Runs the checks below, prints each
# as PASS, FAIL or SKIP with its figure, and writes one Markdown summary. bench/README-gpu.md
# gives the steps.
#
# Usage: scripts/gpu-check.sh [--bin PATH] [--examples DIR] [--python PATH] [--out DIR]
#   --bin       the measured binary (default: target/cuda/release/measured, else `measured`)
#   --examples  folder with the rnn_bench and train_bench examples of the same build (default:
#               next to the binary's folder, examples/); without them the model benchmarks SKIP
#   --python    a Python with PyTorch for CUDA (default: python3)
#   --out       where the runs, logs and summary.md go (default: a new folder under /tmp)
#   --only      the checks to run, comma-separated (e.g. 3,6,C, E, G,H or I); checks 1 and 2 always run.
#               A check runs the steps it reads from: 8 and D run check 7's copies, C check 6's
#               run. Default: all
#   --experiments [NAMES]  check E alone (unless --only says otherwise): runs the experiments
#               named (comma-separated; default: every committed experiment with a CUDA claim)
#               and prints a line per claim: its verdict, its interval, and the facts the
#               trials it was judged on recorded (device, GPU, engine, precision, threads, ...)
#   --max-time  for checks D, E and H, sets each experiment's `max_time` (e.g. 90s) in the copies
#               the checks run, for a short lease; the report then states the budget it ran under.
#               Default: each experiment's own
#
# On a machine without a GPU it stops at the first check that needs one, says so, and exits 0.
# Exit status otherwise: 0 when no check failed, 1 when one did.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=""
examples=""
python=python3
out=""
only=""
experiments=""
max_time=""
die() { echo "gpu-check: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=${2:?--bin needs a value}; shift 2 ;;
    --examples) examples=${2:?--examples needs a value}; shift 2 ;;
    --python) python=${2:?--python needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a value}; shift 2 ;;
    --only) only=${2:?--only needs a value}; shift 2 ;;
    --experiments)
      only=${only:-E}
      if [ $# -ge 2 ] && [[ "$2" != --* ]]; then experiments=$2; shift 2; else shift; fi ;;
    --max-time) max_time=${2:?--max-time needs a value}; shift 2 ;;
    -h|--help) sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
if [ -z "$bin" ]; then
  if [ -x "$repo/target/cuda/release/measured" ]; then
    bin="$repo/target/cuda/release/measured"
  else
    bin=$(command -v measured || true)
  fi
fi
[ -n "$bin" ] && [ -x "$bin" ] || die "no measured binary; build one with scripts/build-cuda.sh or pass --bin"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
[ -n "$examples" ] || examples="$(dirname "$bin")/examples"
out=${out:-$(mktemp -d /tmp/gpu-check.XXXXXX)}
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
summary="$out/summary.md"
metrics="$repo/bench/gpu/metrics.py"
failed=0
# want ID: whether check ID was asked for (--only).
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

CHECKS=(
  "1|ldd -r on the binary: every library it links resolves"
  "2|driver version, compute capability and PCIe link (maximum and current) logged"
  "3|with CUDA_VISIBLE_DEVICES empty: a clean error, no panic"
  "4|a non-constant pattern copied host-to-device and back returns equal bytes"
  "5|compute-sanitizer memcheck and synccheck on a small transfer and a small train run: 0 errors"
  "6|CPU against CUDA, one step from the same weights and batch, no dropout: loss within 1e-5, gradients within 1e-4"
  "7|pinned copies at 256 MiB both directions: within 5% of PyTorch, at least 80% of the link's rate"
  "8|host clock against events for pinned copies at 16 MiB and above: within 2%"
  "9|transfer warm-up 0 against 50: medians within 2%; eight repetitions: CV at most 3%"
  "10|three epochs on CUDA after the warm-up steps: epoch 0 within 5% of the later epochs"
  "11|loss_sync_every = 1: one synchronization per step, counted by measured's driver forwarders (train.sync_calls_per_step)"
  "A|MLP training, samples/s against PyTorch CUDA (goal >= 0.9x)"
  "B|LSTM and GRU training and inference on cuDNN (rnn_engine = cudnn), samples/s against PyTorch CUDA, alternating rounds (goal >= 0.9x)"
  "C|GPU telemetry recorded during the CUDA stages"
  "D|experiments/transfers.toml on CUDA: pinned h2d at 256 MiB against PyTorch's .to(non_blocking) (goal >= 0.9x)"
  "E|every committed experiment with a CUDA claim, device = auto, its own budget: finished within 5 minutes; a line per claim: verdict, CI and the recorded facts it was judged on"
  "F|the quickstart as an A/A run on CUDA, paired: no change or inconclusive, with its run chart and drift figures"
  "G|LSTM and GRU: check_step on CUDA against the CPU, one step from the same weights and batch: loss within 1e-5, gradients within 1e-4; the engine that trained"
  "H|experiments/hidden-state.toml and loss-sync.toml on CUDA: each claim's verdict and interval, and the engine that ran (rnn_engine)"
)

{
  echo "# GPU check"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- binary: \`$bin\` ($("$bin" --version 2>/dev/null || echo 'version unknown'))"
  echo "- host: $(hostname), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| check | what | result | figure |"
  echo "|---|---|---|---|"
} >>"$summary"  # appended: parts run with one --out share one summary

# result ID STATUS FIGURE: one console line and one summary row.
result() {
  local id=$1 status=$2 figure=$3 what=""
  for c in "${CHECKS[@]}"; do [ "${c%%|*}" = "$id" ] && what=${c#*|}; done
  [ "$status" = FAIL ] && failed=1
  printf 'gpu-check: %-3s %-4s %s\n' "$id" "$status" "$figure"
  echo "| $id | $what | $status | ${figure//|/\\|} |" >>"$summary"
}

finish() {
  echo >>"$summary"
  echo "Runs, logs and the results database are in \`$out\`." >>"$summary"
  echo "gpu-check: summary: $summary"
  exit "$failed"
}

echo "gpu-check: checks (binary $bin, output $out):"
for c in "${CHECKS[@]}"; do printf '  %-3s %s\n' "${c%%|*}" "${c#*|}"; done

# A run of one of bench/gpu's manifests in $out; prints the run id (empty when none was stored).
run_manifest() {
  local manifest=$1 log=$2
  shift 2
  (cd "$out" && "$bin" --database "$out/results.sqlite" run "$repo/bench/gpu/$manifest" --results-dir "$out/results" "$@") \
    >"$log" 2>&1
  grep -o 'run [0-9]\{8\}-[0-9]\{6\}-[0-9a-f]\{4\} finished' "$log" | awk '{print $2}' | tail -n1
}
q() { "$python" "$metrics" "$out/results.sqlite" "$@"; }

# 1. Every linked library resolves.
if ldd -r "$bin" >"$out/ldd.log" 2>&1 && ! grep -Eq 'not found|undefined symbol' "$out/ldd.log"; then
  result 1 PASS "$(grep -c '=>' "$out/ldd.log") libraries, none missing; CUDA is loaded at run time"
else
  result 1 FAIL "$(grep -E 'not found|undefined symbol' "$out/ldd.log" | head -n3 | tr '\n' ' ')"
fi

# 2. The first step that needs a device.
if ! command -v nvidia-smi >/dev/null 2>&1 ||
  ! nvidia-smi --query-gpu=name --format=csv,noheader >"$out/gpu.txt" 2>&1 ||
  [ ! -s "$out/gpu.txt" ]; then
  why=$(command -v nvidia-smi >/dev/null 2>&1 && head -n1 "$out/gpu.txt" || echo "nvidia-smi not found")
  echo "gpu-check: check 2 needs an NVIDIA GPU and its driver ($why): stopping here; checks 2-11 and A-H need a device"
  result 2 SKIP "no NVIDIA GPU here ($why); checks 2-11 and A-H not run"
  finish
fi
info=$(nvidia-smi --query-gpu=name,driver_version,compute_cap,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader | head -n1)
IFS=, read -r gpu_name driver cc gen_max width_max gen_cur width_cur <<<"$info"
trim() { echo "$1" | xargs; }
gen_max=$(trim "$gen_max"); width_max=$(trim "$width_max")
result 2 PASS "$(trim "$gpu_name"), driver $(trim "$driver"), compute $(trim "$cc"), PCIe gen $gen_max x$width_max max, gen $(trim "$gen_cur") x$(trim "$width_cur") now"
# Theoretical rate per direction, GB/s: gen 3 8 GT/s, 4 16, 5 32, 6 64, with 128b/130b coding
# (gen 6: 242/256 FLIT efficiency, close enough for an 80% floor).
link_gbps=$(awk -v g="$gen_max" -v w="$width_max" 'BEGIN {
  rate[3] = 8; rate[4] = 16; rate[5] = 32; rate[6] = 64
  if (!(g in rate) || w + 0 <= 0) { print ""; exit }
  printf "%.2f", rate[g] * w * (128 / 130) / 8 }')

# 3. No device visible: a clean error.
if want 3; then
  mkdir -p "$out/fixture"
  cp "$repo/runner/tests/fixtures/cuda/train_on_cuda.toml" "$out/fixture/"
  (cd "$out/fixture" && CUDA_VISIBLE_DEVICES= "$bin" run train_on_cuda.toml --results-dir "$out/results") \
    >"$out/check3.log" 2>&1
  rc=$?
  if grep -q panicked "$out/check3.log"; then
    result 3 FAIL "panicked: $(grep -m1 panicked "$out/check3.log")"
  elif [ "$rc" -ne 0 ] && grep -q 'no CUDA device is visible' "$out/check3.log"; then
    result 3 PASS "exit $rc: $(grep -o 'no CUDA device is visible[^;]*' "$out/check3.log" | head -n1)"
  else
    result 3 FAIL "exit $rc, no 'no CUDA device is visible' message (see $out/check3.log)"
  fi
fi

# 4. Round-trip bytes: the stage sends a non-constant pattern through every mode and size, and
# fails the trial when other bytes come back.
if want 4; then
  run4=$(run_manifest roundtrip.toml "$out/check4.log")
  sizes4=$(q "${run4:-latest}" series copy roundtrip_ok 2>/dev/null | awk '$3 == 1 {n++} END {print n + 0}')
  error4=$(q "${run4:-latest}" error 2>/dev/null | cut -c1-200)
  if [ -z "$error4" ] && [ "$sizes4" = 4 ]; then
    result 4 PASS "every mode at 4 sizes (4 KiB to 256 MiB) handed back the bytes sent through it"
  else
    result 4 FAIL "${error4:-roundtrip_ok recorded for $sizes4 of 4 sizes} (see $out/check4.log)"
  fi
fi

# 5. compute-sanitizer.
if want 5; then
  if command -v compute-sanitizer >/dev/null 2>&1; then
    s5=PASS
    figure=""
    for tool in memcheck synccheck; do
      for m in transfer-warmup.toml cpu-vs-cuda.toml; do
        log="$out/sanitizer-$tool-${m%.toml}.log"
        (cd "$out" && compute-sanitizer --tool "$tool" "$bin" --database "$out/sanitizer.sqlite" \
          run "$repo/bench/gpu/$m" --smoke --results-dir "$out/results") >"$log" 2>&1
        errors=$(grep -o 'ERROR SUMMARY: [0-9]* error' "$log" | awk '{s += $3} END {print s + 0}')
        grep -q 'ERROR SUMMARY' "$log" || { s5=FAIL; errors="no summary"; }
        [ "$errors" = 0 ] || s5=FAIL
        figure+="$tool ${m%.toml}: $errors; "
      done
    done
    result 5 "$s5" "$figure"
  else
    result 5 SKIP "compute-sanitizer not on PATH (it ships with the CUDA toolkit)"
  fi
fi

# 6. CPU against CUDA: one step (`check_step`), and the final losses as a figure beside it.
run6=""
if want 6 || want C; then run6=$(run_manifest cpu-vs-cuda.toml "$out/check6.log"); fi
if want 6; then
  step_loss=$(q "${run6:-latest}" scalar train step_loss_rel_diff 2>/dev/null | awk '$1 == "cuda" {print $2}')
  step_grad=$(q "${run6:-latest}" scalar train step_grad_max_rel_diff 2>/dev/null | awk '$1 == "cuda" {print $2}')
  cpu=$(q "${run6:-latest}" scalar train train_loss 2>/dev/null | awk '$1 == "cpu" {print $2}')
  gpu=$(q "${run6:-latest}" scalar train train_loss 2>/dev/null | awk '$1 == "cuda" {print $2}')
  if [ -n "$step_loss" ] && [ -n "$step_grad" ]; then
    ok=$(awk -v l="$step_loss" -v g="$step_grad" 'BEGIN { print (l <= 1e-5 && g <= 1e-4) ? "PASS" : "FAIL" }')
    result 6 "$ok" "one step: loss differs by $step_loss (relative), gradients by $step_grad of their scale; final train MSE cpu ${cpu:-?}, cuda ${gpu:-?}"
  else
    result 6 FAIL "no step comparison stored: $(q "${run6:-latest}" error 2>/dev/null | cut -c1-300)"
  fi
fi

# 7. 256 MiB pinned copies against PyTorch and the link.
run7=""
if want 7 || want 8 || want D; then
  run7=$(run_manifest transfer-256.toml "$out/check7.log")
  h2d=$(q "${run7:-latest}" series copy h2d_pinned_reuse_gbps 2>/dev/null | awk '{print $3}' | tail -n1)
  d2h=$(q "${run7:-latest}" series copy d2h_pinned_reuse_gbps 2>/dev/null | awk '{print $3}' | tail -n1)
  "$python" "$repo/bench/torch_transfer.py" --iterations 20 --json "$out/torch_transfer.json" >"$out/torch_transfer.log" 2>&1
  read -r t_h2d t_d2h < <("$python" -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
size = str(256 << 20)
print(r["h2d_pinned_copy"][size]["gbps"], r["d2h_pinned_copy"][size]["gbps"])' "$out/torch_transfer.json" 2>/dev/null)
fi
if want 7; then
  if [ -n "$h2d" ] && [ -n "$d2h" ] && [ -n "${t_h2d:-}" ]; then
    verdict=$(awk -v a="$h2d" -v b="$d2h" -v ta="$t_h2d" -v tb="$t_d2h" -v l="$link_gbps" 'BEGIN {
      ok = (a / ta >= 0.95 && a / ta <= 1.05 && b / tb >= 0.95 && b / tb <= 1.05)
      if (l != "") ok = ok && a >= 0.8 * l && b >= 0.8 * l
      printf "%s h2d %.2f GB/s (%.3fx PyTorch), d2h %.2f GB/s (%.3fx)", ok ? "PASS" : "FAIL", a, a / ta, b, b / tb
      if (l != "") printf "; link %.2f GB/s: %.0f%% and %.0f%%", l, 100 * a / l, 100 * b / l }')
    result 7 "${verdict%% *}" "${verdict#* }"
  else
    result 7 FAIL "missing figures: measured h2d '${h2d}' d2h '${d2h}', PyTorch '${t_h2d:-}' (see $out/check7.log, $out/torch_transfer.log)"
  fi
fi

# 8. Host clock against events: check 7's pinned reused copies of 256 MiB, timed on the host
# clock (the modes' clock) and between CUDA events (`<mode>_event_seconds`, from 16 MiB up).
if want 8; then
  s8=PASS
  figure8=""
  for dir in h2d d2h; do
    host=$(q "${run7:-latest}" series copy "${dir}_pinned_reuse_seconds" 2>/dev/null | awk '{print $3}' | tail -n1)
    ev=$(q "${run7:-latest}" series copy "${dir}_pinned_reuse_event_seconds" 2>/dev/null | awk '{print $3}' | tail -n1)
    if [ -z "$host" ] || [ -z "$ev" ]; then
      s8=FAIL
      figure8+="$dir: missing figures; "
      continue
    fi
    line=$(awk -v h="$host" -v e="$ev" 'BEGIN { d = (h - e) / e; printf "%s %+.2f", (d <= 0.02 && d >= -0.02) ? "ok" : "off", 100 * d }')
    [ "${line%% *}" = ok ] || s8=FAIL
    figure8+="$dir: host clock $host s, events $ev s per copy (${line#* }%); "
  done
  result 8 "$s8" "$figure8"
fi

# 9. Warm-up and repeatability.
if want 9; then
  run9=$(run_manifest transfer-warmup.toml "$out/check9.log")
  w0=$(q "${run9:-latest}" series copy h2d_pinned_reuse_gbps 2>/dev/null | awk '$1 == "warmup_0" {print $3}')
  w50=$(q "${run9:-latest}" series copy h2d_pinned_reuse_gbps 2>/dev/null | awk '$1 == "warmup_50" {print $3}')
  cv=$("$python" - "$out/results.sqlite" "${run9:-latest}" <<'PY' 2>/dev/null
import sqlite3, statistics, sys
con = sqlite3.connect(sys.argv[1])
run = sys.argv[2]
if run == "latest":
    run = con.execute("SELECT id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
v = [r[0] for r in con.execute(
    """SELECT m.value FROM metrics m JOIN trials t ON t.run_id = m.run_id AND t.trial_index = m.trial_index
       WHERE m.run_id = ? AND m.name = 'h2d_pinned_reuse_gbps' AND t.config = 'warmup_50'
         AND NOT t.warmup AND t.status = 'ok'""", (run,))]
print(f"{statistics.stdev(v) / statistics.mean(v):.4f}" if len(v) > 1 else "")
PY
  )
  if [ -n "$w0" ] && [ -n "$w50" ] && [ -n "$cv" ]; then
    verdict=$(awk -v a="$w0" -v b="$w50" -v cv="$cv" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d
      printf "%s warm-up 0: %.2f GB/s, 50: %.2f GB/s (%.1f%% apart); CV over 8 repetitions %.1f%%",
        (d <= 0.02 && cv <= 0.03) ? "PASS" : "FAIL", a, b, 100 * d, 100 * cv }')
    result 9 "${verdict%% *}" "${verdict#* }"
  else
    result 9 FAIL "missing figures (see $out/check9.log)"
  fi
fi

# 10. Epoch 0 against the later epochs, after the default warm-up (0.5 s of steps on CUDA).
if want 10; then
  run10=$(run_manifest epochs.toml "$out/check10.log")
  warm10=$(q "${run10:-latest}" scalar train warmup_steps 2>/dev/null | awk '{print $2}' | head -n1)
  verdict=$(q "${run10:-latest}" series train epoch_seconds 2>/dev/null | awk '
    { s[$2] = $3 } END {
      if (!(0 in s) || !(1 in s) || !(2 in s)) { print "FAIL missing epoch times"; exit }
      later = (s[1] + s[2]) / 2; d = (s[0] - later) / later
      printf "%s epoch 0 %.4f s, epochs 1-2 %.4f s: %+.1f%%", (d <= 0.05 && d >= -0.05) ? "PASS" : "FAIL", s[0], later, 100 * d }')
  result 10 "${verdict%% *}" "${verdict#* } (after ${warm10:-?} warm-up steps)"
fi

# 11. Synchronizations per step, as measured counts them: every driver call that makes the host
# wait passes through its generated forwarders, and the training records them per step.
if want 11; then
  run11=$(run_manifest syncs.toml "$out/check11.log")
  per=$(q "${run11:-latest}" scalar train sync_calls_per_step 2>/dev/null | awk '{print $2}' | head -n1)
  total=$(q "${run11:-latest}" scalar train sync_calls 2>/dev/null | awk '{print $2}' | head -n1)
  queries=$(q "${run11:-latest}" scalar train query_calls 2>/dev/null | awk '{print $2}' | head -n1)
  steps=$(q "${run11:-latest}" scalar train train_steps 2>/dev/null | awk '{print $2}' | head -n1)
  if [ -n "$per" ]; then
    verdict=$(awk -v p="$per" -v t="$total" -v s="$steps" -v qn="$queries" 'BEGIN {
      d = p - 1; if (d < 0) d = -d
      printf "%s %.3f synchronizations per step (%s over %s steps; %s queries, which never wait)",
        (d <= 0.01) ? "PASS" : "FAIL", p, t, s, qn }')
    result 11 "${verdict%% *}" "${verdict#* }"
  else
    result 11 FAIL "no train.sync_calls_per_step stored: $(q "${run11:-latest}" error 2>/dev/null | cut -c1-200) (see $out/check11.log)"
  fi
fi

# A and B: models against PyTorch CUDA, alternating rounds.
if ! want A && ! want B; then
  :
elif [ -x "$examples/train_bench" ] && [ -x "$examples/rnn_bench" ]; then
  for round in 1 2 3; do
    if want A; then
      "$examples/train_bench" --device cuda --config large --reps 3 >>"$out/mlp_measured.log" 2>&1
      "$python" "$repo/bench/torch_mlp.py" --device cuda --config large --reps 3 >>"$out/mlp_torch.log" 2>&1
    fi
    want B || continue
    for kind in lstm gru; do
      for mode in train infer; do
        "$examples/rnn_bench" --device cuda --rnn-engine cudnn --kind "$kind" --mode "$mode" --reps 3 \
          >>"$out/${kind}_${mode}_measured.log" 2>&1
        "$python" "$repo/bench/torch_rnn.py" --device cuda --kind "$kind" --mode "$mode" --reps 3 \
          >>"$out/${kind}_${mode}_torch.log" 2>&1
      done
    done
  done
  med() { grep -o "$1" "$2" | grep -o '[0-9.]*$' | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }
  if want A; then
    m=$(grep '| measured (defaults) |' "$out/mlp_measured.log" | awk -F'|' '{print $4}' | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}')
    t=$(grep '| PyTorch' "$out/mlp_torch.log" | awk -F'|' '{print $4}' | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}')
    if [ -n "$m" ] && [ -n "$t" ]; then
      verdict=$(awk -v m="$m" -v t="$t" 'BEGIN { printf "%s measured %.0f samples/s, PyTorch %.0f: %.2fx (target >= 0.9x)", (m / t >= 0.9) ? "PASS" : "FAIL", m, t, m / t }')
      result A "${verdict%% *}" "${verdict#* }"
    else
      result A FAIL "missing figures (see $out/mlp_*.log)"
    fi
  fi
  if want B; then
    figure=""
    sB=PASS
    for kind in lstm gru; do
      for mode in train infer; do
        m=$(med 'median [0-9.]*' "$out/${kind}_${mode}_measured.log")
        t=$(med 'median [0-9.]*' "$out/${kind}_${mode}_torch.log")
        engine=$(grep -o 'engine [a-z]*' "$out/${kind}_${mode}_measured.log" | tail -n1 | awk '{print $2}')
        if [ -z "$m" ] || [ -z "$t" ]; then sB=FAIL; figure+="$kind $mode: missing figures; "; continue; fi
        r=$(awk -v m="$m" -v t="$t" 'BEGIN { printf "%.2f", m / t }')
        awk -v r="$r" 'BEGIN { exit !(r < 0.9) }' && sB=FAIL
        [ "$engine" = cudnn ] || sB=FAIL
        figure+="$kind $mode on ${engine:-?}: measured $m, PyTorch $t samples/s ($r x, target >= 0.9x); "
      done
    done
    result B "$sB" "$figure"
  fi
else
  result A SKIP "no train_bench in $examples (build-cuda.sh -- build --release --features cuda --examples)"
  result B SKIP "no rnn_bench in $examples"
fi

# I: the MLP on tensor cores and under CUDA graphs, alternating rounds: the large MLP in bf16 and
# f16 against this build's f32 and PyTorch's autocast bf16, and the quickstart's model on CUDA
# with and without graphs against the machine's CPU cores. Each figure is the median of the
# rounds' medians; the precision and graph mode that ran are read from train_bench's facts.
if want I; then
  if [ -x "$examples/train_bench" ]; then
    for round in 1 2 3; do
      for p in f32 bf16 f16; do
        "$examples/train_bench" --device cuda --config large --precision "$p" --only-defaults --reps 3 \
          >>"$out/I_large_$p.log" 2>&1
      done
      "$python" "$repo/bench/torch_mlp.py" --device cuda --config large --autocast bf16 --reps 3 \
        >>"$out/I_large_torch_bf16.log" 2>&1
      for g in true false; do
        "$examples/train_bench" --device cuda --config quick --cuda-graph "$g" --only-defaults --reps 3 \
          >>"$out/I_quick_graph_$g.log" 2>&1
      done
      "$examples/train_bench" --device cpu --threads "$(nproc)" --config quick --only-defaults --reps 3 \
        >>"$out/I_quick_cpu.log" 2>&1
    done
    rate() { grep -E '\| (measured \(defaults\)|PyTorch[^|]*) \|' "$1" | awk -F'|' '{print $4}' | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }
    ran() { grep -o 'train_bench: ran .*' "$1" | tail -n1 | cut -d' ' -f3-; }
    f32=$(rate "$out/I_large_f32.log"); bf=$(rate "$out/I_large_bf16.log"); h=$(rate "$out/I_large_f16.log")
    tb=$(rate "$out/I_large_torch_bf16.log")
    qg=$(rate "$out/I_quick_graph_true.log"); qe=$(rate "$out/I_quick_graph_false.log"); qc=$(rate "$out/I_quick_cpu.log")
    if [ -n "$f32" ] && [ -n "$bf" ] && [ -n "$h" ] && [ -n "$tb" ] && [ -n "$qg" ] && [ -n "$qe" ] && [ -n "$qc" ]; then
      sI=$(awk -v f="$f32" -v b="$bf" -v t="$tb" -v g="$qg" -v c="$qc" 'BEGIN { print (b / f >= 1.5 && b / t >= 1.2 && g > c) ? "PASS" : "FAIL" }')
      grep -q 'precision=bf16' <<<"$(ran "$out/I_large_bf16.log")" || sI=FAIL
      grep -q 'cuda_graph=true' <<<"$(ran "$out/I_quick_graph_true.log")" || sI=FAIL
      figure=$(awk -v f="$f32" -v b="$bf" -v h="$h" -v t="$tb" -v g="$qg" -v e="$qe" -v c="$qc" 'BEGIN {
        printf "large MLP: bf16 %.0f samples/s (%.2fx our f32 %.0f, target >= 1.5x; %.2fx PyTorch autocast bf16 %.0f, target >= 1.2x), f16 %.0f (%.2fx f32); quickstart model: graphs %.0f, eager %.0f, CPU %.0f samples/s (graphs %.2fx the CPU, target > 1x)",
          b, b / f, f, b / t, t, h, h / f, g, e, c, g / c }')
      result I "$sI" "$figure; ran: bf16 [$(ran "$out/I_large_bf16.log")], f16 [$(ran "$out/I_large_f16.log")], graphs [$(ran "$out/I_quick_graph_true.log")]"
    else
      result I FAIL "missing figures (see $out/I_*.log)"
    fi
  else
    result I SKIP "no train_bench in $examples (build-cuda.sh -- build --release --features cuda --examples)"
  fi
fi

# The committed experiments, copied with their sources (claims quote them), so that their runs
# and reports stay under $out.
mkdir -p "$out/experiments"
cp -r "$repo/experiments/." "$out/experiments/"
if [ -n "$max_time" ]; then
  [[ "$max_time" =~ ^[0-9]+(s|m|h|ms)$ ]] || die "--max-time takes a duration such as 90s or 2m, not '$max_time'"
  sed -i "s/^max_time = .*/max_time = \"$max_time\"/" "$out"/experiments/*.toml
fi

# D: the committed transfers experiment (device = "auto": on CUDA here), against PyTorch
# (check 7's figures).
if want D; then
  (cd "$out" && "$bin" --database "$out/results.sqlite" run "$out/experiments/transfers.toml" --results-dir "$out/results") \
    >"$out/checkD.log" 2>&1
  runD=$(grep -o 'run [0-9]\{8\}-[0-9]\{6\}-[0-9a-f]\{4\} finished' "$out/checkD.log" | awk '{print $2}' | tail -n1)
  m=$(q "${runD:-latest}" series copy h2d_pinned_reuse_gbps 2>/dev/null |
    awk -v s=$((256 << 20)) '$1 == "pinned_blocking" && $2 == s {print $3}')
  t=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["results"]["h2d_pinned_to"][str(256 << 20)]["gbps"])' \
    "$out/torch_transfer.json" 2>/dev/null)
  if [ -n "$m" ] && [ -n "$t" ]; then
    verdict=$(awk -v m="$m" -v t="$t" 'BEGIN { printf "%s measured %.2f GB/s, PyTorch %.2f GB/s: %.3fx", (m / t >= 0.9) ? "PASS" : "FAIL", m, t, m / t }')
    result D "${verdict%% *}" "${verdict#* } (report: $(ls "$out"/results/transfers/*/report.md 2>/dev/null | head -n1))"
  else
    result D FAIL "missing figures: measured '$m', PyTorch '$t' (see $out/checkD.log)"
  fi
fi

# E: every committed experiment with a claim made on CUDA, as committed (device = "auto", its own
# repetitions and budget): the run's wall time, then one line per claim: its verdict and
# interval, and the facts its config's trials recorded (what the claim was judged on).
for m in "$out"/experiments/*.toml; do
  want E || break
  grep -q 'device = "cuda"' "$m" || continue
  name=$(basename "$m" .toml)
  [ -z "$experiments" ] || [[ ",$experiments," == *",$name,"* ]] || continue
  start=$(date +%s)
  (cd "$out" && "$bin" --database "$out/experiments.sqlite" run "$m" --results-dir "$out/results") >"$out/checkE-$name.log" 2>&1
  took=$(( $(date +%s) - start ))
  report=$(ls -t "$out"/results/"$name"/*/report.json 2>/dev/null | head -n1)
  lines=$("$python" - "$report" "$took" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
took = int(sys.argv[2])
def ci(c):
  lo, hi = c.get("speedup_ci") or [None, None]
  v = c.get("value")
  if v:
      lo, hi = v.get("median_ci") or [None, None]
      return f"median {v.get('median')} {v.get('unit')} ({lo}-{hi})"
  return f"{c.get('speedup') or 0:.3f}x ({lo or 0:.3f}x-{hi or 0:.3f}x)" if lo else "no interval"
facts = {f["config"]: f.get("agreed", {}) for f in r.get("facts", [])}
seq = (r.get("method") or {}).get("sequential") or {}
ok = r["status"] == "finished" and took <= 330
status = "PASS" if ok else "FAIL"
print(f"{status} {took} s, {seq.get('blocks', '?')} blocks ({seq.get('stop', 'fixed')}), {len(r['claims'])} claim(s)")
for c in r["claims"]:
    ran = ", ".join(f"{k}={v}" for k, v in sorted(facts.get(c["config"], {}).items())) or "no facts recorded"
    print(f"{status} \"{c['claim']}\" on {c['config']}: {c['verdict']}, {ci(c)}; judged on {ran}")
PY
)
  if [ -n "$lines" ]; then
    while IFS= read -r line; do
      result E "${line%% *}" "$name: ${line#* }"
    done <<<"$lines"
  else
    result E FAIL "$name: no report after ${took} s (see $out/checkE-$name.log)"
  fi
done

# F: the quickstart as an A/A run on CUDA: two identical configs, compared within blocks.
if want F; then
  "$python" - "$out/experiments/quickstart.toml" "$out/quickstart-aa.toml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = text.replace('name = "quickstart"', 'name = "quickstart-aa"')
text = re.sub(r'(?s)\[variants\.reuse\].*?(?=\n\[compare\])', '[variants.same]\nchange = "nothing: an A/A run"\n"stages.train.device" = "cuda"\n', text)
text = re.sub(r'(?s)\n\[\[compare\.claims\]\].*?(?=\n\[smoke\])', '\n', text)
text = text.replace('[compare]\n', '[compare]\nallow_identical = true\n', 1)
text = text.replace('device = "auto"', 'device = "cuda"')
open(sys.argv[2], "w").write(text)
PY
  (cd "$out" && "$bin" --database "$out/results.sqlite" run "$out/quickstart-aa.toml" --results-dir "$out/results") >"$out/checkF.log" 2>&1
  reportF=$(ls -t "$out"/results/quickstart-aa/*/report.json 2>/dev/null | head -n1)
  figureF=$("$python" - "$reportF" <<'PY' 2>/dev/null
import json, os, sys
r = json.load(open(sys.argv[1]))
c = r["comparisons"][0]["comparison"]
s = r.get("stability") or {}
base = next((x for x in s.get("rows", []) if x["config"] == s.get("baseline")), {})
ok = c["verdict"] in ("no_change", "inconclusive") and c["design"] == "paired"
chart = os.path.join(os.path.dirname(sys.argv[1]), "run_chart.svg")
print(("PASS" if ok else "FAIL") + f" {c['verdict']}, ratio {c['ratio']:.4f} ({c['ratio_ci'][0]:.4f}-{c['ratio_ci'][1]:.4f}), "
      f"{c['n_baseline']} blocks; level change {base.get('level_change', 0):.3f}, trial-to-trial CV {base.get('cv', 0):.3f}"
      f"{' (drifting)' if s.get('drifting') else ''}{' (jittery)' if s.get('jittery') else ''}; run chart {chart}")
PY
  )
  if [ -n "$figureF" ]; then
    result F "${figureF%% *}" "${figureF#* }"
  else
    result F FAIL "no A/A report (see $out/checkF.log)"
  fi
fi

# G: check_step for an LSTM and a GRU on CUDA against the CPU, per config, and the engine that
# then trained.
if want G; then
  runG=$(run_manifest rnn-cpu-vs-cuda.toml "$out/checkG.log")
  sG=PASS
  figureG=""
  for kind in lstm gru; do
    l=$(q "${runG:-latest}" scalar train step_loss_rel_diff 2>/dev/null | awk -v k="$kind" '$1 == k {print $2}')
    g=$(q "${runG:-latest}" scalar train step_grad_max_rel_diff 2>/dev/null | awk -v k="$kind" '$1 == k {print $2}')
    if [ -z "$l" ] || [ -z "$g" ]; then
      sG=FAIL
      figureG+="$kind: no step comparison stored; "
      continue
    fi
    ok=$(awk -v l="$l" -v g="$g" 'BEGIN { print (l <= 1e-5 && g <= 1e-4) ? "ok" : "off" }')
    [ "$ok" = ok ] || sG=FAIL
    figureG+="$kind: loss $l (target <= 1e-5), gradients $g (target <= 1e-4); "
  done
  reportG=$(ls -t "$out"/results/gpu-check-rnn-cpu-vs-cuda/*/report.json 2>/dev/null | head -n1)
  engines=$("$python" - "$reportG" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
print(", ".join(f"{c['config']} trained on {c['agreed'].get('train.rnn_engine', '?')}" for c in r.get("facts", [])))
PY
  )
  [ -n "$figureG" ] || figureG="no run (see $out/checkG.log)"
  result G "$sG" "$figureG${engines:-engine not recorded}"
fi

# H: the hidden-state and loss-sync experiments as committed (device = "auto": CUDA here): each
# claim's verdict with its interval, and the engine each config's training ran on.
for name in hidden-state loss-sync; do
  want H || break
  start=$(date +%s)
  (cd "$out" && "$bin" --database "$out/experiments.sqlite" run "$out/experiments/$name.toml" --results-dir "$out/results") \
    >"$out/checkH-$name.log" 2>&1
  took=$(( $(date +%s) - start ))
  report=$(ls -t "$out"/results/"$name"/*/report.json 2>/dev/null | head -n1)
  figure=$("$python" - "$report" "$took" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
def interval(c):
    lo, hi = c.get("speedup_ci") or [None, None]
    return f"{c.get('speedup') or 0:.3f}x ({lo:.3f}x-{hi:.3f}x)" if lo is not None else "no interval"
claims = "; ".join(f"\"{c['claim']}\" on {c['config']}: {c['verdict']}, {interval(c)}" for c in r["claims"])
engines = ", ".join(
    f"{c['config']}: {c['agreed'].get('train.rnn_engine') or c['agreed'].get('train.device', '?')}"
    for c in r.get("facts", []))
ok = r["status"] == "finished"
print(("PASS" if ok else "FAIL") + f" {sys.argv[2]} s; {claims}; engines {engines or 'not recorded'}")
PY
)
  if [ -n "$figure" ]; then
    result H "${figure%% *}" "$name (target: finished, every claim judged): ${figure#* }"
  else
    result H FAIL "$name: no report after ${took} s (see $out/checkH-$name.log)"
  fi
done

# C: telemetry from check 6's CUDA trials.
if want C; then
  util=$(q "${run6:-latest}" scalar train gpu_util_mean 2>/dev/null | awk '$1 == "cuda" {print $2}')
  throttled=$(q "${run6:-latest}" scalar train gpu_throttled 2>/dev/null | awk '$1 == "cuda" {print $2}')
  samples=$(q "${run6:-latest}" scalar train gpu_samples 2>/dev/null | awk '$1 == "cuda" {print $2}')
  if [ -n "$util" ] && [ -n "$samples" ]; then
    result C PASS "median over trials: $samples samples, mean utilization $util%, throttled flag ${throttled:-?}"
  else
    result C FAIL "no gpu_* metrics stored for the CUDA trials of check 6"
  fi
fi

finish
