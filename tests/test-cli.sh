#!/bin/sh
# test-cli.sh — the stowage command line: exit statuses, messages, outputs.
. "$STW_SRCDIR/tests/tap.sh"
S=$STOWAGE
F=$STW_SRCDIR/tests/fixtures
T=$TAP_TMP

# usage
expect 2 "Usage: stowage COMMAND" "no command is a usage error" -- $S
expect 2 "unknown command 'plan-all'" "unknown command" -- $S plan-all
expect 0 "synth" "help lists the commands" -- $S --help
expect 0 "stowage 0.1.0" "version" -- $S --version
expect 0 "Example: stowage synth" "synth --help shows an example" -- $S synth --help
expect 2 "Unknown option --frobnicate" "unknown option" -- $S synth --frobnicate

# models
expect 0 "124,439,808" "models lists gpt2 with its exact count" -- $S models
expect 0 "8,030,261,248" "models lists llama3-8b with its exact count" -- $S models --family llama
expect 0 '"params":	109482240' "models --json" -- $S models --json --family bert
expect 0 "Mixtral-8x7B-v0.1  -       llama      32    4096     32   8  14336  32000  46,702,792,704  608.94 GiB" "models --hf reads a Hugging Face config.json" -- $S models --hf "$F/hf/Mixtral-8x7B-v0.1/config.json"
expect 0 "experts: 8 per block, 2 per token; 12,879,925,248 parameters active per token" "models --hf counts the active parameters" -- $S models --hf "$F/hf/Mixtral-8x7B-v0.1/config.json"
expect 0 '"active_params":	494032768' "models --hf --json" -- $S models --hf "$F/hf/Qwen2-0.5B/config.json" --json
expect 0 "Nemotron-H-8B-Base-8K  -       llama      52    4096     32   8  21504  131072  8,100,852,736  105.62 GiB" "models --hf reads Nemotron-H's blocks of one part" -- $S models --hf "$F/hf/Nemotron-H-8B-Base-8K/config.json"
expect 0 "experts: 128 per block, 6 per token, and a shared expert 3712 wide (no gate); 3,580,073,408 parameters active per token" "models --hf counts Nemotron 3's active parameters" -- $S models --hf "$F/hf/NVIDIA-Nemotron-3-Nano-30B-A3B/config.json"
expect 0 "global attention in 2 of the 4 blocks (blocks 1, 3): heads of 32, 1 key/value head, their values the keys" "models reads Gemma 4's blocks in stowage's format" -- $S models --hf "$F/models/tiny-gemma4.json"
expect 0 "tiny-gemma4  -       llama       4      64      4   2   32    128     247,272    3.30 MiB" "models --hf reads Gemma 4's experts, shared keys and values and per-layer embeddings" -- $S models --hf "$F/hf/tiny-gemma4/config.json"
# multimodal checkpoints: their towers counted, held, and read by no op of a text step
expect 0 "tiny-gemma4-multimodal  -       llama       2      64      4   2   96    128     213,188    1.24 MiB" "models --hf counts Gemma 4's towers at 2 bytes of model data each" -- $S models --hf "$F/hf/tiny-gemma4-multimodal/config.json"
expect 0 "audio tower: Gemma 4's Conformer, 1 block of 32 (2 heads), its output 48 wide, and its embedder" "models says Gemma 4's audio tower" -- $S models --hf "$F/hf/tiny-gemma4-multimodal/config.json"
expect 0 "towers: 140,224 parameters a text step never reads (held in 16 bits: no gradient, no optimizer state)" "models reads the towers in stowage's format" -- $S models --hf "$F/models/tiny-gemma4-towers.json"
expect 0 '"tower_params":	140224' "models --json counts the towers apart" -- $S models --hf "$F/models/tiny-gemma4-towers.json" --json
expect 0 "vision tower: Pixtral, 24 blocks of 1024 (MLP 4096), 14-pixel patches, and Mistral 3's projector (patches merged 2 x 2)" "models says Mistral 3's vision tower" -- $S models --hf "$F/hf/Mistral-Small-3.1-24B-Instruct-2503/config.json"
expect 0 "llava-1.5-7b-hf  -       llama      32    4096     32  32  11008  32064  7,063,427,072   88.47 GiB" "models --hf reads LLaVA whole, named as its file (not its Vicuna)" -- $S models --hf "$F/hf/llava-1.5-7b-hf/config.json"
expect 0 "vision tower: CLIP, 24 blocks of 1024 (MLP 4096), 336-pixel images in 14-pixel patches, and LLaVA's projector (biased)" "models says LLaVA's vision tower" -- $S models --hf "$F/hf/llava-1.5-7b-hf/config.json"
expect 0 "vision tower: SigLIP, 27 blocks of 1152 (MLP 4304), 896-pixel images in 14-pixel patches, and Gemma 3's projector" "models says Gemma 3's vision tower" -- $S models --hf "$F/hf/gemma-3-4b-it/config.json"
expect 0 "vision tower: Pixtral, 24 blocks of 1024 (MLP 4096), 16-pixel patches, and LLaVA's projector (biased)" "models reads Pixtral-12B's LLaVA file: Pixtral's tower, LLaVA's projector" -- $S models --hf "$F/hf/pixtral-12b/config.json"
expect 0 "vision tower: SigLIP, 27 blocks of 1152 (MLP 4304), 224-pixel images in 14-pixel patches, and PaliGemma's projector (to 2304)" "models says PaliGemma 2's tower and projector" -- $S models --hf "$F/hf/paligemma2-3b-pt-224/config.json"
expect 0 '"vision_projector":	"llava"' "models --json names a projector that is not the tower's own" -- $S models --hf "$F/hf/llava-onevision-qwen2-7b-ov-hf/config.json" --json
expect 0 "Llama-3.2-11B-Vision-Instruct  -       llama      32    4096     32   8  14336  128264  10,670,220,835  109.62 GiB" "models --hf reads Llama 3.2 Vision whole: its 32 self-attention blocks the language model's layers" -- $S models --hf "$F/hf/Llama-3.2-11B-Vision-Instruct/config.json"
expect 0 "vision tower: Llama 3.2 Vision's, 32 blocks and 8 global of 1280 (MLP 5120), 560-pixel tiles (at most 4) in 14-pixel patches, 8 cross-attention blocks in the language model, and its projector (7680 features)" "models says Llama 3.2 Vision's tower and cross-attention blocks" -- $S models --hf "$F/hf/Llama-3.2-11B-Vision-Instruct/config.json"
expect 0 "Llama-3.2-11B-Vision-Instruct (10,670,220,835 parameters), 906 tensors (615 frozen: 2,639,926,819 parameters)" "synth traces the cross-attention blocks frozen with the tower" -- $S synth --model-config "$F/hf/Llama-3.2-11B-Vision-Instruct/config.json" --seq 16 -o "$T/mllama.json"
expect 0 "Qwen2.5-VL-7B-Instruct  -       llama      28    3584     28   4  18944  152064  8,292,166,656  100.56 GiB" "models --hf reads Qwen2.5-VL whole, its language model the file's own members" -- $S models --hf "$F/hf/Qwen2.5-VL-7B-Instruct/config.json"
expect 0 "vision tower: Qwen3-VL's, 27 blocks of 1152 (MLP 4304), 16-pixel patches of 2 frames, and its patch merger (2 x 2 patches to 4096), 3 DeepStack mergers more" "models says Qwen3-VL's vision tower" -- $S models --hf "$F/hf/Qwen3-VL-8B-Instruct/config.json"
expect 0 "Qwen3-VL-8B-Instruct (8,767,123,696 parameters), 750 tensors (351 frozen: 576,388,336 parameters)" "synth traces Qwen3-VL's tower and mergers frozen" -- $S synth --model-config "$F/hf/Qwen3-VL-8B-Instruct/config.json" --seq 16 -o "$T/qwen3-vl.json"
# images through the tower (docs/synth.md, "Images")
expect 0 "910 tensors (782 frozen: 7,064,999,936 parameters), 934 ops; 1 image of 336 x 336 pixels a sequence through the vision tower" "synth --images runs LLaVA's images through CLIP's tower, at the size its processor gives" -- $S synth --model-config "$F/hf/llava-1.5-7b-hf/config.json" --seq 1024 --images 1 --lora 16 -o "$T/llava-images.json"
expect 0 "batch 1 x seq 1024 with 1 image of 336 x 336 pixels a sequence" "inspect says the images" -- $S inspect "$T/llava-images.json"
expect 0 '"images":	1,' "inspect --json says the images" -- $S inspect "$T/llava-images.json" --json
expect 0 "is sound for" "a plan of a step with images is sound" -- sh -c "$S plan '$T/llava-images.json' --gpu 20GiB -o '$T/llava-images-plan.json' > /dev/null && $S check '$T/llava-images-plan.json' '$T/llava-images.json'"
expect 0 "841 tensors (729 frozen: 8,292,166,656 parameters), 885 ops; 2 images of 448 x 448 pixels a sequence" "synth --images --image-size for Qwen2.5-VL's tower" -- $S synth --model-config "$F/hf/Qwen2.5-VL-7B-Instruct/config.json" --seq 1024 --images 2 --image-size 448 --lora 16 -o "$T/qwen-images.json"
expect 0 "attending within windows of 112 pixels but over the whole image in blocks 7, 15, 23, 31" "models says Qwen2.5-VL's windows" -- $S models --hf "$F/hf/Qwen2.5-VL-7B-Instruct/config.json"
expect 0 "Gemma 3's projector (patches pooled 4 x 4)" "models says Gemma 3's pooling" -- $S models --hf "$F/hf/gemma-3-4b-it/config.json"
expect 0 "images (synth --images): 896 x 896 pixels: 4096 tokens in the tower, 256 of features" "models says what an image becomes in Gemma 3" -- $S models --hf "$F/hf/gemma-3-4b-it/config.json"
expect 0 "images (synth --images --image-size PX): of any side a multiple of 28 pixels; 448 x 448 pixels: 1024 tokens in the tower, 256 of features, 896 x 896 pixels: 4096 tokens in the tower, 1024 of features" "models says what images of any size become in Qwen2.5-VL" -- $S models --hf "$F/hf/Qwen2.5-VL-7B-Instruct/config.json"
expect 2 "--images: Qwen2.5-VL-7B-Instruct's vision tower takes images of any size: give their side with --image-size PIXELS" "synth --images needs a side for a tower of any size" -- $S synth --model-config "$F/hf/Qwen2.5-VL-7B-Instruct/config.json" --seq 1024 --images 1 -o "$T/x.json"
expect 2 "an image side of 450 pixels is not a whole number of 28-pixel merged patches (its processor resizes images to such sides)" "synth --image-size not of whole merged patches" -- $S synth --model-config "$F/hf/Qwen2.5-VL-7B-Instruct/config.json" --seq 1024 --images 1 --image-size 450 -o "$T/x.json"
expect 2 "CLIP's tower takes images of 336 x 336 pixels (its processor resizes images, or cuts them into tiles, to that size), not 224" "synth --image-size other than a fixed tower's" -- $S synth --model-config "$F/hf/llava-1.5-7b-hf/config.json" --seq 1024 --images 1 --image-size 224 -o "$T/x.json"
expect 2 "2 images of 336 x 336 pixels are 1152 tokens of features (576 an image), more than a sequence of 1000 holds" "synth --images more than the sequence holds" -- $S synth --model-config "$F/hf/llava-1.5-7b-hf/config.json" --seq 1000 --images 2 -o "$T/x.json"
expect 2 "--image-size goes with --images N" "synth --image-size alone" -- $S synth --model-config "$F/hf/llava-1.5-7b-hf/config.json" --seq 1000 --image-size 336 -o "$T/x.json"
expect 2 "--images: gpt2 has no vision tower to take images" "synth --images on a text model" -- $S synth --model gpt2 --images 1 -o "$T/x.json"
expect 2 "Llama 3.2 Vision's images reach its language model through cross-attention blocks, which stowage does not model with images" "synth --images refuses Llama 3.2 Vision's cross-attention" -- $S synth --model-config "$F/hf/Llama-3.2-11B-Vision-Instruct/config.json" --seq 4096 --images 1 -o "$T/x.json"
expect 0 "729 tensors (385 frozen: 631,975,680 parameters), 1121 ops; 1 image" "synth --vision-trained projector trains Qwen2.5-VL's merger, the tower frozen below it" -- $S synth --model-config "$F/hf/Qwen2.5-VL-7B-Instruct/config.json" --batch 2 --seq 1024 --images 1 --image-size 448 --vision-trained projector -o "$T/qwen-merger.json"
expect 0 "841 tensors (724 frozen: 8,247,592,192 parameters), 894 ops; 1 image" "synth --vision-trained projector with --lora: the adapters and the merger trained" -- $S synth --model-config "$F/hf/Qwen2.5-VL-7B-Instruct/config.json" --batch 2 --seq 1024 --images 1 --image-size 448 --vision-trained projector --lora 16 -o "$T/qwen-merger-lora.json"
expect 0 "729 tensors, 1763 ops; 1 image" "synth --vision-trained all trains the tower too" -- $S synth --model-config "$F/hf/Qwen2.5-VL-7B-Instruct/config.json" --batch 2 --seq 1024 --images 1 --image-size 448 --vision-trained all -o "$T/qwen-all.json"
expect 0 "is sound for" "a plan of images training the tower is sound" -- sh -c "$S plan '$T/qwen-all.json' --gpu 40GiB -o '$T/qwen-all-plan.json' > /dev/null && $S check '$T/qwen-all-plan.json' '$T/qwen-all.json'"
expect 2 "--vision-trained goes with --images N" "synth --vision-trained without images" -- $S synth --model gpt2 --vision-trained all -o "$T/x.json"
expect 2 "--vision-trained: 'tower' is not one of none, projector, all" "synth --vision-trained of no such kind" -- $S synth --model-config "$F/hf/Qwen2.5-VL-7B-Instruct/config.json" --images 1 --image-size 448 --vision-trained tower -o "$T/x.json"
expect 2 "--images: '0' is not valid: expected a whole number from 1 to 4096" "synth --images 0" -- $S synth --model-config "$F/hf/llava-1.5-7b-hf/config.json" --images 0 -o "$T/x.json"
check "no trace written where the images are refused" -- test ! -e "$T/x.json"
expect 0 "tiny-gemma4-multimodal (213,188 parameters), 83 tensors (46 frozen: 140,224 parameters)" "synth traces the towers frozen" -- $S synth --model-config "$F/hf/tiny-gemma4-multimodal/config.json" --seq 16 -o "$T/towers.json"
expect 0 "is sound for" "a plan of a trace with towers is sound" -- sh -c "$S plan '$T/towers.json' --gpu 1MiB -o '$T/towers-plan.json' > /dev/null && $S check '$T/towers-plan.json' '$T/towers.json'"
expect 0 "tiny-mimo-v2-flash  -       llama       4      64      8   4   32    128     166,224    2.22 MiB" "models --hf reads MiMo-V2-Flash's sliding and full blocks" -- $S models --hf "$F/hf/tiny-mimo-v2-flash/config.json"
expect 0 "tiny-lfm3  -       llama       6      64      4   2   96    128     211,840    2.83 MiB" "models --hf reads LFM3's blocks" -- $S models --hf "$F/hf/tiny-lfm3/config.json"
expect 0 "attention: 8 heads of 12, 4 key/value heads, values 8 wide, a sink logit per head outside global blocks;" "models says MiMo-V2-Flash's narrower values and where its sinks are" -- $S models --hf "$F/hf/tiny-mimo-v2-flash/config.json"
expect 0 "and a shared expert 96 wide (no gate), the block's MLP beside them, each branch normed apart; 198,120 parameters active per token" "models says Gemma 4's experts beside the MLP" -- $S models --hf "$F/hf/tiny-gemma4/config.json"
expect 0 "tiny-nemotron-h  -       llama       6      64      4   2   32    256     149,040    1.99 MiB" "models reads blocks of one part in stowage's format" -- $S models --hf "$F/models/tiny-nemotron-h.json"
expect 1 "bad-type.json: \$.model_type: \"t5\" is not one of" "models --hf with an unknown model type" -- $S models --hf "$F/hf/bad-type.json"
expect 2 "models: give --hf or --family, not both" "models --hf with --family" -- $S models --hf "$F/hf/gpt2/config.json" --family gpt2
expect 0 "Mistral-7B-v0.1 (7,241,732,096 parameters), 291 tensors" "synth --model-config" -- $S synth --model-config "$F/hf/Mistral-7B-v0.1/config.json" --seq 128 -o "$T/mistral.json"
expect 2 "synth: give --model or --model-config, not both" "synth with both models" -- $S synth --model gpt2 --model-config "$F/hf/gpt2/config.json" -o "$T/x.json"
expect 0 "stowage" "whatif --model-config" -- $S whatif --model-config "$F/hf/pythia-70m/config.json" --batch 2 --seq 256 --gpu 1GiB
expect 2 "--family: 'rnn' is not one of gpt2, gpt3, patrickstar, llama, mistral, qwen2, neox, bert" "unknown family" -- $S models --family rnn
# Qwen3: each head's queries and keys normed; qk_norm only where the blocks are llama's or neox's
expect 0 "attention: 32 heads of 128, 8 key/value heads, queries and keys RMS-normed per head; biases: none; LM head its own; context 40960" "models reads Qwen3" -- $S models --hf "$F/hf/Qwen3-8B/config.json"
printf '{"format": "stowage-model", "version": 1, "name": "x", "arch": "gpt", "layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "qk_norm": true}' > "$T/qk-gpt.json"
expect 1 "qk-gpt.json: \$: invalid model: qk_norm is modelled for llama and neox blocks only" "qk_norm on a GPT: refused" -- $S models --hf "$T/qk-gpt.json"
printf '{"format": "stowage-model", "version": 1, "name": "x", "arch": "llama", "layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "qk_norm": "yes"}' > "$T/qk-text.json"
expect 1 "qk-text.json: \$.qk_norm: expected true or false, found a string" "qk_norm not a boolean: refused" -- $S models --hf "$T/qk-text.json"

# hardware
expect 0 "V100-32GB-PCIe3" "hardware lists the shipped profiles" -- $S hardware
expect 0 "T4-16GB-PCIe3              Tesla T4                        15.00 GiB  512.00 MiB       320       fp16 65.0" \
  "hardware gives a GPU without bf16 its fp16 rate, named" -- $S hardware
expect 0 "RTX4090-24GB-PCIe4         NVIDIA GeForce RTX 4090         23.99 GiB  512.00 MiB" "hardware lists what a process holds of each GPU outside its tensors" -- $S hardware
expect 0 "my-gpu" "hardware checks a profile file" -- $S hardware "$F/hw/my-gpu.json"
expect 1 "bad-curve-order.json: \$.pcie.pinned[2].bytes" "a bad profile file fails with its path" -- $S hardware "$F/hw/bad-curve-order.json"
expect 2 "unknown hardware profile 'TPU'" "an unknown profile name is a usage error" -- $S hardware TPU
expect 0 "nvme-gen4       1 x nvme    1.82 TiB       6.50        5.00           32" "hardware lists the storage presets" -- $S hardware
expect 0 "nvme-gen3       1 x nvme  931.32 GiB       3.05        2.39           32" "hardware shows a storage preset by name" -- $S hardware nvme-gen3

# synth: bad input
expect 2 "--model or --model-config is required" "synth without --model" -- $S synth -o "$T/x.json"
expect 2 "--output FILE is required" "synth without --output" -- $S synth --model gpt2
expect 2 "unknown model 'gpt5': expected a model config file (.json) or one of: gpt2, gpt2-medium" \
  "unknown model lists the zoo" -- $S synth --model gpt5 -o "$T/x.json"
expect 2 "--batch: '0' is not valid: expected a whole number from 1 to 65536" "batch 0" -- $S synth --model gpt2 --batch 0 -o "$T/x.json"
expect 2 "--batch: 'eight' is not valid" "batch not a number" -- $S synth --model gpt2 --batch eight -o "$T/x.json"
expect 2 "--seq: '2048' is not valid: expected a whole number from 1 to 1024" "seq beyond the model" -- $S synth --model gpt2 --seq 2048 -o "$T/x.json"
expect 2 "--dtype: 'fp8' is not one of fp32, fp16, bf16" "unknown dtype" -- $S synth --model gpt2 --dtype fp8 -o "$T/x.json"
expect 2 "--attention: 'sparse' is not one of naive, flash" "unknown attention" -- $S synth --model gpt2 --attention sparse -o "$T/x.json"
expect 2 "--memory: '40X' is not a size: expected a number of bytes" "bad size lists the units" -- $S synth --model gpt2 --memory 40X -o "$T/x.json"
expect 2 "--memory: '-4GiB' is not a size: sizes cannot be negative" "negative size" -- $S synth --model gpt2 --memory -4GiB -o "$T/x.json"
expect 2 "V100-32GB-PCIe3 has no bf16 compute" "dtype the hardware lacks" -- $S synth --model gpt2 --hw V100-32GB-PCIe3 --dtype bf16 -o "$T/x.json"
expect 0 "synth: V100-32GB-PCIe3 has no bf16: the model computes in fp16 (--dtype to choose)" \
  "no --dtype on a GPU without bf16: fp16, said" -- $S synth --model gpt2 --hw V100-32GB-PCIe3 -o "$T/v100-default.json"
expect 0 "batch 1 x seq 1024, fp16," "and the trace computes in fp16" -- $S inspect "$T/v100-default.json"
expect 1 "bad-heads.json: \$: invalid model: heads must divide hidden" "a bad model file fails with its path" -- $S synth --model "$F/models/bad-heads.json" -o "$T/x.json"
expect 2 "synth: --freeze: \"head*\" matches none of the 148 tensors (names such as ln_f.bias; '*' matches any text)" "freeze matching nothing" -- $S synth --model gpt2 --seq 128 --freeze 'h.0.*,head*' -o "$T/x.json"
test ! -e "$T/x.json"; tap_result $? "failed synths wrote nothing"

# frozen tensors (a LoRA-like base): no gradient, no optimizer op, chunks without optimizer state
expect 0 "wrote $T/frozen.json: gpt2 (124,439,808 parameters), 148 tensors (48 frozen: 28,348,416 parameters), 300 ops" \
  "synth --freeze names what it froze" -- $S synth --model gpt2 --batch 2 --seq 128 --freeze 'h.*.attn.*' -o "$T/frozen.json"
expect 0 "optimizer    0 chunks CPU Adam, 0 GPU Adam in margin space, 3 GPU Adam with resident state; 1 frozen (no optimizer state)" \
  "plan says which chunks are frozen" -- $S plan "$T/frozen.json" --gpu 2GiB -o "$T/frozen-plan.json"
expect 0 "is sound for" "a frozen plan checks" -- $S check "$T/frozen-plan.json" "$T/frozen.json"
grep -q '"frozen":true' "$T/frozen-plan.json"; tap_result $? "the plan file marks the frozen chunk"

# LoRA: adapters beside the projections, the base frozen; the trained chunk sized to them
expect 0 "wrote $T/lora.json: gpt2 (124,734,720 parameters), 172 tensors (148 frozen: 124,439,808 parameters), 224 ops" \
  "synth --lora adds adapters and freezes the base" -- $S synth --model gpt2 --batch 2 --seq 128 --lora 8 -o "$T/lora.json"
grep -q '"name":"h.0.attn.c_attn.lora_A.weight","shape":\[8,768\]' "$T/lora.json" &&
  grep -q '"name":"h.0.attn.c_attn.lora_B.weight","shape":\[2304,8\]' "$T/lora.json"
tap_result $? "the adapters have peft's shapes, A [rank, in] and B [out, rank]"
expect 0 "master        1.12 MiB      294,912              4" "inspect shows the bytes per trained parameter" -- $S inspect "$T/lora.json"
expect 0 "optimizer    0 chunks CPU Adam, 0 GPU Adam in margin space, 1 GPU Adam with resident state; 4 frozen (no optimizer state)" \
  "plan a LoRA trace" -- $S plan "$T/lora.json" --gpu 2GiB -o "$T/lora-plan.json"
expect 0 "lists        param 2 B x 124,734,720; master 4 B, momentum 4 B, variance 4 B x 294,912 (the trained): 14 B a trained parameter, 2 B a frozen one" \
  "plan shows the bytes per parameter of each list" -- $S plan "$T/lora.json" --gpu 2GiB -o "$T/lora-plan.json"
grep -q '"capacity_elems":294912,' "$T/lora-plan.json"; tap_result $? "the adapters' chunk holds their 294,912 elements, not the chunk size"
expect 0 "is sound for" "the LoRA plan checks" -- $S check "$T/lora-plan.json" "$T/lora.json"
expect 2 "synth: --lora-targets: gpt2 has no gate projection" "a LoRA target the model lacks" -- $S synth --model gpt2 --lora 8 --lora-targets gate -o "$T/x.json"
expect 2 "synth: --lora-targets: 'qq' is not a target: q, k, v, o, gate, up, down" "an unknown LoRA target" -- $S synth --model gpt2 --lora 8 --lora-targets q,qq -o "$T/x.json"
expect 2 "synth: --lora: rank 769 is out of range for h.0.attn.c_attn.weight (768 in, 2304 out): 1 to 768" "a LoRA rank above the projection" -- $S synth --model gpt2 --lora 769 -o "$T/x.json"
expect 2 "stowage: --lora-targets: the adapters' rank is --lora RANK's, which is not given" "LoRA targets without a rank" -- $S synth --model gpt2 --lora-targets q -o "$T/x.json"
expect 2 "synth: --lora-targets: up is an MLP projection, and mixtral-8x7b's MLP is a mixture of experts" "LoRA on experts" -- $S synth --model mixtral-8x7b --lora 8 --lora-targets up -o "$T/x.json"
expect 2 "capacity: --lora-targets: gpt-h4096-l1 has no gate projection" "capacity with a LoRA target the family lacks" -- $S capacity --family gpt --lora 8 --lora-targets gate
expect 0 "stowage  llama3.2-3b        28  3,212,749,824" "capacity: with 64 GiB of host memory and fp32 moments the largest Llama a 4090 trains is Llama 3.2 3B" -- \
  $S capacity --family llama --hw RTX4090-24GB-PCIe4 --cpu 64GiB --policy stowage
expect 0 "stowage  llama2-7b          32  6,738,415,616" "capacity --optimizer-state bf16: Llama-2-7B fits with bf16 moments" -- \
  $S capacity --family llama --hw RTX4090-24GB-PCIe4 --cpu 64GiB --policy stowage --optimizer-state bf16
# --pinned: beyond it the copies run at pageable speed, and the plan says how much
$S synth --model llama3-8b --batch 1 --seq 2048 --checkpointing --attention flash --hw RTX4090-24GB-PCIe4 -o "$T/l8.json" > /dev/null
expect 0 "  pinned       15.66 GiB of it the copies touch, pinned (page-locked): the copy times assume it" \
  "plan says how much host memory the copies need pinned" -- $S plan "$T/l8.json" --gpu 23GiB --cpu 96GiB -o "$T/l8p.json"
expect 0 "  pinned       15.66 GiB of it the copies touch, 8.00 GiB pinned (--pinned): 7.83 GiB of it copied at pageable speed" \
  "plan --pinned 8GiB: the rest at pageable speed" -- $S plan "$T/l8.json" --gpu 23GiB --cpu 96GiB --pinned 8GiB -o "$T/l8q.json"
grep -q '"pinned_bytes":8589934592' "$T/l8q.json" && $S check "$T/l8q.json" "$T/l8.json" > /dev/null &&
  full=$(sed -n 's/.*"cost_ns":\([0-9]*\).*/\1/p' "$T/l8p.json") &&
  part=$(sed -n 's/.*"cost_ns":\([0-9]*\).*/\1/p' "$T/l8q.json") && [ "$part" -gt "$full" ]
tap_result $? "the --pinned plan keeps its budget, checks, and is slower (pageable copies)" "$full $part"
# minmem --host: how much RAM Llama-3-8B needs on a 4090 (within 10% of host memory to spare),
# and with two Gen4 drives taking what the host cannot hold (within 100%)
expect 0 "at 23.00 GiB of GPU memory: 105.73 GiB of host memory is enough for 6.384 s per iteration, 2.5% slower than with host memory to spare (6.228 s); the plan holds 105.72 GiB of it and moves 216.25 GiB per iteration" \
  "minmem --host: the host memory a plan needs at a GPU budget" -- $S minmem "$T/l8.json" --host --gpu 23GiB
expect 0 "at 23.00 GiB of GPU memory: 88.12 GiB of host memory is enough for 11.619 s per iteration, 86.5% slower than with host memory to spare (6.228 s); the plan holds 88.11 GiB of it, 17.61 GiB on the storage tier and moves 42.08 GiB per iteration" \
  "minmem --host with a storage tier: less host memory, the rest on the drives" -- $S minmem "$T/l8.json" --host --gpu 23GiB --nvme 1TB --storage nvme-gen4 --nvme-devices 2 --slowdown 100%
expect 0 '"host_budget_bytes":	113525401600' "minmem --host --json: the budget found" -- $S minmem "$T/l8.json" --host --gpu 23GiB --json
expect 2 "minmem: --gpu goes with --host (without it minmem searches the GPU budget)" "minmem --gpu without --host: refused, said" -- $S minmem "$T/l8.json" --gpu 23GiB
expect 2 "minmem: --host searches the host budget: give the GPU's with --gpu, not --cpu" "minmem --host --cpu: refused, said" -- $S minmem "$T/l8.json" --host --cpu 64GiB
expect 1 "minmem --host: policy stowage has no plan at 1.00 GiB of GPU memory even with host memory to spare:" "minmem --host at a GPU budget nothing fits: said, exit 1" -- $S minmem "$T/l8.json" --host --gpu 1GiB
expect 0 "LoRA rank 16 on q,v, the base frozen" "capacity --lora names the adapters" -- $S capacity --family llama --hw RTX4090-24GB-PCIe4 --cpu 64GiB --batch 1 --seq 1024 --policy zero-offload --lora 16
$S capacity --family gpt2 --hw T4-16GB-PCIe3 --cpu 16GiB --dtype fp16 --policy stowage --lora 8 \
  > "$T/cap-t4.txt" 2>/dev/null
sed -n 2,3p "$T/cap-t4.txt" > "$T/cap-t4-said.txt"
printf '%s\n' "T4-16GB-PCIe3: shipped profile (its sources: docs/hardware.md)" \
  "host CPU 2x Intel Xeon (2 sockets; the host of DeepSpeed's CPU Adam figure): CPU Adam 1.00 G elements/s a rank, its memory 200 GB/s read and written, for all of a node's ranks" |
  cmp -s - "$T/cap-t4-said.txt"
tap_result $? "capacity names the hardware profile it assumes, where it came from, and its host's CPU Adam" \
  "$(cat "$T/cap-t4.txt")"
expect 0 "    2  1.00 GiB  stowage  38,597,632  0 B  0 B" "whatif --model --lora" -- $S whatif --model gpt2 --batch 2 --seq 128 --lora 8 --gpu 1GiB --policy stowage
expect 0 "model gpt2: gpt, 12 layers, hidden 768, 12 heads; seq 128, bf16, naive attention, eager kernels; 124,439,808 parameters frozen in 148 tensors" \
  "whatif --model --lora says the base it froze" -- $S whatif --model gpt2 --batch 2 --seq 128 --lora 8 --gpu 1GiB --policy stowage
expect 1 "2 GPUs: the trace's gradients are the framework's own tensors" "a trace of PyTorch's gradients plans for one GPU" -- $S plan "$F/traces/accumulate.json" --gpu 1GiB --gpus 2 -o "$T/x.json"

# synth: output is never half-written
echo "precious" > "$T/keep.json"
expect 2 "" "a failing synth ..." -- $S synth --model gpt2 --batch 0 -o "$T/keep.json"
grep -q precious "$T/keep.json"; tap_result $? "... leaves an existing output untouched"
expect 1 "cannot write" "an unwritable output fails" -- $S synth --model gpt2 -o "$T/no/such/dir/x.json"

# synth and inspect: the real thing
expect 0 "wrote $T/g.json: gpt2 (124,439,808 parameters), 148 tensors, 348 ops" "synth gpt2" -- \
  $S synth --model gpt2 --batch 8 --seq 1024 -o "$T/g.json"
expect 0 "parameters  124,439,808 in 148 tensors" "inspect counts parameters" -- $S inspect "$T/g.json"
expect 0 "peak non-model memory  12.80 GiB at op 100 loss.bwd (bwd)" "inspect finds the peak" -- $S inspect "$T/g.json"
expect 0 "total         1.62 GiB  124,439,808             14" "inspect sums model data" -- $S inspect "$T/g.json"
expect 0 '"total":	1742157312' "inspect --json" -- $S inspect --json "$T/g.json"
expect 0 "tiny-gpt" "synth from a model config file" -- $S synth --model "$F/models/tiny-gpt.json" --seq 64 -o "$T/tiny.json"
expect 0 '"format": "stowage-trace"' "synth to stdout" -- $S synth --model gpt2 --seq 16 -o -
expect 0 "80.00 GiB" "the profile's memory is recorded" -- $S inspect "$T/g.json"
$S synth --model gpt2 --seq 16 --memory 40GiB -o "$T/m.json" 2>/dev/null
expect 0 "A100-80GB-PCIe4, 40.00 GiB" "--memory overrides it" -- $S inspect "$T/m.json"

# inspect: bad input
expect 1 "$T/none.json: cannot open" "inspect a missing file" -- $S inspect "$T/none.json"
expect 1 "bad-unknown-tensor.json: \$.ops[1].params[1]: tensor id 7 does not exist" "inspect an inconsistent trace" -- $S inspect "$F/traces/bad-unknown-tensor.json"
expect 1 "bad-truncated.json: not valid JSON" "inspect a truncated trace" -- $S inspect "$F/traces/bad-truncated.json"
expect 2 "expected one trace file" "inspect without a file" -- $S inspect
expect 2 "--top: '-1' is not valid" "inspect --top -1" -- $S inspect --top -1 "$T/g.json"

# plan and check
TR=$STW_SRCDIR/traces/gpt2-b8-s1024.json
expect 0 "activations  1 of 12 blocks recomputed in backward (h0), the others kept" "plan gpt2 at 9 GiB (its activations decided: auto, the default)" -- \
  $S plan "$TR" --gpu 9GiB -o "$T/p.json"
grep -q '"recompute":\[0\]' "$T/p.json" && grep -q '"h2d_bytes":0,"d2h_bytes":0,' "$T/p.json"
tap_result $? "the plan recomputes h0, and so steps its state on the GPU and moves nothing"
expect 0 "moves        294.48 MiB H2D + 220.86 MiB D2H per iteration; lower bound 368.10 MiB" "plan gpt2 at 9 GiB keeping every block" -- \
  $S plan "$TR" --gpu 9GiB --activations keep -o "$T/pk.json"
expect 0 "is sound for $TR: 356 ops" "the plan checks (its ops with h0's recomputation)" -- $S check "$T/p.json" "$TR"
expect 0 "policy patrickstar" "plan with a baseline policy" -- $S plan "$TR" --gpu 9GiB --policy patrickstar -o "$T/ps.json"
expect 0 "is sound" "the baseline's plan checks" -- $S check "$T/ps.json" "$TR"
expect 0 "chunk size 40,000,256 elements" "a fixed chunk size" -- $S plan "$TR" --gpu 9GiB --chunk-size 40000256 -o "$T/pf.json"
expect 1 "chunk size 1000 elements is below the largest tensor (wte, 38597376 elements)" "a chunk size below the largest tensor" -- \
  $S plan "$TR" --gpu 9GiB --chunk-size 1000 -o "$T/bad.json"
expect 0 "chunk size 1,000,000 elements" "oversized tensors allowed" -- $S plan "$TR" --gpu 9GiB --chunk-size 1000000 --oversized -o "$T/po.json"
expect 0 "is sound" "the oversized plan checks" -- $S check "$T/po.json" "$TR"
expect 1 "no plan fits a GPU budget of 7.00 GiB: at op 99 (loss, fwd)" "a budget below the activations kept" -- $S plan "$TR" --gpu 7GiB --activations keep -o "$T/bad.json"
expect 1 "no plan fits a GPU budget of 3.00 GiB: at op 99 (loss, fwd) the non-model memory alone, with the reserve, needs 3.23 GiB, 237.28 MiB short, before any chunk, every block recomputed. The smallest budget any plan can use is above 3.23 GiB; reduce the batch, sequence length or activation memory (--attention flash)" "a budget below the activations with every block recomputed" -- $S plan "$TR" --gpu 3GiB -o "$T/bad.json"
expect 1 "cannot fit the host budget of 1.00 GiB: its plans that fit the GPU need at least 3.45 GiB of host memory (chunks, and 2.00 GiB per rank for the process)" "a CPU budget too small" -- $S plan "$TR" --gpu 8GiB --cpu 1GiB --activations keep -o "$T/bad.json"
test ! -e "$T/bad.json"; tap_result $? "failed plans wrote nothing"
expect 2 "--gpu SIZE is required" "plan without a budget" -- $S plan "$TR" -o "$T/bad.json"
expect 2 "--gpu: '16 GB of RAM' is not a size" "a bad budget" -- $S plan "$TR" --gpu "16 GB of RAM" -o "$T/bad.json"
expect 2 "--gpu: the budget must be positive" "a zero budget" -- $S plan "$TR" --gpu 0 -o "$T/bad.json"
expect 2 "--policy: 'fastest' is not one of stowage, patrickstar" "an unknown policy" -- $S plan "$TR" --gpu 9GiB --policy fastest -o "$T/bad.json"
expect 2 "--objective: 'speed' is not one of time, bytes" "an unknown objective" -- $S plan "$TR" --gpu 9GiB --objective speed -o "$T/bad.json"
expect 2 "--chunk-size: '0' is not valid" "a zero chunk size" -- $S plan "$TR" --gpu 9GiB --chunk-size 0 -o "$T/bad.json"
expect 2 "--gemini-fraction: '1.5' is not a number from 0 to 1" "a bad fraction" -- $S plan "$TR" --gpu 9GiB --policy gemini-static --gemini-fraction 1.5 -o "$T/bad.json"
# PatrickStar's margin at 12 GiB: 3 of 4 chunks' state in it; half the margin, 1; none (Gemini's
# default gpu_margin_mem_ratio), CPU Adam for all four
expect 0 "optimizer    1 chunks CPU Adam, 0 GPU Adam in margin space, 3 GPU Adam with resident state" "patrickstar's optimizer state in all its margin" -- $S plan "$TR" --gpu 12GiB --policy patrickstar -o "$T/x.json"
expect 0 "optimizer    3 chunks CPU Adam, 0 GPU Adam in margin space, 1 GPU Adam with resident state" "--margin 0.5: half the margin" -- $S plan "$TR" --gpu 12GiB --policy patrickstar --margin 0.5 -o "$T/x.json"
expect 0 "optimizer    4 chunks CPU Adam, 0 GPU Adam in margin space, 0 GPU Adam with resident state" "--margin 0: CPU Adam for every chunk" -- $S plan "$TR" --gpu 12GiB --policy patrickstar --margin 0 -o "$T/x.json"
expect 2 "--margin: '1.5' is not a number from 0 to 1" "a margin share above 1" -- $S plan "$TR" --gpu 12GiB --policy patrickstar --margin 1.5 -o "$T/bad.json"
expect 2 "plan: --margin goes with --policy patrickstar" "a margin share with another policy" -- $S plan "$TR" --gpu 12GiB --policy gemini-static --margin 0 -o "$T/bad.json"
$S synth --model gpt2 --checkpointing -o "$T/ck.json" > /dev/null
out=$($S plan "$T/ck.json" --gpu 9GiB --policy patrickstar -o "$T/x.json" 2>&1)
echo "$out" | grep -q "policy patrickstar" && ! echo "$out" | grep -q "activations"
tap_result $? "a baseline policy on a checkpointed trace says nothing of --activations, which it does not take" "$out"
expect 1 "was made for the trace with digest a16935d60796ae06" "check against another trace" -- \
  $S check "$T/p.json" "$STW_SRCDIR/traces/bert-base-b32-s512.json"
sed 's/"gpu_bytes":[0-9]*/"gpu_bytes":8589934592/' "$T/p.json" > "$T/small.json"
expect 1 "exceeds the budget of 8.00 GiB by" "check a plan over its budget" -- $S check "$T/small.json" "$TR"
sed '/^    {"chunk":"param:/d' "$T/p.json" > "$T/nostart.json"
expect 1 "moment 0 (op embed, fwd): chunk param:0 is needed but not on the GPU" "check a plan whose start state lacks a chunk" -- \
  $S check "$T/nostart.json" "$TR"
head -c 3000 "$T/p.json" > "$T/cut.json"
expect 1 "cut.json: not valid JSON" "check a truncated plan" -- $S check "$T/cut.json" "$TR"
expect 2 "expected a plan and a trace" "check with one file" -- $S check "$T/p.json"

# simulate, compare, whatif, minmem, capacity, probe
expect 0 "GPU memory  peak 8.92 GiB of 9.00 GiB" "simulate a plan" -- $S simulate "$T/p.json" "$TR" --chrome-trace "$T/ct.json" --svg "$T/t.svg"
grep -q '"thread_name"' "$T/ct.json"; tap_result $? "the Chrome trace names its tracks"
grep -q '</svg>' "$T/t.svg"; tap_result $? "the SVG is complete"
expect 0 '"iteration_ns":' "simulate --json" -- $S simulate "$T/p.json" "$TR" --json
expect 0 "ms per iteration" "simulate on another profile" -- $S simulate "$T/p.json" "$TR" --hw H100-80GB-PCIe5
expect 1 "exceeds the budget of 8.00 GiB" "simulate refuses an unsound plan" -- $S simulate "$T/small.json" "$TR"
expect 2 "unknown hardware profile 'TPU'" "simulate on an unknown profile" -- $S simulate "$T/p.json" "$TR" --hw TPU
expect 0 "zero-infinity" "compare lists every policy" -- $S compare "$TR" --gpu 9GiB
expect 0 "no (1)" "compare says which do not fit" -- $S compare "$TR" --gpu 8GiB
expect 0 '"unlimited_iteration_ns":	59380521' "compare --json" -- $S compare "$TR" --gpu 9GiB --json
expect 2 "compare: --gpu SIZE is required" "compare without a budget" -- $S compare "$TR"
expect 0 "on 4 x A100-80GB-PCIe4 with 9.00 GiB of GPU memory each" "compare on 4 GPUs" -- $S compare "$TR" --gpu 9GiB --gpus 4
# the DDP baseline: every GPU the whole model, the gradients' copy in its buckets
expect 0 "ddp: every GPU holds the whole model, its gradients and its optimizer state: 9.45 GiB at the peak (237.35 MiB of it the gradients' copy in DDP's buckets), where 9.00 GiB is usable" "compare's DDP baseline says why it does not fit" -- $S compare "$TR" --gpu 9GiB --gpus 4
expect 0 '"bucket_bytes":	248879616' "and its buckets in JSON: every bf16 gradient once" -- $S compare "$TR" --gpu 9GiB --gpus 4 --json
expect 0 "the gradients all-reduced in 25 MiB buckets as backward makes them, 15.35 ms, 6.20 ms of it after backward's last op" "compare's DDP baseline where it fits" -- $S compare "$TR" --gpu 12GiB --gpus 4
out=$($S compare "$TR" --gpu 12GiB --gpus 4 | grep '^ddp ')
echo "$out" | grep -q '^ddp  *-  *0 B  *0 B  *356.03 MiB  *65.58 ms .* yes  *-$'
tap_result $? "compare's DDP row: nothing moved, every gradient all-reduced, it fits" "$out"
expect 2 "--gpus: 'many' is not valid" "plan with a bad --gpus" -- $S plan "$TR" --gpu 9GiB --gpus many -o "$T/x.json"
expect 0 "" "plan for 4 GPUs" -- $S plan "$TR" --gpu 8GiB --gpus 4 -o "$T/p4.json"
grep -q '"reduce_scatter":\["group:0"\]' "$T/p4.json"; tap_result $? "the 4-GPU plan reduce-scatters its group"
expect 0 "is sound for" "check a 4-GPU plan" -- $S check "$T/p4.json" "$TR"
expect 0 "collectives" "simulate a 4-GPU plan shows the collectives" -- $S simulate "$T/p4.json" "$TR" --chrome-trace "$T/ct4.json"
grep -q '"collectives (interconnect)"' "$T/ct4.json"; tap_result $? "the Chrome trace has a collectives track"
sed 's/"reduce_scatter":\["group:0"\]/"gather":["group:0"]/' "$T/p4.json" > "$T/p4bad.json"
expect 1 "group:0 is never reduce-scattered" "check a 4-GPU plan without its reduce-scatter" -- $S check "$T/p4bad.json" "$TR"
expect 0 "batch,gpu_bytes,policy" "whatif --csv -" -- $S whatif "$TR" --gpu 8GiB..10GiB:1GiB --policy stowage,lru --csv -
lines=$($S whatif "$TR" --gpu 8GiB..10GiB:1GiB --policy stowage,lru --csv - | wc -l)
[ "$lines" = 7 ]; tap_result $? "whatif: 3 budgets x 2 policies (got $((lines - 1)) rows)"
expect 0 "yes" "whatif from a model" -- $S whatif --model gpt2 --batch 2,4 --seq 512 --gpu 4GiB --policy stowage
expect 0 "model gpt2: gpt, 12 layers, hidden 768, 12 heads; seq 512, fp16, naive attention, eager kernels" \
  "whatif --model says what it synthesized, the dtype the GPU has among the defaults" -- \
  $S whatif --model gpt2 --batch 2,4 --seq 512 --gpu 4GiB --policy stowage --hw V100-32GB-PCIe3
$S whatif --model gpt2 --batch 2 --seq 512 --gpu 1GiB --policy stowage --optimizer-state fp32,bf16 --csv - |
  cut -d, -f3,13,14 > "$T/states.csv"
printf 'policy,host_bytes,optimizer_state\nstowage,3768584192,fp32\nstowage,3073826816,bf16\n' | cmp -s - "$T/states.csv"
tap_result $? "whatif --optimizer-state fp32,bf16: bf16 moments hold 4 bytes less of host memory a chunk element" \
  "$(cat "$T/states.csv")"
expect 0 "" "whatif --svg" -- $S whatif "$TR" --gpu 8GiB..12GiB:2GiB --svg "$T/w.svg" --json
grep -q 'GPU memory budget (GiB)' "$T/w.svg"; tap_result $? "the sweep plot has its axes"
expect 2 "the range is inverted" "whatif with an inverted range" -- $S whatif "$TR" --gpu 16GiB..8GiB:1GiB
expect 2 "the step is zero" "whatif with a zero step" -- $S whatif "$TR" --gpu 8GiB..16GiB:0
# a trace of batch 2 says so in every row; a trace whose ops take no time (an execution trace
# imported alone, say) has no slowdown to give, and says so rather than 0.00x
$S synth --model gpt2 --batch 2 --seq 256 -o "$T/b2.json" > /dev/null
expect 0 "2,2147483648,stowage,yes," "whatif --csv: the trace's batch" -- $S whatif "$T/b2.json" --gpu 2GiB --policy stowage --csv -
sed -E 's/"duration_ns":[0-9]+/"duration_ns":0/g' "$T/b2.json" > "$T/untimed.json"
expect 0 "(unlimited memory: 0 ns per iteration; the trace's ops take no time, so no slowdown is a ratio)" "compare on a trace of no time" -- $S compare "$T/untimed.json" --gpu 1GiB
$S compare "$T/untimed.json" --gpu 1GiB | grep '^stowage ' > "$T/untimed.row"
expect 0 "-  yes" "its slowdowns are '-'" -- cat "$T/untimed.row"
expect 0 '"slowdown":	null' "and null in JSON" -- $S compare "$T/untimed.json" --gpu 1GiB --json
expect 0 "0.0% slower than unlimited memory (0 ns); it moves 0 B per iteration" "minmem on it: the budget that moves nothing" -- $S minmem "$T/untimed.json"
expect 2 "--gpu: the budget must be positive" "train --gpu 0 is a usage error, as plan's" -- $S train --gpu 0 --steps 1
expect 2 "give either one trace file or --model" "whatif with neither" -- $S whatif --gpu 8GiB
expect 2 "--policy: 'fast' is not one of" "whatif with an unknown policy" -- $S whatif "$TR" --gpu 8GiB --policy fast
expect 2 "--batch, --seq, --dtype, --checkpointing, --checkpoint-every, --amp, --attention, --kernels, --loss, --micro-steps, --gradients, --collectives, --optimizer-impl, --reduce-bucket-size, --sub-group-size, --init, --images, --image-size and --vision-trained go with --model" "whatif --batch with a trace" -- $S whatif "$TR" --gpu 8GiB --batch 2
expect 2 "--kernels, --loss, --micro-steps, --gradients, --collectives, --optimizer-impl, --reduce-bucket-size, --sub-group-size, --init, --images, --image-size and --vision-trained go with" "whatif --loss with a trace" -- $S whatif "$TR" --gpu 8GiB --loss chunked
expect 2 "--images, --image-size and --vision-trained go with" "whatif --images with a trace" -- $S whatif "$TR" --gpu 8GiB --images 1
expect 0 "of GPU memory is enough for" "minmem" -- $S minmem "$TR" --slowdown 50%
expect 2 "--slowdown: 'lots' is not a percentage" "minmem with a bad slowdown" -- $S minmem "$TR" --slowdown lots
# the default policy uses the host budget it is given: where only a placement that keeps more on
# the GPU fits the host, it finds one (and beats gemini's)
expect 0 "    1  23.00 GiB  stowage        525,336,576  26.42 GiB  15.66 GiB    8.903 s       230  6.7%     5.09x  yes" "stowage fits a host budget that binds" -- $S whatif --model llama3-8b --batch 1 --seq 2048 --checkpointing --attention flash --hw RTX4090-24GB-PCIe4 --gpu 23GiB --cpu 96GiB --policy stowage,gemini-static
# the same with fused kernels: the compute is faster, the moves the same
expect 0 "    1  23.00 GiB  stowage        525,336,576  26.42 GiB  15.66 GiB    8.807 s       233  6.8%     5.49x  yes" "whatif --kernels fused" -- $S whatif --model llama3-8b --batch 1 --seq 2048 --checkpointing --attention flash --hw RTX4090-24GB-PCIe4 --gpu 23GiB --cpu 96GiB --policy stowage,gemini-static --kernels fused
expect 2 "--kernels: 'fast' is not one of fused, eager" "synth with unknown kernels" -- $S synth --model gpt2 --kernels fast -o "$T/never.json"
expect 2 "--kernels: 'fast' is not one of fused, eager" "whatif with unknown kernels" -- $S whatif --model gpt2 --gpu 8GiB --kernels fast
# the loss over pieces of tokens: Llama-3-8B at 8k tokens keeps no logits (10.08 to 3.97 GiB of
# activations at the peak)
$S synth --model llama3-8b --seq 8192 --attention flash --checkpointing --loss chunked -o "$T/l3c.json" > /dev/null 2>&1
expect 0 "llama, 32 layers, hidden 4096, 32 heads (8 key/value); batch 1 x seq 8192, bf16, checkpointing, flash attention, eager kernels, chunked loss" "inspect names the chunked loss" -- $S inspect "$T/l3c.json"
expect 0 "peak non-model memory  3.97 GiB at op 305 h31.mlp.swiglu.bwd (bwd)" "the chunked loss keeps no logits" -- $S inspect "$T/l3c.json"
$S synth --model llama3-8b --seq 8192 --attention flash --checkpointing -o "$T/l3f.json" > /dev/null 2>&1
expect 0 "peak non-model memory  10.08 GiB at op 292 loss.bwd (bwd)" "the full loss keeps every token's logits" -- $S inspect "$T/l3f.json"
# the loss in the logits' own dtype: GPT-2 XL at 40 x 1024 tokens in fp16, its peak at the loss's
# backward 21.50 GiB with the fp32 loss, 3.83 GiB less in fp16 (2 bytes of 2.06e9 logits)
$S synth --model gpt2-xl --batch 40 --seq 1024 --dtype fp16 --checkpointing --loss native -o "$T/xln.json" > /dev/null 2>&1
expect 0 "batch 40 x seq 1024, fp16, checkpointing, naive attention, eager kernels, the loss in the logits' dtype" "inspect names the loss in the logits' dtype" -- $S inspect "$T/xln.json"
expect 0 "peak non-model memory  17.67 GiB at op 388 loss.bwd (bwd)" "the loss in fp16 holds 2 bytes a logit, not 4" -- $S inspect "$T/xln.json"
expect 2 "synth: --loss native computes the cross-entropy in the logits' 16-bit dtype, and autocast computes it in fp32 (--amp): that is --loss full" \
  "--loss native under --amp: refused, said" -- $S synth --model gpt2 --seq 128 --amp --dtype fp16 --loss native -o "$T/never.json"
expect 2 "--loss: 'sliced' is not one of full, chunked, native" "synth with an unknown loss" -- $S synth --model gpt2 --loss sliced -o "$T/never.json"
expect 2 "--loss: 'sliced' is not one of full, chunked, native" "whatif with an unknown loss" -- $S whatif --model gpt2 --gpu 8GiB --loss sliced
expect 2 "--loss: 'sliced' is not one of full, chunked, native" "capacity with an unknown loss" -- $S capacity --family gpt2 --loss sliced
# DeepSpeed's cpu_checkpointing: GPT-2 XL at 8 x 1024 checkpointed, each block's input (25.00
# MiB) in host memory from the next block's forward to the backward before its recomputation:
# the peak 4.30 GiB -> 3.15 GiB (47 inputs on the host at the loss), 1.17 GiB of them at most
$S synth --model gpt2-xl --batch 8 --seq 1024 --checkpointing -o "$T/ckd.json" > /dev/null 2>&1
$S synth --model gpt2-xl --batch 8 --seq 1024 --checkpointing --checkpoints host -o "$T/ckh.json" > /dev/null 2>&1
expect 0 "peak non-model memory  4.30 GiB at op 388 loss.bwd (bwd)" "checkpoints on the device: the peak" -- $S inspect "$T/ckd.json"
expect 0 "peak non-model memory  3.15 GiB at op 388 loss.bwd (bwd)" "checkpoints on the host: the peak without 47 inputs" -- $S inspect "$T/ckh.json"
expect 0 "checkpointing, its checkpoints in host memory, naive attention" "inspect says the checkpoints are on the host" -- $S inspect "$T/ckh.json"
expect 0 "  activations  the inputs of 48 of 48 blocks in host memory from their forward to their recomputation, 1.17 GiB at most a rank (the trace's checkpoints on the host)" \
  "plan says the checkpoints on the host, a rank's" -- $S plan "$T/ckh.json" --gpu 12GiB --gpus 2 --hw A100-80GB-PCIe4 -o "$T/ckh.plan.json"
expect 0 "  host         11.00 GiB (7.00 GiB of chunks and offloaded activations, 4.00 GiB for the ranks' processes) of 512.00 GiB" \
  "plan: both ranks' checkpoints in the host figure" -- $S plan "$T/ckh.json" --gpu 12GiB --gpus 2 --hw A100-80GB-PCIe4 -o "$T/ckh.plan.json"
expect 0 "is sound for" "check: the plan's moves are the trace's checkpoints" -- $S check "$T/ckh.plan.json" "$T/ckh.json"
expect 0 "host memory 7.00 GiB for chunks and offloaded activations, all ranks" "simulate counts the checkpoints on the host" -- $S simulate "$T/ckh.plan.json" "$T/ckh.json"
expect 0 "(7) ddp: the host budget of 6.00 GiB cannot hold its ranks' checkpoints and processes, 6.34 GiB: each rank's checkpoints take 1.17 GiB of it at most" \
  "compare's DDP baseline holds its ranks' checkpoints on the host to the budget" -- $S compare "$T/ckh.json" --gpu 40GiB --gpus 2 --cpu 6GiB --hw A100-80GB-PCIe4
expect 0 "(5) policy gemini-static cannot fit the host budget of 6.00 GiB: its plans that fit the GPU need at least 6.34 GiB of host memory (chunks and offloaded activations, and 2.00 GiB per rank for the process), 352.00 MiB more" \
  "a policy's host shortfall names the checkpoints on the host" -- $S compare "$T/ckh.json" --gpu 40GiB --gpus 2 --cpu 6GiB --hw A100-80GB-PCIe4
expect 2 "synth: --checkpoints host keeps the checkpoints of a checkpointed loop in host memory: give --checkpointing with it" \
  "--checkpoints host without checkpointing: refused" -- $S synth --model gpt2 --checkpoints host -o "$T/never.json"
expect 2 "copies the checkpoints of one forward-backward run, as a trace's blocks describe it, and several micro-steps each keep their own: give it without --micro-steps" \
  "--checkpoints host with micro-steps: refused" -- $S synth --model gpt2 --checkpointing --micro-steps 2 --checkpoints host -o "$T/never.json"
expect 2 "--checkpoints: 'disk' is not one of device, host" "synth with an unknown place for checkpoints" -- $S synth --model gpt2 --checkpointing --checkpoints disk -o "$T/never.json"
expect 2 "--checkpoints: 'disk' is not one of device, host" "capacity with an unknown place for checkpoints" -- $S capacity --family gpt2 --checkpoints disk
expect 0 "batch 8 x 512 tokens per GPU, checkpointing, the checkpoints in host memory, flash attention" "capacity says the checkpoints on the host" -- $S capacity --family gpt2 --seq 512 --policy zero-offload --checkpoints host
$S capacity --family gpt2 --seq 512 --policy zero-offload --checkpoints host --json > "$T/cap-ckh.json" 2>&1
tr -d ' \t\n' < "$T/cap-ckh.json" | grep -q '"checkpointing":true,"checkpoints":"host"'
tap_result $? "capacity --json records where the checkpoints wait" "$(head -c 600 "$T/cap-ckh.json")"
test ! -e "$T/never.json"; tap_result $? "no trace written where --checkpoints is refused" "$T/never.json exists"
# gradient accumulation: four micro-steps of 2 x 128, their gradients PyTorch's .grad tensors
# held from the first backward to the step (237 MiB more at the peak), the tokens/s the iteration's
$S synth --model gpt2 --batch 2 --seq 128 --micro-steps 4 -o "$T/accum.json" > /dev/null 2>&1
expect 0 "iteration   4 micro-steps; gradients in the framework's tensors" "synth --micro-steps: the trace's runs" -- $S inspect "$T/accum.json"
expect 0 "batch 8 x seq 128" "synth --micro-steps: the iteration's sequences" -- $S inspect "$T/accum.json"
expect 0 "peak non-model memory  489.87 MiB at op 301 lm_head.bwd (bwd)" "synth --micro-steps: the gradients held" -- $S inspect "$T/accum.json"
expect 0 "    2  2.00 GiB  stowage  38,597,632  294.48 MiB  91.64 MiB   47.40 ms    21,605  5.2%     1.37x  yes    2.58 GiB  fp32" "whatif --micro-steps: a chunk moves to make room for the gradients, and their gradients to the host for CPU Adam" -- $S whatif --model gpt2 --batch 2 --seq 128 --micro-steps 4 --gpu 2GiB --policy stowage
expect 0 "stowage       gpt-h2048-l104     104  5,342,287,872   13.734 s     1,193  23.1%  180.02 GiB  host memory" "capacity --micro-steps: the gradients held on the GPU leave room for fewer layers (120 in one step)" -- $S capacity --family gpt --hidden 2048 --batch 4 --seq 1024 --hw RTX4090-24GB-PCIe4 --cpu 64GiB --policy stowage,zero-offload --micro-steps 4
expect 2 "--micro-steps: '0' is not valid: expected a whole number from 1 to 1024" "synth --micro-steps 0" -- $S synth --model gpt2 --micro-steps 0 -o "$T/never.json"
# the same with each micro-step's gradients copied to the host and added there (FSDP's CPU
# offload): none held on the GPU (252.52 MiB at the peak, not 489.87), four copies of the 474.70
# MiB of gradients out, three added on the host while the ops wait
$S synth --model gpt2 --batch 2 --seq 128 --micro-steps 4 --gradients host -o "$T/accumh.json" > /dev/null 2>&1
expect 0 "iteration   4 micro-steps; gradients in the framework's tensors, each micro-step's copied to host memory and added there" "synth --gradients host: the trace says where its gradients go" -- $S inspect "$T/accumh.json"
expect 0 "peak non-model memory  252.52 MiB at op 101 lm_head.bwd (bwd)" "synth --gradients host: no gradients held on the device" -- $S inspect "$T/accumh.json"
$S plan "$T/accumh.json" --gpu 2GiB --policy zero-offload -o "$T/accumh.plan.json" > /dev/null 2>&1
expect 0 "D2H        45.85 ms    21%  949.40 MiB, 21.7 GB/s while busy" "simulate --gradients host: each micro-step's gradients to the host" -- $S simulate "$T/accumh.plan.json" "$T/accumh.json"
expect 0 "59.26 ms of it adding each micro-step's gradients on the host" "simulate --gradients host: the host adds three of them" -- $S simulate "$T/accumh.plan.json" "$T/accumh.json"
expect 1 "2 GPUs: the trace's gradients are the framework's own tensors (model.gradients \"framework\"), which the ranks cannot reduce-scatter out of the chunks; plan it for one GPU" "plan: gradients held on the device on several GPUs" -- $S plan "$T/accum.json" --gpu 8GiB --gpus 2 -o "$T/never.json"
# on two GPUs each micro-step's gradients are reduce-scattered as they go, each rank copying and
# adding its half; the host holds them once between the ranks
expect 0 "  host         6.24 GiB (2.24 GiB of chunks and gradients, of which 237.35 MiB the gradients, 4.00 GiB for the ranks' processes) of 512.00 GiB" "plan --gpus 2 with the gradients on the host: the host holds them" -- $S plan "$T/accumh.json" --gpu 2GiB --gpus 2 --policy zero-offload -o "$T/accumh2.plan.json"
expect 0 "collectives  29.07 ms    18%  621.94 MiB received, ring of 2 ranks over pcie" "simulate --gpus 2 with the gradients on the host: each op's reduce-scattered" -- $S simulate "$T/accumh2.plan.json" "$T/accumh.json"
$S synth --model gpt2 --batch 2 --seq 128 --micro-steps 4 --gradients host-via-device -o "$T/accumd.json" > /dev/null 2>&1
$S plan "$T/accumd.json" --gpu 2GiB --policy zero-offload -o "$T/accumd.plan.json" > /dev/null 2>&1
expect 0 "iteration   4 micro-steps; gradients in the framework's tensors, each micro-step's copied to host memory, added on the device" "synth --gradients host-via-device: DeepSpeed's accumulation" -- $S inspect "$T/accumd.json"
expect 0 "H2D       46.96 ms    22%  1006.53 MiB, 22.5 GB/s while busy" "simulate --gradients host-via-device: the host's sum back three times" -- $S simulate "$T/accumd.plan.json" "$T/accumd.json"
# beyond the pinned budget the gradients' host buffers are pageable: slower copies, which FSDP
# makes blocking
expect 0 "  pinned       531.83 MiB of it the copies touch, 300.00 MiB pinned (--pinned): 237.35 MiB of it copied at pageable speed" "plan --pinned with the gradients on the host: their buffers counted last" -- $S plan "$T/accumh.json" --gpu 2GiB --policy zero-offload --pinned 300MiB -o "$T/accumh-pg.plan.json"
expect 0 "  iteration    276.59 ms simulated" "plan --pinned with the gradients on the host: pageable copies the ops wait for" -- $S plan "$T/accumh.json" --gpu 2GiB --policy zero-offload --pinned 300MiB -o "$T/accumh-pg.plan.json"
expect 2 "--gradients: 'sideways' is not one of device, host, host-via-device" "synth --gradients with an unknown place" -- $S synth --model gpt2 --gradients sideways -o "$T/never.json"
expect 0 "    2  2.00 GiB  zero-offload  38,597,632  294.48 MiB  949.40 MiB  222.06 ms     4,611  1.1%     1.54x  yes    4.24 GiB  fp32" "whatif --gradients host: the plan synth --gradients host makes" -- $S whatif --model gpt2 --batch 2 --seq 128 --micro-steps 4 --gradients host --gpu 2GiB --policy zero-offload,stowage
expect 2 "--gradients: 'up' is not one of device, host, host-via-device" "capacity --gradients with an unknown place" -- $S capacity --family gpt --gradients up
# checkpointed segments: GPT-2's 12 blocks in segments of 4 keep 3 block inputs, not 12
$S synth --model gpt2 --batch 2 --seq 512 --checkpoint-every 4 -o "$T/seg4.json" > /dev/null 2>&1
expect 0 "batch 2 x seq 512, bf16, checkpointing" "synth --checkpoint-every: a checkpointed trace" -- $S inspect "$T/seg4.json"
expect 0 "h8.ln_1.recompute h9.ln_1.recompute h10.ln_1.recompute h11.ln_1.recompute h4.ln_1.recompute" "synth --checkpoint-every: a segment's blocks recomputed together, last segment first" -- sh -c "grep -o 'h[0-9]*\.ln_1\.recompute' '$T/seg4.json' | tr '\n' ' '"
expect 2 "--checkpoint-every: '0' is not valid: expected a whole number from 1 to 4096" "synth --checkpoint-every 0" -- $S synth --model gpt2 --checkpoint-every 0 -o "$T/never.json"
expect 2 "--checkpoint-every, --amp, --attention" "whatif --checkpoint-every with a trace" -- $S whatif "$TR" --gpu 8GiB --checkpoint-every 2
# PyTorch's AMP: fp32 weights, the GEMMs in bf16
$S synth --model gpt2 --batch 2 --seq 512 --amp -o "$T/amp.json" > /dev/null 2>&1
expect 0 "batch 2 x seq 512, fp32 weights, autocast to bf16" "synth --amp: fp32 weights, autocast's dtype" -- $S inspect "$T/amp.json"
expect 0 "param       474.70 MiB  124,439,808              4" "synth --amp: 4 bytes a weight" -- $S inspect "$T/amp.json"
expect 0 "stowage  gpt-h2048-l93      93  4,788,346,880    7.361 s       556  9.7%  50.61 GiB  host memory" "capacity --amp: fp32 weights fill the host sooner (120 layers in bf16); MFU against the bf16 peak autocast computes at" -- $S capacity --family gpt --hidden 2048 --batch 4 --seq 1024 --hw RTX4090-24GB-PCIe4 --cpu 64GiB --policy stowage --amp
expect 2 "--amp computes in 16 bits: give --dtype bf16 or fp16 with it" "synth --amp --dtype fp32" -- $S synth --model gpt2 --amp --dtype fp32 -o "$T/never.json"
# the optimizer's implementations: fused 32 bytes an element, foreach 72 and GradScaler's 8 under
# fp16 autocast (2.5x), a for-loop seven launches a tensor (GPT-2's 148 tensors at 10 us each)
for impl in fused foreach for-loop; do
  $S synth --model gpt2 --batch 2 --seq 512 --amp --dtype fp16 --optimizer-impl $impl -o "$T/opt-$impl.json" > /dev/null 2>&1
done
expect 0 "optim  148   2.57 ms   0.00" "synth --optimizer-impl fused (the default): one pass" -- $S inspect "$T/opt-fused.json"
expect 0 "optim  148   6.43 ms   0.00" "synth --optimizer-impl foreach: seven passes and unscale_" -- $S inspect "$T/opt-foreach.json"
expect 0 "optim  148  10.36 ms   0.00" "synth --optimizer-impl for-loop: bound by its launches" -- $S inspect "$T/opt-for-loop.json"
expect 0 "autocast to fp16, naive attention, eager kernels, for-loop optimizer" "inspect names the optimizer's implementation" -- $S inspect "$T/opt-for-loop.json"
expect 0 "  optimizer    0 chunks CPU Adam, 0 GPU Adam in margin space, 3 GPU Adam with resident state; the GPU's optimizer step as PyTorch's for-loop Adam runs it: seven passes, seven launches a tensor" "plan names the GPU step the trace assumed" -- $S plan "$T/opt-for-loop.json" --gpu 8GiB -o "$T/opt-plan.json"
expect 0 "assumes the GPU's optimizer step as PyTorch's foreach Adam runs it: seven passes" "compare names it" -- $S compare "$T/opt-foreach.json" --gpu 8GiB
expect 0 "assumes the GPU's optimizer step as PyTorch's foreach Adam runs it: seven passes" "whatif --model names it" -- $S whatif --model gpt2 --batch 2 --seq 128 --gpu 2GiB --policy stowage --optimizer-impl foreach
# DeepSpeed ZeRO's step on the GPU: 5e + 60 = 70 bytes an element in bf16 against fused's 2e + 24 = 28
for impl in fused deepspeed; do
  $S synth --model gpt2 --batch 2 --seq 512 --optimizer-impl $impl -o "$T/opt-bf16-$impl.json" > /dev/null 2>&1
done
expect 0 "optim  148   2.25 ms   0.00" "synth bf16, fused: 28 bytes an element" -- $S inspect "$T/opt-bf16-fused.json"
expect 0 "optim  148   5.63 ms   0.00" "synth --optimizer-impl deepspeed: 70 bytes an element, 2.5x" -- $S inspect "$T/opt-bf16-deepspeed.json"
expect 0 "batch 2 x seq 512, bf16, naive attention, eager kernels, deepspeed optimizer" "inspect names DeepSpeed's step" -- $S inspect "$T/opt-bf16-deepspeed.json"
expect 0 "3 GPU Adam with resident state; the GPU's optimizer step as DeepSpeed's ZeRO runs it: fp64 norms tensor by tensor, the gradients flattened and cast to fp32, FusedAdam on the fp32 partition, the weights cast back" "plan names DeepSpeed's step" -- $S plan "$T/opt-bf16-deepspeed.json" --gpu 8GiB -o "$T/opt-ds-plan.json"
expect 0 "  assumes      DeepSpeed's buffers beside the model on each of 4 GPUs: its gradient partition 59.34 MiB, a reduce bucket of 237.35 MiB in backward, the step's fp32 gradients 118.68 MiB (reduce_bucket_size 500,000,000, sub_group_size 1,000,000,000 elements: DeepSpeed's defaults)" \
  "plan says DeepSpeed's buffers, a GPU's share of them" -- $S plan "$T/opt-bf16-deepspeed.json" --gpu 8GiB --gpus 4 -o "$T/opt-ds-plan4.json"
# the loop's own ZeRO configuration (PyTorch Lightning's DeepSpeedStrategy: 2e8 and 1e12)
expect 0 "wrote" "synth --reduce-bucket-size --sub-group-size" -- $S synth --model gpt2 --batch 2 --seq 512 --optimizer-impl deepspeed --reduce-bucket-size 20000000 --sub-group-size 1000000000000 -o "$T/opt-ds-pl.json"
expect 0 "  assumes      DeepSpeed's buffers beside the model on each of 4 GPUs: its gradient partition 59.34 MiB, a reduce bucket of 38.15 MiB in backward, the step's fp32 gradients 118.68 MiB (reduce_bucket_size 20,000,000, sub_group_size 1,000,000,000,000 elements: the trace's)" \
  "plan sizes DeepSpeed's buffers by the trace's configuration" -- $S plan "$T/opt-ds-pl.json" --gpu 8GiB --gpus 4 -o "$T/opt-ds-plan5.json"
expect 0 "the step's fp32 gradients 381.47 MiB (reduce_bucket_size 500,000,000, sub_group_size 100,000,000 elements: the trace's and DeepSpeed's defaults)" \
  "whatif --model --sub-group-size: a sub-group below the partition" -- $S whatif --model gpt2 --batch 2 --seq 512 --gpu 8GiB --policy stowage --optimizer-impl deepspeed --sub-group-size 100000000
# a loop that builds its whole model on each rank's host first (model.init): its start-up held
# to the host budget before any policy plans, and said
expect 0 "batch 1 x seq 1024, bf16, naive attention, eager kernels, the model built whole on the host in fp32 first" \
  "synth --init host-fp32: inspect says it" -- sh -c "$S synth --model gpt2-xl --batch 1 --seq 1024 --init host-fp32 -o '$T/init.json' > /dev/null && $S inspect '$T/init.json'"
expect 0 "  start-up     31.21 GiB of host memory: each rank builds the whole model there in fp32 before it is chunked (model.init host-fp32: 5.80 GiB a rank, beside its process)" \
  "plan prints the ranks' start-up" -- $S plan "$T/init.json" --gpu 20GiB --gpus 4 --cpu 64GiB -o "$T/init-plan.json"
expect 1 "policy stowage cannot fit the host budget of 30.00 GiB at start-up: each of its 4 ranks builds the whole model on the host in fp32 before it is chunked (the trace's model.init \"host-fp32\": 5.80 GiB a rank, beside its process's 2.00 GiB), 31.21 GiB in all, 1.21 GiB more" \
  "a host budget below the ranks' start-up: refused, said" -- $S plan "$T/init.json" --gpu 20GiB --gpus 4 --cpu 30GiB -o "$T/init-plan.json"
expect 0 "ddp: the host budget of 30.00 GiB cannot hold the loop's start-up, 31.21 GiB: each rank builds the whole model on the host in fp32 first (model.init host-fp32)" \
  "compare's DDP baseline holds the start-up to the host budget too" -- $S compare "$T/init.json" --gpu 20GiB --gpus 4 --cpu 30GiB
$S capacity --family gpt2 --seq 128 --policy stowage --init host --optimizer-impl deepspeed --sub-group-size 1000000 --json > "$T/cap-init.json" 2>&1
tr -d ' \t\n' < "$T/cap-init.json" | grep -q '"optimizer_impl":"deepspeed","sub_group_size":1000000,"init":"host"'
tap_result $? "capacity --json records the loop's start-up and DeepSpeed's configuration" "$(head -c 600 "$T/cap-init.json")"
expect 2 "--init: 'lazy' is not one of sharded, host, host-fp32" "synth --init of another name" -- $S synth --model gpt2 --seq 128 --init lazy -o "$T/never.json"
expect 2 "synth: --sub-group-size goes with --optimizer-impl deepspeed: it sizes the buffers DeepSpeed's step holds on the GPU, and the loop's optimizer is fused" \
  "--sub-group-size without DeepSpeed's step" -- $S synth --model gpt2 --seq 128 --sub-group-size 1000 -o "$T/x.json"
expect 2 "--reduce-bucket-size: '5e8' is not valid: expected a whole number from 1 to 1000000000000000" \
  "--reduce-bucket-size not a whole number" -- $S synth --model gpt2 --seq 128 --optimizer-impl deepspeed --reduce-bucket-size 5e8 -o "$T/x.json"
sed 's/"optimizer_impl":"deepspeed",//; s/"optimizer_impl": *"deepspeed", *//' "$T/opt-ds-pl.json" > "$T/bad-ds.json"
expect 1 "bad-ds.json: \$.model.sub_group_size: DeepSpeed's sub_group_size goes with optimizer_impl \"deepspeed\" (its step on the GPU), and the trace's is \"fused\"" \
  "a trace with DeepSpeed's configuration and not its step: refused, named" -- $S inspect "$T/bad-ds.json"
expect 0 "assumes DeepSpeed's buffers beside the model on the GPU: its gradient partition 237.35 MiB" "compare says them" -- $S compare "$T/opt-bf16-deepspeed.json" --gpu 8GiB
# collectives on the compute stream (DeepSpeed ZeRO-1 and 2 with overlap_comm off): GPT-2 on two
# GPUs, the iteration its compute and its collectives one after the other
for c in overlapped blocking; do
  $S synth --model gpt2 --batch 2 --seq 256 --collectives $c -o "$T/coll-$c.json" > /dev/null 2>&1
done
expect 0 "batch 2 x seq 256, bf16, naive attention, eager kernels, collectives on the compute stream" "inspect names blocking collectives" -- $S inspect "$T/coll-blocking.json"
expect 0 "iteration    17.55 ms simulated: compute 9.56 ms + stalls 7.98 ms; H2D busy 0 ns, D2H busy 0 ns, CPU Adam 0 ns" "plan on two GPUs, the collectives beside compute" -- $S plan "$T/coll-overlapped.json" --gpu 8GiB --gpus 2 -o "$T/coll-o.plan.json"
expect 0 "iteration    19.73 ms simulated: compute 9.32 ms + stalls 10.41 ms; H2D busy 0 ns, D2H busy 0 ns, CPU Adam 0 ns" "plan --collectives blocking: the stalls are the collectives' 10.41 ms" -- $S plan "$T/coll-blocking.json" --gpu 8GiB --gpus 2 -o "$T/coll-b.plan.json"
expect 0 "busy 10.41 ms, on the compute stream (the trace's collectives blocking)" "plan says the collectives hold the stream" -- $S plan "$T/coll-blocking.json" --gpu 8GiB --gpus 2 -o "$T/coll-b.plan.json"
expect 0 "19.73 ms per iteration" "simulate replays the plan's blocking collectives" -- $S simulate "$T/coll-b.plan.json" "$T/coll-blocking.json"
expect 0 "assumes the collectives on the compute stream, each op waiting for those issued before it (the trace's collectives blocking: DeepSpeed ZeRO-1 and 2 with overlap_comm off)" "compare says so on two GPUs" -- $S compare "$T/coll-blocking.json" --gpu 8GiB --gpus 2
expect 0 "assumes the collectives on the compute stream" "whatif --model --collectives blocking says so" -- $S whatif --model gpt2 --batch 2 --seq 256 --gpu 8GiB --gpus 2 --policy stowage --collectives blocking
expect 2 "--collectives: 'sometimes' is not one of overlapped, blocking" "synth with an unknown --collectives" -- $S synth --model gpt2 --collectives sometimes -o "$T/never.json"
expect 2 "--collectives: 'sometimes' is not one of overlapped, blocking" "capacity with an unknown --collectives" -- $S capacity --family gpt2 --collectives sometimes
expect 2 "--optimizer-impl: 'apex' is not one of fused, foreach, for-loop, deepspeed" "synth with an unknown optimizer" -- $S synth --model gpt2 --optimizer-impl apex -o "$T/never.json"
expect 0 "RTX4090-24GB-PCIe4, 1 GPU, 128.00 GiB of host memory; batch 8 x 1024 tokens per GPU, checkpointing, flash attention, eager kernels, for-loop optimizer, bf16 (defaults: the batch and sequence, checkpointing, flash attention, eager kernels, bf16)" "capacity names the optimizer where it is not fused" -- $S capacity --hw RTX4090-24GB-PCIe4 --family gpt2 --optimizer-impl for-loop --policy stowage
expect 2 "--optimizer-impl: 'apex' is not one of fused, foreach, for-loop, deepspeed" "capacity with an unknown optimizer" -- $S capacity --family gpt2 --optimizer-impl apex
expect 1 "2 GPUs: the trace's gradients are the framework's own tensors" "micro-steps on two GPUs: refused, said" -- $S plan "$T/accum.json" --gpu 8GiB --gpus 2 -o "$T/never.json"
# ZeRO-3 with CPU Adam: each of 4 GPUs keeps its quarter, gathering the rest for each use
$S synth --model gpt2-xl --batch 4 --seq 1024 --checkpointing -o "$T/xl4.json" > /dev/null 2>&1
expect 0 "  GPU peak     3.50 GiB of 8.00 GiB (chunks and non-model at op 388 loss.bwd)" "zero-offload --zero-stage 3: a quarter of the model resident" -- $S plan "$T/xl4.json" --gpu 8GiB --gpus 4 --policy zero-offload --zero-stage 3 -o "$T/z3.json"
expect 0 "  GPU peak     5.74 GiB of 8.00 GiB (chunks and non-model at op 388 loss.bwd)" "zero-offload (stage 2): the whole model resident" -- $S plan "$T/xl4.json" --gpu 8GiB --gpus 4 --policy zero-offload -o "$T/z2.json"
expect 2 "plan: --zero-stage goes with --policy zero-offload" "--zero-stage without zero-offload" -- $S plan "$T/xl4.json" --gpu 8GiB --zero-stage 3 -o "$T/never.json"
expect 2 "--zero-stage: '1' is not valid: expected a whole number from 2 to 3" "--zero-stage 1" -- $S plan "$T/xl4.json" --gpu 8GiB --policy zero-offload --zero-stage 1 -o "$T/never.json"
# nodes: --gpus per node, the profile's node size and links checked first
P12=$STW_SRCDIR/traces/pstar-12b-b8-s1024-ckpt.json
expect 0 "on 2 nodes of 8 x A100-SXM4-80GB with 32.00 GiB of GPU memory each" "compare on two DGX A100 nodes" -- $S compare "$P12" --gpu 32GiB --nodes 2 --cpu 480GiB --hw A100-SXM4-80GB
expect 2 "16 GPUs per node, and a node of hardware profile A100-SXM4-80GB holds 8: give more nodes (--nodes) or fewer GPUs" "more GPUs than a node holds" -- $S compare "$P12" --gpu 32GiB --gpus 16 --hw A100-SXM4-80GB
expect 2 "2 nodes need a network between them, and hardware profile A100-80GB-PCIe4 has none" "nodes without a network" -- $S plan "$P12" --gpu 32GiB --nodes 2 --gpus 4 --hw A100-80GB-PCIe4 -o "$T/nodes.json"
# no budget above the GPU the profile describes, unless asked for
expect 2 "--gpu: 100.00 GiB is more than the 80.00 GiB of GPU memory that A100-80GB-PCIe4 has" "plan refuses a budget above the device" -- $S plan "$TR" --gpu 100GiB --hw A100-80GB-PCIe4 -o "$T/over.json"
expect 0 "" "plan beyond the device when asked" -- $S plan "$TR" --gpu 100GiB --hw A100-80GB-PCIe4 --beyond-device -o "$T/over.json"
expect 0 "  GPU process  512.00 MiB of the budget kept free: a process holds 512.00 MiB of the GPU's 23.99 GiB outside its tensors (its CUDA context and libraries; the profile's gpu.process_bytes)" \
  "a budget of the card's whole memory: the process's own kept free" -- $S plan "$TR" --gpu 25757220864 --hw RTX4090-24GB-PCIe4 -o "$T/card.json"
expect 0 '"reserved_bytes":536870912' "the plan records it in its reserve" -- cat "$T/card.json"
expect 0 "GPU process 512.00 MiB of the budget kept free: a process holds 512.00 MiB of the GPU's 23.99 GiB outside" \
  "compare at the card's whole memory says so too" -- $S compare "$TR" --gpu 25757220864 --hw RTX4090-24GB-PCIe4
expect 2 "--gpu: 32.00 GiB is more than the 23.99 GiB of GPU memory that RTX4090-24GB-PCIe4 has" "compare refuses a budget above the device" -- $S compare "$TR" --gpu 32GiB --hw RTX4090-24GB-PCIe4
expect 2 "--gpu: 40.00 GiB is more than" "whatif refuses a sweep past the device" -- $S whatif "$TR" --gpu 8GiB,40GiB --hw V100-32GB-PCIe3
expect 1 "even at 23.99 GiB, all the GPU memory the profile has" "minmem never answers more than the device has" -- $S minmem "$STW_SRCDIR/traces/llama2-7b-b4-s4096-flash-ckpt.json" --hw RTX4090-24GB-PCIe4
expect 0 "gpt2-xl" "capacity over a zoo family" -- $S capacity --family gpt2 --policy stowage --cpu 64GiB
expect 0 "8 GPUs, 240.00 GiB of host memory" "capacity with 8 GPUs" -- $S capacity --family gpt --hidden 1024 --gpus 8 --cpu 240GiB --policy zero-offload
expect 2 "--gpus: '0' is not valid: expected a whole number from 1 to 4096" "capacity with 0 GPUs" -- $S capacity --family gpt --gpus 0
expect 2 "--family: 'rnn' is not one of" "capacity with an unknown family" -- $S capacity --family rnn
expect 2 "--policy: 'fastest' is not one of stowage, patrickstar" "capacity with an unknown policy" -- $S capacity --family gpt2 --policy fastest
expect 2 "--attention: 'sparse' is not one of naive, flash" "capacity with an unknown attention" -- $S capacity --family gpt2 --attention sparse
expect 0 "V100-32GB-PCIe3, 1 GPU, 64.00 GiB of host memory; batch 8 x 1024 tokens per GPU, checkpointing, flash attention, eager kernels, fp16 (defaults: the batch and sequence, checkpointing, flash attention, eager kernels, fp16)" "capacity names what it assumed" -- $S capacity --family patrickstar --hw V100-32GB-PCIe3 --cpu 64GiB --policy patrickstar
$S capacity --family gpt2 --batch 2 --seq 512 --no-checkpointing --attention naive --kernels fused --dtype bf16 --policy stowage > "$T/cap.txt" 2>&1
head -n1 "$T/cap.txt" | grep -qx "A100-80GB-PCIe4, 1 GPU, 512.00 GiB of host memory; batch 2 x 512 tokens per GPU, no checkpointing, naive attention, fused kernels, bf16"; tap_result $? "capacity with nothing assumed names no defaults" "$(head -n1 "$T/cap.txt")"
expect 2 "--dtype: V100-32GB-PCIe3 has no bf16 compute" "capacity with a dtype the GPU lacks" -- $S capacity --family gpt2 --hw V100-32GB-PCIe3 --dtype bf16
expect 2 "--policy: the list is empty" "whatif with an empty policy list" -- $S whatif "$TR" --gpu 8GiB --policy ""
expect 2 "--dtype: 'fp8' is not one of fp32, fp16, bf16" "whatif with an unknown dtype" -- $S whatif --model gpt2 --gpu 8GiB --dtype fp8
expect 0 "stowage" "enum options ignore case" -- $S plan "$TR" --gpu 9GiB --policy STOWAGE -o "$T/case.json"
expect 0 "CPU Adam in the profile " "probe writes a profile" -- $S probe --name here -o "$T/here.json"
# the profile's CPU Adam is its OpenMP team's, as the runtime's will run: one thread where
# OMP_NUM_THREADS says so, not every processor
out=$(OMP_NUM_THREADS=1 $S probe --name one -o "$T/one.json" 2>&1)
one=$(echo "$out" | awk '$1 == "1" && NF == 2 { print $2 }')
echo "$out" | grep -q "^CPU Adam in the profile $one elements/s on 1 thread, the OpenMP team it runs on (OMP_NUM_THREADS sets it)$" &&
  grep -q '"team of 1\|OpenMP team.s 1 thread;' "$T/one.json"
tap_result $? "probe's profile steps CPU Adam on the OpenMP team's threads (OMP_NUM_THREADS=1: the one-thread rate, $one)" "$out" "$(cat "$T/one.json")"
expect 0 "here" "the probed profile loads" -- $S hardware "$T/here.json"
grep -q '"adam_bf16_elems_per_s":' "$T/here.json"
tap_result $? "probe measures CPU Adam with bf16 moments into the profile" "$(cat "$T/here.json")"
# the storage tier's checksum on the same team, into the profile's cpu section and said
out=$(OMP_NUM_THREADS=1 $S probe --name sum -o "$T/sum.json" 2>&1)
echo "$out" | grep -q "^the storage tier's checksum [0-9.]* GB/s on the same team (each region it writes and reads back)$" &&
  grep -q '"checksum_bytes_per_s":' "$T/sum.json" && $S hardware "$T/sum.json" > /dev/null
tap_result $? "probe measures the storage tier's checksum into the profile" "$out" "$(cat "$T/sum.json")"
# the CPU measured, named as the kernel names it (the base profile's is not this host's)
cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -n 1 | tr -s ' \t' '  ' | sed 's/ *$//')
if [ -n "$cpu" ]; then
  grep -q "\"cpu\": *{\"model\":\"\([0-9]*x \)\{0,1\}$cpu\"" "$T/here.json"
  tap_result $? "probe names the host's CPU ($cpu)" "$(cat "$T/here.json")"
else
  tap_skip "probe names the host's CPU: /proc/cpuinfo names none here"
fi
# the host's memory bandwidth in bytes read and written: at least CPU Adam's 28 bytes an element
# at the rate it measured, so a probed profile's CPU Adam is simulated at that rate (gpt2's
# 124,439,808 parameters stepped by ZeRO-Offload, within 0.5%)
adam=$(sed -n 's/.*"adam_elems_per_s":\([0-9.e+]*\).*/\1/p' "$T/here.json")
hostbw=$(sed -n 's/.*"host_memory_bytes_per_s":\([0-9.e+]*\).*/\1/p' "$T/here.json")
out=$($S plan "$TR" --gpu 9GiB --policy zero-offload --hw "$T/here.json" -o "$T/zo-here.json" 2>&1)
ms=$(echo "$out" | sed -n 's/.*CPU Adam \([0-9.]*\) ms$/\1/p; s/.*CPU Adam \([0-9.]*\) s$/\1e3/p')
awk -v a="$adam" -v h="$hostbw" -v ms="$ms" 'BEGIN { want = 124439808 / a * 1e3;
  exit !(a > 0 && h >= 28 * a * 0.999999 && ms > 0 && ms / want > 0.995 && ms / want < 1.005) }'
tap_result $? "a probed profile's host memory streams its CPU Adam ($adam elements/s, $hostbw B/s), which runs at that rate (${ms:-no} ms)" "$out"
expect 0 "  assumes      CPU Adam with bf16 moments as fast as the fewer bytes it moves allow (the profile's fp32 rate x 1.40: it did not measure it" \
  "plan says what CPU Adam with bf16 moments assumes on a profile that did not measure it" -- \
  $S plan "$T/l8.json" --gpu 23GiB --cpu 96GiB --optimizer-state bf16 --policy zero-offload -o "$T/l8b.json"
out=$($S plan "$T/l8.json" --gpu 23GiB --cpu 96GiB --optimizer-state bf16 --policy zero-offload --hw "$T/here.json" -o "$T/l8h.json" 2>&1)
[ $? = 0 ] && ! echo "$out" | grep -q "assumes      CPU Adam"
tap_result $? "and not on a probed one, which measured it" "$out"
# the emulated device: its copies run on the compute's cores, at a measured cost to compute
out=$(OMP_NUM_THREADS=2 $S probe --device host -o "$T/emulated.json" 2>&1)
f=$(printf '%s\n' "$out" | sed -n 's/^copy interference \([0-9.]*\): compute time lost per second of copy beside it$/\1/p')
# the profile has the figure the probe printed (to its two decimals), or none where it is 0: a
# figure below 0.005 prints as 0.00 and is written as measured
v=$(sed -n 's/.*"copy_interference": *\([0-9.e+-]*\).*/\1/p' "$T/emulated.json")
[ -n "$f" ] && grep -q '"compute_on_host": *true' "$T/emulated.json" &&
  if [ -z "$v" ]; then [ "$f" = 0.00 ]
  else awk -v v="$v" -v f="$f" 'BEGIN { exit !(v > 0 && sprintf("%.2f", v) == f) }'; fi &&
  $S hardware "$T/emulated.json" > /dev/null
tap_result $? "probe --device host measures what the emulated device's copies cost compute" "$out"
# and the process's own memory beside the model state, which the plan's RSS line counts
ovh=$(sed -n 's/.*"overhead_bytes": *\([0-9]*\).*/\1/p' "$T/emulated.json")
$S plan "$TR" --gpu 8GiB --hw "$T/emulated.json" -o "$T/rss-plan.json" > "$T/rss-plan.txt" 2>&1
proc=$(sed -n "s/^  RSS .*, the process's \(.*\) (the profile's)$/\1/p" "$T/rss-plan.txt")
[ -n "$ovh" ] && [ "$ovh" -gt 1048576 ] && [ "$ovh" -lt 1073741824 ] &&
  [ "$proc" = "$(awk -v b="$ovh" 'BEGIN { printf "%.2f MiB", b / 1048576 }')" ]
tap_result $? "probe --device host measures the process ($ovh bytes); the plan's RSS line counts it ($proc)" "$(cat "$T/rss-plan.txt")"
# and the replay of a plan on that profile holds what the plan's RSS line says, within 5% (but
# under AddressSanitizer, whose shadow memory and allocator no plan counts), and says so
M4="--layers 4 --width 256 --heads 4 --context 64 --batch 4 --data $STW_SRCDIR/README.md"
$S train $M4 --steps 2 --profile "$T/rss-t.json" > /dev/null &&
  $S plan "$T/rss-t.json" --gpu 60MiB --hw "$T/emulated.json" -o "$T/rss-p.json" > "$T/rss-p.txt" &&
  out=$(OMP_NUM_THREADS=2 $S train $M4 --steps 3 --plan "$T/rss-p.json" -q) &&
  planned=$(sed -n 's/^  RSS          \([0-9.]* [KMG]iB\) a rank on this host backend.*/\1/p' "$T/rss-p.txt") &&
  e=$(echo "$out" | sed -n "s/^host memory: peak RSS [0-9.]* [KMG]iB a rank, the plan's $planned (\([-+][0-9.]*\)%)\$/\1/p") &&
  [ -n "$planned" ] && [ -n "$e" ] &&
  { ldd "$(dirname "$S")/.libs/libstowage.so" 2>/dev/null | grep -q libasan ||
    awk -v e="$e" 'BEGIN { exit !(e >= -5 && e <= 5) }'; }
tap_result $? "a replay on the probed profile says its peak RSS against the plan's: ${e:-none}%" "$out
$(cat "$T/rss-p.txt")"
# a profile whose copies slow the compute beside them: simulate says by how much, and plans for it
sed 's/"op_overhead_ns": 10000/"op_overhead_ns": 10000, "compute_on_host": true, "copy_interference": 1.0/; s/"name": "A100-80GB-PCIe4"/"name": "slowed"/' \
  "$STW_SRCDIR/hw/A100-80GB-PCIe4.json" > "$T/slowed.json"
$S plan "$TR" --gpu 8GiB --hw "$T/slowed.json" --activations keep -o "$T/slowed-plan.json" > /dev/null 2>&1
expect 0 "of it slowed by copies on its cores" "simulate on a profile with copy interference" -- $S simulate "$T/slowed-plan.json" "$TR"
expect 1 "no CUDA device" "probe --device cuda without a GPU, before measuring anything" -- $S probe --device cuda -o "$T/gpu.json"
test ! -e "$T/gpu.json"; tap_result $? "and no profile is written"
expect 2 "--device: 'tpu' is not one of host, cuda" "probe on an unknown device" -- $S probe --device tpu
# the storage tier: a directory measured (briefly), and directories that cannot be
mkdir -p "$T/nvme"
out=$(STOWAGE_PROBE_SECONDS=0.02 $S probe --nvme "$T/nvme" --nvme-depth 4 -o "$T/nvme.json" 2>&1)
echo "$out" | grep -q "^storage on .* through \(io_uring\|threads\), .* over a .* file; a 4 KiB read alone [0-9]* ns" &&
  echo "$out" | grep -q "^16.00 MiB  *[0-9.]* GB/s  *[0-9.]* GB/s" &&
  grep -q '"storage": *{"kind":"nvme","devices":1,"capacity_bytes":[0-9]*,"queue_depth":4,' "$T/nvme.json" &&
  grep -q '"mixed_bytes_per_s":[0-9]' "$T/nvme.json" && echo "$out" | grep -q "^reads and writes taking turns (8 MiB): [0-9.]* GB/s, both directions$" &&
  $S hardware "$T/nvme.json" > /dev/null && [ -z "$(ls "$T/nvme")" ]
tap_result $? "probe --nvme measures the storage's reads and writes into the profile, and leaves nothing behind" "$out"
expect 1 "storage directory $T/gone: No such file or directory" "probe --nvme on a missing directory" -- $S probe --nvme "$T/gone" -o "$T/gone.json"
test ! -e "$T/gone.json"; tap_result $? "and no profile is written"
expect 1 "storage directory $T/nvme.json: not a directory" "probe --nvme on a file" -- $S probe --nvme "$T/nvme.json"
expect 2 "--nvme-depth goes with --nvme DIR; without it the option would be ignored" "--nvme-depth alone" -- $S probe --nvme-depth 8
expect 2 "--nvme-depth: '0' is not valid" "a queue depth of 0" -- $S probe --nvme "$T/nvme" --nvme-depth 0

# train: profile, plan, replay
D=$STW_SRCDIR/README.md
M="--layers 2 --width 32 --heads 4 --context 16 --batch 2 --data $D"
expect 0 "step    1  loss 5.5" "train a few steps" -- $S train $M --steps 3 --profile "$T/tt.json" --checkpoint "$T/c.ckpt"
# (zero-offload steps every chunk on the CPU; the stowage policy's choice between CPU and GPU Adam
# follows the profiled times, which vary from run to run)
expect 0 "optimizer    4 chunks CPU Adam (4 of them in their fp32 compute copies: 28 bytes an element, not 32), 0 GPU Adam" "plan the trained model's trace: its fp32 chunks stepped in their compute copies" -- $S plan "$T/tt.json" --gpu 400KiB --policy zero-offload -o "$T/tz.json"
expect 0 "tp.json: policy stowage, chunk size" "plan the trained model's trace" -- $S plan "$T/tt.json" --gpu 400KiB -o "$T/tp.json"
expect 0 "ts.json: policy gemini-static, chunk size 8,192 elements split across 2 ranks (4,096 elements, 16.00 KiB a rank's shard of the param chunk), 6 chunks per list" \
  "plan --layout shards: each chunk split across the GPUs" -- $S plan "$T/tt.json" --gpu 400KiB --gpus 2 --policy gemini-static --layout shards -o "$T/ts.json"
expect 0 "ranks        2, sharing the model in shards of every chunk" "plan --layout shards says how the ranks share it" -- $S plan "$T/tt.json" --gpu 400KiB --gpus 2 --policy gemini-static --layout shards -o "$T/ts.json"
expect 0 "is sound for" "check proves a plan of shards" -- $S check "$T/ts.json" "$T/tt.json"
expect 1 "the plan splits each chunk across its 2 ranks (its layout's shards, as ZeRO-3 and Gemini share a model), which the runtime does not replay: it gathers groups of whole chunks; plan with --layout groups (the default) to train with it" \
  "train refuses a plan of shards, saying why" -- $S train $M --steps 1 --plan "$T/ts.json"
expect 0 "assumes every chunk split across the 2 GPUs and gathered alone, for every policy (--layout shards: ZeRO-3's and Gemini's layout; train replays PatrickStar's groups only)" \
  "compare --layout shards says it once" -- $S compare "$T/tt.json" --gpu 400KiB --gpus 2 --layout shards
expect 0 '"layout":	"shards"' "compare --json --layout shards: the record says it" -- $S compare "$T/tt.json" --gpu 400KiB --gpus 2 --layout shards --json
expect 0 "assumes every chunk split across the 2 GPUs and gathered alone" "capacity --layout shards says it" -- $S capacity --family gpt --hidden 256 --batch 1 --seq 128 --gpus 2 --cpu 8GiB --policy gemini-static --layout shards
expect 2 "compare: --layout shards: one GPU has no ranks" "compare --layout shards on one GPU" -- $S compare "$T/tt.json" --gpu 400KiB --layout shards
# each policy in its own system's layout: compare's default, plan's where asked
expect 0 "assumes each policy's own layout on the 2 GPUs (--layout policy): zero-infinity and gemini-static with every chunk split across them and gathered alone, as ZeRO-3 and Gemini do; stowage, patrickstar, zero-offload and lru in PatrickStar's groups of whole chunks, the layout train replays (--layout groups or shards: one for all)" \
  "compare plans each policy in its own layout by default, and says so" -- $S compare "$T/tt.json" --gpu 400KiB --gpus 2
$S compare "$T/tt.json" --gpu 400KiB --gpus 2 --json > "$T/cl.json" 2>&1
got=$(tr -d ' \t\n' < "$T/cl.json" | grep -o '"policy":"[a-z-]*","layout":"[a-z]*"' | tr '\n' ' ')
[ "$got" = '"policy":"stowage","layout":"groups" "policy":"patrickstar","layout":"groups" "policy":"zero-offload","layout":"groups" "policy":"zero-infinity","layout":"shards" "policy":"gemini-static","layout":"shards" "policy":"lru","layout":"groups" ' ] &&
  tr -d ' \t\n' < "$T/cl.json" | grep -q '"gpus":2,"layout":"policy"'
tap_result $? "compare --json: each policy's record says its plan's layout, the top the option's" "$got"
expect 0 "assumes PatrickStar's groups of whole chunks on the 2 GPUs for zero-infinity and gemini-static too, not the chunks split across them as ZeRO-3 and Gemini do (--layout policy plans them so; train replays groups only)" \
  "compare --layout groups says which emulations it keeps in groups" -- $S compare "$T/tt.json" --gpu 400KiB --gpus 2 --layout groups
expect 0 "assumes      PatrickStar's groups of whole chunks on the 2 GPUs for gemini-static too, not the chunks split across them as Gemini does (--layout policy plans it so; train replays groups only)" \
  "plan keeps groups by default (train replays them), and says so of an emulation" -- $S plan "$T/tt.json" --gpu 400KiB --gpus 2 --policy gemini-static -o "$T/tg.json"
expect 0 "tg.json: policy gemini-static, chunk size 8,192 elements split across 2 ranks (4,096 elements, 16.00 KiB a rank's shard of the param chunk), 6 chunks per list" \
  "plan --layout policy: Gemini's in shards" -- $S plan "$T/tt.json" --gpu 400KiB --gpus 2 --policy gemini-static --layout policy -o "$T/tg.json"
expect 0 "tg.json: policy stowage, chunk size 8,192 elements (32.00 KiB per param chunk), 6 chunks per list" \
  "plan --layout policy: stowage's in groups" -- $S plan "$T/tt.json" --gpu 400KiB --gpus 2 --layout policy -o "$T/tg.json"
expect 0 "assumes every chunk split across the 2 GPUs and gathered alone, as ZeRO-3 does (each policy's own layout, --layout policy; train replays PatrickStar's groups only: --layout groups)" \
  "minmem of zero-infinity plans ZeRO-3's layout by default, and says so" -- $S minmem "$T/tt.json" --gpus 2 --policy zero-infinity
expect 0 "assumes every chunk split across the 2 GPUs and gathered alone, as Gemini does (each policy's own layout, --layout policy; train replays PatrickStar's groups only: --layout groups)" \
  "capacity of gemini-static plans Gemini's layout by default" -- $S capacity --family gpt --hidden 256 --batch 1 --seq 128 --gpus 2 --cpu 8GiB --policy gemini-static
expect 1 "tightest at op 31 h1.mlp.proj.bwd, in PatrickStar's groups: a GPU gathers a group of 16 whole chunks for each use; --layout shards splits every chunk across the GPUs instead, as ZeRO-3 does, which train does not replay)" \
  "a budget the groups' gathers cannot fit names the layout that gathers less" -- $S plan "$T/tt.json" --gpu 400KiB --gpus 8 --nodes 2 --hw A100-SXM4-80GB -o "$T/x.json"
expect 0 "host         32.00 GiB (0 B of chunks, 32.00 GiB for the ranks' processes) of 2.00 TiB" \
  "the default host memory is the profile's on each node" -- $S plan "$T/tt.json" --gpu 2MiB --gpus 8 --nodes 2 --hw A100-SXM4-80GB -o "$T/x.json"
# 400 narrow blocks on 1,024 GPUs: the search's smallest size would split 2,002 chunks into more
# shards than a layout holds; it goes on to a larger one, and a size given so is refused
printf '{"model_type":"gpt2","n_layer":400,"n_embd":64,"n_head":2,"vocab_size":64,"n_positions":64}' > "$T/deep.json"
$S synth --model-config "$T/deep.json" --batch 1 --seq 64 --hw A100-SXM4-80GB -o "$T/deep-t.json" > /dev/null
expect 0 "split across 1024 ranks" "a searched size with too many shards is passed over" -- $S plan "$T/deep-t.json" --gpu 8GiB --gpus 8 --nodes 128 --cpu 4TiB --hw A100-SXM4-80GB --layout shards --policy zero-infinity -o "$T/deep-p.json"
expect 1 "2002 chunks of 16384 elements, each split into 1024 shards, are more than the 1048576 chunks a layout holds: use a larger chunk size" \
  "a given size with too many shards is refused" -- $S plan "$T/deep-t.json" --gpu 8GiB --gpus 8 --nodes 128 --cpu 4TiB --hw A100-SXM4-80GB --layout shards --policy zero-infinity --chunk-size 16384 -o "$T/deep-p.json"
expect 2 "plan: --layout shards: one GPU has no ranks to share its chunks among (give --gpus)" "--layout shards on one GPU" -- $S plan "$T/tt.json" --gpu 400KiB --layout shards -o "$T/x.json"
expect 2 "--layout: 'rows' is not one of groups, shards, policy" "--layout of another name" -- $S plan "$T/tt.json" --gpu 400KiB --gpus 2 --layout rows -o "$T/x.json"
expect 0 "lists        param 4 B x 34,176; master 4 B, momentum 2 B, variance 2 B x 34,176: 12 B a parameter" \
  "plan --optimizer-state bf16: the moments two bytes each" -- $S plan "$T/tt.json" --gpu 400KiB --optimizer-state bf16 -o "$T/tb.json"
expect 0 "is sound for" "the plan of bf16 moments checks against the fp32 trace" -- $S check "$T/tb.json" "$T/tt.json"
$S train $M --steps 3 --optimizer-state bf16 | grep "^step" | sed 's/ *[0-9]* tokens.*//' > "$T/tb-prof.txt" &&
  $S train $M --steps 3 --plan "$T/tb.json" | grep "^step" | sed 's/ *[0-9]* tokens.*//' > "$T/tb-replay.txt" &&
  [ "$(grep -c "^step    [123]  loss 5\.[0-9]" "$T/tb-replay.txt")" = 3 ] && cmp -s "$T/tb-prof.txt" "$T/tb-replay.txt"
tap_result $? "the bf16-moment plan replays bitwise the losses of training with --optimizer-state bf16" \
  "$(cat "$T/tb-prof.txt" "$T/tb-replay.txt")"
expect 2 "train: --optimizer-state fp32, and $T/tb.json keeps Adam's moments in bf16: plan again with --optimizer-state fp32, or leave the option out" \
  "train --optimizer-state against the plan's" -- $S train $M --steps 1 --plan "$T/tb.json" --optimizer-state fp32
expect 0 "resumed: $T/c.ckpt holds Adam's moments in fp32, this run keeps them in bf16: rounded to the nearest bf16" \
  "resuming fp32 moments into bf16 ones says so" -- $S train $M --steps 4 --optimizer-state bf16 --resume "$T/c.ckpt"
expect 2 "--optimizer-state: 'fp16' is not one of fp32, bf16" "an unknown --optimizer-state" -- \
  $S plan "$T/tt.json" --gpu 400KiB --optimizer-state fp16 -o "$T/x.json"
expect 0 "activations  2 of 2 blocks recomputed in backward (h0 .. h1), the others kept" \
  "plan --activations recompute" -- $S plan "$T/tt.json" --gpu 400KiB --activations recompute -o "$T/tr.json"
expect 0 "is sound for" "the recomputing plan checks against the trace as recorded" -- $S check "$T/tr.json" "$T/tt.json"
$S simulate "$T/tr.json" "$T/tt.json" --chrome-trace "$T/tr-chrome.json" > /dev/null &&
  grep -q '"name":"h0.ln_1.recompute"' "$T/tr-chrome.json"
tap_result $? "simulate draws the recomputation on the compute engine"
expect 0 "activations  2 of 2 blocks offloaded to the host (h0 .. h1), the others kept" \
  "plan --activations offload" -- $S plan "$T/tt.json" --gpu 400KiB --activations offload -o "$T/to.json"
expect 0 "is sound for" "the offloading plan checks against the trace as recorded" -- $S check "$T/to.json" "$T/tt.json"
$S simulate "$T/to.json" "$T/tt.json" --chrome-trace "$T/to-chrome.json" > /dev/null &&
  grep -q '"name":"activations h0","cat":"offload"' "$T/to-chrome.json" &&
  grep -q '"name":"activations h1","cat":"restore"' "$T/to-chrome.json"
tap_result $? "simulate draws the activations' copies on the copy engines"
# the least host budget (bytes) at which TRACE plans at GPU with the options after them: none at
# 2 GiB (the process alone), one at 2 GiB + 64 MiB; bisected, since where the edge lies follows
# the trace's measured times (a budget under the unbounded plan's bytes may still fit another
# chunk size without storage)
least_cpu() {
  lc_trace=$1 lc_gpu=$2
  shift 2
  lc_lo=2147483648 lc_hi=$((2147483648 + 67108864))
  while [ $((lc_hi - lc_lo)) -gt 1 ]; do
    lc_mid=$(((lc_lo + lc_hi) / 2))
    if $S plan "$lc_trace" --gpu "$lc_gpu" --cpu "$lc_mid" --hw RTX4090-24GB-PCIe4-2xNVMe \
      --activations keep "$@" -o "$T/bisect.json" > /dev/null 2>&1; then
      lc_hi=$lc_mid
    else
      lc_lo=$lc_mid
    fi
  done
  echo "$lc_hi"
}
CPU_TT=$(($(least_cpu "$T/tt.json" 400KiB) - 1)) # one byte short of every plan without storage
$S plan "$T/tt.json" --gpu 400KiB --cpu $CPU_TT --hw RTX4090-24GB-PCIe4-2xNVMe --nvme 1GiB \
  --activations keep -o "$T/tn.json" > "$T/tn.log" && grep -q "^  storage      " "$T/tn.log"
tap_result $? "plan with optimizer state on a storage tier (--nvme)" "$(cat "$T/tn.log")"
grep -q "^  assumes      the storage tier's checksum of each region it writes and reads back costs nothing (the profile did not measure it: " "$T/tn.log"
tap_result $? "a storage plan on a profile without the checksum's rate says it assumes it free" "$(cat "$T/tn.log")"
grep -q '"optimizer":"cpu-storage"' "$T/tn.json" && $S check "$T/tn.json" "$T/tt.json" > "$T/tn-check.txt" &&
  stored=$(sed -n 's/^  storage *\([0-9.]* [KMG]*i*B\) of optimizer state.*/\1/p' "$T/tn.log") &&
  grep -q "; host 2.00 GiB of 2.00 GiB; storage $stored of 1.00 GiB; moves " "$T/tn-check.txt"
tap_result $? "the storage plan places chunks' state there, checks, and check says the storage it uses" "$(cat "$T/tn-check.txt")"
$S plan "$T/tt.json" --gpu 400KiB --cpu $CPU_TT --hw RTX4090-24GB-PCIe4-2xNVMe --nvme 1GiB \
  --activations keep --nvme-devices 4 -o "$T/tn4.json" > "$T/tn4.log"
# the storage's busy time in microseconds, whatever unit the plan prints it in
busy_us() {
  sed -n "s/.*($1 drives), read and written each step (storage busy \([0-9.]*\) \([um]*s\)).*/\1 \2/p" "$2" |
    awk '{ print $1 * ($2 == "ms" ? 1000 : $2 == "s" ? 1000000 : 1) }'
}
two=$(busy_us 2 "$T/tn.log")
four=$(busy_us 4 "$T/tn4.log")
[ -n "$two" ] && [ -n "$four" ] && awk -v a="$two" -v b="$four" 'BEGIN { exit !(b < a) }'
tap_result $? "--nvme-devices 4 stripes the storage over four drives: less busy than the profile's two" "$(cat "$T/tn.log" "$T/tn4.log")"
expect 2 "plan: --nvme-devices goes with --nvme SIZE; without it the option would be ignored" \
  "--nvme-devices without --nvme" -- $S plan "$T/tt.json" --gpu 400KiB --nvme-devices 4 -o "$T/x.json"
$S simulate "$T/tn.json" "$T/tt.json" --chrome-trace "$T/tn-chrome.json" > "$T/tn-sim.txt" &&
  grep -q "^storage  .* optimizer state read and written" "$T/tn-sim.txt" &&
  grep -q '"name":"storage reads"' "$T/tn-chrome.json" &&
  grep -q '"cat":"state read"' "$T/tn-chrome.json" && grep -q '"cat":"state write"' "$T/tn-chrome.json"
tap_result $? "simulate draws the storage's reads and writes of optimizer state" "$(cat "$T/tn-sim.txt")"
expect 1 "chunks on the storage tier (\"cpu-storage\"): name a directory on it for their file (train --nvme-dir DIR" \
  "train refuses a plan with state on storage without a directory for it" -- $S train $M --steps 1 --plan "$T/tn.json"
expect 1 "storage directory $T/gone: No such file or directory" "train --nvme-dir on a missing directory" -- \
  $S train $M --steps 1 --plan "$T/tn.json" --nvme-dir "$T/gone"
expect 2 "--nvme-dir goes with --plan" "--nvme-dir without a plan" -- $S train $M --steps 1 --nvme-dir "$T/nvme"
# less host memory, eight blocks: chunks' 16-bit parameters on storage too ("storage"), trained
M8="--layers 8 --width 32 --heads 4 --context 16 --batch 2 --data $D"
$S train $M8 --steps 2 --profile "$T/t8.json" > /dev/null &&
  $S plan "$T/t8.json" --gpu 1MiB --cpu "$(least_cpu "$T/t8.json" 1MiB --nvme 1GiB)" --hw RTX4090-24GB-PCIe4-2xNVMe --nvme 1GiB \
    --activations keep -o "$T/tp8.json" > "$T/tp8.log" &&
  grep -q "of optimizer state and 16-bit parameters of 1.00 GiB on the storage tier" "$T/tp8.log" &&
  $S simulate "$T/tp8.json" "$T/t8.json" > "$T/tp8-sim.txt" &&
  moved=$(sed -n 's/^storage .* read and written: \(.*\) read, \(.*\) written$/storage read \1  written \2/p' "$T/tp8-sim.txt") &&
  $S train $M8 --steps 3 --plan "$T/tp8.json" --nvme-dir "$T/nvme" > "$T/tp8-train.txt" &&
  $S train $M8 --steps 3 > "$T/t8-ref.txt" &&
  grep -q "^storage tier: optimizer state and parameters in $T/nvme through " "$T/tp8-train.txt" &&
  [ -n "$moved" ] && grep "^step    3 " "$T/tp8-train.txt" | grep -q "$moved\$" &&
  [ "$(grep '^step' "$T/tp8-train.txt" | cut -c1-24)" = "$(grep '^step' "$T/t8-ref.txt" | cut -c1-24)" ] &&
  [ -z "$(ls "$T/nvme")" ]
tap_result $? "a plan with parameters on storage trains bitwise the losses of one without, moving the simulation's storage bytes" \
  "$(cat "$T/tp8.log" "$T/tp8-sim.txt" "$T/tp8-train.txt" "$T/t8-ref.txt")"
out=$($S train $M8 --steps 1 --plan "$T/tp8.json" 2>&1)
[ $? = 1 ] && echo "$out" |
  grep -Eq '^stowage: the plan keeps the parameters and optimizer state of [0-9]+ chunks on the storage tier \("storage"\): name a directory on it for their file \(train --nvme-dir DIR'
tap_result $? "train refuses a plan with parameters on storage without a directory for them" "$out"
expect 2 "plan: --nvme: hardware profile A100-80GB-PCIe4 has no storage tier: measure one with \`stowage probe --nvme DIR\`" \
  "--nvme on a profile without storage" -- $S plan "$T/tt.json" --gpu 400KiB --hw A100-80GB-PCIe4 --nvme 1GiB -o "$T/x.json"
expect 2 "the profile RTX4090-24GB-PCIe4-2xNVMe's storage holds" "--nvme beyond the profile's storage" -- \
  $S plan "$T/tt.json" --gpu 400KiB --hw RTX4090-24GB-PCIe4-2xNVMe --nvme 8PiB -o "$T/x.json"
# --storage: a shipped drive given to any profile; two of nvme-gen4 are the 4090 workstation's
$S plan "$T/tt.json" --gpu 400KiB --cpu $CPU_TT --hw RTX4090-24GB-PCIe4 --storage nvme-gen4 \
  --nvme-devices 2 --nvme 1GiB --activations keep -o "$T/tg4.json" > "$T/tg4.log" &&
  grep -q "^  hardware     RTX4090-24GB-PCIe4: shipped profile (its sources: docs/hardware.md); its storage from the shipped storage preset nvme-gen4$" "$T/tg4.log" &&
  [ "$(grep -E '^  (storage|iteration|host) ' "$T/tg4.log")" = "$(grep -E '^  (storage|iteration|host) ' "$T/tn.log")" ] &&
  grep -q "(2 drives)" "$T/tg4.log" && $S check "$T/tg4.json" "$T/tt.json" > /dev/null
tap_result $? "plan --storage nvme-gen4 --nvme-devices 2 on the 4090 plans as the 4090 workstation's profile" "$(cat "$T/tg4.log" "$T/tn.log")"
expect 0 "storage      " "--storage gives a profile without storage a tier" -- $S plan "$T/tt.json" --gpu 400KiB \
  --cpu $CPU_TT --hw A100-80GB-PCIe4 --storage nvme-gen5 --nvme 1GiB --activations keep -o "$T/x.json"
rm -f "$T/x.json"
expect 2 "plan: --storage goes with --nvme SIZE; without it the option would be ignored" "--storage without --nvme" -- \
  $S plan "$T/tt.json" --gpu 400KiB --hw A100-80GB-PCIe4 --storage nvme-gen4 -o "$T/x.json"
expect 2 "plan: --storage: unknown storage preset 'floppy': expected a storage preset or hardware profile file (.json) or one of: nvme-gen3, nvme-gen4, nvme-gen5" \
  "an unknown storage preset" -- $S plan "$T/tt.json" --gpu 400KiB --nvme 1GiB --storage floppy -o "$T/x.json"
expect 1 "plan: --storage: $F/hw/my-gpu.json: \$: a hardware profile without a \"storage\" section" \
  "--storage naming a profile without storage" -- $S plan "$T/tt.json" --gpu 400KiB --nvme 1GiB --storage "$F/hw/my-gpu.json" -o "$T/x.json"
[ ! -e "$T/x.json" ]
tap_result $? "a refused --storage writes no plan"
expect 2 "--activations: 'sometimes' is not one of keep, recompute, offload, auto" "an unknown --activations" -- $S plan "$T/tt.json" --gpu 400KiB --activations sometimes -o "$T/x.json"
expect 2 "--activations goes with --policy stowage" "--activations with a baseline policy" -- $S plan "$T/tt.json" --gpu 400KiB --policy lru --activations auto -o "$T/x.json"
expect 0 "--activations auto: the trace has no blocks" "--activations on a trace without blocks says so" -- $S plan "$F/traces/mini.json" --gpu 1GiB --activations auto -o "$T/x.json"
out=$($S plan "$F/traces/mini.json" --gpu 1GiB -o "$T/x.json" 2>&1)
echo "$out" | grep -q "^$T/x.json: policy stowage" && ! echo "$out" | grep -q "activations"
tap_result $? "the default --activations says nothing of a trace whose blocks are not its to decide" "$out"
grep -q '"version": 2,' "$T/tt.json" && grep -q '{"name":"h0","forward":\[1,8\],"backward":\[' "$T/tt.json" &&
  grep -q '{"name":"h1","forward":\[9,16\],' "$T/tt.json"
tap_result $? "the trainer's trace has a block per layer, over its forward ops"
expect 0 "blocks                 2: " "inspect shows the trainer's blocks" -- $S inspect "$T/tt.json"
$S train $M --steps 3 --plan "$T/tp.json" > "$T/rep.log"
$S train $M --steps 3 | grep '^step' | awk '{print $4}' > "$T/a"
grep '^step' "$T/rep.log" | awk '{print $4}' > "$T/b"
cmp -s "$T/a" "$T/b"; tap_result $? "replaying the plan gives bitwise the same losses" "$(paste "$T/a" "$T/b")"
# what a prediction assumes: the profile and where it came from, the device the trace's times
# were measured on where it is another, what bounds the plan; no GPU MFU from a CPU's times. A
# CPU's times are re-timed for the GPU's profile (the iteration's FLOPs: 6 x 34,176 parameters x
# 32 tokens and 12 x 2 layers x 32 wide x 16 positions x 32 tokens, 6.96 MFLOP, at 60% of the
# A100's fp32 19.5 TFLOP/s), unless asked to keep them
out=$($S plan "$T/tt.json" --gpu 400KiB -o "$T/x.json")
echo "$out" | grep -qx "  hardware     A100-80GB-PCIe4: the default: the trace's device, host, has no profile of that name (--hw names one)" &&
  echo "$out" | grep -qx "  assumes      the trace's op times, measured on host, re-timed for A100-80GB-PCIe4: each forward and backward op 10.0 us (a launch) and [0-9.e-]* of its measured time, the iteration's 6.96 MFLOP at 11.7 TFLOP/s (60% of the profile's fp32 19.5) where host measured [0-9.]* [mun]*s; each optimizer step on the GPU from its bytes at the profile's memory bandwidth (--measured-times keeps them as measured); no MFU from them" &&
  echo "$out" | grep -q "^  bound by     [a-zA-Z ()-]*, busy [0-9.]* [mun]*s of the [0-9.]* [mun]*s iteration\$" &&
  grep -q '"op_times":{"scale":[0-9.e-]*,"op_overhead_ns":10000}' "$T/x.json"
tap_result $? "plan names its profile, re-times the host trace's times for it, and says what bounds it" "$out"
# the re-timed plan: every forward and backward op 10 us and its share of the FLOPs, so the
# iteration is at least the 40 ops' launches; kept, the host's (which may be less: a CPU runs
# such small ops faster than a GPU launches them)
ops=$(grep -c '"stage":"\(fwd\|bwd\)"' "$T/tt.json")
re=$($S simulate "$T/x.json" "$T/tt.json" | sed -n 's/.*: \([0-9.]* [mun]*s\) per iteration.*/\1/p')
out=$($S plan "$T/tt.json" --gpu 400KiB --measured-times -o "$T/xm.json")
kept=$($S simulate "$T/xm.json" "$T/tt.json" | sed -n 's/.*: \([0-9.]* [mun]*s\) per iteration.*/\1/p')
echo "$out" | grep -qx "  assumes      the trace's op times as measured on host, not on A100-80GB-PCIe4, which runs them at its own speed: kept as measured (--measured-times; without it they are re-timed for the profile); no MFU from them" &&
  ! grep -q '"op_times"' "$T/xm.json" && $S check "$T/xm.json" "$T/tt.json" > /dev/null &&
  $S check "$T/x.json" "$T/tt.json" > /dev/null &&
  awk -v re="$re" -v kept="$kept" -v ops="$ops" 'function ns(s,  v, u) { split(s, v, " "); u = v[2];
      return v[1] * (u == "s" ? 1e9 : u == "ms" ? 1e6 : u == "us" ? 1e3 : 1) }
    BEGIN { exit !(ops == 40 && ns(re) >= ops * 10000 && ns(re) != ns(kept)) }'
tap_result $? "--measured-times keeps the host's times, said; re-timed, the iteration is at least the launches ($re against $kept kept, $ops ops)" "$out"
# what bounds each plan, in words: simulate's line, compare's and whatif's last column, and the
# records' bound_by (the 12B GPT on 8 A100s: PatrickStar's gathers bind it, stowage's compute)
out=$($S simulate "$T/x.json" "$T/tt.json")
cmp8=$($S compare "$STW_SRCDIR/traces/pstar-12b-b8-s1024-ckpt.json" --gpu 32GiB --gpus 8 --cpu 240GiB --hw A100-80GB-PCIe4)
j8=$($S compare "$STW_SRCDIR/traces/pstar-12b-b8-s1024-ckpt.json" --gpu 32GiB --gpus 8 --cpu 240GiB --hw A100-80GB-PCIe4 --json | tr -d ' \t\n')
echo "$out" | grep -q "^bound by    [a-zA-Z ()-]*, busy [0-9.]* [mun]*s of the [0-9.]* [mun]*s iteration\$" &&
  echo "$cmp8" | grep -q "^stowage  .* yes  *compute\$" &&
  echo "$cmp8" | grep -q "^patrickstar  .* yes  *the collectives\$" &&
  echo "$j8" | grep -q '"policy":"stowage",.*"bound_by":"compute"' &&
  $S simulate "$T/x.json" "$T/tt.json" --json | grep -q '"bound_by": "[a-z_]*"'
tap_result $? "simulate, compare and their records say what bounds each plan" "$out
$cmp8"
# the records say it too: compare's, minmem's and simulate's "op_times", none on the profile's own
a=$($S compare "$T/tt.json" --gpu 400KiB --json | tr -d ' \t\n')
b=$($S minmem "$T/tt.json" --measured-times --json | tr -d ' \t\n')
c=$($S simulate "$T/x.json" "$T/tt.json" --json | tr -d ' \t\n')
d=$($S compare "$TR" --gpu 9GiB --json | tr -d ' \t\n')
echo "$a" | grep -q '"op_times":{"measured_on":"host","retimed":true,"scale":[0-9.e-]*,"op_overhead_ns":10000}' &&
  echo "$b" | grep -q '"op_times":{"measured_on":"host","retimed":false}' &&
  echo "$c" | grep -q '"op_times":{"measured_on":"host","retimed":true,"scale":[0-9.e-]*,"op_overhead_ns":10000}' &&
  ! echo "$d" | grep -q op_times
tap_result $? "compare, minmem and simulate records say how the host trace's times were taken" "$a
$b"
expect 2 "whatif: --measured-times goes with a trace; a model is synthesized for its profile, and timed there" \
  "--measured-times with a synthesized model" -- $S whatif --model gpt2 --gpu 8GiB --measured-times
expect 2 "Unknown option --measured-times" "capacity synthesizes its traces: no --measured-times" -- \
  $S capacity --family gpt --measured-times
out=$($S plan "$TR" --gpu 9GiB --hw a100-80gb-pcie4 -o "$T/x.json")
echo "$out" | grep -qx "  hardware     A100-80GB-PCIe4: shipped profile (its sources: docs/hardware.md)" &&
  ! echo "$out" | grep -q "assumes"
tap_result $? "a synthesized trace on its own shipped profile assumes nothing of another device" "$out"
out=$($S compare "$T/tt.json" --gpu 400KiB)
echo "$out" | grep -q "^assumes the trace's op times, measured on host, re-timed for A100-80GB-PCIe4: " &&
  echo "$out" | grep -q "^stowage  .*  -  *[0-9.]*x  *yes  *[a-zA-Z ()-]*\$"
tap_result $? "compare re-times the host's times, and gives no MFU from them" "$out"
# the storage plan: its chunks' optimizer state in a file under --nvme-dir, read before each CPU
# Adam step and written back behind it, bitwise; the bytes each way the plan's state
$S train $M --steps 3 --plan "$T/tn.json" --nvme-dir "$T/nvme" > "$T/nv.log"
grep '^step' "$T/nv.log" | awk '{print $4}' > "$T/n"
cmp -s "$T/a" "$T/n"; tap_result $? "replaying a plan with state on storage gives bitwise the same losses" "$(paste "$T/a" "$T/n")"
stored=$(sed -n 's/^  storage *\([0-9.]* [KMG]*i*B\) of optimizer state.*/\1/p' "$T/tn.log")
grep -q "^storage tier: optimizer state in $T/nvme through \(io_uring\|threads\)" "$T/nv.log" &&
  [ "$(grep -c "^step .*  storage read $stored  written $stored\$" "$T/nv.log")" = 3 ] &&
  [ -z "$(ls "$T/nvme")" ]
tap_result $? "the storage replay reads and writes the plan's $stored each step, and leaves no file" "$(cat "$T/nv.log")"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  shm=$(mktemp -d /dev/shm/stw-cli.XXXXXX)
  out=$($S train $M --steps 1 --plan "$T/tn.json" --nvme-dir "$shm" 2>&1)
  echo "$out" | grep -q "^storage tier: optimizer state in $shm through .*$shm is on tmpfs: its files are host memory, not storage"
  tap_result $? "train --nvme-dir on tmpfs says its files are host memory" "$out"
  rmdir "$shm"
else
  tap_skip "no writable /dev/shm: the tmpfs storage directory is not tried"
fi
# the recomputing plan: its blocks' activations dropped after their forward and made again before
# their backward, bitwise; the device peak the plan's, the bytes moved the plan's
$S train $M --steps 3 --plan "$T/tr.json" > "$T/rec.log"
grep '^step' "$T/rec.log" | awk '{print $4}' > "$T/c"
cmp -s "$T/a" "$T/c"; tap_result $? "replaying a recomputing plan gives bitwise the same losses" "$(paste "$T/a" "$T/c")"
peak=$($S check "$T/tr.json" "$T/tt.json" | sed -n 's/.*GPU peak \([0-9.]* [KMG]*i*B\) of.*/\1/p')
# the plan's peak: what the replay held, or, where write-backs still in flight held more (a loaded
# machine's slow copies), what it held as the plan counts memory
planned_peak() {
  grep -q "device peak $1 of 400.00 KiB; 0 deviations" "$2" ||
    grep -q "device peak [0-9.]* [KMG]*i*B ($1 as the plan counts it: write-backs in flight held the rest) of 400.00 KiB; 0 deviations" "$2"
}
planned_peak "$peak" "$T/rec.log"
tap_result $? "the recomputing replay peaks where the plan says ($peak), without deviations" "$(tail -2 "$T/rec.log")"
# the offloading plan: its blocks' activations copied to host memory after their forward and back
# before their backward, bitwise; the device peak and the bytes moved the plan's
$S train $M --steps 3 --plan "$T/to.json" > "$T/off.log"
grep '^step' "$T/off.log" | awk '{print $4}' > "$T/o"
cmp -s "$T/a" "$T/o"; tap_result $? "replaying an offloading plan gives bitwise the same losses" "$(paste "$T/a" "$T/o")"
out=$($S check "$T/to.json" "$T/tt.json")
peak=$(echo "$out" | sed -n 's/.*GPU peak \([0-9.]* [KMG]*i*B\) of.*/\1/p')
# each way as the plan moves it: a plan that drops a clean chunk's copy writes back less than it fetches
h2d=$(echo "$out" | sed -n 's/.*moves \([0-9.]* [KMG]*i*B\) H2D.*/\1/p')
d2h=$(echo "$out" | sed -n 's/.*moves .* H2D + \([0-9.]* [KMG]*i*B\) D2H.*/\1/p')
planned_peak "$peak" "$T/off.log" && [ -n "$h2d" ] && [ -n "$d2h" ] &&
  [ "$(grep -c "^step .*H2D $h2d  D2H $d2h\$" "$T/off.log")" = 3 ]
tap_result $? "the offloading replay peaks where the plan says ($peak) and moves its $h2d H2D and $d2h D2H" "$(cat "$T/off.log")"
expect 1 "its trace was recorded for flash attention, and this run has naive attention" \
  "an offloading plan replayed with another attention (other activations) is refused by name" -- \
  $S train $M --steps 1 --attention naive --plan "$T/to.json"
grep -q "device peak .* of 400.00 KiB; 0 deviations" "$T/rep.log"; tap_result $? "the replay stayed in its budget without deviations" "$(tail -1 "$T/rep.log")"
expect 0 "step    4" "resume from a checkpoint" -- $S train $M --steps 1 --resume "$T/c.ckpt"
head -c 100 "$T/c.ckpt" > "$T/bad.ckpt"
expect 1 "not a stowage checkpoint (or truncated)" "resume from a truncated checkpoint" -- $S train $M --steps 1 --resume "$T/bad.ckpt"
expect 1 "the plan was made for another model" "replay a plan made for another model" -- $S train --layers 2 --width 64 --heads 4 --context 16 --batch 2 --data "$D" --steps 1 --plan "$T/tp.json"
$S plan "$T/tt.json" --gpu 400KiB --gpus 2 -o "$T/tp2.json" >/dev/null
expect 1 "the plan is for 2 ranks, and this run has 1: start 2 (mpirun -np 2), or plan for 1 (--gpus 1)" "train refuses a 2-rank plan on one rank" -- $S train $M --steps 1 --plan "$T/tp2.json"
expect 2 "--device: 'tpu' is not one of cpu, cuda" "train on an unknown device" -- $S train $M --steps 1 --device tpu
expect 2 "--precision: 'fp8' is not one of mixed, fp32" "train with an unknown precision" -- $S train $M --steps 1 --precision fp8
expect 0 "trained 2 steps in mixed precision" "train in mixed precision on the CPU" -- $S train $M --steps 2 --precision mixed --profile "$T/tm.json"
grep -q '"dtype":"bf16"' "$T/tm.json"; tap_result $? "the mixed-precision trace has bf16 tensors"
$S train $M --steps 4 --precision mixed | grep '^step' | awk '{print $4}' | tail -n 2 > "$T/m4"
$S train $M --steps 2 --precision mixed --checkpoint "$T/m.ckpt" --quiet > /dev/null
$S train $M --steps 2 --precision mixed --resume "$T/m.ckpt" | grep '^step' | awk '{print $4}' > "$T/m2"
[ -s "$T/m2" ] && cmp -s "$T/m4" "$T/m2"; tap_result $? "mixed precision resumes from a checkpoint with the same losses"
expect 1 "the plan was made for another model" "replay an fp32 plan in mixed precision" -- $S train $M --steps 1 --precision mixed --plan "$T/tp.json"
expect 2 "--attention: 'sparse' is not one of naive, flash" "train with an unknown attention" -- $S train $M --steps 1 --attention sparse
$S train $M --steps 3 --attention flash --profile "$T/tf.json" | grep '^step' | awk '{print $4}' > "$T/f3"
$S train $M --steps 3 --attention naive | grep '^step' | awk '{print $4}' > "$T/n3"
grep -q '"attention": *"flash"' "$T/tf.json" && grep -q '"attention": *"flash"' "$T/tt.json" && [ "$(wc -l < "$T/f3")" = 3 ] &&
  paste "$T/n3" "$T/f3" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * $1) exit 1 }'
tap_result $? "train with flash attention (the default): the losses of naive attention within 1e-5, and the trace says flash" "$(paste "$T/n3" "$T/f3")"
expect 1 "its trace was recorded for flash attention, and this run has naive attention" "replay a flash-attention plan with naive attention" -- $S train $M --steps 1 --attention naive --plan "$T/tp.json"
$S train --width 512 --heads 2 --layers 1 --context 8 --batch 1 --data "$D" --steps 1 --profile "$T/wide.json" > /dev/null 2>&1 && grep -q '"attention": *"naive"' "$T/wide.json"
tap_result $? "heads too wide for flash attention train with naive attention when none is asked for"
expect 1 "flash attention takes heads up to 128 wide, and width 512 over 2 heads makes them 256: use more heads, or naive attention" "flash attention with heads too wide" -- $S train --width 512 --heads 2 --layers 1 --context 8 --batch 1 --data "$D" --steps 1 --attention flash
expect 2 "--verify checksums device memory from the host" "train --device cuda --verify" -- $S train $M --steps 1 --device cuda --verify
expect 1 "no CUDA device" "train --device cuda without a GPU" -- $S train $M --steps 1 --device cuda
expect 1 "cannot read the training text" "train on a missing file" -- $S train $M --data "$T/none.txt" --steps 1
: > "$T/empty.txt"
expect 1 "the training text is empty" "train on an empty file" -- $S train --data "$T/empty.txt" --steps 1
expect 1 "the device budget of 4096 bytes cannot hold" "a device smaller than one op" -- $S train $M --steps 1 --gpu 4KiB
expect 2 "--heads: 3 does not divide the width 32" "heads that do not divide the width" -- $S train --width 32 --heads 3 --steps 1
expect 2 "--profile and --plan exclude each other" "profile and plan at once" -- $S train $M --profile a --plan b
expect 0 "every move checksummed" "train with --verify" -- $S train $M --steps 2 --plan "$T/tp.json" --verify
# training data, checkpoints and runs that go wrong (docs/bad-input.md)
expect 1 "/dev/zero: the training text must be a regular file" "train on /dev/zero" -- $S train $M --data /dev/zero --steps 1
mkfifo "$T/fifo"
expect 1 "the training text must be a regular file" "train on a FIFO" -- $S train $M --data "$T/fifo" --steps 1
expect 1 "/dev/urandom: not a regular file" "resume from /dev/urandom" -- $S train $M --steps 1 --resume /dev/urandom
expect 2 "train: --checkpoint-every goes with --checkpoint" "checkpoint-every without a checkpoint" -- $S train $M --steps 2 --checkpoint-every 1
$S train $M --steps 8 | awk '/^step/{print $2, $4}' > "$T/full.txt"
expect 1 "train: interrupted (SIGINT) after step 3: saved $T/int.bin" "SIGINT saves a checkpoint at the next step" -- env STOWAGE_FAULT_INTERRUPT_AFTER=3 $S train $M --steps 8 --checkpoint "$T/int.bin"
$S train $M --steps 5 --resume "$T/int.bin" | awk '/^step/{print $2, $4}' > "$T/rest.txt"
tail -n 5 "$T/full.txt" | cmp -s - "$T/rest.txt"; tap_result $? "and resuming from it gives the same losses" "$(cat "$T/rest.txt")"
expect 1 "interrupted (SIGINT) after step 2; nothing saved (give --checkpoint to keep the state)" "SIGINT without a checkpoint" -- env STOWAGE_FAULT_INTERRUPT_AFTER=2 $S train $M --steps 8
$S train $M --steps 2 --checkpoint "$T/good.bin" > /dev/null
cp "$T/good.bin" "$T/good-copy.bin"
expect 1 "the loss is inf: training diverged" "a diverging run stops" -- $S train $M --steps 20 --lr 9 --resume "$T/good.bin" --checkpoint "$T/good.bin"
cmp -s "$T/good.bin" "$T/good-copy.bin"; tap_result $? "and does not save its state over the good checkpoint"
expect 1 "the loss is inf: training diverged" "a diverging run with periodic checkpoints stops" -- $S train $M --steps 20 --lr 9 --resume "$T/good.bin" --checkpoint "$T/good.bin" --checkpoint-every 1
expect 1 "step 4: the loss is inf: training diverged (lower the learning rate); the model state of step 3 is kept" "its last checkpoint is the last finite state, step 3, and loads" -- $S train $M --steps 1 --resume "$T/good.bin" --lr 9

# a budget the naive attention's T x T matrices overflow: said, with what else fits
expect 1 "cannot hold 16777216 more bytes: 7045120 are taken by this op's chunks and by activations (the naive attention keeps two T x T matrices a head in every layer: --attention flash keeps one value a row, or give --gpu more)" \
  "the naive attention overflowing the device says what else fits" -- $S train --layers 1 --width 64 --heads 2 --context 512 --batch 8 --data "$D" --steps 1 --attention naive --gpu 16MiB
# a plan replays only what its trace was recorded for, on a device at least its budget
expect 1 "the plan was made for another configuration: its trace was recorded for batch 2, heads 4, key/value heads 4, and this run has batch 8, heads 8, key/value heads 8" "replay at another batch and head count" -- $S train --layers 2 --width 32 --heads 8 --context 16 --batch 8 --data "$D" --steps 1 --plan "$T/tp.json"
expect 1 "the device has 204800 bytes, less than the plan's budget of 409600" "replay on a device smaller than the plan's budget" -- $S train $M --steps 1 --plan "$T/tp.json" --gpu 200KiB
# a plan names its trace relative to its own folder: found from anywhere, and said when it is not
mkdir -p "$T/moved"
$S plan "$T/tt.json" --gpu 400KiB -o "$T/moved/p.json" > /dev/null
grep -q '"file":"../tt.json"' "$T/moved/p.json"; tap_result $? "the plan records its trace relative to itself"
expect 0 "0 deviations from the plan" "train finds the plan's trace from another folder" -- sh -c "cd / && $S train $M --steps 1 --plan '$T/moved/p.json'"
cp "$T/moved/p.json" "$T/moved/q.json"; sed -i 's|"file":"../tt.json"|"file":"gone.json"|' "$T/moved/q.json"
expect 1 "q.json names its trace \"gone.json\", looked for as $T/moved/gone.json (give the trace after the plan to use another)" "a plan whose trace is missing" -- $S train $M --steps 1 --plan "$T/moved/q.json"

# profile
E=$F/events
expect 0 "wrote $T/ev.json: 5 ops, 2 tensors from 1 iterations; 1 kernel launches had no GPU record" \
  "profile from a recorded event stream" -- $S profile --events "$E/small.events" -o "$T/ev.json"
expect 0 "is sound" "the profiled trace plans and checks" -- sh -c "$S plan '$T/ev.json' --gpu 1MiB -o '$T/evp.json' && $S check '$T/evp.json' '$T/ev.json'"
expect 1 "pop-without-push.events:5: a range closes that was never opened" "an event stream with a pop too many" -- $S profile --events "$E/pop-without-push.events" -o "$T/x.json"
expect 1 "an NVTX push without a pop" "an event stream with a range left open" -- $S profile --events "$E/unclosed.events" -o "$T/x.json"
expect 1 "recorded no events: it never initialized CUDA" "profile a program that never uses CUDA" -- $S profile -o "$T/x.json" -- true
expect 1 "failed (Child process exited with code 3); no trace written" "profile a program that fails" -- $S profile -o "$T/x.json" -- sh -c "exit 3"
# a second CUDA process of the run (a child, a rank) records to EVENTS.PID: said, kept with
# --keep-events, else removed; the trace is the first process's
mkdir -p "$T/evtmp"
two="cp '$E/small.events' \"\$STOWAGE_EVENTS_OUT\"; echo 'push 1 x' > \"\$STOWAGE_EVENTS_OUT.4242\""
expect 0 "1 other CUDA process of the run recorded events of its own; the trace is the first process's; kept: $T/kept.events.4242" \
  "profile a run of two CUDA processes" -- env TMPDIR="$T/evtmp" $S profile --keep-events "$T/kept.events" -o "$T/two.json" -- sh -c "$two"
cmp -s "$E/small.events" "$T/kept.events" && [ "$(cat "$T/kept.events.4242")" = "push 1 x" ]
tap_result $? "both processes' events are kept, each in its own file"
expect 0 "1 other CUDA process of the run recorded events of its own; the trace is the first process's" \
  "... and without --keep-events" -- env TMPDIR="$T/evtmp" $S profile -o "$T/two.json" -- sh -c "$two"
[ -z "$(ls -A "$T/evtmp")" ]; tap_result $? "and no event file is left behind" "$(ls -A "$T/evtmp")"
expect 1 "profile: --keep-events: $T/no/such/dir/k.events" "a --keep-events that cannot be written fails" -- \
  $S profile --keep-events "$T/no/such/dir/k.events" -o "$T/kk.json" -- sh -c "cp '$E/small.events' \"\$STOWAGE_EVENTS_OUT\""
# NVTX's injection is the same library as CUDA's (it hands NVTX to the process's own CUPTI): a
# libcupti.so of its own would be a second CUPTI in a process that has one (PyTorch)
inj="cp '$E/small.events' \"\$STOWAGE_EVENTS_OUT\"; echo \"\$CUDA_INJECTION64_PATH \$NVTX_INJECTION64_PATH\" > '$T/inj'"
$S profile -o "$T/inj.json" -- sh -c "$inj" > /dev/null 2>&1
read -r cuda_inj nvtx_inj < "$T/inj"
[ -n "$cuda_inj" ] && [ "$cuda_inj" = "$nvtx_inj" ] && nm -D --defined-only "$cuda_inj" | grep -q ' T InitializeInjectionNvtx2$'
tap_result $? "profile names its injection library for NVTX too, and the library takes NVTX's injection" "$(cat "$T/inj")"
expect 2 "give a command after '--', or --events FILE" "profile with nothing to profile" -- $S profile -o "$T/x.json"
expect 2 "--output FILE is required" "profile without an output" -- $S profile --events "$E/small.events"

# a full disk never leaves a half-written output
cp "$T/p.json" "$T/keep-plan.json"
expect 1 "No space left on device" "plan onto a full disk" -- env STOWAGE_FAULT_WRITE=1 $S plan "$TR" --gpu 9GiB -o "$T/keep-plan.json"
cmp -s "$T/p.json" "$T/keep-plan.json"; tap_result $? "the previous plan is untouched"
expect 1 "No space left on device" "synth onto a full disk" -- env STOWAGE_FAULT_WRITE=1 $S synth --model gpt2 --seq 16 -o "$T/full.json"
test ! -e "$T/full.json"; tap_result $? "and nothing was written"

# hardening (docs/bad-input.md): what could not be written to stdout fails
for c in "inspect --json $TR" "models" "simulate $T/p.json $TR --json" "compare $TR --gpu 9GiB --json" "synth --model gpt2 --seq 16 -o -"; do
  # shellcheck disable=SC2086
  expect 1 "cannot write to standard output" "$(echo "$c" | cut -d' ' -f1) onto a full stdout" -- sh -c "$S $c > /dev/full"
done
# an output that is an input
cp "$TR" "$T/in.json"
expect 2 "plan: --output $T/in.json is the trace $T/in.json: writing it would replace what plan reads" "plan over its own trace" -- $S plan "$T/in.json" --gpu 9GiB -o "$T/in.json"
cmp -s "$TR" "$T/in.json"; tap_result $? "and the trace is untouched"
expect 2 "simulate: --svg $T/p.json is the plan" "simulate over its plan" -- $S simulate "$T/p.json" "$TR" --svg "$T/p.json"
expect 2 "whatif: --csv $T/in.json is the trace" "whatif over its trace" -- $S whatif "$T/in.json" --gpu 9GiB --csv "$T/in.json"
expect 2 "train: --checkpoint $T/tp.json is --plan" "train over its plan" -- $S train $M --steps 1 --plan "$T/tp.json" --checkpoint "$T/tp.json"
# options that would be ignored
expect 2 "plan: --gemini-fraction goes with --policy gemini-static" "a fraction without gemini" -- $S plan "$TR" --gpu 9GiB --gemini-fraction 0.5 -o "$T/x.json"
expect 2 "plan: --prefetch-bucket goes with --policy zero-infinity" "a bucket without zero-infinity" -- $S plan "$TR" --gpu 9GiB --prefetch-bucket 1000 -o "$T/x.json"
expect 2 "plan: --objective goes with --policy stowage" "an objective for a baseline" -- $S plan "$TR" --gpu 9GiB --policy lru --objective bytes -o "$T/x.json"
expect 2 "train: --trace goes with --plan" "train --trace without --plan" -- $S train $M --steps 1 --trace "$TR"
expect 2 "train: --chunk-size goes with profiling" "train --chunk-size with a plan" -- $S train $M --steps 1 --plan "$T/tp.json" --chunk-size 1000
expect 2 "capacity: --hidden goes with --family gpt" "capacity --hidden with a zoo family" -- $S capacity --family gpt2 --hidden 1024
expect 2 "profile: --nvtx-domain goes with a command to profile" "profile --nvtx-domain with --events" -- $S profile --events "$E/small.events" --nvtx-domain d -o "$T/x.json"
# one file where another kind is expected
expect 1 "$TR: \$.format: this is a stowage trace (\"stowage-trace\"), not a stowage plan" "check with its arguments swapped" -- $S check "$TR" "$T/p.json"
expect 1 "\$.format: this is a stowage plan (\"stowage-plan\"), not a stowage trace" "inspect of a plan" -- $S inspect "$T/p.json"
# what the formats cannot hold is refused before anything is written
expect 2 "--gpu: '9PiB' is too large: sizes are at most 2^53 bytes (8 PiB)" "a budget beyond the formats" -- $S plan "$TR" --gpu 9PiB -o "$T/x.json"
expect 2 "the trace of gpt2 at batch 65536 x seq 1024: \$.ops[101].flops: 10360904226963456 is more than the format's limit of 2^53" "synth beyond the trace format" -- $S synth --model gpt2 --batch 65536 -o "$T/huge.json"
test ! -e "$T/huge.json"; tap_result $? "and no trace was written"

tap_done
