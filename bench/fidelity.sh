#!/bin/sh
# bench/fidelity.sh [BUILDDIR] — do the predictions hold on this machine? Measures the host
# backend's emulated device (`stowage probe --device host`), profiles the trainer (`train
# --profile`), plans its trace at several budgets and policies against that profile, replays
# every plan, and compares the predicted iteration time and GPU peak with the measured ones
# (median step of the replay; the runtime's device peak). The stowage policy's plans are made with
# its blocks kept, recomputed, offloaded and chosen (--activations keep, recompute, offload, and
# auto, the default; the trainer replays the recomputation and the copies). Prints a Markdown
# report with the
# error of every case and their mean absolute percentage. STW_FIDELITY_DEVICE=cuda does the same
# on GPU 0 (`probe --device cuda` over the profile STW_FIDELITY_BASE, default H200-SXM-141GB;
# `train --device cuda`); STW_FIDELITY_SHAPES replaces the shapes ("L C H T B" each, ';' apart);
# STW_FIDELITY_INTERFERENCE=off drops the probed copy interference from the profile, to see what
# the cost model predicts without it. STW_FIDELITY_SHARES and STW_FIDELITY_POLICIES replace the
# budgets (default "25 50 100") and the policies; STW_FIDELITY_KEEP=DIR keeps the probe's output,
# each trace and each case's plan and replay output there (to see where a prediction went wrong).
set -e
build=${1:-$(cd "$(dirname "$0")/.." && pwd)}
S=$build/stowage
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
text=$(cd "$(dirname "$0")/.." && pwd)/README.md
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
device=${STW_FIDELITY_DEVICE:-host}
case $device in
  host) "$S" probe --device host -o "$tmp/host.json" > "$tmp/probe.txt"; on="" ;;
  cuda) "$S" probe --device cuda --base "${STW_FIDELITY_BASE:-H200-SXM-141GB}" -o "$tmp/host.json" \
          > "$tmp/probe.txt"; on="--device cuda" ;;
  *) echo "fidelity: STW_FIDELITY_DEVICE is host or cuda, not '$device'" >&2; exit 1 ;;
esac
interference=$(sed -n 's/^copy interference \([0-9.]*\).*/\1/p' "$tmp/probe.txt")
if [ "${STW_FIDELITY_INTERFERENCE:-on}" = off ]; then
  sed 's/, *"copy_interference": *[0-9.e+-]*//' "$tmp/host.json" > "$tmp/host-off.json"
  mv "$tmp/host-off.json" "$tmp/host.json"
  interference="${interference:-0} measured, left out of the profile"
fi
. "$(dirname "$0")/sizes.sh"

echo "| model | budget | policy | predicted | measured | error | predicted peak | measured peak | error |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
errs=$tmp/errs
: > "$errs"
shapes=${STW_FIDELITY_SHAPES:-4 256 4 64 4;8 384 6 64 4}
IFS=';'
for shape in $shapes; do
  unset IFS
  set -- $shape
  M="--layers $1 --width $2 --heads $3 --context $4 --batch $5 --data $text"
  name="L$1-C$2"
  # shellcheck disable=SC2086
  "$S" train $M $on --steps 3 --profile "$tmp/$name.json" > /dev/null
  model=$("$S" inspect "$tmp/$name.json" | awk '/^total/ && $3 ~ /B$/ { print $2, $3; exit }')
  peak=$("$S" inspect "$tmp/$name.json" | sed -n 's/^peak non-model memory *\([0-9.]*\) \([KMGT]*i*B\).*/\1 \2/p')
  mb=$(bytes $model)
  pb=$(bytes $peak)
  [ -n "${STW_FIDELITY_KEEP:-}" ] && mkdir -p "$STW_FIDELITY_KEEP" &&
    cp "$tmp/probe.txt" "$tmp/$name.json" "$STW_FIDELITY_KEEP/"
  for share in ${STW_FIDELITY_SHARES:-25 50 100}; do
    budget=$(( pb + mb * share / 100 + 1048576 ))
    # the stowage policy with its blocks chosen (auto, the default), kept, recomputed and
    # offloaded (--activations)
    for policy in ${STW_FIDELITY_POLICIES:-stowage stowage/keep stowage/recompute stowage/offload lru zero-infinity}; do
      plan=$tmp/$name-$share-$(echo "$policy" | tr / -).json
      activations=
      case $policy in */*) activations="--activations ${policy#*/}" ;; esac
      # shellcheck disable=SC2086 # the option and its value are words, or none
      if ! "$S" plan "$tmp/$name.json" --gpu "$budget" --policy "${policy%/*}" $activations \
           --hw "$tmp/host.json" -o "$plan" > "$tmp/plan.txt" 2>&1; then
        echo "| $name | $share% | $policy | does not fit | | | | | |"
        continue
      fi
      pred=$(sed -n 's/^  iteration *\([0-9.]*\) \([a-z]*\) simulated.*/\1 \2/p' "$tmp/plan.txt")
      ppeak=$(sed -n 's/^  GPU peak *\([0-9.]*\) \([KMGT]*i*B\) of.*/\1 \2/p' "$tmp/plan.txt")
      # shellcheck disable=SC2086
      "$S" train $M $on --steps 9 --plan "$plan" --trace "$tmp/$name.json" > "$tmp/run.txt"
      tokens=$(( $4 * $5 ))
      step=$(sed -n 's/^step *[0-9]* *loss [0-9.]* *\([0-9]*\) tokens\/s.*/\1/p' "$tmp/run.txt" |
             tail -n +2 | sort -n | awk -v t="$tokens" '{ v[NR] = $1 } END { printf "%.0f", t / v[int((NR + 1) / 2)] * 1e9 }')
      [ -n "${STW_FIDELITY_KEEP:-}" ] &&
        cat "$tmp/plan.txt" "$tmp/run.txt" > "$STW_FIDELITY_KEEP/$(basename "$plan" .json).txt"
      mpeak=$(sed -n 's/.*device peak \([0-9.]*\) \([KMGT]*i*B\).*/\1 \2/p' "$tmp/run.txt")
      pn=$(ns $pred)
      e=$(awk -v p="$pn" -v m="$step" 'BEGIN { printf "%+.1f", 100 * (p - m) / m }')
      pe=$(awk -v p="$(bytes $ppeak)" -v m="$(bytes $mpeak)" 'BEGIN { printf "%+.1f", 100 * (p - m) / m }')
      echo "$e $pe" >> "$errs"
      echo "| $name | $share% | $policy | $pred | $(awk -v n="$step" 'BEGIN { printf "%.2f ms", n / 1e6 }') | $e% | $ppeak | $mpeak | $pe% |"
    done
  done
done
echo
awk '{ t += ($1 < 0 ? -$1 : $1); m += ($2 < 0 ? -$2 : $2); n++ } END { if (n) printf "Mean absolute error over %d cases: iteration time %.1f%%, GPU peak %.1f%%.\n", n, t / n, m / n }' "$errs"
echo
echo "The profile: $(sed -n 's/^copy latency/copy latency/p' "$tmp/probe.txt"); copy interference ${interference:-none}; OMP_NUM_THREADS=$OMP_NUM_THREADS."
