#!/bin/sh
# bench/activations.sh — the stowage policy's activations, kept, recomputed, offloaded or chosen
# per block (auto), in the simulator: for each model, batch and sequence on its hardware profile,
# GPU budgets swept with `stowage whatif --activations keep|recompute|offload|auto`, and per
# budget the iteration time of each (or why none fits), how many blocks auto offloads and
# recomputes, whether auto is at least as fast as the best of the three forced choices, and what
# auto recovers of the time all-recompute loses against keeping everything with memory to spare
# (the unlimited-memory time): (recompute - auto) / (recompute - unlimited). Prints a Markdown
# table; its last result is bench/results/activations.md. Run from the build tree (./stowage).
S=${STOWAGE:-./stowage}
run() { # MODEL BATCH SEQ HW BUDGETS
  echo "### $1, batch $2 x $3, $4"
  echo
  echo "| GPU budget | keep | recompute | offload | auto | auto offloads + recomputes | auto <= best | recovered |"
  echo "|---:|---:|---:|---:|---:|---:|:---:|---:|"
  for a in keep recompute offload auto; do
    "$S" whatif --model "$1" --batch "$2" --seq "$3" --attention flash --hw "$4" --gpu "$5" \
      --policy stowage --activations "$a" --json > "$tmp/$a.json" || return 1
  done
  python3 - "$tmp" <<'EOF'
import json, sys
d = sys.argv[1]
rows = {a: json.load(open("%s/%s.json" % (d, a))) for a in ("keep", "recompute", "offload", "auto")}
# keeping everything with memory to spare: a feasible keep row's time over its slowdown
kept = [k["iteration_ns"] / k["slowdown"] for k in rows["keep"] if k["feasible"] and k.get("slowdown")]
unlimited = kept[0] if kept else None
def ms(r):
    return "%.1f ms" % (r["iteration_ns"] / 1e6) if r["feasible"] else "does not fit"
for k, r, o, a in zip(rows["keep"], rows["recompute"], rows["offload"], rows["auto"]):
    rec = "-"
    if a["feasible"] and r["feasible"] and unlimited is not None:
        lost = r["iteration_ns"] - unlimited
        if lost > 0:
            rec = "%.0f%%" % (100 * (r["iteration_ns"] - a["iteration_ns"]) / lost)
    forced = [x["iteration_ns"] for x in (k, r, o) if x["feasible"]]
    ok = "yes" if not forced or (a["feasible"] and a["iteration_ns"] <= min(forced)) else "NO"
    split = "%d + %d" % (a.get("offloaded_blocks", 0), a.get("recomputed_blocks", 0)) \
        if a["feasible"] else "-"
    print("| %d GiB | %s | %s | %s | %s | %s | %s | %s |" % (
        k["gpu_bytes"] >> 30, ms(k), ms(r), ms(o), ms(a), split, ok, rec))
EOF
  echo
}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "## Activations: keep, recompute, offload or auto (stowage whatif --activations)"
echo
run gpt2-xl 16 1024 A100-80GB-PCIe4 16GiB,24GiB,32GiB,48GiB,64GiB,80GiB
run llama3-8b 8 2048 H100-80GB-PCIe5 32GiB,40GiB,48GiB,64GiB,80GiB
run gpt3-13b 8 1024 A100-80GB-PCIe4 32GiB,40GiB,48GiB,64GiB,80GiB
run llama3-8b 1 2048 RTX4090-24GB-PCIe4 12GiB,16GiB,20GiB,23GiB
