#!/bin/sh
# bench/tier.sh [BUILDDIR] [DIR] — does the storage tier's prediction hold on this machine?
# Measures the host backend's emulated device and the storage under DIR (default: a directory
# made under the build tree, on its disk) into one profile (`stowage probe --device host --nvme
# DIR`), profiles the trainer, and for each shape plans at a GPU budget of the non-model peak plus
# a quarter of the model with the least host budget a plan without storage fits (bisected), then
# that budget less a quarter, half and all of the optimizer state (`--cpu`, `--nvme`): what no
# longer fits in host memory goes to storage (at "all", chunks' 16-bit parameters too). Every plan
# is replayed with `train --nvme-dir DIR`; printed: predicted against measured iteration time
# (median step), the storage bytes read and written each step against the simulation's, and the
# replay's peak RSS against the RSS the plan predicts (device peak, chunks and staging, process). STW_TIER_SHAPES replaces the shapes ("L C H T B" each, ';' apart).
set -e
build=${1:-$(cd "$(dirname "$0")/.." && pwd)}
S=$build/stowage
tmp=$(mktemp -d)
dir=${2:-$build/tier-bench.$$}
mine=${2:+no}  # a directory of its own is removed at the end (the loop below reuses $1 and $2)
mkdir -p "$dir"
trap 'rm -rf "$tmp"; [ -n "$mine" ] || rm -rf "$dir"' EXIT
text=$(cd "$(dirname "$0")/.." && pwd)/README.md
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
"$S" probe --device host --nvme "$dir" -o "$tmp/host.json" > "$tmp/probe.txt"
. "$(dirname "$0")/sizes.sh"

echo "| model | host cut | on storage | predicted | measured | error | storage read, written: simulated | replay | storage busy, simulated | waited for, replay | RSS, plan | peak RSS |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
errs=$tmp/errs
: > "$errs"
shapes=${STW_TIER_SHAPES:-4 256 4 64 4;8 384 6 64 4;12 512 8 64 4}
IFS=';'
for shape in $shapes; do
  unset IFS
  set -- $shape
  M="--layers $1 --width $2 --heads $3 --context $4 --batch $5 --data $text"
  name="L$1-C$2"
  # shellcheck disable=SC2086
  "$S" train $M --steps 3 --profile "$tmp/$name.json" > /dev/null
  model=$("$S" inspect "$tmp/$name.json" | awk '/^total/ && $3 ~ /B$/ { print $2, $3; exit }')
  peak=$("$S" inspect "$tmp/$name.json" | sed -n 's/^peak non-model memory *\([0-9.]*\) \([KMGT]*i*B\).*/\1 \2/p')
  budget=$(( $(bytes $peak) + $(bytes $model) / 4 + 1048576 ))
  # the host memory of the plan that keeps every chunk's state there
  "$S" plan "$tmp/$name.json" --gpu "$budget" --hw "$tmp/host.json" --activations keep \
    -o "$tmp/all.json" > "$tmp/plan.txt"
  pred() { sed -n "s/^  \"predictions\": {.*\"$1\":\([0-9]*\).*/\1/p" "$2"; }
  # the least host memory a plan without storage fits, to 64 KiB (bisected)
  lo=$(pred host_overhead_bytes "$tmp/all.json")
  hi=$(( lo + $(pred cpu_bytes "$tmp/all.json") ))
  while [ $(( hi - lo )) -gt 65536 ]; do
    mid=$(( (lo + hi) / 2 ))
    if "$S" plan "$tmp/$name.json" --gpu "$budget" --hw "$tmp/host.json" --activations keep \
         --cpu "$mid" -o "$tmp/x.json" > /dev/null 2>&1; then hi=$mid; else lo=$mid; fi
  done
  state=$(( $(bytes $model) * 3 / 4 ))  # master, momentum, variance: 12 of 16 bytes a parameter
  for cut in 0 25 50 100; do
    cpu=$(( hi - state * cut / 100 ))
    plan=$tmp/$name-$cut.json
    if ! "$S" plan "$tmp/$name.json" --gpu "$budget" --hw "$tmp/host.json" --activations keep \
         --cpu "$cpu" --nvme 8GiB -o "$plan" > "$tmp/plan.txt" 2>&1; then
      echo "| $name | $cut% | does not fit | | | | | | | | | |"
      continue
    fi
    pred=$(sed -n 's/^  iteration *\([0-9.]*\) \([a-z]*\) simulated.*/\1 \2/p' "$tmp/plan.txt")
    what=$(sed -n 's/^  storage *[0-9.]* [KMGT]*i*B of \(optimizer state\)\( and 16-bit parameters\)\{0,1\} of .*/\1\2/p' "$tmp/plan.txt" |
           sed 's/optimizer state and 16-bit parameters/state and parameters/; s/optimizer state/state/')
    "$S" simulate "$plan" "$tmp/$name.json" > "$tmp/sim.txt"
    simulated=$(sed -n 's/^storage .* read and written: \(.*\) read, \(.*\) written$/\1, \2/p' "$tmp/sim.txt")
    busy=$(sed -n 's/^storage *\([0-9.]* [mu]*s\) .*/\1/p' "$tmp/sim.txt")
    prss=$(sed -n 's/^  RSS *\([0-9.]*\) \([KMGT]*i*B\) .*/\1 \2/p' "$tmp/plan.txt")
    # shellcheck disable=SC2086
    /usr/bin/time -f "%M" -o "$tmp/rss" "$S" train $M --steps 9 --plan "$plan" \
      --trace "$tmp/$name.json" --nvme-dir "$dir" > "$tmp/run.txt"
    tokens=$(( $4 * $5 ))
    step=$(sed -n 's/^step *[0-9]* *loss [0-9.]* *\([0-9]*\) tokens\/s.*/\1/p' "$tmp/run.txt" |
           tail -n +2 | sort -n | awk -v t="$tokens" '{ v[NR] = $1 } END { printf "%.0f", t / v[int((NR + 1) / 2)] * 1e9 }')
    waited=$(sed -n 's/^storage tier: \([0-9.]*\) ms a step waiting for its reads and writes.*/\1 ms/p' "$tmp/run.txt")
    moved=$(sed -n 's/.*storage read \([0-9.]* [KMGT]*i*B\)  written \([0-9.]* [KMGT]*i*B\)$/\1, \2/p' "$tmp/run.txt" | tail -n +2 | sort -u | tr '\n' ' ' | sed 's/ $//')
    e=$(awk -v p="$(ns $pred)" -v m="$step" 'BEGIN { printf "%+.1f", 100 * (p - m) / m }')
    echo "$e" >> "$errs"
    rss=$(awk '{ printf "%.1f MiB", $1 / 1024 }' "$tmp/rss")
    echo "| $name | $cut% | ${what:-nothing} | $pred | $(awk -v n="$step" 'BEGIN { printf "%.2f ms", n / 1e6 }') | $e% | ${simulated:-0 B} | ${moved:-0 B} | ${busy:-0} | ${waited:-0} | $prss | $rss |"
  done
done
echo
awk '{ t += ($1 < 0 ? -$1 : $1); n++ } END { if (n) printf "Mean absolute error over %d cases: iteration time %.1f%%.\n", n, t / n }' "$errs"
echo
echo "The profile: $(grep '^storage on' "$tmp/probe.txt"); OMP_NUM_THREADS=$OMP_NUM_THREADS."
