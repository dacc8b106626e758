#!/usr/bin/env python3
"""bench/torch-wrap.py — tokens/s of a small PyTorch GPT trained plain, wrapped by
stowage.torch.wrap with everything resident, and wrapped at a quarter of its model data; the
wrapper's overhead per op in µs. Each configuration trains STEPS steps in its own round, rounds
interleaved, medians of ROUNDS; on the CPU (one thread, CPU seconds) or on CUDA (wall seconds,
synchronized; the CUDA backend). The budgets are the model data (4 fp32 lists) times 4 and a
quarter of it, each with the trace's peak non-model memory beside. Needs PyTorch and the built
library (STOWAGE_LIB, PYTHONPATH=python). Usage: bench/torch-wrap.py [ROUNDS] [STEPS] [cpu|cuda]"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))
import stowage  # noqa: E402
import stowage.torch as st  # noqa: E402
from test_torch import TinyLM  # noqa: E402

torch.set_num_threads(1)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
DEVICE = sys.argv[3] if len(sys.argv) > 3 else "cpu"
B, T, D, L, V = 4, 64, 128, 4, 256


def loss_of(m, x):
    return torch.nn.functional.cross_entropy(m(x).flatten(0, 1), x.flatten())


torch.manual_seed(0)
model = TinyLM(vocab=V, d=D, layers=L).to(DEVICE)
start = {k: v.clone() for k, v in model.state_dict().items()}
x = torch.randint(0, V, (B, T), device=DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
with st.profile(model, opt) as p:
    for _ in range(2):
        loss_of(model, x).backward()
        opt.step()
        opt.zero_grad()
trace = p.trace(batch=B, seq=T)
n = sum(q.numel() for q in model.parameters())
data = 16 * n
nonmodel = trace.summary()["peak_nonmodel"]["bytes"]
ops_per_step = len(trace.json()["ops"])
plans = {"resident": (stowage.plan(trace, gpu=4 * data + nonmodel), 4 * data + nonmodel),
         "quarter": (stowage.plan(trace, gpu=data // 4 + nonmodel), data // 4 + nonmodel)}


def clock():
    if DEVICE == "cuda":
        torch.cuda.synchronize()
        return time.perf_counter()
    return time.process_time()


class LibraryAdamW:
    """Plain PyTorch stepping the library's AdamW (stowage.adam), the wrapper's optimizer: the
    baseline that isolates the wrapper's own cost."""

    def __init__(self, params):
        self.params = list(params)
        self.master = [q.detach().clone() for q in self.params]
        self.m = [torch.zeros_like(q) for q in self.params]
        self.v = [torch.zeros_like(q) for q in self.params]
        self.t = 0

    def step(self):
        self.t += 1
        for i, q in enumerate(self.params):
            buf = q.grad.detach().clone()
            stowage.adam(buf.data_ptr(), self.master[i].data_ptr(), self.m[i].data_ptr(),
                         self.v[i].data_ptr(), q.numel(), self.t, lr=1e-3)
            q.data = buf

    def zero_grad(self):
        for q in self.params:
            q.grad = None


def run(kind):
    model.load_state_dict(start)
    o = (LibraryAdamW(model.parameters()) if kind == "plain, library AdamW"
         else torch.optim.AdamW(model.parameters(), lr=1e-3))
    ctx = (st.wrap(model, o, *plans[kind][:1], trace, plans[kind][1])
           if kind in plans else None)
    if ctx:
        ctx.__enter__()
    loss_of(model, x).backward()  # a first step outside the timing
    o.step()
    o.zero_grad()
    t0 = clock()
    for _ in range(STEPS):
        loss_of(model, x).backward()
        o.step()
        o.zero_grad()
    dt = clock() - t0
    moved = ctx.stats["h2d_bytes"] if ctx else 0
    if ctx:
        ctx.__exit__(None, None, None)
    return dt, moved


times = {k: [] for k in ("plain", "plain, library AdamW", "resident", "quarter")}
moved = {}
for _ in range(ROUNDS):
    for k in times:
        dt, mv = run(k)
        times[k].append(dt)
        moved[k] = mv
med = {k: statistics.median(v) for k, v in times.items()}
print("GPT of %d parameters (%d layers, width %d, vocab %d), batch %d x %d tokens, %d ops per "
      "step, %d steps, medians of %d rounds, %s" % (
          n, L, D, V, B, T, ops_per_step, STEPS, ROUNDS,
          "CUDA, wall seconds" if DEVICE == "cuda" else "CPU seconds, 1 thread"))
print("| run | tokens/s | s per step | vs plain | H2D per step | overhead per op (vs plain with the library's AdamW) |")
print("|---|---:|---:|---:|---:|---:|")
for k in times:
    per = med[k] / STEPS
    base = med["plain, library AdamW"] / STEPS
    over = (per - base) / ops_per_step * 1e6
    print("| %s | %.0f | %.4f | %.2fx | %d | %s |" % (
        k, B * T / per, per, per / (med["plain"] / STEPS), moved[k],
        "%.0f us" % over if k in plans else "-"))
