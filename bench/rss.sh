#!/bin/sh
# bench/rss.sh [BUILDDIR] — the plan's predicted RSS on the host backend against the peak RSS of
# `stowage train --plan` replaying it (getrusage's ru_maxrss, through /usr/bin/time): three GPT
# shapes, each profiled once, planned on this machine's probed profile (`probe --device host`,
# which measures the process's own memory beside its model state) at two device budgets, one
# thread. Prints a Markdown table.
set -e
build=${1:-$(cd "$(dirname "$0")/.." && pwd)}
S=$build/stowage
D=/usr/share/common-licenses/GPL-3
[ -r "$D" ] || D=$(cd "$(dirname "$0")/.." && pwd)/README.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
"$S" probe --device host -o "$tmp/host.json" > /dev/null
echo "| model | device budget | predicted RSS | measured peak RSS | error | of which: device peak, chunks, process |"
echo "|---|---:|---:|---:|---:|---|"
printf '%s\n' "L4-C256 4 256 4 30MiB 60MiB" "L8-C384 8 384 6 100MiB 200MiB" \
  "L12-C512 12 512 8 100MiB 200MiB" |
while read -r name l c h g1 g2; do
  m="--layers $l --width $c --heads $h --context 64 --batch 4 --data $D"
  # shellcheck disable=SC2086
  "$S" train $m --steps 2 --profile "$tmp/$name.json" > /dev/null
  for g in $g1 $g2; do
    "$S" plan "$tmp/$name.json" --hw "$tmp/host.json" --gpu "$g" -o "$tmp/p.json" > "$tmp/p.txt"
    line=$(grep '^  RSS ' "$tmp/p.txt")
    pred=$(echo "$line" | awk '{ print $2, $3 }')
    # shellcheck disable=SC2086
    /usr/bin/time -f "%M" -o "$tmp/rss" "$S" train $m --steps 3 --plan "$tmp/p.json" > /dev/null
    kib=$(cat "$tmp/rss")
    parts=$(echo "$line" | sed 's/.*peak \(.*\), the chunks. \(.*\), the process.s \([^ ]* [KMG]*i*B\).*/\1, \2, \3/')
    echo "$pred $kib" | awk -v n="$name" -v g="$g" -v parts="$parts" '{
      p = $1 * ($2 == "GiB" ? 1024 : $2 == "KiB" ? 1 / 1024 : 1); m = $3 / 1024;
      printf "| %s | %s | %.1f MiB | %.1f MiB | %+.1f%% | %s |\n", n, g, p, m, (p - m) / m * 100, parts }'
  done
done
