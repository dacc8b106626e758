#!/bin/sh
# fuzz/run.sh [SECONDS] — builds every libFuzzer target (clang, with AddressSanitizer and
# UndefinedBehaviorSanitizer) and runs each for SECONDS (default 10), seeded from the project's
# own files; FUZZ_TARGETS="import hf" runs only those. Ends with one line per target: executions and any crash. Needs a configured build
# tree in the source tree (scripts/bootstrap.sh). Installs clang's fuzzer runtime when missing.
set -u
cd "$(dirname "$0")/.."
secs=${1:-10}
out=${FUZZ_OUT:-fuzz/out}
mkdir -p "$out"
probe() {
  echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' |
    clang -x c -fsanitize=fuzzer,address - -o "$out/probe" 2>/dev/null
}
if ! probe; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing clang and its fuzzer runtime" >&2
    apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-14-dev >/dev/null 2>&1
  fi
  probe || { echo "fuzz/run.sh: clang with libFuzzer is not available" >&2; exit 1; }
fi
[ -f src/hw-resources.c ] || make src/hw-resources.c src/hw-resources.h > /dev/null
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE
  -I. -Iinclude -Isrc -Iplanner -Iruntime -Itrain -Iprofile $(pkg-config --cflags glib-2.0 gio-2.0 libcjson zlib)"
# the BLAS configure found (config.h says whether there is one)
blas_cflags=$(sed -n 's/^BLAS_CFLAGS = //p' Makefile)
blas_libs=$(sed -n 's/^BLAS_LIBS = //p' Makefile)
# and liburing where configure found it (the storage tier's engine)
uring_cflags=$(sed -n 's/^URING_CFLAGS = //p' Makefile)
uring_libs=$(sed -n 's/^URING_LIBS = //p' Makefile)
# and oneDNN, for the CPU's bf16 matmuls (config.h says whether there is one)
dnnl_libs=$(sed -n 's/^DNNL_LIBS = //p' Makefile)
flags="$flags $blas_cflags $uring_cflags"
libs="$(pkg-config --libs glib-2.0 gio-2.0 libcjson zlib) $blas_libs $uring_libs $dnnl_libs -lm"
# the readers' layers: the core, the planner, the event-stream builder, and the runtime and the
# trainer for checkpoints and training text (without the CUDA modules, and one rank: no MPI; the
# NCCL module's path as the build's, though no target loads it)
sources="$(ls src/*.c | grep -v hw-resources) src/hw-resources.c $(ls planner/*.c)
  $(ls profile/events-build.c profile/import*.c) $(ls runtime/*.c | grep -v 'backend-cuda\|comm-mpi')
  $(ls train/*.c | grep -v compute-load)"
flags="$flags -DSTW_COMM_NCCL_BUILT=\"$PWD/.libs/libstowage-comm-nccl.so\"
  -DSTW_COMM_NCCL_INSTALLED=\"$PWD/.libs/libstowage-comm-nccl.so\""

seeds() { # TARGET DIR
  mkdir -p "$2"
  case $1 in
    trace) cp tests/fixtures/traces/*.json traces/gpt2-b8-s1024.json "$2" ;;
    plan) ./stowage plan tests/fixtures/traces/mini.json --gpu 2240 -o "$2/mini-plan.json" > /dev/null 2>&1
          ./stowage plan tests/fixtures/traces/mini.json --gpu 1GiB --policy lru -o "$2/lru.json" > /dev/null 2>&1
          ./stowage plan tests/fixtures/traces/mini.json --gpu 4400 --gpus 2 -o "$2/two.json" > /dev/null 2>&1 ;;
    hardware) cp hw/*.json tests/fixtures/hw/*.json "$2" ;;
    model) cp tests/fixtures/models/*.json bench/models/*.json "$2"
           for d in tests/fixtures/hf/*/; do cp "$d/config.json" "$2/hf-$(basename "$d").json"; done ;;
    import) cp tests/fixtures/pytorch/*.json tests/fixtures/pytorch/gpt2-small-timeline.raw.json.gz "$2"
            printf '[[-1, 1, 100, 0], [5, 2, 50, 4], [9, 4, -50, 4]]' > "$2/timeline.json"
            # gzip of two members, an op in a module in a module, a cycle of parents
            head -c 3000 tests/fixtures/pytorch/tied-kineto.json | gzip -c > "$2/multi.json.gz"
            tail -c +3001 tests/fixtures/pytorch/tied-kineto.json | gzip -c >> "$2/multi.json.gz"
            printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 90}, {"ph": "X", "cat": "python_function", "name": "nn.Module: A_0", "ts": 1, "dur": 80}, {"ph": "X", "cat": "python_function", "name": "nn.Module: B_0", "ts": 2, "dur": 70}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 3, "dur": 9, "args": {"Input Dims": [[4, 4], [4, 4]], "Input type": ["float", "float"]}}]}' > "$2/modules.json"
            printf '{"schema": "1.0.1", "nodes": [{"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "parent": 1}, {"id": 2, "name": "ProfilerStep#1", "parent": 3}, {"id": 3, "name": "aten::mm", "parent": 2}]}' > "$2/cycle-et.json" ;;
    hf) for d in tests/fixtures/hf/*/; do cp "$d/config.json" "$2/$(basename "$d").json"; done
        cp tests/fixtures/hf/*.json "$2" 2>/dev/null ;;
    size) for s in 16GiB "1.5 GB" 512MiB 4096 0.3KiB -1 8388608TiB; do printf '%s' "$s" > "$2/$(echo "$s" | tr -c 'a-zA-Z0-9' _)"; done ;;
    events) cp tests/fixtures/events/*.events "$2" ;;
    checkpoint) ./stowage train --layers 1 --width 8 --heads 2 --context 4 --batch 1 --steps 2 \
                  --data fuzz/fuzz.c --checkpoint "$2/tiny.ckpt" > /dev/null 2>&1 ;;
    text) cp README.md "$2"; printf 'abcde' > "$2/short"; printf '\377\000\001\002\003\004' > "$2/bytes" ;;
  esac
}

# the library once, instrumented; each target links against it
objs=""
for s in $sources; do
  o="$out/obj/$(echo "$s" | tr / _).o"
  mkdir -p "$out/obj"
  # shellcheck disable=SC2086
  clang $(echo "$flags" | sed 's/fuzzer,/fuzzer-no-link,/') -c "$s" -o "$o" 2>> "$out/build.log" &
  objs="$objs $o"
done
wait
status=0
summary=""
for t in ${FUZZ_TARGETS:-trace plan hardware model hf size events checkpoint text import}; do
  T=$(echo "$t" | tr a-z A-Z)
  # shellcheck disable=SC2086
  if ! clang $flags -DTARGET_$T fuzz/fuzz.c $objs $libs -o "$out/fuzz-$t" 2> "$out/build-$t.log"; then
    cat "$out/build.log" "$out/build-$t.log"
    exit 1
  fi
  seeds "$t" "$out/corpus-$t"
  ASAN_OPTIONS=detect_leaks=0 "$out/fuzz-$t" -max_total_time="$secs" -max_len=65536 \
    -rss_limit_mb=2048 -artifact_prefix="$out/crash-$t-" "$out/corpus-$t" > "$out/run-$t.log" 2>&1
  rc=$?
  execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$out/run-$t.log")
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$out/run-$t.log" | tail -1 | tr -d '#')
  if [ $rc = 0 ]; then
    summary="$summary$t: ${execs:-?} executions in ${secs}s, no crash
"
  else
    status=1
    tail -30 "$out/run-$t.log"
    summary="$summary$t: CRASH after ${execs:-?} executions (see $out/run-$t.log, $out/crash-$t-*)
"
  fi
done
printf '%s' "$summary"
exit $status
