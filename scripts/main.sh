#!/bin/sh
# scripts/main.sh — builds stowage and runs the main job on the bundled default: synthesize the
# trace of one training iteration of GPT-2 (124M, batch 8 x 1024 tokens, bf16, A100 profile),
# summarize it, plan it for a 9 GiB GPU budget and prove the plan sound. Outputs go to out/.
set -e
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh >/dev/null
mkdir -p out
./stowage synth --model gpt2 --batch 8 --seq 1024 -o out/gpt2.json
./stowage inspect out/gpt2.json
echo
./stowage plan out/gpt2.json --gpu 9GiB -o out/plan.json
./stowage check out/plan.json out/gpt2.json
