#!/bin/sh
# bench/nvme.sh DIR [BUILDDIR] — `stowage probe --nvme DIR` against fio on the same directory:
# sequential O_DIRECT reads and writes at queue depth 32 through io_uring, by request size (64
# KiB, 1 MiB, 16 MiB), and 8 MiB reads and writes taking turns (the probe's mixed figure: both
# directions' bytes a second; fio's --rw=rw --rwmixread=50), ROUNDS interleaved rounds of each
# (default 3), medians. Prints a Markdown table with their ratio; its last result is
# bench/results/nvme.md. Needs fio (Debian: fio).
set -e
dir=${1:?usage: bench/nvme.sh DIR [BUILDDIR]}
build=${2:-$(cd "$(dirname "$0")/.." && pwd)}
S=$build/stowage
rounds=${ROUNDS:-3}
command -v fio >/dev/null || { echo "bench/nvme.sh needs fio (Debian: fio)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f "$dir"/nvme-bench.*' EXIT
# fio's figures of ROUND
fio_round() {
  round=$1
  for bs in 65536 1048576 16777216; do
    for rw in read write; do
      fio --name=nvme-bench --directory="$dir" --rw=$rw --bs=$bs --iodepth=32 \
        --ioengine=io_uring --direct=1 --size=1G --runtime=2 --time_based \
        --output-format=json > "$tmp/fio-$round-$bs-$rw.json" 2>/dev/null
    done
  done
  fio --name=nvme-bench --directory="$dir" --rw=rw --rwmixread=50 --bs=8M --iodepth=32 \
    --ioengine=io_uring --direct=1 --size=1G --runtime=2 --time_based \
    --output-format=json > "$tmp/fio-$round-mixed.json" 2>/dev/null
}
# the two take turns at going first (a cloud disk's burst allowance favours whichever does)
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 0 ]; then fio_round "$round"; fi
  "$S" probe --nvme "$dir" --json > "$tmp/probe-$round.json"
  if [ $((round % 2)) = 1 ]; then fio_round "$round"; fi
done
python3 - "$tmp" "$rounds" <<'EOF'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
probe = [json.load(open("%s/probe-%d.json" % (tmp, r + 1)))["storage"] for r in range(rounds)]
st = probe[0]
print("storage: %s through %s, %s" % (st["file_system"], st["engine"],
      "O_DIRECT" if st["direct"] else "buffered (%s)" % st["fallback"]))
print()
print("| request | probe read | fio read | ratio | probe write | fio write | ratio |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for bs in (65536, 1048576, 16777216):
    row = ["%d KiB" % (bs // 1024) if bs < 1048576 else "%d MiB" % (bs // 1048576)]
    for rw in ("read", "write"):
        p = statistics.median(next(x["%s_bytes_per_s" % rw] for x in pr["by_size"]
                                   if x["bytes"] == bs) for pr in probe)
        f = statistics.median(json.load(open("%s/fio-%d-%d-%s.json" % (tmp, r + 1, bs, rw)))
                              ["jobs"][0][rw]["bw_bytes"] for r in range(rounds))
        row += ["%.2f GB/s" % (p / 1e9), "%.2f GB/s" % (f / 1e9), "%.2f" % (p / f)]
    print("| " + " | ".join(row) + " |")
p = statistics.median(pr["mixed_bytes_per_s"] for pr in probe)
f = statistics.median(sum(j["jobs"][0][rw]["bw_bytes"] for rw in ("read", "write"))
                      for j in (json.load(open("%s/fio-%d-mixed.json" % (tmp, r + 1)))
                                for r in range(rounds)))
print()
print("| 8 MiB, reads and writes taking turns | probe | fio | ratio |")
print("|---|---:|---:|---:|")
print("| both directions | %.2f GB/s | %.2f GB/s | %.2f |" % (p / 1e9, f / 1e9, p / f))
EOF
