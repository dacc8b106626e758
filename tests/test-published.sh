#!/bin/sh
# test-published.sh — bench/published.py on a few rows of the published set
# (tests/fixtures/published: rows of ../shared/data/published/measurements.csv, and T rows made up
# for these tests): each row replayed with the policy and the profile its system and GPU name,
# the published figure turned into a step time by the row's own formula, the rows it cannot
# replay listed with the reason.
. "$STW_SRCDIR/tests/tap.sh"
T=$TAP_TMP
if ! command -v python3 > /dev/null 2>&1; then
  echo "1..0 # SKIP no python3 to run bench/published.py"
  exit 0
fi
python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$STW_SRCDIR/tests/fixtures/published" \
  > "$T/out.md" 2>&1
tap_result $? "published.py runs on the fixture rows" "$(tail -n 5 "$T/out.md")"
has() { # has DESCRIPTION LINE: the output holds LINE whole
  grep -qxF -- "$2" "$T/out.md"; tap_result $? "$1" "no line: $2"
}
has "Gemini's cpu placement on the PCIe card its source names; the ColossalAI TFLOPS formula (8 N tokens)" \
  "| G01 | Gemini | gpt2_10b (ColossalAI exa | 2 x 32 | gemini-static --gemini-fraction 0 --layout shards on A100-80GB-PCIe4, its loss in fp16 | 22.078 s | 24.943 s | +13.0% |"
has "an out-of-memory row set against the plan" \
  "| G05 | Gemini | gpt2_10b (ColossalAI exa | 4 x 8 | gemini-static --gemini-fraction 1 --layout shards on A100-80GB-PCIe4, its loss in fp16 | OOM | 7.187 s | disagrees |"
has "ZeRO-Offload in milliseconds a step" \
  "| Z08 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | Qwen/Qwen2.5-1.5B | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 1.452 s | +6.4% |"
has "MegaTrain with its loss over pieces of tokens (it fits); its 6 N tokens TFLOPS" \
  "| M03 | MegaTrain | Qwen/Qwen2.5-7B | 1 x 158 | gemini-static --gemini-fraction 0 on H100-SXM5-80GB, chunked loss | 27.181 s | 26.743 s | -1.6% |"
has "DDP from global samples a second, in PyTorch's AMP and torch 1's Adam; a 40 GB A100 between GPUs whose link is not stated: the PCIe card's" \
  "| L09 | PyTorch DDP | gpt2_xl (PL benchmark) | 4 x 6 | ddp on A100-40GB-PCIe4, AMP | 2.041 s | 1.774 s | -13.1% |"
has "a sharded run named in no words the bench knows, by where its location columns put the data" \
  "| T28 | FSDP (no offload) | gpt2_xl (PL benchmark) | 4 x 6 | gemini-static --gemini-fraction 1 --layout shards on A100-40GB-PCIe4, its loss in fp16 | 2.500 s | 1.520 s | -39.2% |"
has "parameters on the host by the location columns: ZeRO-Infinity's policy (FSDP2's CPUOffloadPolicy)" \
  "| T29 | FSDP CPU offload (params) | gpt2_xl (PL benchmark) | 4 x 6 | zero-infinity --layout shards on A100-40GB-PCIe4, its loss in fp16 | 9.000 s | 1.807 s | -79.9% |"
has "DDP's GPU peak against max_memory_allocated: the whole model, and the gradients' copy in its buckets" \
  "| L09 | PyTorch DDP | 37.02 GiB | 34.58 GiB | -6.6% |"
has "a PatrickStar row on a V100 whose form factor is NVLink's" \
  "| T01 | PatrickStar | gpt2_10b (ColossalAI exa | 1 x 8 | patrickstar on V100-SXM2-32GB, its loss in fp16 | 5.520 s | 23.420 s | +324.3% |"
has "ZeRO-3 with the parameters offloaded is ZeRO-Infinity's policy; a PCIe card by its name" \
  "| T02 | ZeRO-Infinity | gpt2_10b (ColossalAI exa | 1 x 32 | zero-infinity on A100-40GB-PCIe4, its loss in fp16 | 22.078 s | 30.439 s | +37.9% |"
has "a GPU's tokens a second, as a step time" \
  "| T08 | Gemini | gpt2_10b (ColossalAI exa | 2 x 32 | gemini-static --gemini-fraction 0 --layout shards on A100-80GB-PCIe4, its loss in fp16 | 22.078 s | 24.943 s | +13.0% |"
has "seconds an iteration, as a step time" \
  "| T09 | Gemini | gpt2_10b (ColossalAI exa | 2 x 32 | gemini-static --gemini-fraction 0 --layout shards on A100-80GB-PCIe4, its loss in fp16 | 22.078 s | 24.943 s | +13.0% |"
has "the mean absolute error per system" "| ZeRO-Infinity | 3 | 232.9% | +380.3% |"
has "a published rate against the prediction in the row's own unit (TFLOPS a GPU)" \
  "| G01 | Gemini | 122.05 TFLOPS/GPU | 108.03 TFLOPS/GPU | -11.5% |"
has "a published rate against the prediction in the row's own unit (a GPU's tokens a second)" \
  "| T08 | Gemini | 1484.19 tokens/s per GPU | 1313.72 tokens/s per GPU | -11.5% |"
has "the mean absolute error of the rate per system" \
  "| ZeRO-Infinity | 3 | 60.1% | -79.2% |"
has "the mean absolute error of the GPU peak per system" "| PyTorch DDP | 3 | 6.6% | -6.6% |"
has "forward and backward only: the simulated end of backward; checkpointing where the source is silent and only it fits" \
  "| U01 | Gemini | meta-llama/Llama-2-13b | 8 x 8 | gemini-static --gemini-fraction 1 --layout shards on A100-80GB-PCIe4, checkpointing (not stated; without it the plan does not fit), to the end of backward | 19.200 s | 23.119 s | +20.4% |"
has "an out-of-memory row the plan fits: said, with the plan's GPU peak against its budget and the most layers at its width that fit" \
  "- G05: ran out of GPU memory; the plan fits, its GPU peak 41.11 GiB of 80.00 GiB; at its width the most that fits is 20.8B (102 layers), the row's 10.3B (50)"
has "a run that ran where no plan fits: said, with the planner's reason and the run's published memory" \
  "| M01 | MegaTrain | Qwen/Qwen2.5-32B-Instruc | 1 x 96 | gemini-static --gemini-fraction 0 on H100-SXM5-80GB, chunked loss | 74.614 s | does not fit | disagrees |"
has "the planner's reason for a run that ran where no plan fits" \
  "- M01: ran (its GPU memory as published: ~40 GB (README \"GPU VRAM\")); no plan fits a GPU budget of 80.00 GiB (512.00 MiB of the budget kept free: a process holds 512.00 MiB of the GPU's 80.00 GiB outside its tensors (its CUDA context and libraries; the profile's gpu.process_bytes)): at op 574 (h63.mlp.gate_up, fwd) the non-model memory alone, with the reserve, needs 80.75 GiB, 769.50 MiB short, before any chunk"
has "checkpoints in host memory where the source's text says so and only there do they fit (the 1T at 8 a GPU on 512)" \
  "| D05 | ZeRO-3 + CPU optimizer offload | Megatron GPT 1T (Azure b | 512 x 8 | zero-offload --zero-stage 3 --layout shards on A100-SXM4-80GB, its checkpoints in host memory, as its source's text says (its recipe does not; on the GPU the plan does not fit) | 440.224 s | 423.107 s | -3.9% |"
has "Qwen3 in two micro-steps of gradient accumulation on an RTX PRO 6000, each micro-step's gradients to the host (FSDP's CPU offload)" \
  "| P02 | prime-rl FSDP CPU offload | Qwen/Qwen3-4B-Instruct-2 | 1 x 1 | zero-offload on RTXPRO6000-96GB-PCIe5, each micro-step's gradients to the host | 5.629 s | 5.605 s | -0.4% |"
has "an epoch's time as the row derives a step from it; a 24 GB card's whole memory" \
  "| D14 | ZeRO-3 Offload (params+optimizer to CPU) | gpt2-xl (HF config) | 2 x 16 | zero-infinity --layout shards on TitanRTX-24GB-PCIe3, its loss in fp16, published: an epoch's time; a step as the row derives it | 11.400 s | 1.653 s | -85.5% |"
has "the policy the row's emulation target names; a Llama; four micro-steps, their gradients to the host; no checkpointing where it fits without" \
  "| T10 | FSDP CPU offload | Llama-3.2-1B-like (made  | 1 x 1 | zero-offload on RTX4090-24GB-PCIe4, each micro-step's gradients to the host | 3.000 s | 2.759 s | -8.0% |"
has "the same FSDP offload on two GPUs: each micro-step's gradients reduce-scattered to the hosts, each rank stepping its half" \
  "| T30 | FSDP CPU offload (2 GPUs) | Llama-3.2-1B-like (made  | 2 x 1 | zero-offload on RTX4090-24GB-PCIe4, each micro-step's gradients to the host | 3.000 s | 1.869 s | -37.7% |"
has "DeepSpeed's ZeRO-Offload accumulating four micro-steps: the host's sum added on the GPU" \
  "| T31 | ZeRO-Offload, accumulating | a small Mixtral 8x7B-sha | 1 x 4 | zero-offload on A100-80GB-PCIe4, 2 experts a token (Mixtral's; not stated); each micro-step's gradients to the host, added on the GPU | 1.000 s | 0.729 s | -27.1% |"
has "DeepSpeed ZeRO-3 with offload_optimizer alone: zero-offload at stage 3" \
  "| T12 | ZeRO-3 + CPU optimizer offload | gpt2-xl (HF config) | 4 x 8 | zero-offload --zero-stage 3 --layout shards on A100-80GB-PCIe4, its loss in fp16 | 4.000 s | 1.988 s | -50.3% |"
has "two DGX nodes: --gpus 8 --nodes 2, the host memory a node's" \
  "| T13 | ZeRO-3 + CPU optimizer offload | gpt2-xl (HF config) | 16 x 8 | zero-offload --zero-stage 3 --layout shards on A100-SXM4-80GB, its loss in fp16 | 5.000 s | 1.434 s | -71.3% |"
has "PatrickStar on four GPUs: its own groups of whole chunks, no --layout" \
  "| T56 | PatrickStar | gpt2_10b (ColossalAI exa | 4 x 8 | patrickstar on V100-SXM2-32GB, its loss in fp16 | 5.520 s | 14.654 s | +165.5% |"
has "a 512-GPU run of ZeRO-3: each chunk split across the GPUs (--layout shards), as ZeRO-3 partitions its model" \
  "| D02 | ZeRO-3 + CPU optimizer offload | Megatron GPT 1T (Azure b | 512 x 1 | zero-offload --zero-stage 3 --layout shards on A100-SXM4-80GB | 117.031 s | 112.242 s | -4.1% |"
has "a row that does not say whether it offloaded: not replayed, said" "- D11: whether it offloaded is not stated"
has "forward and backward only under DDP: to backward's end, the last buckets' all-reduce waited for" \
  "| T11 | PyTorch DDP | gpt2_xl (PL benchmark) | 4 x 6 | ddp on A100-40GB-PCIe4, AMP, to the end of backward | 1.500 s | 1.674 s | +11.6% |"
has "ZeRO-Infinity's NVMe offload on drives the row does not name: one Gen4 drive's preset, said" \
  "| T03 | ZeRO-Infinity | gpt2_10b (ColossalAI exa | 1 x 32 | zero-infinity --nvme 2TB --storage nvme-gen4 --nvme-devices 1 on V100-SXM2-32GB, its loss in fp16, its drives not stated: one PCIe 4.0 drive (nvme-gen4) assumed; its parameters on storage only where host memory cannot hold them | 22.078 s | 106.036 s | +380.3% |"
has "ZeRO-Infinity's optimizer on the row's two Gen4 drives of 1 TB: --storage nvme-gen4 --nvme-devices 2" \
  "| T19 | ZeRO-Infinity | gpt2_10b (ColossalAI exa | 1 x 32 | zero-infinity --nvme 2TB --storage nvme-gen4 --nvme-devices 2 on V100-SXM2-32GB, its loss in fp16 | 22.078 s | 83.994 s | +280.4% |"
has "a TFLOPS formula it cannot read: not replayed, said" \
  "- T04: TFLOPS by a formula this bench does not read (TFLOPS as the logger prints them)"
has "a GPU without a profile: not replayed, said" "- T05: no profile of its GPU (NVIDIA B300)"
has "an A800 on NVLink: its SXM board's profile, an A100 whose NVLink carries 400 GB/s" \
  "| T40 | Gemini | gpt2_10b (ColossalAI exa | 2 x 32 | gemini-static --gemini-fraction 0 --layout shards on A800-SXM4-80GB, its loss in fp16 | 22.078 s | 27.718 s | +25.5% |"
has "a T4 in fp16: its profile (a cloud card on PCIe 3.0)" \
  "| T41 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | Qwen/Qwen2.5-1.5B | 1 x 4 | zero-offload on T4-16GB-PCIe3 | 1.365 s | 2.395 s | +75.5% |"
has "seconds an iteration (s/it) as a step time" \
  "| T43 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | Qwen/Qwen2.5-1.5B | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 1.452 s | +6.4% |"
has "iterations a second (it/s) as a step time, and as a rate in its unit" \
  "| T44 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | 0.80 it/s | 0.69 it/s | -13.9% |"
has "samples a second written samples/sec" "| T45 | PyTorch DDP | 11.76 samples/sec | 13.53 samples/sec | +15.0% |"
has "TFLOP/s written with its slash" "| T46 | Gemini | 122.05 TFLOP/s per GPU | 108.03 TFLOP/s per GPU | -11.5% |"
has "a GPU's tokens a second written tok/s" "| T47 | Gemini | 1484.19 tok/s per GPU | 1313.72 tok/s per GPU | -11.5% |"
has "a step time in a unit it does not read: not replayed, said" \
  "- T48: a Step time in a unit this bench does not read (furlongs/fortnight)"
has "a Falcon by its name: a Hugging Face falcon config, multi-query and parallel attention" \
  "| T49 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | tiiuae/falcon-7b | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 5.794 s | +324.5% |"
has "a GPT-J by its name" \
  "| T50 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | EleutherAI/gpt-j-6b | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 4.939 s | +261.8% |"
has "a StarCoder by its name: GPT-BigCode's multi-query blocks" \
  "| T51 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | bigcode/starcoderbase-7b | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 6.083 s | +345.6% |"
has "an MPT by its name" \
  "| T52 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | mosaicml/mpt-7b | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 5.459 s | +299.9% |"
has "an InternLM2 by its model's name: a llama-style family without a config class of its own" \
  "| T53 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | internlm/internlm2-chat- | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 6.078 s | +345.3% |"
has "a decoder named by its blocks (RMSNorm, SwiGLU, RoPE, GQA): llama-style" \
  "| T54 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | a made-up decoder | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 1.096 s | -19.7% |"
has "latent attention, whose sizes the columns do not give: not replayed, said" \
  "- T55: an architecture this bench does not build (DeepSeek-V2 (MLA))"
has "a T4 in bf16, which it does not compute: not replayed, said once by the command that refused" \
  "- T42: synth: T4-16GB-PCIe3 has no bf16 compute: choose another --dtype"
has "a largest-model row: the most layers at its width that fit, against the zoo's sizes" \
  "| L05 | ZeRO-3 (no offload) | gemini-static --gemini-fraction 1 --layout shards on A100-40GB-PCIe4 | 12B (of 12, 15, 18, 20, 24, 28) | 16.3B (80 layers) | within one step |"
has "Hugging Face's GPT-2 of 2022 in fp16: its cross-entropy in fp16, said; the peak of GPT-2 XL at 40 x 1024 tokens a GPU" \
  "| L10 | ZeRO-3 (no offload) | 24.77 GiB | 24.38 GiB | -1.6% |"
has "Gemini under Lightning's ColossalAIStrategy: each rank's model built whole in fp32 on the host, its start-up held to the host: the largest model" \
  "| L07 | Gemini | gemini-static --gemini-fraction 1 --layout shards on A100-40GB-PCIe4 | 12B (of 12, 15, 18, 20, 24, 28) | 14.9B (73 layers) | agrees |"
has "ZeRO-3 under PyTorch Lightning: its DeepSpeedStrategy's buffer sizes, said" \
  "| L06 | ZeRO-3 (no offload) | gpt2_12B (PL benchmark) | 8 x 1 | gemini-static --gemini-fraction 1 --layout shards on A100-40GB-PCIe4, its loss in fp16, Lightning's DeepSpeedStrategy: reduce_bucket_size 2e8, sub_group_size 1e12 | 9.060 s | 8.100 s | -10.6% |"
has "... its whole partition's fp32 gradients in the step: the published peak" \
  "| L06 | ZeRO-3 (no offload) | 29.05 GiB | 29.05 GiB | -0.0% |"
has "DeepSpeed's buffer sizes the row's configuration states, said" \
  "| T57 | ZeRO-3 (no offload) | gpt2_12B (PL benchmark) | 8 x 1 | gemini-static --gemini-fraction 1 --layout shards on A100-40GB-PCIe4, its loss in fp16, DeepSpeed's reduce_bucket_size 1e8, sub_group_size 5e8 (its configuration) | 9.060 s | 8.100 s | -10.6% |"
has "... and its peak from them: a step of 5e8 fp32 gradients" \
  "| T57 | ZeRO-3 (no offload) | 29.05 GiB | 25.19 GiB | -13.3% |"
has "a row whose GPU count is no number: not replayed, said" \
  "- T06: a field this bench cannot read (ValueError: n_gpus: 'eight' is not a whole number from 1 up)"
has "a Gemma 2 by its architecture's name, the head's width the row's" \
  "| T16 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | gemma-2-2b-like (made up | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 2.516 s | +84.3% |"
has "a row whose GPU memory is not given: not replayed, said" \
  "- T14: a field this bench cannot read (ValueError: gpu_mem_GB: '' is not a memory size in GB)"
has "an out-of-memory row whose model synth refuses: not replayed, said" \
  "- T15: synth: T15.config.json: \$: as a gpt2 model: heads must divide hidden (or head_dim be given)"
has "Gemini's auto placement with its optimizer's share of the margin (0: every chunk stepped on the CPU)" \
  "| G04 | Gemini | gpt2_10b (ColossalAI exa | 4 x 8 | patrickstar --margin 0 --layout shards on A100-80GB-PCIe4, its loss in fp16 | 7.598 s | 7.440 s | -2.1% |"
has "an OPT by its architecture's name: a Hugging Face OPT config, its ReLU MLP" \
  "| T18 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | facebook/opt-1.3b (made  | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 1.141 s | -16.4% |"
has "a BLOOM by its architecture's name: a Hugging Face BLOOM config, ALiBi and the embeddings' norm" \
  "| T20 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | bigscience/bloom-560m (m | 2 x 4 | zero-offload on A100-SXM4-40GB | 1.365 s | 0.591 s | -56.7% |"
has "a mixture of experts by its words (8 experts, top-2): a Hugging Face Mixtral config" \
  "| T22 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | a small Mixtral (made up | 1 x 4 | zero-offload on A100-80GB-PCIe4 | 1.000 s | 0.360 s | -64.0% |"
has "a Mixtral that does not say how many experts a token: Mixtral's two, said" \
  "| T23 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | a small Mixtral 8x7B-sha | 1 x 4 | zero-offload on A100-80GB-PCIe4, 2 experts a token (Mixtral's; not stated) | 1.000 s | 0.360 s | -64.0% |"
has "a Qwen3-MoE (128 experts, 8 active, its head width): Qwen3-MoE's config" \
  "| T24 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | a small Qwen3-MoE (made  | 1 x 4 | zero-offload on A100-80GB-PCIe4 | 1.000 s | 2.464 s | +146.4% |"
has "every assumption a replay makes is said in its line, none overwriting another" \
  "| T27 | ZeRO-Offload (ZeRO-2 + CPU optimizer) | a Mixtral timed by the e | 1 x 4 | zero-offload on A100-80GB-PCIe4, 2 experts a token (Mixtral's; not stated); published: an epoch's time; a step as the row derives it | 2.000 s | 0.360 s | -82.0% |"
has "shared experts or latent attention, which the columns cannot size: not replayed, said" \
  "- T25: a mixture of experts with shared experts or latent attention, whose sizes the row's columns do not give"
has "a mixture of experts that counts none: not replayed, said" \
  "- T26: a mixture of experts whose experts (N experts, top-K) the row does not count"
python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$STW_SRCDIR/tests/fixtures/published" \
  --rows T22,T24 --keep "$T/moe" > /dev/null 2>&1 &&
  "$STW_BUILDDIR/stowage" inspect "$T/moe/T22.trace.json" | grep -q "8 experts, top 2" &&
  "$STW_BUILDDIR/stowage" inspect "$T/moe/T24.trace.json" | grep -q "128 experts, top 8"
tap_result $? "the rows' models are built with their experts" "$("$STW_BUILDDIR/stowage" inspect "$T/moe/T24.trace.json" 2>&1 | head -n 4)"
has "an NVMe column naming no drive (0x): not replayed, said" \
  "- T21: a field this bench cannot read (ValueError: nvme: 0 drives is not from 1 to 256)"
has "a margin ratio beyond 1: not replayed, said" \
  "- T17: a field this bench cannot read (ValueError: policy_config: gpu_margin_mem_ratio=2 is not from 0 to 1)"
has "ZenFlow wherever it appears: not replayed, said" \
  "- T07: ZenFlow changes the update rule (top-k on the GPU, the rest every 4 steps)"
expect 1 "published.py: $T/none/measurements.csv: no such file" "no published set: said, exit 1" \
  -- python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$T/none"
expect 1 "published.py: $T/none/stowage: no stowage binary" "no stowage to replay with: said, exit 1" \
  -- python3 "$STW_SRCDIR/bench/published.py" "$T/none" "$STW_SRCDIR/tests/fixtures/published"
# one row, its files kept and its commands shown: the commands run again as they are
python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$STW_SRCDIR/tests/fixtures/published" \
  --rows G01 --keep "$T/keep" --commands > "$T/one.md" 2> "$T/one.err"
# (its step time, and its rate in its own unit)
[ "$(grep -c '^| G01 ' "$T/one.md")" = 2 ] && [ "$(grep -c '^| [A-Z][0-9]* |' "$T/one.md")" = 2 ] &&
  grep -qxF "| G01 | Gemini | gpt2_10b (ColossalAI exa | 2 x 32 | gemini-static --gemini-fraction 0 --layout shards on A100-80GB-PCIe4, its loss in fp16 | 22.078 s | 24.943 s | +13.0% |" "$T/one.md" &&
  grep -qxF "| G01 | Gemini | 122.05 TFLOPS/GPU | 108.03 TFLOPS/GPU | -11.5% |" "$T/one.md" &&
  [ "$(grep -c '^\$ ' "$T/one.err")" = 2 ] && [ -f "$T/keep/G01.trace.json" ] &&
  [ -f "$T/keep/G01.plan.json" ]
tap_result $? "--rows G01 --keep --commands: the one row, its files kept, its two commands" \
  "$(cat "$T/one.md" "$T/one.err")"
plan_line=$(grep '^\$ .* plan ' "$T/one.err" | sed 's/^\$ //')
rm "$T/keep/G01.plan.json"
eval "$plan_line" > "$T/again.txt" 2>&1 &&
  grep -q "iteration  *24.943 s simulated" "$T/again.txt"
tap_result $? "the plan command as printed runs again to the same iteration time" "$(cat "$T/again.txt")"
# torch.optim.Adam named in 2022 (torch 1): a for-loop; FusedAdam and HybridAdam: fused, and
# DeepSpeed's CPU Adam (Z08: no step on the GPU); DeepSpeed's ZeRO with its optimizer state on
# the GPU (L05, each of its 14 bisection's traces): DeepSpeed's own step. DeepSpeed's ZeRO-2
# (Z08, overlap_comm not named: off by default at stages 1 and 2) runs its collectives on the
# compute stream; ZeRO-3 (L05: on by default) and the others beside it
python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$STW_SRCDIR/tests/fixtures/published" \
  --rows L09,G01,L05,Z08 --commands > /dev/null 2> "$T/impl.err"
[ "$(grep -c -- '--optimizer-impl for-loop' "$T/impl.err")" = 1 ] &&
  [ "$(grep -c -- '--optimizer-impl fused' "$T/impl.err")" = 2 ] &&
  [ "$(grep -c -- 'L05.config.json .*--optimizer-impl deepspeed' "$T/impl.err")" = 14 ] &&
  [ "$(grep -c -- '--optimizer-impl deepspeed' "$T/impl.err")" = 14 ] &&
  grep -q 'L09.config.json .*--optimizer-impl for-loop' "$T/impl.err" &&
  grep -q 'Z08.config.json .*--optimizer-impl fused' "$T/impl.err" &&
  [ "$(grep -c -- '--collectives blocking' "$T/impl.err")" = 1 ] &&
  grep -q 'Z08.config.json .*--collectives blocking' "$T/impl.err" &&
  [ "$(grep -c -- '--collectives overlapped' "$T/impl.err")" = 16 ]
tap_result $? "each row's optimizer as its source names it" "$(cat "$T/impl.err")"
expect 1 "published.py: --rows: Q99 not a row_id of" "--rows naming no row of the set: said, exit 1" \
  -- python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$STW_SRCDIR/tests/fixtures/published" --rows G01,Q99
# a set without a column the bench reads, one that is not UTF-8, rows of other lengths
mkdir -p "$T/nocol" "$T/latin" "$T/ragged"
head -n 1 "$STW_SRCDIR/tests/fixtures/published/measurements.csv" |
  sed 's/peak_gpu_mem_measured,//' > "$T/nocol/measurements.csv"
expect 1 "published.py: $T/nocol/measurements.csv: no column peak_gpu_mem_measured (the published set's columns: its README)" \
  "a set without a column it reads: the file and the column said, exit 1, nothing replayed" \
  -- python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$T/nocol"
{ head -n 2 "$STW_SRCDIR/tests/fixtures/published/measurements.csv"; printf 'Z\377\r\n'; } \
  > "$T/latin/measurements.csv"
expect 1 "published.py: $T/latin/measurements.csv: not UTF-8 text" \
  "a set that is not UTF-8 text: said, exit 1" \
  -- python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$T/latin"
{ head -n 2 "$STW_SRCDIR/tests/fixtures/published/measurements.csv"; printf 'ZZ1,Gemini,Gemini\r\n'; } \
  > "$T/ragged/measurements.csv"
python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$T/ragged" > "$T/ragged.md" 2>&1 &&
  grep -qxF -- "- ZZ1: 3 fields where the header has 51" "$T/ragged.md" &&
  grep -q "^| G01 | Gemini " "$T/ragged.md"
tap_result $? "a row shorter than the header: listed with its count of fields, the others replayed" \
  "$(cat "$T/ragged.md")"
expect 1 "published.py: --rows: no row_id given" "--rows naming nothing: said, exit 1" \
  -- python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" "$STW_SRCDIR/tests/fixtures/published" --rows ,
expect 2 "published.py: --keep needs a value" "--keep without a directory: said, exit 2" \
  -- python3 "$STW_SRCDIR/bench/published.py" "$STW_BUILDDIR" --keep
expect 2 "published.py: '--fast': not an option or argument it takes" "an unknown option: said, exit 2" \
  -- python3 "$STW_SRCDIR/bench/published.py" --fast
tap_done
