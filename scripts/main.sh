#!/bin/sh
# scripts/main.sh — builds stowage and runs the main job on the bundled default: synthesize the
# trace of one training iteration of GPT-2 (124M, batch 8 x 1024 tokens, bf16, A100 profile)
# and summarize it. Outputs go to out/.
set -e
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh >/dev/null
mkdir -p out
./stowage synth --model gpt2 --batch 8 --seq 1024 -o out/gpt2.json
./stowage inspect out/gpt2.json
