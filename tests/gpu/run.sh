#!/bin/sh
# tests/gpu/run.sh — everything that needs a GPU, in one run (under 10 minutes on one H200):
# build with CUDA, run the whole test suite (the GPU tests run instead of skipping), measure the
# CUDA backend's pinned copy bandwidth against cudaMemcpy, and profile a CUDA program through
# the CUPTI injection library, then plan and check the trace. Prints a summary at the end.
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
echo
echo "==== summary"
printf '%s' "$summary"
