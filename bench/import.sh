#!/bin/sh
# bench/import.sh [BUILDDIR] [ROUNDS] — stowage import's time and peak memory: on the largest real
# trace of ../shared/data/pytorch (HTA's df_index_resolver: 216,092 events, 53.7 MB of JSON
# gzipped to 3.0 MB) and on a synthetic trace of about 1 GB of JSON (plain, made here: the
# ResNet-50 trace's events repeated as 192 iterations, times shifted). CPU seconds (user+sys),
# events per CPU second and the peak resident set, the median of ROUNDS runs (default 3).
set -e
build=${1:-$(cd "$(dirname "$0")/.." && pwd)}
rounds=${2:-3}
S=$build/stowage
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/../shared/data/pytorch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -d "$data" ] || { echo "bench/import.sh: $data is not here" >&2; exit 1; }
big=$tmp/big.json
python3 - "$data/kineto/worker0.1623143089861.pt.trace.json.gz" "$big" <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
ev = d.pop("traceEvents")
span = max(e.get("ts", 0) + e.get("dur", 0) for e in ev) - min(e["ts"] for e in ev if "ts" in e)
with open(sys.argv[2], "w") as f:
    f.write('{"schemaVersion": 1, "traceEvents": [\n')
    first = True
    for r in range(32):
        for e in ev:
            if "ts" in e:
                e = dict(e); e["ts"] = e["ts"] + r * (span + 1000)
                if isinstance(e.get("name"), str) and e["name"].startswith("ProfilerStep#"):
                    e["name"] = "ProfilerStep#%d" % (r * 6 + int(e["name"][13:]))
            f.write(("" if first else ",\n") + json.dumps(e)); first = False
    f.write("\n]}\n")
PY
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
measure() { # NAME FILE ARGS...
  name=$1 file=$2
  shift 2
  : > "$tmp/cpu"; : > "$tmp/rss"
  for r in $(seq "$rounds"); do
    /usr/bin/time -f "%U %S %M" -o "$tmp/t" "$S" import "$file" -o "$tmp/out.json" --json "$@" > "$tmp/rep"
    awk '{ print $1 + $2 }' "$tmp/t" >> "$tmp/cpu"
    awk '{ print $3 }' "$tmp/t" >> "$tmp/rss"
  done
  events=$(sed -n 's/.*"events":[[:space:]]*\([0-9]*\).*/\1/p' "$tmp/rep")
  cpu=$(median < "$tmp/cpu")
  rss=$(median < "$tmp/rss")
  bytes=$(if [ "${file%.gz}" != "$file" ]; then gzip -dc "$file" | wc -c; else wc -c < "$file"; fi)
  echo "| $name | $bytes | $events | $cpu | $(awk -v e="$events" -v c="$cpu" 'BEGIN { printf "%.0f", e / c }') | $((rss / 1024)) |"
}
echo "| trace | JSON bytes | events | CPU s | events per CPU s | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|"
measure "HTA df_index_resolver (gzip)" "$data/HolisticTraceAnalysis/df_index_resolver.json.gz" --params-from-memory
measure "synthetic, 192 ResNet-50 iterations (plain)" "$big"
