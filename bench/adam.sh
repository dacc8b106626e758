#!/bin/sh
# bench/adam.sh [BUILDDIR] — the optimizer step at memory speed? Over 50M fp32 parameters at 1 and
# 2 threads, on 4 KiB and 2 MiB pages (madvise), in ROUNDS interleaved rounds (default 3), each
# configuration its own process:
#  - bench-train adam: a kernel with AdamW's own memory streams (the bound, GB/s), and the
#    library's CPU Adam as the runtime steps its chunks, for each compute copy (fp32, bf16) and
#    moments' dtype (fp32, bf16) writing the new weights into the copy and the master, and
#    (in-copy) into an fp32 copy alone, as one rank steps it;
#  - bench/adam.py: stowage's in-copy step (fp32 and bf16 moments), torch.optim.AdamW(fused=True) and
#    DeepSpeed's DeepSpeedCPUAdam side by side in one process, every array from one allocator
#    (it says so when DeepSpeed's CPU Adam does not build; `pip install deepspeed ninja` into the
#    torch venv builds it with ninja on first use).
# Prints the medians (G elements/s) as a Markdown table. Needs scripts/torch-env.sh's venv.
set -e
build=${1:-$(cd "$(dirname "$0")/.." && pwd)}
src=$(cd "$(dirname "$0")/.." && pwd)
py=${STW_PYTHON:-$src/.venv-torch/bin/python}
rounds=${ROUNDS:-3}
n=${STW_ADAM_ELEMS:-50000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export STOWAGE_LIB=$build/.libs/libstowage.so PYTHONPATH=$src/python
# two OpenMP runtimes share the process in adam.py (torch's and the library's): their idle
# threads sleep rather than spin on the cores the other one is using
export OMP_WAIT_POLICY=PASSIVE
for r in $(seq "$rounds"); do
  for t in 1 2; do
    for pages in 4k 2m; do
      OMP_NUM_THREADS=$t "$build/bench/bench-train" adam "$n" "$pages" 5 >> "$tmp/c.$t.$pages"
      OMP_NUM_THREADS=$t "$py" "$src/bench/adam.py" "$n" "$pages" 5 2>/dev/null >> "$tmp/py.$t.$pages"
    done
  done
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# column: the median of the rate on lines starting with NAME in FILE (field K)
col() { grep "^$1" "$2" | awk -v k="$3" '{ print $k }' | median; }
echo "| threads | pages | streams GB/s | stowage fp32/fp32 | fp32/bf16 | bf16/fp32 | bf16/bf16 | in-copy fp32 | in-copy bf16 | bf16 moments / fp32 (in copy) | stowage (adam.py) in-copy fp32 | in-copy bf16 | torch fused | DeepSpeed |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for t in 1 2; do
  for pages in 4k 2m; do
    c=$tmp/c.$t.$pages p=$tmp/py.$t.$pages
    s=$(col streams "$c" 2); ff=$(col fp32/fp32 "$c" 2); fb=$(col fp32/bf16 "$c" 2)
    bf=$(col bf16/fp32 "$c" 2); bb=$(col bf16/bf16 "$c" 2)
    cf=$(col in-copy/fp32 "$c" 2); cb=$(col in-copy/bf16 "$c" 2)
    ratio=$(awk -v a="$cb" -v b="$cf" 'BEGIN { printf "%.2fx", a / b }')
    pf=$(col "stowage-in-copy fp32" "$p" 4); pb=$(col "stowage-in-copy bf16" "$p" 4)
    tf=$(col "torch AdamW" "$p" 3)
    ds=$(grep -q "^DeepSpeedCPUAdam *[0-9]" "$p" && col DeepSpeedCPUAdam "$p" 2 || echo "-")
    echo "| $t | $pages | $s | $ff | $fb | $bf | $bb | $cf | $cb | $ratio | $pf | $pb | $tf | $ds |"
  done
done
grep -h "^DeepSpeedCPUAdam *-" "$tmp"/py.* | head -1 | sed 's/^/DeepSpeed: /'
echo
echo "G elements/s; each cell the median of $rounds rounds of 5 steps' medians, ${n} elements."
