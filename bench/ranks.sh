#!/bin/sh
# bench/ranks.sh [BUILDDIR] [ROUNDS] — data-parallel training on 1, 2 and 4 ranks under mpirun:
# tokens/s and CPU seconds everything resident (no plan: every rank holds the whole model) and
# replaying a plan of chunk groups at the non-model peak plus a quarter of the per-rank model
# data (or the smallest budget a plan fits, when that is more); and the time every rank waits for collectives per step against the plan's prediction,
# the plan made against this machine's profile (`stowage probe --device host --collectives` on
# those ranks). The configurations run in ROUNDS interleaved rounds (default 3); each figure is
# the median of its rounds. Prints a Markdown report. The ranks share this machine's cores: with
# more ranks than cores they take turns, which the figures show.
set -e
build=${1:-$(cd "$(dirname "$0")/.." && pwd)}
rounds=${2:-3}
S=$build/stowage
D=$(cd "$(dirname "$0")/.." && pwd)/README.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none -x OMP_NUM_THREADS=1"
# the model of bench/train.sh's L4-C256, batch 4 per rank
M="--layers 4 --width 256 --heads 4 --context 64 --batch 4 --data $D"
steps=12

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
run() { # N LOG ARGS...: one run, its CPU seconds (all ranks) appended to LOG.cpu
  n=$1 log=$2
  shift 2
  if [ "$n" = 1 ]; then
    OMP_NUM_THREADS=1 /usr/bin/time -f "%U %S" -o "$log.t" "$S" train $M --steps $steps "$@" > "$log" 2>&1
  else
    # shellcheck disable=SC2086
    /usr/bin/time -f "%U %S" -o "$log.t" $MPIRUN -np "$n" "$S" train $M --steps $steps "$@" > "$log" 2>&1
  fi
  awk '{ print $1 + $2 }' "$log.t" >> "$log.cpu"
  sed -n 's/.*, \([0-9]*\) tokens\/s.*/\1/p' "$log" >> "$log.tps"
  sed -n 's/.* (\([0-9.]*\) ms waiting for them).*/\1/p' "$log" >> "$log.wait"
}

for n in 1 2 4; do
  if [ "$n" = 1 ]; then
    OMP_NUM_THREADS=1 "$S" train $M --steps 2 --profile "$tmp/t$n.json" > /dev/null
    "$S" probe --device host -o "$tmp/hw$n.json" > /dev/null
  else
    # shellcheck disable=SC2086
    $MPIRUN -np "$n" "$S" train $M --steps 2 --profile "$tmp/t$n.json" > /dev/null
    # shellcheck disable=SC2086
    $MPIRUN -np "$n" "$S" probe --device host --collectives -o "$tmp/hw$n.json" > "$tmp/probe$n"
  fi
  # the non-model peak plus a quarter of a rank's share of the model data
  "$S" inspect "$tmp/t$n.json" --json > "$tmp/inspect$n"
  model=$(grep -A5 '"model_bytes"' "$tmp/inspect$n" | sed -n 's/.*"total":[^0-9]*\([0-9]*\).*/\1/p')
  peak=$(grep -A1 '"peak_nonmodel"' "$tmp/inspect$n" | sed -n 's/.*"bytes":[^0-9]*\([0-9]*\).*/\1/p')
  budget=$((peak + model / n / 4))
  if ! "$S" plan "$tmp/t$n.json" --gpu "$budget" --hw "$tmp/hw$n.json" -o "$tmp/p$n.json" > "$tmp/plan$n" 2>&1; then
    # below the smallest plan (one rank holds whole chunks of the largest tensors): that one
    smallest=$(sed -n 's/.*The smallest budget any plan can use is \([0-9.]* [KMG]iB\).*/\1/p' "$tmp/plan$n")
    budget=$(echo "$smallest" | awk '{ m = $2 == "KiB" ? 1024 : $2 == "MiB" ? 1048576 : 1073741824; printf "%.0f", $1 * m + 1 }')
    "$S" plan "$tmp/t$n.json" --gpu "$budget" --hw "$tmp/hw$n.json" -o "$tmp/p$n.json" > "$tmp/plan$n"
  fi
  echo "$budget $model $n $peak" > "$tmp/budget$n"
done

r=1
while [ "$r" -le "$rounds" ]; do
  for n in 1 2 4; do
    run "$n" "$tmp/resident$n"
    run "$n" "$tmp/quarter$n" --plan "$tmp/p$n.json"
  done
  r=$((r + 1))
done

pred() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1" | head -n1; }
echo "| ranks | budget per rank | tokens/s | CPU s per run | collectives waited per step | predicted busy per step | received per rank and step |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for n in 1 2 4; do
  for mode in resident quarter; do
    f=$tmp/$mode$n
    tps=$(median < "$f.tps"); cpu=$(median < "$f.cpu")
    wait="-"; predicted="-"; recv="-"
    budget="everything resident"
    if [ "$mode" = quarter ]; then
      budget=$(awk '{ printf "%.2f MiB (non-model peak %.2f MiB; model data %.2f MiB per rank)", $1 / 1048576, $4 / 1048576, $2 / $3 / 1048576 }' "$tmp/budget$n")
    fi
    if [ "$n" -gt 1 ]; then
      wait="$(median < "$f.wait") ms"
      recv=$(sed -n 's/.*collectives \([0-9.]* [KMG]*i*B\) received.*/\1/p' "$f" | head -n1)
      [ "$mode" = quarter ] && predicted=$(awk -v ns="$(pred "$tmp/p$n.json" comm_ns)" 'BEGIN { printf "%.2f ms", ns / 1e6 }')
    fi
    echo "| $n | $budget | $tps | $cpu | $wait | $predicted | $recv |"
  done
done
echo
echo "Model: GPT 4 layers, width 256, 4 heads, context 64, batch 4 per rank ($steps steps a run),"
echo "one thread per rank; medians of $rounds interleaved rounds on $(nproc) cores. tokens/s counts"
echo "every rank's tokens. Resident runs average the gradients in one all-reduce per chunk (profile"
echo "mode); plan runs gather and reduce-scatter chunk groups as planned. Collectives measured by"
echo "the probe on these ranks:"
for n in 2 4; do
  echo
  echo '```'
  cat "$tmp/probe$n" | sed -n '1,9p'
  echo '```'
done
