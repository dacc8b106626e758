#!/bin/sh
# tests/gpu/run.sh [BUNDLE] — everything that needs a GPU, in one run of a few minutes, on a
# machine that has only the GPU image's software (CUDA, PyTorch, Python; no autotools, no GLib or
# cJSON development files, no package registry). It builds nothing: it runs the bundle that
# `make gpu-bundle` made on the CPU machine (BUNDLE, default gpu-bundle/stowage-gpu.tar.xz; a
# folder works too), or else this tree's own build when it has one.
#
# Every step runs under a time limit, its output in a log; the whole run stops starting steps
# after $STW_GPU_BUDGET seconds (default 480), and no step runs past $STW_GPU_DEADLINE (default 90 s
# more); STW_GPU_STEPS, where set, names the only steps to run (a rerun of some). What comes back is three files in $STW_GPU_OUT
# (default $OUT, else /tmp/stowage-gpu-out): summary.txt (one line per figure or failure),
# preflight.txt (the machine, the libraries found, the bundle's manifest) and logs.tar.gz
# (every log, event stream and trace).
#
# Steps: preflight (free); the CUDA backend's unit tests; the backend's copy bandwidth against
# cudaMemcpyAsync, and copy/compute overlap; a CUDA program (nvtx-demo) through the CUPTI
# injection library, with counts per event kind and a debug run describing its first launches;
# the CUDA trainer against the CPU trainer (fp32, mixed); resident training twice (the noise of
# atomics, and the process's GPU memory outside the arena, as the trace records it) and the
# quarter-budget plan replayed normally and with CUDA_LAUNCH_BLOCKING=1 (a difference beyond
# that noise, or one that blocking removes, is a copy racing compute), and with a storage tier
# under it (optimizer state in files, through host staging); the CUDA trainer through CUPTI; a
# PyTorch program through `stowage profile` (emit_nvtx) and stowage.torch.profile on CUDA, each
# planned and checked; the Python package's tests under the machine's PyTorch (stowage.torch.wrap
# training on CUDA among them); the wrapper's tokens/s on CUDA (bench/torch-wrap.py); GPT-2
# small's shape at batch 16 x 1024 in mixed precision (tokens/s, MFU); the predictions against
# measured CUDA replays (bench/fidelity.sh on CUDA, GPU 0's copies probed); compute-sanitizer
# memcheck over one step.
set -u
cd "$(dirname "$0")/../.."
src=$(pwd)
out=${STW_GPU_OUT:-${OUT:-/tmp/stowage-gpu-out}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(mktemp -d "${TMPDIR:-/tmp}/stowage-gpu.XXXXXX")
log=$root/logs
mkdir -p "$log"
budget=${STW_GPU_BUDGET:-480}
# no step runs past this, however long its own limit: the run ends by it (default budget + 90 s)
deadline=${STW_GPU_DEADLINE:-$(( budget + 90 ))}
start=$(date +%s)
: > "$out/summary.txt"
note() { echo "$1" >> "$out/summary.txt"; echo "== $1"; }
finish() {
  note "total: $(( $(date +%s) - start )) s"
  cp "$out/summary.txt" "$log/"
  tar -C "$root" -czf "$out/logs.tar.gz" logs 2>/dev/null
  echo
  echo "==== summary ($out)"
  cat "$out/summary.txt"
}
trap finish EXIT
# step NAME SECONDS COMMAND...: COMMAND's output in $log/NAME.log, killed after SECONDS; its
# exit status (124: timed out; 125: not started, the run's budget is spent)
step() {
  name=$1 limit=$2
  shift 2
  if [ -n "${STW_GPU_STEPS:-}" ] && ! printf ' %s ' "$STW_GPU_STEPS" | grep -q " $name "; then
    echo "not started: not among STW_GPU_STEPS" > "$log/$name.log"
    return 125
  fi
  if [ $(( $(date +%s) - start )) -gt "$budget" ]; then
    echo "$name: not started (the run's $budget s are spent)" >> "$log/steps.txt"
    echo "not started: budget" > "$log/$name.log"
    return 125
  fi
  t0=$(date +%s)
  left=$(( deadline - (t0 - start) ))
  [ "$left" -lt "$limit" ] && limit=$(( left > 1 ? left : 1 ))
  timeout -k 10 "$limit" "$@" > "$log/$name.log" 2>&1
  st=$?
  echo "$name: exit $st in $(( $(date +%s) - t0 )) s" >> "$log/steps.txt"
  return $st
}
last() { tail -n "${2:-2}" "$log/$1.log" | tr '\n' ' ' | cut -c1-400; }
# a training's summary line (the last is its arithmetic rate)
trained() { grep '^trained' "$log/$1.log" | tail -n 1 | cut -c1-300; }

# ---- the bundle ---------------------------------------------------------------------------
bundle=${1:-${STOWAGE_GPU_BUNDLE:-gpu-bundle/stowage-gpu.tar.xz}}
if [ -f "$bundle" ]; then
  if command -v xz >/dev/null; then
    xz -dc "$bundle" | tar -C "$root" -xf -
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$bundle" "$root"
  fi
  g=$root/stowage-gpu
elif [ -d "$bundle/bin" ]; then
  g=$(cd "$bundle" && pwd)
else
  g=""
fi
if [ -n "$g" ] && [ -x "$g/bin/stowage" ]; then
  S=$g/bin/stowage TEST_CUDA=$g/bin/test-cuda BENCH_CUDA=$g/bin/bench-cuda
  DEMO=$g/bin/nvtx-demo LIB=$g/lib/libstowage.so
  note "bundle: $(head -n 1 "$g/MANIFEST")"
elif [ -x ./stowage ] && [ -x tests/test-cuda ]; then
  S=$src/stowage TEST_CUDA=$src/tests/test-cuda BENCH_CUDA=$src/bench/bench-cuda
  DEMO=$root/nvtx-demo LIB=$src/.libs/libstowage.so
  nvcc -O2 -o "$DEMO" tests/gpu/nvtx-demo.cu > "$log/nvcc.log" 2>&1 || note "nvcc nvtx-demo FAILED"
  note "no bundle: this tree's own build"
else
  note "no bundle at $bundle and no build here: run 'make gpu-bundle' on the CPU machine and carry gpu-bundle/"
  exit 1
fi

# the base system's libraries the bundle carries only for a machine without them
fallbacks=""
if [ -n "$g" ]; then
  for f in "$g"/lib/fallback/*; do
    [ -f "$f" ] || continue
    name=$(basename "$f")
    if ! { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q "[[:space:]]$name[[:space:]]" &&
       ! ls /lib/x86_64-linux-gnu/"$name" /usr/lib/x86_64-linux-gnu/"$name" /lib64/"$name" \
            /usr/lib64/"$name" >/dev/null 2>&1; then
      cp "$f" "$g/lib/" && fallbacks="$fallbacks $name"
    fi
  done
  [ -n "$fallbacks" ] && note "the bundle's own copies of:$fallbacks (this machine has none)"
fi

# ---- preflight (free): the machine, and every library the bundle loads ---------------------
# a library that a bundled file needs and the loader does not find (CUDA's, where the image puts
# it elsewhere) is looked for and its folder put on LD_LIBRARY_PATH
missing() {
  for f in "$S" "$TEST_CUDA" "$LIB" ${g:+"$g"/lib/stowage/*}; do ldd "$f" 2>/dev/null; done |
    awk '$2 == "=>" && $3 == "not" {print $1}' | sort -u | grep -v '^libcuda\.so'
}
for name in $(missing); do
  found=$(find /usr/local /opt /usr/lib -name "$name" 2>/dev/null | head -n 1)
  [ -n "$found" ] && LD_LIBRARY_PATH=$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "system: $(uname -srm); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"); $(nproc) CPUs"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -n 2)"
  echo "nvcc: $(nvcc --version 2>&1 | tail -n 2 | tr '\n' ' ')"
  for t in compute-sanitizer ncu xz timeout python3; do echo "$t: $(command -v $t || echo missing)"; done
  echo "python: $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -n 1)"
  echo "pytest: $(python3 -m pytest --version 2>&1 | tail -n 1)"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "NVTX_INJECTION64_PATH=${NVTX_INJECTION64_PATH:-}"
  echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"
  echo "--- stowage --build-info"
  "$S" --build-info 2>&1
  echo "--- libraries not found (libcuda is the driver's)"
  for f in "$S" "$TEST_CUDA" "$BENCH_CUDA" "$DEMO" "$LIB" ${g:+"$g"/lib/stowage/*}; do
    ldd "$f" 2>&1 | grep "not found" | sed "s|^|$(basename "$f"): |"
  done
  echo "--- libcupti, libnccl, libcudart here"
  find /usr/local/cuda* /opt /usr/lib \( -name 'libcupti.so*' -o -name 'libnccl.so*' -o -name 'libcudart.so*' \) 2>/dev/null | head -n 20
  [ -n "$g" ] && { echo "--- the bundle"; cat "$g/MANIFEST"; }
} > "$out/preflight.txt" 2>&1
cp "$out/preflight.txt" "$log/"
note "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"

# ---- the CUDA backend's unit tests and its copies --------------------------------------------
step test-cuda 60 "$TEST_CUDA"
note "test-cuda: exit $?, $(grep '^ok' "$log/test-cuda.log" | grep -vc SKIP) passed, $(grep -c '^not ok' "$log/test-cuda.log") failed, $(grep -c '^ok.*# SKIP' "$log/test-cuda.log") skipped"
grep '^not ok' "$log/test-cuda.log" | head -n 5 | while read -r l; do note "  $l"; done
step bench-cuda 120 "$BENCH_CUDA"
note "bench-cuda: exit $?$(grep -q '^|' "$log/bench-cuda.log" || echo ": $(last bench-cuda 2)")"
grep '^|\|^overlap' "$log/bench-cuda.log" | while read -r l; do note "  $l"; done

# ---- a CUDA program through CUPTI ------------------------------------------------------------
# counts per kind of event: do driver callbacks fire for runtime launches, does the argument
# lookup work, do kernels match launches by correlation id
counts() {
  awk 'NR == FNR { if ($1 == "launch") id[$3] = 1; next }
       $1 == "push" { push++ } $1 == "pop" { pop++ } $1 == "alloc" { alloc++ } $1 == "free" { fr++ }
       $1 == "tensor" { tensor++ }
       $1 == "launch" { launch++; args += $4; if ($4 == 0) none++ }
       $1 == "kernel" { kernel++; if ($2 in id) matched++; if ($4 < $3) incomplete++ }
       END { printf "push %d, pop %d, launch %d (%d arguments, %d with none), kernel %d (%d matched to a launch, %d incomplete), alloc %d, free %d, tensor %d",
             push, pop, launch, args, none, kernel, matched, incomplete, alloc, fr, tensor }' "$1" "$1"
}
if step demo 90 "$S" profile --keep-events "$log/demo.events" -o "$log/demo-trace.json" -- "$DEMO"; then
  note "nvtx-demo events: $(counts "$log/demo.events")"
  note "nvtx-demo trace: $(grep -c '"stage"' "$log/demo-trace.json") ops (expected 5), $(grep -c '"numel"' "$log/demo-trace.json") tensors (expected 2)"
  step demo-plan 30 sh -c "'$S' plan '$log/demo-trace.json' --gpu 64MiB -o '$log/demo-plan.json' && '$S' check '$log/demo-plan.json' '$log/demo-trace.json'"
  note "nvtx-demo plan and check: exit $?"
else
  note "stowage profile of nvtx-demo FAILED: $(last demo 4)"
fi
step demo-debug 60 env STOWAGE_CUPTI_DEBUG=8 "$S" profile -o "$log/demo-debug.json" -- "$DEMO"
grep '^stowage-cupti' "$log/demo-debug.log" | head -n 9 | while read -r l; do note "  $l"; done

# ---- the trainer on CUDA ---------------------------------------------------------------------
M="--layers 2 --width 128 --heads 4 --context 128 --batch 4 --data README.md --seed 7"
B="--layers 6 --width 512 --heads 8 --context 256 --batch 8 --data README.md"
losses() { grep '^step' "$log/$1.log" | awk '{print $4}' > "$log/$1.loss"; }
# the largest |a-b|/|a| over the steps of two runs
maxrel() { paste "$log/$1.loss" "$log/$2.loss" | awk 'BEGIN { m = 0 } $1 != 0 { d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.2e", m }'; }
# fp32 and mixed precision with the naive attention; fp32 with the fused one (flash)
for run in fp32:naive mixed:naive fp32:flash; do
  prec=${run%:*} att=${run#*:} tag=$prec; [ "$att" = flash ] && tag=$prec-flash
  step "cpu-$tag" 120 "$S" train $M --steps 10 --precision $prec --attention $att && losses "cpu-$tag"
  if step "cuda-$tag" 120 "$S" train $M --steps 10 --device cuda --precision $prec --attention $att; then
    losses "cuda-$tag"
    note "CUDA trainer ($prec, $att attention) against the CPU's, 10 steps: max relative loss difference $(maxrel "cpu-$tag" "cuda-$tag") (tolerance: fp32 1e-3, mixed 3e-2); $(trained "cuda-$tag")"
  else
    note "CUDA trainer ($prec, $att attention) FAILED: $(last "cuda-$tag" 3)"
  fi
done
if step resident 120 "$S" train $B --steps 6 --device cuda --profile "$log/cuda-trace.json"; then
  losses resident
  note "CUDA, everything resident: $(trained resident)"
  note "  the trainer's process's GPU memory outside its arena, as its trace records it: $(grep -o '"gpu_process_bytes":[0-9]*' "$log/cuda-trace.json" || echo 'not measured')"
  step resident2 120 "$S" train $B --steps 6 --device cuda && losses resident2 &&
    note "resident twice: max relative loss difference $(maxrel resident resident2) (the noise of atomics)"
  j=$("$S" inspect "$log/cuda-trace.json" --json | tr -d ' \t\n')
  peak=$(echo "$j" | sed -n 's/.*"peak_nonmodel":{"bytes":\([0-9]*\).*/\1/p')
  model=$(echo "$j" | sed -n 's/.*"model_bytes":{[^}]*"total":\([0-9]*\)}.*/\1/p')
  budget_bytes=$(( ${peak:-0} + ${model:-0} / 4 ))
  if step plan 60 "$S" plan "$log/cuda-trace.json" --gpu "$budget_bytes" -o "$log/cuda-plan.json"; then
    for mode in normal blocking; do
      blocking=0
      [ $mode = blocking ] && blocking=1
      if step replay-$mode 180 env CUDA_LAUNCH_BLOCKING=$blocking "$S" train $B --steps 6 \
           --device cuda --plan "$log/cuda-plan.json"; then
        losses replay-$mode
        note "replay at a quarter of the model data ($budget_bytes bytes), $mode: $(trained replay-$mode); loss difference to resident $(maxrel resident replay-$mode)"
      else
        note "replay ($mode) FAILED: $(last replay-$mode 3)"
      fi
    done
    # the storage tier through host staging (issue 30): this machine's GPU copies and disk
    # probed into a profile; at the same budget, every block's activations kept (so that the
    # planner cannot make room on the GPU by recomputing), half or a third of the chunks' host
    # memory, the rest in files under a folder on this machine's disk, read and written each step
    pred() { sed -n "s/^  \"predictions\": {.*\"$1\":\([0-9]*\).*/\1/p" "$2"; }
    mkdir -p "$root/nvme"
    step tier-probe 90 "$S" probe --device cuda --base H200-SXM-141GB --nvme "$root/nvme" -o "$log/tier-hw.json"
    note "  this machine's storage: $(grep '^storage on' "$log/tier-probe.log" | cut -c1-200)"
    step tier-keep 60 "$S" plan "$log/cuda-trace.json" --gpu "$budget_bytes" --activations keep --hw "$log/tier-hw.json" -o "$log/tier-keep.json"
    for d in 2 3; do
      cpu=$(( $(pred host_overhead_bytes "$log/tier-keep.json") + $(pred cpu_bytes "$log/tier-keep.json") / d ))
      step tier-plan 60 sh -c "'$S' plan '$log/cuda-trace.json' --gpu $budget_bytes --activations keep --hw '$log/tier-hw.json' --cpu $cpu --nvme 8GiB -o '$log/tier-plan.json' && '$S' check '$log/tier-plan.json' '$log/cuda-trace.json'" &&
        grep -q '^  storage' "$log/tier-plan.log" && break
    done
    if grep -q '^  storage' "$log/tier-plan.log" &&
       step tier 180 "$S" train $B --steps 6 --device cuda --plan "$log/tier-plan.json" --nvme-dir "$root/nvme"; then
      losses tier
      note "storage tier on CUDA ($(grep '^  storage' "$log/tier-plan.log" | cut -c1-120)): $(trained tier); $(grep '^storage tier' "$log/tier.log" | cut -c1-160); loss difference to resident $(maxrel resident tier); plan's $(grep '^  iteration' "$log/tier-plan.log" | cut -c3-60)"
    else
      note "storage tier on CUDA FAILED: $(last tier-plan 2) $(last tier 3)"
    fi
  else
    note "plan of the CUDA trace FAILED: $(last plan 3)"
  fi
  if step cupti-train 180 "$S" profile -o "$log/cupti-trace.json" -- "$S" train $B --steps 3 --device cuda --quiet; then
    note "CUPTI profile of the CUDA trainer: $(grep -c '"stage"' "$log/cupti-trace.json") ops against the runtime's own $(grep -c '"stage"' "$log/cuda-trace.json")"
  else
    note "CUPTI profile of the CUDA trainer FAILED: $(last cupti-train 3)"
  fi
else
  note "CUDA trainer FAILED: $(last resident 3)"
fi
# ---- PyTorch on this machine -----------------------------------------------------------------
export STOWAGE_LIB=$LIB PYTHONPATH=$src/python PYTHONDONTWRITEBYTECODE=1
# without the caching allocator every tensor is an allocation of its own, as CUPTI must see it
if step torch-nvtx 150 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$S" profile --iteration-range stowage.iteration --keep-events "$log/torch.events" \
     -o "$log/torch-trace.json" -- python3 tests/gpu/torch-nvtx.py "$log/torch-hooks-trace.json"; then
  note "PyTorch through stowage profile: $(counts "$log/torch.events")"
  note "  trace: $("$S" inspect "$log/torch-trace.json" 2>&1 | head -n 4 | tr '\n' ' ' | cut -c1-300)"
  # the same events at depth 2 (docs/profiling.md's example), for which is the better level
  step torch-depth2 60 "$S" profile --events "$log/torch.events" --depth 2 -o "$log/torch-trace-d2.json"
  note "  at depth 2: $(last torch-depth2 1)"
  for t in torch-trace torch-hooks-trace; do
    [ -f "$log/$t.json" ] || { note "$t: not written"; continue; }
    step "$t-plan" 60 sh -c "'$S' plan '$log/$t.json' --gpu 64MiB -o '$log/$t-plan.json' && '$S' check '$log/$t-plan.json' '$log/$t.json'"
    note "$t planned at 64 MiB and checked: exit $? $(last "$t-plan" 1)"
  done
  # the process's own GPU memory as stowage.torch.profile measured it, and a plan at the whole
  # card keeping it free (its GPU process line says which figure)
  if [ -f "$log/torch-hooks-trace.json" ]; then
    note "  the profiled process's GPU memory outside its tensors: $(grep -o '"gpu_process_bytes":[0-9]*' "$log/torch-hooks-trace.json" || echo 'not measured')"
    step torch-hooks-card 60 "$S" plan "$log/torch-hooks-trace.json" --gpu "$(python3 -c 'import torch; print(torch.cuda.get_device_properties(0).total_memory)')" --beyond-device --hw H200-SXM-141GB -o "$log/torch-hooks-card.json"
    note "  planned at the card's memory: $(grep 'GPU process' "$log/torch-hooks-card.log" | head -n 1 | cut -c1-200)"
  fi
else
  note "PyTorch through stowage profile FAILED: $(last torch-nvtx 4)"
fi
# (the Hugging Face counts are held to the transformers the project pins, not this machine's)
(cd python && STOWAGE=$S STW_SRCDIR=$src step pytest 200 python3 -m pytest -q -rs -p no:cacheprovider --ignore=tests/test_hf_configs.py tests)
note "the Python package's tests under this machine's PyTorch (stowage.torch.wrap on CUDA among them): $(last pytest 1)"
grep -E '^(FAILED|ERROR|SKIPPED)' "$log/pytest.log" | head -n 5 | while read -r l; do note "  $l"; done
if step torch-wrap-bench 120 python3 bench/torch-wrap.py 3 20 cuda; then
  grep '^|\|^GPT' "$log/torch-wrap-bench.log" | while read -r l; do note "  $l"; done
else
  note "bench/torch-wrap.py on CUDA FAILED: $(last torch-wrap-bench 3)"
fi
# where the wrapper's time per op goes on CUDA (the Python side: hooks, ctypes calls, tensors
# made over the runtime's memory), in the log
step torch-wrap-profile 90 python3 -m cProfile -s tottime bench/torch-wrap.py 1 5 cuda
note "the wrapper under cProfile on CUDA: exit $? (logs/torch-wrap-profile.log)"

# issue 13's target: GPT-2 small's shape (over byte tokens), batch 16 x 1024, mixed precision,
# everything resident; MFU against the H200's dense bf16 peak (989 TFLOP/s by the datasheet; 788
# measured through PyTorch on one of these machines)
cat README.md docs/*.md > "$root/text.txt" # 16 x 1024 tokens and one more
# with the fused attention: the naive one keeps 2 x 16 x 12 x 1024^2 floats per layer
if step gpt2-mfu 150 "$S" train --layers 12 --width 768 --heads 12 --context 1024 --batch 16 \
     --data "$root/text.txt" --steps 6 --device cuda --precision mixed --attention flash \
     --gpu 100GiB; then
  tf=$(sed -n 's/^model arithmetic \([0-9.]*\) TFLOP.*/\1/p' "$log/gpt2-mfu.log")
  note "GPT-2 small shape, B16 x T1024, mixed, flash attention, resident: $(grep '^trained' "$log/gpt2-mfu.log" | cut -c1-160); $tf TFLOP/s of model arithmetic: MFU $(awk -v t="${tf:-0}" 'BEGIN { printf "%.1f%% of 989, %.1f%% of 788", 100 * t / 989, 100 * t / 788 }')"
else
  note "GPT-2 small shape on CUDA FAILED: $(last gpt2-mfu 3)"
fi
# the same with the naive attention: its products on cuBLAS's tensor cores, its T x T matrices
# in memory; which of the two is faster here decides CUDA's default
if step gpt2-mfu-naive 180 "$S" train --layers 12 --width 768 --heads 12 --context 1024 \
     --batch 16 --data "$root/text.txt" --steps 6 --device cuda --precision mixed \
     --attention naive --gpu 100GiB; then
  tf=$(sed -n 's/^model arithmetic \([0-9.]*\) TFLOP.*/\1/p' "$log/gpt2-mfu-naive.log")
  note "GPT-2 small shape, naive attention: $(grep '^trained' "$log/gpt2-mfu-naive.log" | cut -c1-160); $tf TFLOP/s: MFU $(awk -v t="${tf:-0}" 'BEGIN { printf "%.1f%% of 989", 100 * t / 989 }')"
else
  note "GPT-2 small shape with naive attention on CUDA FAILED: $(last gpt2-mfu-naive 3)"
fi
# the predictions against the GPU: GPU 0's copies probed, the trainer's traces planned at three
# budgets and policies against that profile, every plan replayed on CUDA (bench/fidelity.sh)
# (two budgets and four policies, each case's plan and replay kept; and the same shape trained
# without a plan, everything resident, beside it)
step fidelity-resident 60 "$S" train --layers 12 --width 768 --heads 12 --context 256 --batch 8 \
  --data README.md --steps 9 --device cuda
note "the fidelity shape trained resident, no plan: $(trained fidelity-resident)"
if step fidelity 200 env STW_FIDELITY_DEVICE=cuda STW_FIDELITY_SHAPES="12 768 12 256 8" \
     STW_FIDELITY_SHARES="25 100" STW_FIDELITY_POLICIES="stowage stowage/recompute lru zero-infinity" \
     STW_FIDELITY_KEEP="$log/fidelity" \
     sh bench/fidelity.sh "$(dirname "$S")"; then
  grep '^| L\|^Mean absolute\|^The profile' "$log/fidelity.log" | while read -r l; do note "fidelity on CUDA: $l"; done
else
  note "fidelity on CUDA FAILED: $(last fidelity 3)"
fi
if command -v compute-sanitizer >/dev/null; then
  step memcheck 120 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
    "$S" train $M --steps 1 --device cuda
  note "compute-sanitizer memcheck, one step: exit $? ($(grep -c '^========= Invalid\|^========= Program hit' "$log/memcheck.log") errors); $(grep 'ERROR SUMMARY' "$log/memcheck.log" | tail -n 1)"
else
  note "compute-sanitizer: not on this machine"
fi

