#!/usr/bin/env python3
"""make-pytorch-trace.py — a fresh PyTorch profile of a small GPT-2 for stowage import's tests.

Run by hand (never by CI) with CPU PyTorch and transformers from PyPI:

    python3 -m venv /tmp/pt && /tmp/pt/bin/pip install torch transformers
    /tmp/pt/bin/python tests/make-pytorch-trace.py tests/fixtures/pytorch/gpt2-small

It writes PREFIX-kineto.json.gz (torch.profiler with record_shapes, profile_memory, with_modules
and with_stack, so that nn.Module forwards are events), PREFIX-et.json.gz (the
ExecutionTraceObserver of the same steps) and PREFIX-timeline.raw.json.gz (the memory timeline),
for a transformers GPT2LMHeadModel of 2 layers, width 64, 4 heads, vocab 256, 64 positions (the
head tied to the embedding, as GPT-2's), AdamW (foreach=False), batch 2 x 32 tokens, on the CPU,
4 steps (wait 1, warmup 1, active 2). The parameter count the tests expect is the model's own,
sum(p.numel() for p in model.parameters()), printed at the end: 120576.

The committed fixture was made with torch 2.15.0 (the PyPI wheel, on the CPU) and transformers
5.24.0.
"""
import gzip
import os
import sys

import torch
from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule
from transformers import GPT2Config, GPT2LMHeadModel


def main(prefix):
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randint(0, 256, (2, 32))
    et = ExecutionTraceObserver()
    et.register_callback(prefix + "-et.json")
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2),
                 record_shapes=True, profile_memory=True, with_modules=True, with_stack=True,
                 execution_trace_observer=et,
                 on_trace_ready=lambda p: p.export_chrome_trace(prefix + "-kineto.json.gz")) as prof:
        for _ in range(4):
            loss = model(x, labels=x).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    prof.export_memory_timeline(prefix + "-timeline.raw.json.gz")
    with open(prefix + "-et.json", "rb") as f, gzip.open(prefix + "-et.json.gz", "wb") as g:
        g.write(f.read())
    os.remove(prefix + "-et.json")
    print("parameters", sum(p.numel() for p in model.parameters()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpt2-small")
