#!/usr/bin/env python3
"""bench/torch-wrap.py — tokens/s of a small PyTorch model trained plain, wrapped by
stowage.torch.wrap with everything resident, and wrapped at a quarter of its model data; the
wrapper's overhead per op in µs. Each configuration trains STEPS steps (of ACCUM micro-steps:
gradient accumulation) in its own round, rounds interleaved, medians of ROUNDS; on the CPU (one
thread, CPU seconds) or on CUDA (wall seconds, synchronized; the CUDA backend). The budgets are
the model data (4 fp32 lists) times 4 and a quarter of it, each with the trace's peak non-model
memory beside. MODEL: tiny (a torch.nn GPT), gpt2 or llama (Hugging Face transformers, built
from a config with random weights). Needs PyTorch (and transformers for gpt2, llama) and the
built library (STOWAGE_LIB, PYTHONPATH=python).

Usage: bench/torch-wrap.py [ROUNDS] [STEPS] [cpu|cuda] [tiny|gpt2|llama] [ACCUM]"""
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))
import stowage  # noqa: E402
import stowage.torch as st  # noqa: E402

torch.set_num_threads(1)
# a randomly initialized tiny model makes denormal gradients, which make a CPU matmul 20x slower
# (TinyLM: 12 ms for a 128 x 512 x 128 GEMM); real training flushes them
torch.set_flush_denormal(True)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
DEVICE = sys.argv[3] if len(sys.argv) > 3 else "cpu"
MODEL = sys.argv[4] if len(sys.argv) > 4 else "tiny"
ACCUM = int(sys.argv[5]) if len(sys.argv) > 5 else 1
B, T, D, L, V = 2 * ACCUM, 64, 128, 4, 256  # B: sequences per step, 2 per micro-step


def build():
    torch.manual_seed(0)
    if MODEL == "tiny":
        from test_torch import TinyLM
        return TinyLM(vocab=V, d=D, layers=L), "TinyLM"
    import transformers as tf
    if MODEL == "gpt2":
        cfg = tf.GPT2Config(n_layer=L, n_embd=D, n_head=4, vocab_size=V, n_positions=T,
                            bos_token_id=0, eos_token_id=0, attn_pdrop=0.0, resid_pdrop=0.0,
                            embd_pdrop=0.0)
        return tf.GPT2LMHeadModel(cfg), "GPT-2"
    if MODEL == "llama":
        cfg = tf.LlamaConfig(num_hidden_layers=L, hidden_size=D, intermediate_size=4 * D,
                             num_attention_heads=4, num_key_value_heads=2, vocab_size=V,
                             max_position_embeddings=T, bos_token_id=0, eos_token_id=0,
                             pad_token_id=0)
        return tf.LlamaForCausalLM(cfg), "Llama"
    sys.exit("bench/torch-wrap.py: MODEL is tiny, gpt2 or llama, not %s" % MODEL)


model, name = build()
model.to(DEVICE)
start = {k: v.clone() for k, v in model.state_dict().items()}
x = torch.randint(0, V, (B, T), device=DEVICE)


def loss_of(xs):
    if MODEL == "tiny":
        return torch.nn.functional.cross_entropy(model(xs).flatten(0, 1), xs.flatten())
    return model(input_ids=xs, labels=xs).loss


def step(o):
    for k in range(ACCUM):
        (loss_of(x[k::ACCUM]) / ACCUM).backward()
    o.step()
    o.zero_grad()


opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    with st.profile(model, opt) as p:
        for _ in range(2):
            step(opt)
trace = p.trace()
n = sum(q.numel() for q in model.parameters())
data = 16 * n
nonmodel = trace.summary()["peak_nonmodel"]["bytes"]
ops_per_step = len(trace.json()["ops"])


def plan_at(budget):
    for _ in range(20):  # whole chunks must fit beside the activations: the least that does
        try:
            return stowage.plan(trace, gpu=budget), budget
        except stowage.StowageError:
            budget = budget * 9 // 8
    sys.exit("bench/torch-wrap.py: no plan near %d bytes" % budget)


plans = {"resident": plan_at(4 * data + nonmodel), "quarter": plan_at(data // 4 + nonmodel)}


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
    w = st.wrap(model, o, plans[kind][0], trace, plans[kind][1]) if kind in plans else None
    step(o)  # a first step outside the timing
    t0 = clock()
    for _ in range(STEPS):
        step(o)
    dt = clock() - t0
    moved = w.stats["h2d_bytes"] if w else 0
    if w:
        st.unwrap(model)
    return dt, moved


# the library's AdamW steps host memory: on CUDA the baseline is PyTorch's own AdamW
BASE = "plain, library AdamW" if DEVICE == "cpu" else "plain"
times = {k: [] for k in ("plain", BASE, "resident", "quarter")}
moved = {}
for _ in range(ROUNDS):
    for k in times:
        dt, mv = run(k)
        times[k].append(dt)
        moved[k] = mv
med = {k: statistics.median(v) for k, v in times.items()}
print("%s of %d parameters (%d layers, width %d, vocab %d), %d sequences of %d tokens per step "
      "in %d micro-step%s, %d ops per step, %d steps, medians of %d rounds, %s" % (
          name, n, L, D, V, B, T, ACCUM, "s" if ACCUM > 1 else "", ops_per_step, STEPS, ROUNDS,
          "CUDA, wall seconds" if DEVICE == "cuda" else "CPU seconds, 1 thread"))
print("| run | tokens/s | s per step | vs plain | H2D per step | overhead per op (vs %s) |"
      % ("plain with the library's AdamW" if BASE != "plain" else "plain"))
print("|---|---:|---:|---:|---:|---:|")
for k in times:
    per = med[k] / STEPS
    base = med[BASE] / STEPS
    over = (per - base) / ops_per_step * 1e6
    print("| %s | %.0f | %.4f | %.3fx | %d | %s |" % (
        k, B * T / per, per, (med["plain"] / STEPS) / per, moved[k],
        "%.0f us" % over if k in plans else "-"))
