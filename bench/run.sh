#!/bin/sh
# bench/run.sh BUILDDIR — runs every benchmark and writes bench/results/* beside this script.
# The figures are wall times on whatever machine runs it; the results files say which.
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/..}
out=$here/results
mkdir -p "$out"
machine="$(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"

{
  echo "# bench-trace: load+validate, digest and synthesize the largest bundled trace"
  echo "# machine: $machine; $(date -u +%Y-%m-%d)"
  "$build/bench/bench-trace" "$(cd "$here/.." && pwd)/traces/gpt3-175b-b8-s2048.json" 20
} > "$out/trace.txt"
cat "$out/trace.txt"

{
  echo "# bench-runtime — machine: $machine; $(date -u +%Y-%m-%d)"
  echo
  "$build/bench/bench-runtime" 30
} > "$out/runtime.md"
cat "$out/runtime.md"

{
  echo "# bench/train.sh — machine: $machine; $(date -u +%Y-%m-%d)"
  echo
  sh "$here/train.sh" "$build"
} > "$out/train.md"
cat "$out/train.md"

{
  echo "# bench/ranks.sh — machine: $machine; $(date -u +%Y-%m-%d)"
  echo
  sh "$here/ranks.sh" "$build"
} > "$out/ranks.md"
cat "$out/ranks.md"

{
  echo "# bench/fidelity.sh — machine: $machine; $(date -u +%Y-%m-%d)"
  echo
  sh "$here/fidelity.sh" "$build"
} > "$out/fidelity.md"
cat "$out/fidelity.md"

{
  echo "# bench/plan.sh — machine: $machine; $(date -u +%Y-%m-%d)"
  echo
  sh "$here/plan.sh" "$build"
} > "$out/plan.md"
cat "$out/plan.md"

{
  echo "# bench/sim.sh — machine: $machine; $(date -u +%Y-%m-%d)"
  echo
  sh "$here/sim.sh" "$build" | sed "s|/tmp/tmp\.[A-Za-z0-9]*/||g"
} > "$out/sim.md"
cat "$out/sim.md"
