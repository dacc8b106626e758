#!/bin/sh
# bench/sim.sh BUILDDIR — the simulator and the what-if tools: simulating GPT-3 175B, 32-point
# sweeps, `compare` tables for 1.5B, 12B and 175B GPTs on V100-32GB and A100-80GB, and
# `capacity` with 240 GiB of host memory on 1 and 8 GPUs; planning and simulating on 8 GPUs.
set -e
here=$(cd "$(dirname "$0")" && pwd)
S=${1:-$here/..}/stowage
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

synth() { # NAME MODEL HW DTYPE SEQ
  "$S" synth --model "$2" --batch 8 --seq "$5" --checkpointing --attention flash --kernels fused --hw "$3" \
    --dtype "$4" -o "$tmp/$1.json" 2>/dev/null
}
synth gpt3-175b-a100 gpt3-175b A100-80GB-PCIe4 bf16 2048
synth gpt2-1.5b-a100 "$here/models/gpt2-xl-2k.json" A100-80GB-PCIe4 bf16 2048
synth gpt-12b-a100 pstar-12b A100-80GB-PCIe4 bf16 1024
synth gpt3-175b-v100 gpt3-175b V100-32GB-PCIe3 fp16 2048
synth gpt2-1.5b-v100 "$here/models/gpt2-xl-2k.json" V100-32GB-PCIe3 fp16 2048
synth gpt-12b-v100 pstar-12b V100-32GB-PCIe3 fp16 1024

# the report, its files named without the temporary directory they are made in
report() {
echo "## Simulating one iteration of GPT-3 175B"
echo
"$S" plan "$tmp/gpt3-175b-a100.json" --gpu 80GiB --cpu 4TiB -o "$tmp/p175.json" > /dev/null
/usr/bin/time -f "%e %M" -o "$tmp/time" "$S" simulate "$tmp/p175.json" "$tmp/gpt3-175b-a100.json" > "$tmp/out"
read -r wall rss < "$tmp/time"
echo "\`stowage simulate\` (plan check included) of the 80 GiB A100 plan: ${wall} s wall, $((rss / 1024)) MiB peak RSS"
echo
echo '```'
cat "$tmp/out"
echo '```'
echo

echo "## Planning and simulating GPT-3 175B on 8 GPUs (chunk groups, gathers, reduce-scatters)"
echo
/usr/bin/time -f "%e %M" -o "$tmp/time" "$S" plan "$tmp/gpt3-175b-a100.json" --gpu 80GiB --gpus 8 \
  --cpu 4TiB -o "$tmp/p175x8.json" > /dev/null
read -r wall rss < "$tmp/time"
echo "\`stowage plan --gpus 8\` (chunk-size search): ${wall} s wall, $((rss / 1024)) MiB peak RSS"
/usr/bin/time -f "%e %M" -o "$tmp/time" "$S" simulate "$tmp/p175x8.json" "$tmp/gpt3-175b-a100.json" > "$tmp/out"
read -r wall rss < "$tmp/time"
echo "\`stowage simulate\` (plan check included): ${wall} s wall, $((rss / 1024)) MiB peak RSS"
echo
echo '```'
cat "$tmp/out"
echo '```'
echo

echo "## 32-point what-if sweeps (stowage policy, chunk-size search at every point)"
echo
for spec in "gpt2-1.5b-a100 10GiB..72GiB:2GiB" "gpt-12b-a100 16GiB..78GiB:2GiB"; do
  set -- $spec
  /usr/bin/time -f "%e" -o "$tmp/time" "$S" whatif "$tmp/$1.json" --gpu "$2" --policy stowage \
    --csv "$tmp/sweep.csv" > /dev/null
  echo "- $1, \`--gpu $2\`: $(cat "$tmp/time") s wall"
done
echo

for hw in A100-80GB-PCIe4:80GiB:a100 V100-32GB-PCIe3:32GiB:v100; do
  name=${hw%%:*}; rest=${hw#*:}; gpu=${rest%%:*}; tag=${rest#*:}
  for m in gpt2-1.5b gpt-12b gpt3-175b; do
    echo "## compare: $m on $name, $gpu of GPU memory, 4 TiB of host memory"
    echo
    echo '```'
    "$S" compare "$tmp/$m-$tag.json" --gpu "$gpu" --cpu 4TiB
    echo '```'
    echo
  done
done

echo "## compare: gpt-12b on 8 x A100-80GB-PCIe4, 32GiB of GPU memory each, 240 GiB of host memory"
echo
echo '```'
"$S" compare "$tmp/gpt-12b-a100.json" --gpu 32GiB --gpus 8 --cpu 240GiB
echo '```'
echo

echo "## capacity: A100-80GB, 1 GPU, 240 GiB of host memory, batch 8 x 1024, checkpointing, flash attention"
echo
echo '```'
"$S" capacity --hw A100-80GB-PCIe4 --cpu 240GiB --family gpt --hidden 4096 2>/dev/null
echo
"$S" capacity --hw A100-80GB-PCIe4 --cpu 240GiB --family patrickstar 2>/dev/null
echo '```'
echo

echo "## capacity: A100-80GB, 8 GPUs, 240 GiB of host memory, batch 8 x 1024 per GPU, checkpointing, flash attention"
echo
echo '```'
"$S" capacity --hw A100-80GB-PCIe4 --gpus 8 --cpu 240GiB --family gpt --hidden 4096 2>/dev/null
echo
"$S" capacity --hw A100-80GB-PCIe4 --gpus 8 --cpu 240GiB --family patrickstar 2>/dev/null
echo '```'
echo

echo "## capacity: RTX 4090, 64 and 128 GiB of host memory, batch 1 x 1024: LoRA (rank 16 on q, v) against full fine-tuning"
echo
echo '```'
for cpu in 64GiB 128GiB; do
  for family in "gpt --hidden 8192" llama; do
    for lora in "--lora 16" ""; do
      # shellcheck disable=SC2086 # the family and LoRA options are words
      "$S" capacity --hw RTX4090-24GB-PCIe4 --cpu $cpu --family $family --batch 1 --seq 1024 \
        --policy stowage,zero-offload $lora 2>/dev/null
      echo
    done
  done
done
echo '```'
}
report > "$tmp/report.md"
sed "s|$tmp/||g" "$tmp/report.md"
