"""The CLI and Python asked the same: a table of requests, valid and invalid, fed to `stowage`
and to the package. Each answer must be the same record (`--json` against the function's return)
or the same refusal, word for word (the CLI's "stowage: " aside). Skips without the CLI
($STOWAGE)."""
import json
import os
import subprocess
import tempfile
import unittest

import stowage

SRC = os.environ.get("STW_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(SRC, "tests", "fixtures")
MINI = os.path.join(FIX, "traces", "mini.json")
MINI_ON_HOST = os.path.join(FIX, "traces", "mini-on-host.json")  # mini.json measured on the host
GPT2 = os.path.join(SRC, "traces", "gpt2-b8-s1024.json")
CLI = os.environ.get("STOWAGE")

# (command, the CLI's arguments after the command, Python's keyword arguments); "T" is the
# trace given positionally to both
PLAN = [
    ("plan", ["--gpu", "2240"], dict(gpu=2240)),
    ("plan", ["--gpu", "4KiB", "--policy", "lru"], dict(gpu="4KiB", policy="lru")),
    ("plan", ["--gpu", "4KiB", "--policy", "zero-offload", "--zero-stage", "3"],
     dict(gpu="4KiB", policy="zero-offload", zero_stage=3)),
    ("plan", ["--gpu", "4KiB", "--zero-stage", "3"], dict(gpu="4KiB", zero_stage=3)),
    ("plan", ["--gpu", "4KiB", "--policy", "zero-offload", "--zero-stage", "1"],
     dict(gpu="4KiB", policy="zero-offload", zero_stage=1)),
    ("plan", ["--gpu", "2240", "--activations", "auto"], dict(gpu=2240, activations="auto")),
    ("plan", ["--gpu", "2240", "--nvme", "1GiB"], dict(gpu=2240, nvme="1GiB")),
    ("plan", ["--gpu", "2240", "--nvme", "1GiB", "--hw", "RTX4090-24GB-PCIe4-2xNVMe"],
     dict(gpu=2240, nvme="1GiB", hw="RTX4090-24GB-PCIe4-2xNVMe")),
    ("plan", ["--gpu", "2240", "--nvme", "9PiB", "--hw", "RTX4090-24GB-PCIe4-2xNVMe"],
     dict(gpu=2240, nvme="9PiB", hw="RTX4090-24GB-PCIe4-2xNVMe")),
    ("plan", ["--gpu", "2240", "--nvme", "1GiB", "--hw", "RTX4090-24GB-PCIe4-2xNVMe",
              "--nvme-devices", "4"],
     dict(gpu=2240, nvme="1GiB", hw="RTX4090-24GB-PCIe4-2xNVMe", nvme_devices=4)),
    ("plan", ["--gpu", "2240", "--nvme-devices", "4"], dict(gpu=2240, nvme_devices=4)),
    ("plan", ["--gpu", "2240", "--nvme", "1GiB", "--hw", "A100-80GB-PCIe4", "--storage",
              "nvme-gen5", "--nvme-devices", "4"],
     dict(gpu=2240, nvme="1GiB", hw="A100-80GB-PCIe4", storage="nvme-gen5", nvme_devices=4)),
    ("plan", ["--gpu", "2240", "--storage", "nvme-gen4"], dict(gpu=2240, storage="nvme-gen4")),
    ("plan", ["--gpu", "2240", "--nvme", "1GiB", "--storage", "nvme-gen9"],
     dict(gpu=2240, nvme="1GiB", storage="nvme-gen9")),
    ("plan", ["--gpu", "2240", "--nvme", "1GiB", "--storage", MINI],
     dict(gpu=2240, nvme="1GiB", storage=MINI)),
    ("plan", ["--gpu", "2240", "--nvme", "1GiB", "--hw", "RTX4090-24GB-PCIe4-2xNVMe",
              "--nvme-devices", "0"],
     dict(gpu=2240, nvme="1GiB", hw="RTX4090-24GB-PCIe4-2xNVMe", nvme_devices=0)),
    ("plan", ["--gpu", "2240", "--optimizer-state", "bf16"], dict(gpu=2240, optimizer_state="bf16")),
    ("plan", ["--gpu", "2240", "--pinned", "1KiB"], dict(gpu=2240, pinned="1KiB")),
    ("plan", ["--gpu", "2240", "--pinned", "lots"], dict(gpu=2240, pinned="lots")),
    ("plan", ["--gpu", "2240", "--optimizer-state", "fp16"], dict(gpu=2240, optimizer_state="fp16")),
    ("plan", ["--gpu", "2240", "--activations", "sometimes"],
     dict(gpu=2240, activations="sometimes")),
    ("plan", ["--gpu", "4KiB", "--policy", "lru", "--activations", "recompute"],
     dict(gpu="4KiB", policy="lru", activations="recompute")),
    ("plan", ["--gpu", "4096", "--chunk-size", "1024"], dict(gpu=4096, chunk_size=1024)),
    ("plan", ["--gpu", "4096", "--chunk-size", "big"], dict(gpu=4096, chunk_size="big")),
    ("plan", ["--gpu", "4096", "--chunk-size", "1.5"], dict(gpu=4096, chunk_size=1.5)),
    ("plan", ["--gpu", "4096", "--gpus", "0"], dict(gpu=4096, gpus=0)),
    ("plan", ["--gpu", "4096", "--gpus", "8x"], dict(gpu=4096, gpus="8x")),
    ("plan", ["--gpu", "4096", "--gpus", "3000"], dict(gpu=4096, gpus=3000)),
    ("plan", ["--gpu", "4096", "--nodes", "2"], dict(gpu=4096, nodes=2)),
    ("plan", ["--gpu", "4TiB"], dict(gpu="4TiB")),
    ("plan", ["--gpu", "4TiB", "--beyond-device"], dict(gpu="4TiB", beyond_device=True)),
    ("plan", ["--gpu", "0"], dict(gpu=0)),
    ("plan", ["--gpu", "lots"], dict(gpu="lots")),
    ("plan", ["--gpu", "1KiB"], dict(gpu="1KiB")),
    ("plan", ["--gpu", "4096", "--policy", "fastest"], dict(gpu=4096, policy="fastest")),
    ("plan", ["--gpu", "4096", "--objective", "bytes"], dict(gpu=4096, objective="bytes")),
    ("plan", ["--gpu", "4096", "--objective", "bytes", "--policy", "lru"],
     dict(gpu=4096, objective="bytes", policy="lru")),
    ("plan", ["--gpu", "4096", "--gemini-fraction", "0.5"], dict(gpu=4096, gemini_fraction=0.5)),
    ("plan", ["--gpu", "4096", "--policy", "gemini-static", "--gemini-fraction", "0.5"],
     dict(gpu=4096, policy="gemini-static", gemini_fraction=0.5)),
    ("plan", ["--gpu", "4096", "--policy", "gemini-static", "--gemini-fraction", "2"],
     dict(gpu=4096, policy="gemini-static", gemini_fraction=2)),
    ("plan", ["--gpu", "4096", "--margin", "0"], dict(gpu=4096, margin=0)),
    ("plan", ["--gpu", "4096", "--policy", "patrickstar", "--margin", "0.25"],
     dict(gpu=4096, policy="patrickstar", margin=0.25)),
    ("plan", ["--gpu", "4096", "--policy", "patrickstar", "--margin", "-1"],
     dict(gpu=4096, policy="patrickstar", margin=-1)),
    ("plan", ["--gpu", "4096", "--prefetch-bucket", "100"], dict(gpu=4096, prefetch_bucket=100)),
    ("plan", ["--gpu", "4096", "--policy", "zero-infinity", "--prefetch-bucket", "2048"],
     dict(gpu=4096, policy="zero-infinity", prefetch_bucket=2048)),
    ("plan", ["--gpu", "4096", "--hw", "H100-80GB-PCIe5"], dict(gpu=4096, hw="H100-80GB-PCIe5")),
    ("plan", ["--gpu", "4096", "--hw", "TPU"], dict(gpu=4096, hw="TPU")),
    ("plan", ["--gpu", "4096", "--cpu", "1KiB"], dict(gpu=4096, cpu="1KiB")),
    ("plan", ["--gpu", "4096", "--cpu", "-5"], dict(gpu=4096, cpu=-5)),
    ("plan", ["--gpu", "4096", "--reserve", "8KiB"], dict(gpu=4096, reserve="8KiB")),
    ("plan", ["--gpu", "4096", "--oversized"], dict(gpu=4096, oversized=True)),
    ("plan", ["--gpu", "4KiB", "--gpus", "2", "--layout", "shards"],
     dict(gpu="4KiB", gpus=2, layout="shards")),
    ("plan", ["--gpu", "4KiB", "--gpus", "2", "--policy", "zero-infinity", "--layout", "groups"],
     dict(gpu="4KiB", gpus=2, policy="zero-infinity", layout="groups")),
    ("plan", ["--gpu", "4KiB", "--layout", "shards"], dict(gpu="4KiB", layout="shards")),
    ("plan", ["--gpu", "4KiB", "--gpus", "2", "--layout", "rows"],
     dict(gpu="4KiB", gpus=2, layout="rows")),
    ("plan", ["--gpu", "4KiB", "--gpus", "2", "--policy", "gemini-static", "--layout", "policy"],
     dict(gpu="4KiB", gpus=2, policy="gemini-static", layout="policy")),
    ("plan", ["--gpu", "4096", "--gpus", "8", "--nodes", "2", "--hw", "A100-SXM4-80GB"],
     dict(gpu=4096, gpus=8, nodes=2, hw="A100-SXM4-80GB")),
]
SWEEPS = [
    ("compare", ["--gpu", "9GiB"], dict(gpu="9GiB")),
    ("compare", ["--gpu", "4TiB"], dict(gpu="4TiB")),
    ("compare", ["--gpu", "9GiB", "--gpus", "2"], dict(gpu="9GiB", gpus=2)),
    ("compare", ["--gpu", "nine"], dict(gpu="nine")),
    ("compare", ["--gpu", "9GiB", "--gpus", "2", "--layout", "shards"],
     dict(gpu="9GiB", gpus=2, layout="shards")),
    ("compare", ["--gpu", "9GiB", "--layout", "shards"], dict(gpu="9GiB", layout="shards")),
    ("compare", ["--gpu", "9GiB", "--gpus", "2", "--layout", "groups"],
     dict(gpu="9GiB", gpus=2, layout="groups")),
    ("compare", ["--gpu", "9GiB", "--gpus", "2", "--layout", "policy"],
     dict(gpu="9GiB", gpus=2, layout="policy")),
    ("compare", ["--gpu", "1GiB", "--hw", "V100-32GB-PCIe3"], dict(gpu="1GiB", hw="V100-32GB-PCIe3")),
    ("whatif", ["--gpu", "8GiB,12GiB", "--policy", "stowage,lru"],
     dict(gpu="8GiB,12GiB", policy="stowage,lru")),
    ("whatif", ["--gpu", "8GiB..10GiB:1GiB", "--policy", "zero-offload"],
     dict(gpu="8GiB..10GiB:1GiB", policy="zero-offload")),
    ("whatif", ["--gpu", "16GiB..8GiB:1GiB"], dict(gpu="16GiB..8GiB:1GiB")),
    ("whatif", ["--gpu", "8GiB", "--policy", "best"], dict(gpu="8GiB", policy="best")),
    ("whatif", ["--gpu", "8GiB", "--gpus", "2", "--policy", "zero-infinity", "--layout",
                "shards"], dict(gpu="8GiB", gpus=2, policy="zero-infinity", layout="shards")),
    ("whatif", ["--gpu", "8GiB", "--gpus", "2", "--policy", "gemini-static,stowage"],
     dict(gpu="8GiB", gpus=2, policy="gemini-static,stowage")),
    ("whatif", ["--gpu", "8GiB", "--batch", "2"], dict(gpu="8GiB", batch=2)),
    ("whatif", ["--gpu", "8GiB", "--gradients", "host"], dict(gpu="8GiB", gradients="host")),
    ("whatif", ["--gpu", "8GiB", "--chunk-size", "0"], dict(gpu="8GiB", chunk_size=0)),
    ("minmem", [], dict()),
    ("minmem", ["--slowdown", "25%"], dict(slowdown="25%")),
    ("minmem", ["--slowdown", "fast"], dict(slowdown="fast")),
    ("minmem", ["--policy", "patrickstar", "--slowdown", "0"],
     dict(policy="patrickstar", slowdown=0)),
    ("minmem", ["--host", "--gpu", "9GiB"], dict(host=True, gpu="9GiB")),
    ("minmem", ["--host", "--gpu", "1GiB"], dict(host=True, gpu="1GiB")),
    ("minmem", ["--gpu", "9GiB"], dict(gpu="9GiB")),
    ("minmem", ["--host", "--cpu", "8GiB"], dict(host=True, cpu="8GiB")),
]
MODELS = [
    ("whatif", ["--model", "gpt2", "--batch", "2,4", "--seq", "256", "--gpu", "4GiB",
                "--policy", "stowage"],
     dict(model="gpt2", batch=[2, 4], seq=256, gpu="4GiB", policy="stowage")),
    ("whatif", ["--model", "gpt2", "--seq", "99999", "--gpu", "4GiB"],
     dict(model="gpt2", seq=99999, gpu="4GiB")),
    ("whatif", ["--model", "gpt-9", "--gpu", "4GiB"], dict(model="gpt-9", gpu="4GiB")),
    ("whatif", ["--model", "gpt2-xl", "--gpu", "12GiB", "--cpu", "8GiB", "--policy",
                "stowage,zero-infinity", "--hw", "RTX4090-24GB-PCIe4", "--nvme", "100GiB",
                "--storage", "nvme-gen3"],
     dict(model="gpt2-xl", gpu="12GiB", cpu="8GiB", policy=["stowage", "zero-infinity"],
          hw="RTX4090-24GB-PCIe4", nvme="100GiB", storage="nvme-gen3")),
    ("capacity", ["--family", "gpt2", "--hw", "V100-32GB-PCIe3", "--policy", "stowage,lru"],
     dict(family="gpt2", hw="V100-32GB-PCIe3", policy="stowage,lru")),
    ("capacity", ["--family", "gpt2", "--hidden", "2048"], dict(family="gpt2", hidden=2048)),
    ("capacity", ["--family", "ants"], dict(family="ants")),
    ("capacity", ["--family", "gpt2", "--dtype", "bf16", "--hw", "V100-32GB-PCIe3"],
     dict(family="gpt2", dtype="bf16", hw="V100-32GB-PCIe3")),
    ("whatif", ["--model", "gpt2", "--batch", "2", "--seq", "128", "--gpu", "1GiB", "--lora",
                "8", "--lora-targets", "q,v,o"],
     dict(model="gpt2", batch=2, seq=128, gpu="1GiB", lora=8, lora_targets=["q", "v", "o"])),
    ("whatif", ["--model", "gpt2", "--batch", "2", "--seq", "256", "--gpu", "1GiB", "--policy",
                "stowage", "--activations", "auto"],
     dict(model="gpt2", batch=2, seq=256, gpu="1GiB", policy="stowage", activations="auto")),
    ("whatif", ["--model", "gpt2", "--gpu", "1GiB", "--lora-targets", "q"],
     dict(model="gpt2", gpu="1GiB", lora_targets="q")),
    ("capacity", ["--family", "gpt2", "--seq", "128", "--policy", "stowage", "--lora", "4"],
     dict(family="gpt2", seq=128, policy="stowage", lora=4)),
    ("capacity", ["--family", "gpt2", "--lora", "4", "--lora-targets", "gate"],
     dict(family="gpt2", lora=4, lora_targets="gate")),
    ("whatif", ["--model", "gpt2", "--batch", "2", "--seq", "256", "--gpu", "4GiB", "--policy",
                "stowage", "--kernels", "fused"],
     dict(model="gpt2", batch=2, seq=256, gpu="4GiB", policy="stowage", kernels="fused")),
    ("whatif", ["--model", "gpt2", "--gpu", "4GiB", "--kernels", "jit"],
     dict(model="gpt2", gpu="4GiB", kernels="jit")),
    ("capacity", ["--family", "gpt2", "--seq", "128", "--policy", "stowage", "--kernels",
                  "fused"], dict(family="gpt2", seq=128, policy="stowage", kernels="fused")),
    ("whatif", ["--model", "gpt2", "--batch", "2", "--seq", "1024", "--gpu", "2GiB", "--policy",
                "stowage", "--loss", "chunked"],
     dict(model="gpt2", batch=2, seq=1024, gpu="2GiB", policy="stowage", loss="chunked")),
    ("whatif", ["--model", "gpt2", "--gpu", "4GiB", "--loss", "sliced"],
     dict(model="gpt2", gpu="4GiB", loss="sliced")),
    ("capacity", ["--family", "gpt2", "--seq", "128", "--policy", "stowage", "--loss",
                  "chunked"], dict(family="gpt2", seq=128, policy="stowage", loss="chunked")),
    ("whatif", ["--model", "gpt2", "--batch", "2", "--seq", "256", "--gpu", "4GiB", "--policy",
                "stowage", "--optimizer-impl", "foreach"],
     dict(model="gpt2", batch=2, seq=256, gpu="4GiB", policy="stowage", optimizer_impl="foreach")),
    ("whatif", ["--model", "gpt2", "--gpu", "4GiB", "--optimizer-impl", "apex"],
     dict(model="gpt2", gpu="4GiB", optimizer_impl="apex")),
    ("whatif", ["--model", "gpt2", "--batch", "2", "--seq", "256", "--gpu", "8GiB", "--gpus", "2",
                "--policy", "stowage", "--collectives", "blocking"],
     dict(model="gpt2", batch=2, seq=256, gpu="8GiB", gpus=2, policy="stowage",
          collectives="blocking")),
    ("capacity", ["--family", "gpt2", "--seq", "128", "--policy", "stowage", "--optimizer-impl",
                  "for-loop"], dict(family="gpt2", seq=128, policy="stowage",
                                    optimizer_impl="for-loop")),
    ("capacity", ["--family", "gpt2", "--seq", "128", "--gpus", "2", "--policy", "zero-infinity",
                  "--optimizer-impl", "deepspeed", "--sub-group-size", "1000000000000"],
     dict(family="gpt2", seq=128, gpus=2, policy="zero-infinity", optimizer_impl="deepspeed",
          sub_group_size=1000000000000)),
    ("whatif", ["--model", "gpt2", "--seq", "256", "--gpu", "4GiB", "--gpus", "2", "--cpu",
                "1GiB", "--policy", "stowage", "--init", "host-fp32"],
     dict(model="gpt2", seq=256, gpu="4GiB", gpus=2, cpu="1GiB", policy="stowage",
          init="host-fp32")),
    ("whatif", ["--model", "gpt2", "--seq", "256", "--gpu", "4GiB", "--policy", "stowage",
                "--optimizer-impl", "deepspeed", "--reduce-bucket-size", "1000"],
     dict(model="gpt2", seq=256, gpu="4GiB", policy="stowage", optimizer_impl="deepspeed",
          reduce_bucket_size=1000)),
    ("whatif", ["--model", "gpt2", "--seq", "512", "--batch", "4", "--checkpointing",
                "--checkpoints", "host", "--gpu", "2GiB,4GiB", "--policy", "zero-offload"],
     dict(model="gpt2", seq=512, batch=4, checkpointing=True, checkpoints="host",
          gpu="2GiB,4GiB", policy="zero-offload")),
    ("capacity", ["--family", "gpt2", "--seq", "512", "--policy", "zero-offload",
                  "--checkpoints", "host"],
     dict(family="gpt2", seq=512, policy="zero-offload", checkpoints="host")),
]


SYNTH = [
    ("synth", ["--model", "gpt2", "--batch", "2", "--seq", "128"],
     dict(model="gpt2", batch=2, seq=128)),
    ("synth", ["--model", "llama3-8b", "--seq", "4096", "--attention", "flash", "--checkpointing",
               "--loss", "chunked", "--kernels", "fused", "--hw", "RTX4090-24GB-PCIe4"],
     dict(model="llama3-8b", seq=4096, attention="flash", checkpointing=True, loss="chunked",
          kernels="fused", hw="RTX4090-24GB-PCIe4")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--lora", "8", "--lora-targets", "q,v,o",
               "--memory", "40GiB", "--dtype", "fp16"],
     dict(model="gpt2", seq=128, lora=8, lora_targets=["q", "v", "o"], memory="40GiB",
          dtype="fp16")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--freeze", "h.*.attn.*,wte.weight"],
     dict(model="gpt2", seq=128, freeze=["h.*.attn.*", "wte.weight"])),
    ("synth", ["--model", "gpt2", "--loss", "sliced"], dict(model="gpt2", loss="sliced")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--batch", "2", "--micro-steps", "3"],
     dict(model="gpt2", seq=128, batch=2, micro_steps=3)),
    ("synth", ["--model", "gpt2", "--micro-steps", "0"], dict(model="gpt2", micro_steps=0)),
    ("synth", ["--model", "gpt2", "--seq", "128", "--micro-steps", "2", "--gradients", "host"],
     dict(model="gpt2", seq=128, micro_steps=2, gradients="host")),
    ("synth", ["--model", "gpt2", "--seq", "64", "--micro-steps", "3", "--gradients",
               "host-via-device"],
     dict(model="gpt2", seq=64, micro_steps=3, gradients="host-via-device")),
    ("synth", ["--model", "gpt2", "--gradients", "sideways"],
     dict(model="gpt2", gradients="sideways")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--checkpoint-every", "4"],
     dict(model="gpt2", seq=128, checkpoint_every=4)),
    ("synth", ["--model", "gpt2", "--checkpoint-every", "0"],
     dict(model="gpt2", checkpoint_every=0)),
    ("synth", ["--model", "gpt2", "--seq", "128", "--amp", "--dtype", "fp16"],
     dict(model="gpt2", seq=128, amp=True, dtype="fp16")),
    ("synth", ["--model", "gpt2", "--amp", "--dtype", "fp32"],
     dict(model="gpt2", amp=True, dtype="fp32")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--amp", "--dtype", "fp16", "--optimizer-impl",
               "for-loop"], dict(model="gpt2", seq=128, amp=True, dtype="fp16",
                                 optimizer_impl="for-loop")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--optimizer-impl", "deepspeed"],
     dict(model="gpt2", seq=128, optimizer_impl="deepspeed")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--optimizer-impl", "deepspeed",
               "--reduce-bucket-size", "200000000", "--sub-group-size", "1000000000000"],
     dict(model="gpt2", seq=128, optimizer_impl="deepspeed", reduce_bucket_size=200000000,
          sub_group_size=1000000000000)),
    ("synth", ["--model", "gpt2", "--sub-group-size", "1000"],
     dict(model="gpt2", sub_group_size=1000)),
    ("synth", ["--model", "gpt2", "--optimizer-impl", "deepspeed", "--reduce-bucket-size", "0"],
     dict(model="gpt2", optimizer_impl="deepspeed", reduce_bucket_size=0)),
    ("synth", ["--model", "gpt2", "--seq", "128", "--dtype", "fp16", "--loss", "native"],
     dict(model="gpt2", seq=128, dtype="fp16", loss="native")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--amp", "--dtype", "fp16", "--loss", "native"],
     dict(model="gpt2", seq=128, amp=True, dtype="fp16", loss="native")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--init", "host-fp32"],
     dict(model="gpt2", seq=128, init="host-fp32")),
    ("synth", ["--model", "gpt2", "--init", "lazy"], dict(model="gpt2", init="lazy")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--checkpointing", "--checkpoints", "host"],
     dict(model="gpt2", seq=128, checkpointing=True, checkpoints="host")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--checkpoints", "host"],
     dict(model="gpt2", seq=128, checkpoints="host")),
    ("synth", ["--model", "gpt2", "--checkpointing", "--checkpoints", "disk"],
     dict(model="gpt2", checkpointing=True, checkpoints="disk")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--collectives", "blocking"],
     dict(model="gpt2", seq=128, collectives="blocking")),
    ("synth", ["--model", "gpt2", "--collectives", "sometimes"],
     dict(model="gpt2", collectives="sometimes")),
    ("synth", ["--model", "gpt2", "--optimizer-impl", "apex"],
     dict(model="gpt2", optimizer_impl="apex")),
    ("synth", ["--model", "gpt2", "--seq", "2048"], dict(model="gpt2", seq=2048)),
    ("synth", ["--model", "gpt5"], dict(model="gpt5")),
    ("synth", ["--model", "gpt2", "--seq", "128", "--hw", "V100-32GB-PCIe3"],
     dict(model="gpt2", seq=128, hw="V100-32GB-PCIe3")),  # fp16 there, no bf16
    ("synth", ["--model", "gpt2", "--hw", "V100-32GB-PCIe3", "--dtype", "bf16"],
     dict(model="gpt2", hw="V100-32GB-PCIe3", dtype="bf16")),
    ("synth", ["--model", "gpt2", "--freeze", "head*"], dict(model="gpt2", freeze="head*")),
    ("synth", ["--model", "gpt2", "--memory", "40X"], dict(model="gpt2", memory="40X")),
]


# a trace measured on a CPU: re-timed for the GPU's profile, or kept as measured when asked
CPU_TRACE = [
    ("plan", ["--gpu", "2240"], dict(gpu=2240)),
    ("plan", ["--gpu", "2240", "--measured-times"], dict(gpu=2240, measured_times=True)),
    ("compare", ["--gpu", "2240"], dict(gpu=2240)),
    ("compare", ["--gpu", "2240", "--measured-times"], dict(gpu=2240, measured_times=True)),
    ("minmem", ["--measured-times"], dict(measured_times=True)),
    ("whatif", ["--gpu", "2240,4096", "--measured-times"],
     dict(gpu="2240,4096", measured_times=True)),
]


PROBE_REFUSALS = [
    ("probe", ["--device", "tpu"], dict(device="tpu")),
    ("probe", ["--base", "TPU"], dict(base="TPU")),
    ("probe", ["--name", "", "-o", "/dev/null"], dict(name="")),
    ("probe", ["--collectives"], dict(collectives=True)),
    ("probe", ["--nvme-depth", "8"], dict(nvme_depth=8)),
    ("probe", ["--nvme", "/nonexistent/stowage"], dict(nvme="/nonexistent/stowage")),
    ("probe", ["--nvme", "/tmp", "--nvme-depth", "0"], dict(nvme="/tmp", nvme_depth=0)),
]


def shape(v):
    """V's members and kinds, not its measured values (a number is a number: JSON writes a
    measured 5.0 as 5, which reads back as an int)."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(x) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return "number"
    return type(v).__name__


def run_cli(command, trace, args):
    """(record or None, refusal or None) of `stowage COMMAND [TRACE] ARGS`."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "p.json")
        extra = ["-o", out] if command in ("plan", "synth") else ["--json"]
        p = subprocess.run([CLI, command] + ([trace] if trace else []) + args + extra,
                           capture_output=True, text=True)
        if p.returncode != 0:
            return None, p.stderr.strip().removeprefix("stowage: ")
        if command in ("plan", "synth"):
            with open(out) as f:
                return json.load(f), None
        return json.loads(p.stdout), None


def run_python(command, trace, kwargs):
    """(record or None, refusal or None) of stowage.COMMAND on the same request."""
    try:
        if command == "plan":
            t = stowage.Trace.load(trace)
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "p.json")
                stowage.plan(t, **kwargs).save(out, t)
                with open(out) as f:
                    return json.load(f), None
        if command == "capacity":
            return stowage.capacity(**kwargs), None
        if command == "synth":
            return stowage.synth(**kwargs).json(), None
        if command == "probe":
            return stowage.probe(**kwargs), None
        if command == "whatif" and trace is None:
            return stowage.whatif(**kwargs), None
        t = stowage.Trace.load(trace)
        return getattr(stowage, command)(t, **kwargs), None
    except stowage.StowageError as e:
        return None, str(e)


def comparable(command, record):
    """RECORD less what names the files each side wrote or read."""
    if record is not None and command == "plan":
        record["trace"].pop("file", None)
    if isinstance(record, dict):
        record.pop("trace", None)
        if command == "synth":  # when and by what it was written
            record.pop("source", None)
    return record


@unittest.skipUnless(CLI, "the CLI ($STOWAGE) is not given")
class TestParity(unittest.TestCase):
    def check(self, cases, trace):
        for command, args, kwargs in cases:
            with self.subTest(command=command, args=args):
                cli_record, cli_refusal = run_cli(command, trace, args)
                py_record, py_refusal = run_python(command, trace, kwargs)
                self.assertEqual(py_refusal, cli_refusal)
                self.assertEqual(comparable(command, py_record), comparable(command, cli_record))

    def test_the_table_is_large(self):
        self.assertGreaterEqual(len(PLAN) + len(SWEEPS) + len(MODELS), 40)

    def test_plan(self):
        self.check(PLAN, MINI)

    def test_compare_whatif_minmem(self):
        self.check(SWEEPS, GPT2)

    def test_cpu_trace(self):
        self.check(CPU_TRACE, MINI_ON_HOST)

    def test_models(self):
        self.check(MODELS, None)

    def test_synth(self):
        """stowage.synth: the CLI's trace, member for member (its source block aside), and its
        refusals word for word."""
        self.check(SYNTH, None)

    def test_probe(self):
        """A probe's refusals word for word; its record the same members and kinds, the parts of
        the profile it does not measure the same values."""
        self.check(PROBE_REFUSALS, None)
        cli, _ = run_cli("probe", None, ["--device", "host"])
        py, _ = run_python("probe", None, dict(device="host"))

        def measured_only(record):
            """RECORD without copy_interference, which a profile holds only where the probe
            measured the copies slowing its cores (on a loaded machine, one probe may and the
            other not)."""
            if isinstance(record, dict):
                return {k: measured_only(v) for k, v in record.items()
                        if k != "copy_interference"}
            return record
        self.assertEqual(shape(measured_only(py)), shape(measured_only(cli)))
        for key in ("format", "version", "name"):
            self.assertEqual(py["profile"][key], cli["profile"][key])
        self.assertEqual(py["profile"]["gpu"]["model"], "stowage host backend (emulated device)")
        self.assertEqual(len(py["device"]["copies"]), 4)

    def test_refusals_and_answers_both_occur(self):
        """The table holds both kinds: it cannot pass by refusing everything."""
        answers = [run_python(c, MINI if c == "plan" else GPT2 if c != "capacity" else None, k)
                   for c, _, k in PLAN[:4] + SWEEPS[:4]]
        self.assertEqual([r is not None for r, _ in answers],
                         [True, True, True, False, True, False, True, False])


if __name__ == "__main__":
    unittest.main()
