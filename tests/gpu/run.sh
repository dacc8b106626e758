#!/bin/sh
# tests/gpu/run.sh — everything that needs a GPU, in one run (under 10 minutes on one H200):
# build with CUDA, run the whole test suite (the GPU tests run instead of skipping), measure the
# CUDA backend's pinned copy bandwidth against cudaMemcpy, profile a CUDA program through the
# CUPTI injection library, then plan and check the trace; train the GPT on CUDA (fp32 and mixed
# precision) against the CPU trainer, profile it -> plan a quarter of its model data -> replay,
# and profile it through CUPTI. Prints a summary at the end.
set -u
cd "$(dirname "$0")/../.."
log=${TMPDIR:-/tmp}/stowage-gpu
mkdir -p "$log"
summary=""
note() { summary="$summary$1
"; echo "== $1"; }

nvidia-smi -L 2>/dev/null || note "nvidia-smi: no GPU visible"
./scripts/bootstrap.sh > "$log/build.log" 2>&1 || { tail -30 "$log/build.log"; exit 1; }
grep -E "CUDA|CUPTI|NCCL" config.log | grep -E "^(have_|checking for CU)" | head -5

make -j"$(nproc)" check > "$log/check.log" 2>&1
note "make check: $(sed -n 's/^# \(PASS\|FAIL\|SKIP\|ERROR\): *\([0-9]*\)/\1 \2/p' test-suite.log | tr '\n' ' ')"
grep -h "^ok\|^not ok\|SKIP" tests/test-cuda.log | sed 's/^/   /'

if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  make -j"$(nproc)" bench/bench-cuda > /dev/null 2>&1 && ./bench/bench-cuda | tee "$log/bench-cuda.md"
  note "copy bandwidth: see the table above ($log/bench-cuda.md)"
  "$NVCC" -O2 -o "$log/nvtx-demo" tests/gpu/nvtx-demo.cu > "$log/nvcc.log" 2>&1 || cat "$log/nvcc.log"
  if ./stowage profile --keep-events "$log/demo.events" -o "$log/demo-trace.json" -- "$log/nvtx-demo"; then
    ./stowage inspect "$log/demo-trace.json" | head -12
    ops=$(grep -c '"stage"' "$log/demo-trace.json")
    tensors=$(grep -c '"numel"' "$log/demo-trace.json")
    note "profile of nvtx-demo: $ops ops (expected 5), $tensors tensors (expected 2)"
    ./stowage plan "$log/demo-trace.json" --gpu 64MiB -o "$log/demo-plan.json" && \
      ./stowage check "$log/demo-plan.json" "$log/demo-trace.json" && note "the demo's plan checks"
  else
    note "stowage profile of nvtx-demo FAILED"
  fi
fi
# ---- the trainer on CUDA against the CPU trainer, then profile -> plan -> replay on CUDA ----------
S=./stowage
M="--layers 2 --width 128 --heads 4 --context 128 --batch 4 --data README.md --seed 7"
losses() { grep '^step' "$1" | awk '{print $4}'; }
# largest |a-b| / |a| over the steps of two runs
maxrel() { paste "$1" "$2" | awk 'BEGIN{m=0} {d=($1-$2)/$1; if(d<0)d=-d; if(d>m)m=d} END{printf "%.2e", m}'; }
for prec in fp32 mixed; do
  # the CPU in the same precision (mixed: the same bf16 compute copy, fp32 matmuls)
  $S train $M --steps 10 --precision $prec > "$log/cpu-$prec.log" 2>&1
  losses "$log/cpu-$prec.log" > "$log/cpu-$prec.loss"
  if $S train $M --steps 10 --device cuda --precision $prec > "$log/cuda-$prec.log" 2>&1; then
    losses "$log/cuda-$prec.log" > "$log/cuda-$prec.loss"
    note "CUDA trainer ($prec) against the CPU trainer ($prec) over 10 steps: max relative loss difference $(maxrel "$log/cpu-$prec.loss" "$log/cuda-$prec.loss") (tolerance: fp32 1e-3, mixed 3e-2); $(tail -1 "$log/cuda-$prec.log")"
  else
    note "CUDA trainer ($prec) FAILED: $(tail -3 "$log/cuda-$prec.log")"
  fi
done
B="--layers 6 --width 512 --heads 8 --context 256 --batch 8 --data README.md"
if $S train $B --steps 6 --device cuda --profile "$log/cuda-trace.json" > "$log/cuda-resident.log" 2>&1; then
  note "CUDA trainer, everything resident: $(tail -2 "$log/cuda-resident.log" | head -1)"
  j=$($S inspect "$log/cuda-trace.json" --json | tr -d ' \t\n')
  peak=$(echo "$j" | sed -n 's/.*"peak_nonmodel":{"bytes":\([0-9]*\).*/\1/p')
  model=$(echo "$j" | sed -n 's/.*"model_bytes":{[^}]*"total":\([0-9]*\)}.*/\1/p')
  budget=$(( ${peak:-0} + ${model:-0} / 4 ))
  if $S plan "$log/cuda-trace.json" --gpu "$budget" -o "$log/cuda-plan.json" > "$log/cuda-plan.log" 2>&1 &&
     $S train $B --steps 6 --device cuda --plan "$log/cuda-plan.json" > "$log/cuda-replay.log" 2>&1; then
    losses "$log/cuda-resident.log" > "$log/a.loss"; losses "$log/cuda-replay.log" > "$log/b.loss"
    note "CUDA replay at a quarter of the model data ($budget bytes): $(tail -1 "$log/cuda-replay.log"); loss difference to resident $(maxrel "$log/a.loss" "$log/b.loss")"
  else
    note "CUDA plan/replay FAILED: $(tail -3 "$log/cuda-plan.log" "$log/cuda-replay.log")"
  fi
  if $S profile -o "$log/cupti-trace.json" -- $S train $B --steps 3 --device cuda --quiet > "$log/cupti.log" 2>&1; then
    a=$(grep -c '"stage"' "$log/cuda-trace.json"); b=$(grep -c '"stage"' "$log/cupti-trace.json")
    note "CUPTI profile of the CUDA trainer: $b ops against the runtime's own $a"
  else
    note "CUPTI profile of the CUDA trainer FAILED: $(tail -3 "$log/cupti.log")"
  fi
else
  note "CUDA trainer FAILED: $(tail -3 "$log/cuda-resident.log")"
fi

echo
echo "==== summary"
printf '%s' "$summary"
