#!/bin/sh
# bench/train.sh [BUILDDIR] [ROUNDS] — the trainer's speed and memory on this machine: tokens/s
# (median step after a warm-up), matmul GFLOP/s against the BLAS's own sgemm at the model's
# shapes, and peak RSS, for two GPT shapes at 1 and 2 threads, everything resident (profile
# mode, as `stowage train` runs) and replaying a plan at a quarter of the model data, planned on
# this machine's profile at the same threads (`stowage probe --device host`: its copies run on
# the compute's cores, which the profile's copy interference says). Each run is
# its own process (its RSS its own); the configurations run in ROUNDS interleaved rounds
# (default 3) and each figure is the median of its rounds. Prints a Markdown report.
set -e
build=${1:-$(cd "$(dirname "$0")/.." && pwd)}
rounds=${2:-3}
b=$build/bench/bench-train
S=$build/stowage
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# name layers width heads context batch steps
shapes="L12-C768 12 768 12 64 4 6
L4-C256 4 256 4 64 4 20"

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for th in 1 2; do
  OMP_NUM_THREADS=$th "$S" probe --device host -o "$tmp/host-$th.json" > "$tmp/probe-$th.txt"
done
echo "$shapes" | while read -r name l c h t bb steps; do
  for th in 1 2; do
    mkdir -p "$tmp/$name-$th"
    OMP_NUM_THREADS=$th "$b" plan "$l" "$c" "$h" "$t" "$bb" "$tmp/$name-$th" "$tmp/host-$th.json" \
      > "$tmp/$name-$th.planned"
    echo "$(OMP_NUM_THREADS=$th "$b" sgemm "$l" "$c" "$t" "$bb" | awk '{print $2}')" \
      > "$tmp/$name-$th.sgemm"
  done
done

r=1
while [ "$r" -le "$rounds" ]; do
  echo "$shapes" | while read -r name l c h t bb steps; do
    for th in 1 2; do
      for mode in resident quarter; do
        dir=""
        [ "$mode" = quarter ] && dir=$tmp/$name-$th
        # shellcheck disable=SC2086
        OMP_NUM_THREADS=$th "$b" run "$l" "$c" "$h" "$t" "$bb" "$steps" $dir \
          >> "$tmp/$name-$th-$mode.runs"
      done
    done
  done
  r=$((r + 1))
done

field() { # FILE KEY: the median of the number after KEY
  awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$1" | median
}

echo "| shape (params) | threads | budget | tokens/s | × resident | matmul GFLOP/s | of sgemm | peak RSS | moved per step | waiting for copies |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
echo "$shapes" | while read -r name l c h t bb steps; do
  for th in 1 2; do
    sg=$(cat "$tmp/$name-$th.sgemm")
    for mode in resident quarter; do
      f=$tmp/$name-$th-$mode.runs
      tps=$(field "$f" tokens/s); mm=$(field "$f" matmul); rss=$(field "$f" rss)
      wait=$(field "$f" copy-wait)
      [ "$mode" = resident ] && res=$tps
      ratio=$(awk -v a="$tps" -v b="$res" 'BEGIN { printf "%.3f", a / b }')
      moved=$(awk '{ for (i = 1; i < NF; i++) if ($i == "moved") print $(i + 1), $(i + 2) }' "$f" |
              sed 's|/step||' | head -n1)
      budget="everything resident"
      [ "$mode" = quarter ] && budget="$(sed 's/^planned at \([^:]*\):.*/\1/' "$tmp/$name-$th.planned") (25% of model data)"
      pct=$(awk -v a="$mm" -v b="$sg" 'BEGIN { printf "%.0f%%", 100 * a / b }')
      echo "| $name, T$t B$bb | $th | $budget | $tps | $ratio | $mm | $pct of $sg | $rss MiB | $moved | $wait s/step |"
    done
  done
done
echo
echo "Medians of $rounds interleaved rounds; tokens/s from the median step after one warm-up step;"
echo "matmul GFLOP/s counts the forward and backward GEMMs of a step; sgemm is the BLAS alone at"
echo "the model's forward GEMM shapes, same threads; waiting for copies is the step's time blocked"
echo "on chunk copies not yet done. Copy interference of this machine's profile (compute time lost"
echo "per second of copy beside it): $(for th in 1 2; do printf '%s thread(s) %s; ' "$th" \
  "$(sed -n 's/^copy interference \([0-9.]*\).*/\1/p' "$tmp/probe-$th.txt")"; done)"
