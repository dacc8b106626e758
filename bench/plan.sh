#!/bin/sh
# bench/plan.sh BUILDDIR — planning time and memory, and bytes moved per policy, for GPT-2 1.5B
# (with a 2048-position table, bench/models/gpt2-xl-2k.json) and GPT-3 175B at batch 8 x 2048
# tokens, activation checkpointing and flash attention, at three budgets each.
set -e
here=$(cd "$(dirname "$0")" && pwd)
S=${1:-$here/..}/stowage
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v /usr/bin/time >/dev/null || { echo "bench/plan.sh needs /usr/bin/time (Debian: time)"; exit 1; }

"$S" synth --model "$here/models/gpt2-xl-2k.json" --batch 8 --seq 2048 --checkpointing \
  --attention flash --hw A100-80GB-PCIe4 -o "$tmp/gpt2-1.5b.json" 2>/dev/null
"$S" synth --model gpt3-175b --batch 8 --seq 2048 --checkpointing --attention flash \
  --hw H200-141GB-PCIe5 -o "$tmp/gpt3-175b.json" 2>/dev/null

field() { sed -n "s/.*$1 *\([0-9.]* [KMGT]*i*B\).*/\1/p" "$2" | head -n1; }

echo "## Planning time and peak memory (stowage policy, one core)"
echo
echo "| trace | GPU budget | search | wall | peak RSS | chunk size | H2D + D2H per iteration | lower bound | gap |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
for spec in "gpt2-1.5b 10GiB 16GiB 24GiB" "gpt3-175b 64GiB 96GiB 140GiB"; do
  set -- $spec
  trace=$1
  shift
  for gpu in "$@"; do
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$S" plan "$tmp/$trace.json" --gpu "$gpu" --cpu 4TiB \
      -o "$tmp/p.json" > "$tmp/out" 2>&1 || { echo "| $trace | $gpu | infeasible |"; continue; }
    read -r wall rss < "$tmp/time"
    size=$(sed -n 's/.*chunk size \([0-9,]*\) elements.*/\1/p' "$tmp/out")
    moved=$(sed -n 's/.*moves *\(.*\) per iteration.*/\1/p' "$tmp/out")
    lb=$(sed -n 's/.*lower bound \(.*\), gap.*/\1/p' "$tmp/out")
    gap=$(sed -n 's/.*, gap \(.*\)$/\1/p' "$tmp/out")
    echo "| $trace | $gpu | yes | ${wall} s | $((rss / 1024)) MiB | $size | $moved | $lb | $gap |"
    n=$(echo "$size" | tr -d ,)
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$S" plan "$tmp/$trace.json" --gpu "$gpu" --cpu 4TiB \
      --chunk-size "$n" -o "$tmp/p.json" > "$tmp/out" 2>&1
    read -r wall rss < "$tmp/time"
    echo "| $trace | $gpu | no | ${wall} s | $((rss / 1024)) MiB | $size | same | | |"
  done
done

echo
echo "## Bytes moved per iteration, by policy (H2D + D2H; simulated iteration time)"
echo
echo "| trace | GPU budget | stowage (time) | stowage (bytes) | patrickstar | zero-offload | zero-infinity | gemini-static | lru |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for spec in "gpt2-1.5b 10GiB 16GiB 24GiB" "gpt3-175b 64GiB 96GiB 140GiB"; do
  set -- $spec
  trace=$1
  shift
  for gpu in "$@"; do
    row="| $trace | $gpu |"
    for p in "stowage" "stowage --objective bytes" patrickstar zero-offload zero-infinity gemini-static lru; do
      # shellcheck disable=SC2086
      if "$S" plan "$tmp/$trace.json" --gpu "$gpu" --cpu 4TiB --policy $p -o "$tmp/p.json" > "$tmp/out" 2>&1; then
        "$S" check "$tmp/p.json" "$tmp/$trace.json" > /dev/null
        h2d=$(sed -n 's/.*moves *\([0-9.]* [KMGT]*i*B\) H2D.*/\1/p' "$tmp/out")
        d2h=$(sed -n 's/.*H2D + \([0-9.]* [KMGT]*i*B\) D2H.*/\1/p' "$tmp/out")
        cost=$(sed -n 's/.*iteration *\([0-9.]* [mun]*s\) simulated.*/\1/p' "$tmp/out")
        row="$row $h2d + $d2h ($cost) |"
      else
        row="$row does not fit |"
      fi
    done
    echo "$row"
  done
done
